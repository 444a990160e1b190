"""The phoenix backend (being built for issue 33)."""

from __future__ import annotations

from .base import Address, Backend, UnsupportedError


def connect(address: Address) -> Backend:
    """The client of the phoenix backend at ``address``."""
    raise UnsupportedError(f"{address}: the phoenix backend is not built yet")
