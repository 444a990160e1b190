"""A result row as one flat mapping, for tables (pandas, Parquet)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .._json import dumps
from ..model.results import SampleResult


def flat_row(
    row: SampleResult, names: Sequence[str], judged: Iterable[str], *, details_as_json: bool
) -> dict[str, Any]:
    """A row as one flat mapping (for tables): ``index``, ``id``, ``task_id``,
    ``status``, ``rejected``, then per metric ``NAME``, ``NAME_reason``, ``NAME_error``,
    ``NAME_details``, ``NAME_not_applicable`` (true where the metric said it does not
    apply and ``NAME`` is empty, false where it gave a value, empty otherwise) and, for
    judged metrics, ``NAME_input_tokens``, ``NAME_output_tokens`` and ``NAME_cost`` (of
    a failed asking too)."""
    flat: dict[str, Any] = {
        "index": row.index,
        "id": row.id,
        "task_id": row.task_id,
        "status": row.status,
        "rejected": row.rejected,
    }
    judged = set(judged)
    for name in names:
        score = row.scores.get(name)
        flat[name] = score.value if score else None
        flat[f"{name}_reason"] = score.reason if score else None
        flat[f"{name}_error"] = row.errors.get(name)
        details = dict(score.details) if score else None
        flat[f"{name}_details"] = (
            dumps(details).decode() if details_as_json and details is not None else details
        )
        flat[f"{name}_not_applicable"] = None if score is None else score.value is None
        if name in judged:
            usage = score.usage if score else row.failed_usage.get(name)
            flat[f"{name}_input_tokens"] = usage.input_tokens if usage else None
            flat[f"{name}_output_tokens"] = usage.output_tokens if usage else None
            flat[f"{name}_cost"] = usage.cost if usage else None
    return flat


def flat_columns(names: Sequence[str], judged: Iterable[str]) -> list[str]:
    """The keys of :func:`flat_row`, in order."""
    columns = ["index", "id", "task_id", "status", "rejected"]
    judged = set(judged)
    for name in names:
        columns += [
            name,
            f"{name}_reason",
            f"{name}_error",
            f"{name}_details",
            f"{name}_not_applicable",
        ]
        if name in judged:
            columns += [f"{name}_input_tokens", f"{name}_output_tokens", f"{name}_cost"]
    return columns
