"""What the report shows of one sample: its conversation as chat turns, the calls the
agent made, the calls expected of it, and the two lined up (:func:`call_diff`).

The diff is the report's own, independent of which metrics ran, so every sample shows
the same picture: calls matched in order, calls matched by name but out of order,
calls whose arguments differ, calls missing and calls extra. Each metric's own verdict
stays in its reason and details beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from .._json import dumps
from ..model.messages import AIMessage, HumanMessage, ToolCall, ToolMessage
from ..model.samples import EvalTestCase, MultiTurnSample, Sample, SingleTurnSample

DiffKind = Literal["matched", "arguments", "out_of_order", "missing", "extra"]
ArgumentVerdict = Literal["same", "differs", "missing", "extra"]


def _call(call: ToolCall | str) -> list[Any]:
    """A call as ``[name, args]``, or ``[name, args, id]`` when it has an id (a tool
    given by name alone has no arguments: ``None``)."""
    if isinstance(call, str):
        return [call, None]
    args: Any = call.args if call.unparsed_args is None else call.unparsed_args
    return [call.name, args] if call.id is None else [call.name, args, call.id]


def _message(message: HumanMessage | AIMessage | ToolMessage) -> list[Any]:
    if isinstance(message, AIMessage):
        calls = [_call(call) for call in message.tool_calls or ()]
        return ["ai", message.content, calls] if calls else ["ai", message.content]
    if isinstance(message, ToolMessage):
        return ["tool", message.content, None, message.tool_call_id]
    return ["human", message.content]


def sample_view(sample: Sample) -> dict[str, Any]:
    """The sample as the report's script reads it: ``messages`` (``[role, text, calls,
    tool_call_id]``, trailing empties left off), ``calls`` (``[name, args, id]``; left
    out when there are messages, whose calls they are, in order), ``expected``, ``diff``
    (see :func:`call_diff`), and ``input``, ``response`` and ``reference`` texts where
    the sample has them."""
    view: dict[str, Any] = {}
    actual: Sequence[ToolCall | str] = ()
    expected: Sequence[ToolCall | str] | None = None
    if isinstance(sample, MultiTurnSample):
        view["messages"] = [_message(message) for message in sample.user_input]
        actual = [
            call
            for message in sample.user_input
            if isinstance(message, AIMessage)
            for call in message.tool_calls or ()
        ]
        if sample.reference_tool_calls is not None:
            expected = sample.reference_tool_calls
        elif sample.reference_tool_calls_per_turn is not None:
            expected = [call for turn in sample.reference_tool_calls_per_turn for call in turn]
        if sample.reference is not None:
            view["reference"] = sample.reference
    elif isinstance(sample, EvalTestCase):
        view["input"] = sample.input
        if sample.actual_output is not None:
            view["response"] = sample.actual_output
        if sample.expected_output is not None:
            view["reference"] = sample.expected_output
        actual = sample.tools_called or ()
        expected = sample.expected_tools
    elif isinstance(sample, SingleTurnSample):
        for key, text in (
            ("input", sample.user_input),
            ("response", sample.response),
            ("reference", sample.reference),
        ):
            if text is not None:
                view[key] = text
    calls = [_call(call) for call in actual]
    if "messages" not in view:
        view["calls"] = calls
    if expected is not None:
        view["expected"] = [_call(call) for call in expected]
        view["diff"] = call_diff(calls, view["expected"])
    return view


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values, types included (``1`` is not ``"1"``; ``1`` is ``1.0``)."""
    if a == b and (type(a) is type(b) or (_is_number(a) and _is_number(b))):
        if isinstance(a, (dict, list)):
            return dumps(a, sort_keys=True) == dumps(b, sort_keys=True)
        return True
    return False


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def argument_diff(actual: Any, expected: Any) -> list[list[Any]]:
    """Each argument of either call as ``[key, verdict, expected, actual]`` (the verdict
    ``differs``, ``missing`` from the actual call or ``extra`` in it), or ``[key,
    "same"]`` (the value is the calls'), in the expected call's order, then the extra
    ones. Arguments that are not objects (a tool named alone, text that was not JSON)
    compare whole, under the key ``""``."""
    if not isinstance(actual, dict) or not isinstance(expected, dict):
        if actual is None and expected is None:
            return []
        return [["", "same"] if _same(actual, expected) else ["", "differs", expected, actual]]
    found: list[list[Any]] = []
    for key, want in expected.items():
        if key not in actual:
            found.append([key, "missing", want, None])
        else:
            same = _same(actual[key], want)
            found.append([key, "same"] if same else [key, "differs", want, actual[key]])
    found.extend(
        [key, "extra", None, value] for key, value in actual.items() if key not in expected
    )
    return found


