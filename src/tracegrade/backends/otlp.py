"""The otlp backend (being built for issue 33)."""

from __future__ import annotations

from .base import Address, Backend, UnsupportedError


def connect(address: Address) -> Backend:
    """The client of the otlp backend at ``address``."""
    raise UnsupportedError(f"{address}: the otlp backend is not built yet")
