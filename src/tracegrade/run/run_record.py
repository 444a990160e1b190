"""How the run record names a run's metrics and judge, and older records brought up to date.

Beside a results file a small record (:class:`~tracegrade.io.store.RunRecord`) names the
input (path, size, a hash of its first megabyte), its source format, the metrics and the
judge; resuming refuses a results file whose record differs
(:class:`~tracegrade.io.store.ResumeError`). Metrics are described from the metric
objects (:func:`describe_metric`), so a run started on the command line can be finished
from Python and the other way round.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from enum import Enum
from typing import Any

from ..io.store import RUN_RECORD_VERSION, RunRecord
from ..metrics.base import Metric
from ..metrics.judged import asks_judge


def describe_metric(metric: Metric) -> str:
    """The metric as the run record names it, the same however it was made.

    A metric of a registered class (see :mod:`tracegrade.metrics.registry`) reads as its
    spec, the registered name and the options that differ from the defaults, in the
    order the class takes them: ``tool_call_f1``, ``tool_correctness:exact_match=true``,
    ``tool_call_accuracy:arg_comparison_metric=non_llm_string_similarity+distance_measure=jaro``
    (a nested metric's ``:`` becomes ``+``, as on the command line). Any other metric
    (a subclass too) reads as ``module.Class:`` and its name, threshold and the public
    attributes holding plain values, sorted by key. A judged metric's judge is described
    apart (:func:`describe_judge`).
    """
    kind = type(metric)
    registered = _registered_spec(metric)
    if registered is not None:
        return registered
    options = {"name": metric.name, "threshold": metric.threshold}
    for key, value in getattr(metric, "__dict__", {}).items():
        if not key.startswith("_") and key != "llm" and _is_plain(value):
            options[key] = value
    shown = ",".join(f"{key}={_option_text(value)}" for key, value in sorted(options.items()))
    return f"{kind.__module__}.{kind.__qualname__}:{shown}"


def _registered_spec(metric: Metric) -> str | None:
    from ..metrics.registry import METRICS, options_of

    kind = type(metric)
    name = next((name for name, each in METRICS.items() if each is kind), None)
    if name is None:
        return None
    try:
        taken = options_of(kind)
        try:
            default: Any = kind()
        except TypeError:  # an option without a default (a budget's max): always shown
            default = None
        options = []
        for key, parameter in taken.items():
            text = _option_text(getattr(metric, key))
            if default is not None:
                usual = _option_text(getattr(default, key))
            elif parameter.default is parameter.empty:
                usual = None
            elif key == "name":
                usual = _option_text(kind.name)
            else:
                usual = _option_text(parameter.default)
            if text != usual:
                options.append(f"{key}={text}")
    except (AttributeError, TypeError, ValueError):
        return None  # options it does not keep under their own names: described as a class
    return name + (":" + ",".join(options) if options else "")


def _is_plain(value: object) -> bool:
    return value is None or isinstance(value, (str, int, float, Enum, Metric))


_SPEC_MARKS = frozenset(",=:+()'\"")


def _option_text(value: object) -> str:
    """An option's value as a spec shows it; text that could be misread (holding a mark
    of the spec syntax, or blank at an end) is quoted, and a nested metric with more
    than one option is put in brackets, so that no two runs read the same."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, Metric):
        nested = describe_metric(value)
        return f"({nested})" if "," in nested else nested.replace(":", "+", 1)
    if isinstance(value, (int, float)):
        return repr(value)
    if callable(getattr(value, "same", None)) and callable(getattr(value, "to_dict", None)):
        text = _rule_text(value.to_dict())  # type: ignore[attr-defined]  # an ArgumentMatch
    else:
        text = str(value)
    if not text or text != text.strip() or not _SPEC_MARKS.isdisjoint(text):
        return repr(text)
    return text


def _rule_text(table: dict[str, Any]) -> str:
    """An argument rule as its spec reads (``typed``: a mode alone) or, with more
    options, as its table's compact JSON, keys sorted."""
    if set(table) <= {"mode"}:
        return str(table.get("mode", "exact"))
    import json

    return json.dumps(table, sort_keys=True, separators=(",", ":"))


def describe_judge(metrics: Sequence[Metric]) -> str | None:
    """The judge of the run's judged metrics as the run record names it: ``MODEL at
    URL`` for an OpenAI-compatible judge (the environment's when ``llm`` is not set; any
    credentials in the URL masked), ``MODEL at URL (PROVIDER)`` for another provider's
    (so resuming with another provider is refused like another model),
    else the judge's class or function; ``NAME: JUDGE; ...`` when they differ, ``None``
    without judged metrics or a judge."""
    described: dict[str, str] = {}
    for metric in metrics:
        if asks_judge(metric):
            try:
                judge: Any = metric.judge()
            except Exception:
                continue  # none configured: the metric fails on every sample
            model = getattr(judge, "model", None)
            if isinstance(model, str):
                from .._urls import masked_url

                url = getattr(judge, "base_url", None)
                shown = masked_url(url) if isinstance(url, str) else url
                provider = getattr(judge, "provider", "openai")
                named = "" if provider in ("openai", None) else f" ({provider})"
                described[metric.name] = f"{model} at {shown}{named}"
            else:
                kind = judge if callable(judge) and hasattr(judge, "__qualname__") else type(judge)
                described[metric.name] = f"{kind.__module__}.{kind.__qualname__}"
    different = set(described.values())
    if not different:
        return None
    if len(different) == 1:
        return different.pop()
    return "; ".join(f"{name}: {judge}" for name, judge in described.items())


def upgrade_record(record: RunRecord) -> RunRecord:
    """A run record of an older version in today's form: the metric specs typed on
    the command line described as :func:`describe_metric` does (a spec that no longer
    builds a metric stays as it was)."""
    if record.version >= RUN_RECORD_VERSION:
        return record
    from ..metrics.registry import build_metric

    def described(spec: str) -> str:
        try:
            return describe_metric(build_metric(spec))
        except ValueError:
            return spec

    metrics = tuple(described(spec) for spec in record.metrics)
    return replace(record, metrics=metrics, version=RUN_RECORD_VERSION)