def _in_order_pairs(actual: Sequence[str], expected: Sequence[str]) -> list[tuple[int, int]]:
    """The longest run of calls named alike in both orders (a longest common
    subsequence), as (actual, expected) positions. The common head and tail pair at
    once (most agents mostly agree), the table is filled for what lies between."""
    head = 0
    while head < min(len(actual), len(expected)) and actual[head] == expected[head]:
        head += 1
    tail = 0
    while (
        tail < min(len(actual), len(expected)) - head and actual[-1 - tail] == expected[-1 - tail]
    ):
        tail += 1
    pairs = [(k, k) for k in range(head)]
    middle_actual = actual[head : len(actual) - tail]
    middle_expected = expected[head : len(expected) - tail]
    rows, cols = len(middle_actual), len(middle_expected)
    if rows and cols:
        longest = [[0] * (cols + 1) for _ in range(rows + 1)]
        for i in range(rows - 1, -1, -1):
            below, here = longest[i + 1], longest[i]
            name = middle_actual[i]
            for j in range(cols - 1, -1, -1):
                here[j] = (
                    below[j + 1] + 1 if name == middle_expected[j] else max(below[j], here[j + 1])
                )
        i = j = 0
        while i < rows and j < cols:
            if middle_actual[i] == middle_expected[j]:
                pairs.append((head + i, head + j))
                i, j = i + 1, j + 1
            elif longest[i + 1][j] >= longest[i][j + 1]:
                i += 1
            else:
                j += 1
    shift = len(actual) - len(expected)
    pairs += [(k + shift, k) for k in range(len(expected) - tail, len(expected))]
    return pairs


def call_diff(actual: Sequence[list[Any]], expected: Sequence[list[Any]]) -> list[list[Any]]:
    """The agent's calls lined up with the expected ones, as rows ``[kind, actual
    position, expected position, argument diff]`` (a position ``None`` where the row has
    no such call), in the order the agent made its calls, each missing call placed
    after the expected call before it.

    Calls pair by name: first the longest run in the same order on both sides, then
    the rest by name in order, those ``out_of_order``. A pair is ``matched`` when every
    argument is the same, else ``arguments``; unpaired expected calls are ``missing``,
    unpaired calls of the agent ``extra``."""
    names = [call[0] for call in actual]
    wanted = [call[0] for call in expected]
    pairs = dict(_in_order_pairs(names, wanted))
    out_of_order: set[int] = set()
    paired_expected = set(pairs.values())
    for j, name in enumerate(wanted):
        if j in paired_expected:
            continue
        for i, called in enumerate(names):
            if i not in pairs and called == name:
                pairs[i] = j
                paired_expected.add(j)
                out_of_order.add(i)
                break
    placed: list[tuple[float, int, list[Any]]] = []
    expected_at: dict[int, int] = {}
    for i, call in enumerate(actual):
        if i not in pairs:
            placed.append((i, 0, ["extra", i, None, []]))
            continue
        j = pairs[i]
        expected_at[j] = i
        arguments = argument_diff(call[1], expected[j][1])
        kind: DiffKind = (
            "out_of_order"
            if i in out_of_order
            else "matched"
            if all(argument[1] == "same" for argument in arguments)
            else "arguments"
        )
        placed.append((i, 0, [kind, i, j, arguments]))
    after: float = -1
    for j in range(len(expected)):
        if j in expected_at:
            after = expected_at[j]
            continue
        placed.append((after + 0.5, j + 1, ["missing", None, j, []]))
    placed.sort(key=lambda item: (item[0], item[1]))
    return [row for _, _, row in placed]
