"""How a run's result draws itself in HTML while the run layer never imports the report
layer that draws it.

``EvaluationResult.to_html`` and a notebook's ``_repr_html_`` ask :func:`html_display`
for the drawing. The package root (``tracegrade/__init__.py``), which Python runs before
any submodule and which sits above every layer, registers a loader for it with
:func:`register_html_display`: the loader imports the report layer when a result is
first drawn. Nothing here is imported at run time but the standard library, so
``import tracegrade`` stays cheap.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from os import PathLike
    from typing import Any, Protocol

    class HtmlDisplay(Protocol):
        """What draws a result: the report layer's ``reports`` module is one."""

        def result_to_html(
            self,
            result: Any,
            path: str | PathLike[str],
            *,
            data: Any = ...,
            source: str | None = ...,
            title: str | None = ...,
        ) -> None:
            """Write the whole report of ``result`` to ``path``."""

        def summary_html(self, result: Any) -> str:
            """The compact summary table of ``result``."""


_loaders: list[Callable[[], HtmlDisplay]] = []
"""The registered loader, if any (a list, so that registering needs no ``global``)."""


def register_html_display(load: Callable[[], HtmlDisplay]) -> None:
    """Draw results with what ``load()`` returns; it is called each time a result is
    drawn, so it may import what draws on first use. Replaces any earlier loader."""
    _loaders[:] = [load]


def html_display() -> HtmlDisplay:
    """What draws results in HTML. Raises RuntimeError when nothing was registered."""
    if not _loaders:
        raise RuntimeError(
            "no HTML display is registered; importing tracegrade registers the report layer's"
        )
    return _loaders[0]()
