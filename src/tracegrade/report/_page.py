"""What every HTML page of tracegrade shares: Jinja2 templates with autoescape, the
page's own styles and scripts inlined, data carried in JSON islands, and a
Content-Security-Policy that lets the page run only its own code and reach no network.

A page is self-contained: it opens from a file, offline. Untrusted text (transcripts,
reasons, ids) reaches the page either through autoescaped template variables or inside
a JSON island that the page's script reads and puts in the DOM as text, never as markup.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Iterator, Mapping
from functools import cache
from importlib.resources import files
from typing import IO, TYPE_CHECKING, Any

from .._json import dumps

if TYPE_CHECKING:
    import jinja2

ISLAND_MARK = "\x00tracegrade-island\x00"
"""Stands for a streamed JSON island in a rendered page until it is written out."""

_ISLAND_BYTE_ESCAPES = ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"))


@cache
def environment() -> jinja2.Environment:
    """The templates of :mod:`tracegrade.report`, autoescaped."""
    try:
        import jinja2
    except ImportError as error:  # pragma: no cover (a core dependency)
        raise ImportError("HTML reports need Jinja2: pip install Jinja2") from error
    templates = jinja2.Environment(
        loader=jinja2.PackageLoader("tracegrade.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    templates.filters["number"] = number
    templates.filters["percent"] = percent
    return templates


@cache
def asset(name: str) -> str:
    """One of the page's own scripts or style sheets, as text."""
    text = files("tracegrade.report").joinpath("assets").joinpath(name).read_text(encoding="utf-8")
    if "</" in text:  # would end the <script> or <style> element early
        raise ValueError(f"report asset {name} holds '</', which cannot be inlined")
    return text


def number(value: float | None, digits: int = 4) -> str:
    """A value as the console shows it; an em dash for none."""
    return "—" if value is None else f"{value:.{digits}f}"


def percent(value: float | None) -> str:
    """A share as a percentage; an em dash for none."""
    return "—" if value is None else f"{100 * value:.1f}%"


def _source_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def content_security_policy(scripts: Iterable[str], styles: Iterable[str]) -> str:
    """A policy that runs only the given inline scripts and styles (by their hashes) and
    loads nothing: no network, no frames, no forms, no other base URL. Images may be
    ``data:`` URLs only; inline event handlers and ``javascript:`` URLs never run."""
    script_hashes = " ".join(_source_hash(text) for text in scripts) or "'none'"
    style_hashes = " ".join(_source_hash(text) for text in styles) or "'none'"
    return (
        "default-src 'none'; "
        f"script-src {script_hashes}; "
        f"style-src {style_hashes}; "
        "img-src data:; connect-src 'none'; font-src 'none'; media-src 'none'; "
        "object-src 'none'; frame-src 'none'; worker-src 'none'; "
        "base-uri 'none'; form-action 'none'"
    )


def island_bytes(value: Any) -> bytes:
    """``value`` as JSON that is safe inside ``<script type="application/json">``: the
    characters that could end the element or start a comment are escaped."""
    data = dumps(value)
    for raw, escaped in _ISLAND_BYTE_ESCAPES:
        if raw in data:
            data = data.replace(raw, escaped)
    # U+2028 and U+2029 are valid in JSON and in scripts since ES2019: no escape needed
    return data


def page_context(script_names: Iterable[str], style_names: Iterable[str]) -> dict[str, Any]:
    """What the base template needs: the scripts and styles to inline, as trusted markup,
    and the policy allowing exactly them."""
    from markupsafe import Markup

    scripts = [asset(name) for name in script_names]
    styles = [asset(name) for name in style_names]
    return {
        "scripts": [Markup(text) for text in scripts],
        "styles": [Markup(text) for text in styles],
        # ours, and free of '"', '<' and '&': safe in the double-quoted attribute as it is
        "csp": Markup(content_security_policy(scripts, styles)),
    }


def render(template: str, context: Mapping[str, Any]) -> str:
    """The template rendered with ``context`` (variables are autoescaped)."""
    return environment().get_template(template).render(context)


def write_streamed(out: IO[bytes], page: str, island: Iterator[bytes]) -> None:
    """Write ``page``, with the pieces of ``island`` in place of :data:`ISLAND_MARK`
    (so a large island is never held whole)."""
    head, mark, tail = page.partition(ISLAND_MARK)
    if not mark:
        raise ValueError("the page has no place for its data island")
    out.write(head.encode("utf-8"))
    for piece in island:
        out.write(piece)
    out.write(tail.encode("utf-8"))
