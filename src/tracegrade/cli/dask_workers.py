"""What the command line sets up on a Dask cluster's workers (imported only once Dask
is known to be installed)."""

from __future__ import annotations

import warnings

from distributed import Worker, WorkerPlugin

from ..errors import SampleWarning


class QuietSampleWarnings(WorkerPlugin):
    """The workers keep quiet about one sample's score, as the command line does (the
    row's reason says it); tracegrade's other warnings still show, in the workers' logs.
    Registered for the run, it applies to workers that join later too."""

    name = "tracegrade-quiet-sample-warnings"

    def setup(self, worker: Worker) -> None:
        warnings.simplefilter("ignore", SampleWarning)
