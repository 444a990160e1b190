"""The ``tracegrade`` command line: flags and project config turned into one call of the
run, then a report and an exit code (see :mod:`tracegrade.cli.main`)."""

from __future__ import annotations

from .evaluate import (
    EXIT_FAILURES,
    EXIT_GATE,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
)
from .main import main

__all__ = [
    "EXIT_FAILURES",
    "EXIT_GATE",
    "EXIT_INPUT",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "main",
]
