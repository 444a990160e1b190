"""How a tool call reads in an explanation; the standard library only, so that code
scoring lean conversations can use it without loading the data models."""

from __future__ import annotations

from typing import Any


def pretty_call(name: str, args: dict[str, Any], unparsed_args: str | None = None) -> str:
    """A tool call as it reads in code: ``search(query='python', limit=5)``."""
    if unparsed_args is not None:
        return f"{name}(<unparsed {unparsed_args!r}>)"
    inner = ", ".join([f"{key}={value!r}" for key, value in args.items()])
    return f"{name}({inner})"
