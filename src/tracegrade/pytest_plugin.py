"""tracegrade's pytest plugin, loaded by pytest through the ``pytest11`` entry point.

It offers :func:`tracegrade.testing.assert_score` and
:func:`tracegrade.testing.aassert_score` as fixtures of the same names, so a test can
ask for them without an import. Loading the plugin imports the ``tracegrade`` package
(its parent); the helpers' module is imported only when a test asks for a fixture.
``pytest -p no:tracegrade`` turns the plugin off.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from .model.results import Score


@pytest.fixture(name="assert_score")
def assert_score_fixture() -> Callable[..., Score]:
    """``assert_score(sample, metric, threshold=None)``: see
    :func:`tracegrade.testing.assert_score`."""
    from .testing import assert_score

    return assert_score


@pytest.fixture(name="aassert_score")
def aassert_score_fixture() -> Callable[..., Awaitable[Score]]:
    """``await aassert_score(sample, metric, threshold=None)``: see
    :func:`tracegrade.testing.aassert_score`."""
    from .testing import aassert_score

    return aassert_score
