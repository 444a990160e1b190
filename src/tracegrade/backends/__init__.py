"""Observability backends: traces pulled from Phoenix, MLflow, Langfuse and LangSmith as
samples, and scores pushed back to them (or to any OTLP endpoint as GenAI evaluation
events). docs/backends.md says what each reads and writes."""

from __future__ import annotations

from .base import (
    SCHEMES,
    Address,
    Backend,
    BackendError,
    PullFilters,
    PushedScore,
    PushOutcome,
    UnsupportedError,
    is_backend_url,
    parse_address,
)

__all__ = [
    "SCHEMES",
    "Address",
    "Backend",
    "BackendError",
    "PullFilters",
    "PushOutcome",
    "PushedScore",
    "UnsupportedError",
    "is_backend_url",
    "open_backend",
    "parse_address",
]


def open_backend(url: str | Address) -> Backend:
    """The client of the backend ``url`` names, its module imported now (an
    ImportError naming the extra to install when its dependencies are missing)."""
    address = url if isinstance(url, Address) else parse_address(url)
    if address.scheme == "phoenix":
        from . import phoenix

        return phoenix.connect(address)
    if address.scheme == "mlflow":
        from . import mlflow

        return mlflow.connect(address)
    if address.scheme == "langfuse":
        from . import langfuse

        return langfuse.connect(address)
    if address.scheme == "langsmith":
        from . import langsmith

        return langsmith.connect(address)
    from . import otlp

    return otlp.connect(address)
