"""Agent regressions as ordinary tests: :func:`assert_score` and :func:`aassert_score`.

Both score one sample with one metric and raise AssertionError when the value is below
the threshold. The message gives the metric, the value against the threshold, the
metric's reason and, when the sample has reference tool calls, :func:`tool_call_diff` of
what was expected against what was called. An error the metric raises (a missing field,
say) is not a failed assertion and propagates as it is.

The pytest plugin (installed with tracegrade) offers both helpers as fixtures too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from .metrics.base import Metric
from .metrics.judged import JudgeAsking, JudgedMetric, asks_judge
from .metrics.matching import best_pairing, render_value
from .metrics.registry import build_metric
from .model.messages import ToolCall
from .model.results import Score
from .model.samples import EvalTestCase, MultiTurnSample, Sample, tool_names

__all__ = ["aassert_score", "assert_score", "sample_diff", "tool_call_diff"]

Tool = ToolCall | str
"""A tool call, or a tool given by name alone (compared by name only)."""

_LABEL_WIDTH = 9
_INDENT = "  "


def assert_score(sample: Sample, metric: Metric | str, threshold: float | None = None) -> Score:
    """Score ``sample`` with ``metric`` and return the Score if its value reaches
    ``threshold``; raise AssertionError otherwise.

    ``metric`` is a Metric or a CLI spec such as ``"tool_correctness:exact_match=true"``.
    ``threshold`` defaults to the metric's own threshold, else 1.0. Judged metrics work
    here from synchronous code; in async tests use :func:`aassert_score`.
    """
    __tracebackhide__ = True
    chosen = _metric(metric)
    if asks_judge(chosen) and _loop_is_running():
        raise RuntimeError(
            f"{chosen.name} asks an LLM judge and an event loop is running here: "
            "use 'await aassert_score(...)' instead of assert_score(...)"
        )
    if asks_judge(chosen) and not isinstance(chosen, JudgedMetric):
        # a deterministic metric with a judged rule (semantic arguments) is scored
        # with ascore only
        return _check(sample, chosen, asyncio.run(_judged_score(chosen, sample)), threshold)
    return _check(sample, chosen, chosen.score(sample), threshold)


async def aassert_score(
    sample: Sample, metric: Metric | str, threshold: float | None = None
) -> Score:
    """:func:`assert_score` for async code: awaits ``metric.ascore(sample)``."""
    __tracebackhide__ = True
    chosen = _metric(metric)
    if asks_judge(chosen):
        score = await _judged_score(chosen, sample)
    else:
        score = await chosen.ascore(sample)
    return _check(sample, chosen, score, threshold)


_judge_users: dict[tuple[int, int], int] = {}
"""How many aassert_score calls use each (event loop, judge) pair right now."""


async def _judged_score(metric: JudgeAsking, sample: Sample) -> Score:
    """``await metric.ascore(sample)``, then close the judge's connections, which belong
    to this event loop (a test's loop ends with the test), unless other calls running
    in the loop still use them."""
    try:
        judge = metric.judge()
    except Exception:  # no judge configured: ascore raises the same error
        return await metric.ascore(sample)
    key = (id(asyncio.get_running_loop()), id(judge))
    _judge_users[key] = _judge_users.get(key, 0) + 1
    try:
        return await metric.ascore(sample)
    finally:
        _judge_users[key] -= 1
        if not _judge_users[key]:
            del _judge_users[key]
            await metric.release()


def _metric(metric: Metric | str) -> Metric:
    if isinstance(metric, str):
        return build_metric(metric)
    if isinstance(metric, type):
        raise TypeError(f"pass a metric object, {metric.__name__}(), not the class")
    return metric


def _loop_is_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _check(sample: Sample, metric: Metric, score: Score, threshold: float | None) -> Score:
    __tracebackhide__ = True
    if threshold is None:
        threshold = 1.0 if metric.threshold is None else metric.threshold
    if score.value is None:  # an unknown is no pass
        which = "" if sample.id is None else f" to sample {sample.id!r}"
        raise AssertionError(f"{metric.name} does not apply{which}: {score.reason}")
    if score.value >= threshold:
        return score
    raise AssertionError(_failure_message(sample, metric, score, threshold))


def _failure_message(sample: Sample, metric: Metric, score: Score, threshold: float) -> str:
    """What :func:`assert_score` says when ``score`` is below ``threshold``."""
    which = "" if sample.id is None else f" on sample {sample.id!r}"
    assert score.value is not None
    value = _number(score.value, threshold)
    lines = [
        f"{metric.name} scored {value}{which}, below the threshold {float(threshold)!r}",
        f"reason: {score.reason or '(none given)'}",
    ]
    diff = sample_diff(sample)
    if diff:
        lines.append(diff)
    return "\n".join(lines)


def _number(value: float, threshold: float) -> str:
    """``value`` to 4 decimal places, or in full when rounding would reach ``threshold``."""
    short = round(value, 4)
    return repr(short if short < threshold else value)


def sample_diff(sample: Sample) -> str:
    """The tool-call diff of a sample with reference calls or expected tools; ``""`` for
    a sample without them. An EvalTestCase is compared by tool name, as its metric does."""
    if isinstance(sample, MultiTurnSample) and sample.reference_tool_calls is not None:
        return tool_call_diff(sample.reference_tool_calls, sample.predicted_tool_calls())
    if isinstance(sample, EvalTestCase) and sample.expected_tools is not None:
        called = tool_names(sample.tools_called or [])
        return tool_call_diff(tool_names(sample.expected_tools), called)
    return ""


def tool_call_diff(expected: Sequence[Tool], called: Sequence[Tool]) -> str:
    """A readable diff of the expected tool calls against the called ones.

    Identical calls pair up first (each call used once, so duplicates count); leftover
    calls of the same name then pair up by how many arguments agree, and their differing
    arguments are listed, nested ones by path (``filters.date``, ``ids[1]``). Lines follow
    the expected order, extra calls last; an ``order`` line shows both name sequences when
    paired calls were made in another order. Values compare strictly (``1`` and ``1.0``,
    ``5`` and ``'5'`` differ; dict key order does not). When either side gives tools as
    names, all compare by name only.
    """
    matched = _pair_identical(expected, called)
    differing = _pair_same_name(expected, called, matched)
    pairs = {**matched, **differing}
    used = set(pairs.values())
    header = "tools (by name)" if _by_name(expected, called) else "tool calls"
    lines = [f"{header}: {len(expected)} expected, {len(called)} called"]
    if not expected and not called:
        return lines[0] + "; none were expected and none were made"
    for index, tool in enumerate(expected):
        if index in matched:
            lines.append(_line("matched", _show_call(tool)))
        elif index in differing:
            lines.append(_line("differs", _show_call(tool)))
            lines.extend(
                _INDENT + " " * _LABEL_WIDTH + text
                for text in _call_differences(tool, called[differing[index]])
            )
        else:
            lines.append(_line("missing", _show_call(tool)))
    lines.extend(
        _line("extra", _show_call(tool)) for index, tool in enumerate(called) if index not in used
    )
    if _out_of_order(expected, called, pairs):
        lines.append(_line("order", f"expected {_names(expected)}; called {_names(called)}"))
    return "\n".join(lines)


def _line(label: str, text: str) -> str:
    return f"{_INDENT}{label:<{_LABEL_WIDTH}}{text}"


def _name(tool: Tool) -> str:
    return tool if isinstance(tool, str) else tool.name


def _names(tools: Sequence[Tool]) -> str:
    return ", ".join(_name(tool) for tool in tools) or "none"


def _by_name(expected: Sequence[Tool], called: Sequence[Tool]) -> bool:
    return any(isinstance(tool, str) for tool in [*expected, *called])


def _show_call(tool: Tool) -> str:
    return tool if isinstance(tool, str) else tool.pretty()


def _identity(tool: Tool, by_name: bool) -> tuple[str, str | None, str]:
    """What makes two calls identical: name, unparsed argument text and arguments."""
    if by_name or isinstance(tool, str):
        return _name(tool), None, ""
    return tool.name, tool.unparsed_args, _show(tool.args)


def _pair_identical(expected: Sequence[Tool], called: Sequence[Tool]) -> dict[int, int]:
    """Each expected call paired with the first unused identical called call."""
    by_name = _by_name(expected, called)
    free: dict[tuple[str, str | None, str], list[int]] = {}
    for index, tool in enumerate(called):
        free.setdefault(_identity(tool, by_name), []).append(index)
    pairs: dict[int, int] = {}
    for index, tool in enumerate(expected):
        waiting = free.get(_identity(tool, by_name))
        if waiting:
            pairs[index] = waiting.pop(0)
    return pairs


def _pair_same_name(
    expected: Sequence[Tool], called: Sequence[Tool], matched: Mapping[int, int]
) -> dict[int, int]:
    """Leftover calls of the same name, paired so that the most arguments agree (ties go
    to calls at the same place among their name's leftovers)."""
    taken = set(matched.values())
    groups: dict[str, tuple[list[int], list[int]]] = {}
    for index, tool in enumerate(expected):
        if index not in matched:
            groups.setdefault(_name(tool), ([], []))[0].append(index)
    for index, tool in enumerate(called):
        if index not in taken and _name(tool) in groups:
            groups[_name(tool)][1].append(index)
    pairs: dict[int, int] = {}
    for wanted, made in groups.values():
        size = max(len(wanted), len(made))
        matrix = [
            [
                _agreement(expected[wanted[row]], called[made[column]]) - 1e-6 * abs(row - column)
                if row < len(wanted) and column < len(made)
                else 0.0
                for column in range(size)
            ]
            for row in range(size)
        ]
        for row, column in best_pairing(matrix):
            if row < len(wanted) and column < len(made):
                pairs[wanted[row]] = made[column]
    return pairs


def _arguments(tool: Tool) -> Mapping[str, Any]:
    return {} if isinstance(tool, str) else tool.args


def _agreement(first: Tool, second: Tool) -> float:
    """The share of argument names, over both calls, whose values are equal."""
    left, right = _arguments(first), _arguments(second)
    keys = set(left) | set(right)
    if not keys:
        return 1.0
    equal = sum(1 for key in keys if key in left and key in right and _equal(left[key], right[key]))
    return equal / len(keys)


def _equal(first: Any, second: Any) -> bool:
    """Strict equality: ``1`` and ``1.0``, ``5`` and ``'5'`` differ (some metric tells
    each pair apart); dict key order does not matter."""
    return _show(first) == _show(second)


def _call_differences(expected: Tool, called: Tool) -> list[str]:
    """How a called call's arguments differ from the expected call's, one line each."""
    if isinstance(expected, str) or isinstance(called, str):
        return []
    if expected.unparsed_args is not None or called.unparsed_args is not None:
        return [f"arguments: expected {_show_arguments(expected)}, got {_show_arguments(called)}"]
    return _dict_differences("", expected.args, called.args)


def _show_arguments(call: ToolCall) -> str:
    if call.unparsed_args is not None:
        return f"unparsed {call.unparsed_args!r}"
    return _show(call.args)


def _dict_differences(path: str, expected: Mapping[str, Any], got: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    for key, value in expected.items():
        where = f"{path}.{key}" if path else str(key)
        if key not in got:
            lines.append(f"{where}: expected {_show(value)}, not given")
        else:
            lines.extend(_value_differences(where, value, got[key]))
    for key, value in got.items():
        if key not in expected:
            where = f"{path}.{key}" if path else str(key)
            lines.append(f"{where}: not expected, got {_show(value)}")
    return lines


def _value_differences(path: str, expected: Any, got: Any) -> list[str]:
    if _equal(expected, got):
        return []
    if isinstance(expected, dict) and isinstance(got, dict):
        return _dict_differences(path, expected, got)
    if isinstance(expected, list) and isinstance(got, list) and len(expected) == len(got):
        lines: list[str] = []
        for position, (want, have) in enumerate(zip(expected, got, strict=True)):
            lines.extend(_value_differences(f"{path}[{position}]", want, have))
        return lines
    return [f"{path}: expected {_show(expected)}, got {_show(got)}"]


def _show(value: Any) -> str:
    """A value as the diff shows it: strings quoted, so that ``5`` and ``'5'`` differ;
    dict keys sorted (see :func:`render_value`)."""
    return repr(value) if isinstance(value, str) else render_value(value)


def _out_of_order(
    expected: Sequence[Tool], called: Sequence[Tool], pairs: Mapping[int, int]
) -> bool:
    """Whether the paired calls' names come in another order in the calls made."""
    in_expected = [_name(expected[index]) for index in sorted(pairs)]
    in_called = [_name(called[index]) for index in sorted(pairs.values())]
    return in_expected != in_called
