"""A metric slow enough for a run to be stopped midway, importable by the same name from
the tests and from the processes they start (a run record names a metric's module)."""

from __future__ import annotations

import time
from typing import ClassVar

from tracegrade.metrics.base import Metric
from tracegrade.model.results import Score
from tracegrade.model.samples import MultiTurnSample, Sample

PACE = 0.001
"""Seconds each sample takes."""


class Paced(Metric):
    """1.0 when the sample has reference tool calls, else 0.0, after :data:`PACE`."""

    name = "paced"
    sample_types: ClassVar[tuple[type, ...]] = (MultiTurnSample,)

    def score(self, sample: Sample) -> Score:
        time.sleep(PACE)
        assert isinstance(sample, MultiTurnSample)
        return Score(1.0 if sample.reference_tool_calls else 0.0, "paced")
