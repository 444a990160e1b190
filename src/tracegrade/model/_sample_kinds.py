"""Sample classes named rather than imported.

:mod:`tracegrade.samples` holds pydantic models, and loading pydantic costs a command-line
run about as much time as scoring thousands of lean conversations. Modules that a lean
run loads (the tool-call metrics, the runner, the dataset reader) therefore refer to the
sample classes through this module, which imports them only when they are asked for.
"""

from __future__ import annotations

import sys
from functools import cache
from typing import Any

_SAMPLES = "tracegrade.model.samples"


class SampleKinds:
    """A metric's ``sample_types`` given by class name: read on the class or an instance,
    it is the tuple of those classes of :mod:`tracegrade.samples` (imported then)."""

    def __init__(self, *names: str) -> None:
        self.names = names
        self._classes: tuple[type, ...] | None = None

    def __get__(self, instance: object, owner: type | None = None) -> tuple[type, ...]:
        if self._classes is None:
            from . import samples

            self._classes = tuple(getattr(samples, name) for name in self.names)
        return self._classes

    def __repr__(self) -> str:
        return f"SampleKinds({', '.join(map(repr, self.names))})"


@cache
def reads_kind(metric_type: type, name: str) -> bool:
    """Whether ``metric_type``'s ``sample_types`` include the sample class ``name``; the
    sample classes are not imported when the metric names its kinds."""
    for klass in metric_type.__mro__:
        kinds: Any = klass.__dict__.get("sample_types")
        if isinstance(kinds, SampleKinds):
            return name in kinds.names
        if kinds is not None:  # classes given themselves, so their module is loaded
            samples = sys.modules.get(_SAMPLES)
            return samples is not None and getattr(samples, name) in kinds
    return False


def is_sample(value: object) -> bool:
    """Whether ``value`` is a sample (of any kind); never imports the sample classes, as
    a sample cannot exist before they are loaded."""
    samples = sys.modules.get(_SAMPLES)
    return samples is not None and isinstance(value, samples.SAMPLE_TYPES)
