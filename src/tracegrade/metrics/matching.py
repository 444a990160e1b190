"""Comparing tool calls: one place for the rules every tool-call metric shares.

- :func:`freeze` gives an argument value a hashable, order-aware form (set-based metrics);
  :func:`same_call_indices` finds the equal calls in a list by the same rule.
- :func:`render_value` gives it the string form the string comparisons read.
- An :class:`ArgumentComparator` scores a predicted argument dict against a reference one;
  :class:`StringArgumentComparator` does it with any string metric.
- :func:`best_pairing` pairs calls to maximise total score (:func:`best_nonzero_pairing`
  when the two sides differ in length); :func:`common_subsequence` finds the longest
  in-order agreement of two sequences.
- :func:`describe_calls` and :func:`describe_failed_arguments` word calls and failed
  argument verdicts for a score's reason.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..model.messages import pretty_call

if TYPE_CHECKING:
    from ..model.messages import ToolCall

_SCALARS = frozenset({str, int, float, bool, type(None)})


def freeze(value: Any) -> Hashable:
    """A hashable form of ``value``: dicts ignore key order, lists and tuples keep order,
    sets ignore order, and scalars compare by Python equality (so ``1 == 1.0``)."""
    kind = type(value)
    if kind in _SCALARS:
        return value  # type: ignore[no-any-return]
    if kind is dict:
        return frozenset(
            [(key, item if type(item) in _SCALARS else freeze(item)) for key, item in value.items()]
        )
    if kind is list or kind is tuple:
        return tuple([item if type(item) in _SCALARS else freeze(item) for item in value])
    if isinstance(value, dict):
        return frozenset((key, freeze(item)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(freeze(item) for item in value)
    if isinstance(value, (set, frozenset)):
        return frozenset(freeze(item) for item in value)
    return value  # type: ignore[no-any-return]


def call_key(call: ToolCall) -> tuple[str, Hashable]:
    """A tool call as a hashable ``(name, frozen args)`` pair; a call whose arguments
    could not be parsed keys on its raw text, so it matches only the same raw text."""
    if call.unparsed_args is not None:
        return call.name, ("unparsed", call.unparsed_args)
    return call.name, freeze(call.args)


_PAIRWISE_LIMIT = 64
"""Up to this many calls, :func:`same_call_indices` compares the calls of each tool pairwise,
which is quicker than freezing every call; beyond it, freezing wins (it does not grow
quadratically)."""


def same_call_indices(calls: Sequence[ToolCall]) -> list[int]:
    """For each call, the index of the first call in ``calls`` that is the same call by
    :func:`call_key`: its own index unless an equal call comes before it.

    Arguments hold JSON values (as :class:`~tracegrade.model.messages.ToolCall` requires), and
    for JSON values ``==`` is exactly the equality of their frozen forms: dict key order
    ignored, list order kept, scalars by Python equality, a NaN equal only to itself. So
    the calls of one tool are compared with ``==`` directly. (Values JSON cannot hold could
    tell the two apart: a tuple against a list, or an unhashable object, which ``freeze``
    refuses.)
    """
    if len(calls) > _PAIRWISE_LIMIT:
        first: dict[tuple[str, Hashable], int] = {}
        return [first.setdefault(call_key(call), index) for index, call in enumerate(calls)]
    earlier_by_name: dict[str, list[tuple[Any, int]]] = {}
    indices = []
    for index, call in enumerate(calls):
        args = call.args if call.unparsed_args is None else ("unparsed", call.unparsed_args)
        earlier = earlier_by_name.get(call.name)
        if earlier is None:
            earlier_by_name[call.name] = [(args, index)]
            indices.append(index)
            continue
        for other_args, other_index in earlier:
            if other_args == args:
                indices.append(other_index)
                break
        else:
            earlier.append((args, index))
            indices.append(index)
    return indices


def _sorted_keys(value: dict[Any, Any]) -> list[Any]:
    try:
        return sorted(value)
    except TypeError:  # keys of mixed types
        return sorted(value, key=repr)


def _key_sorted(value: Any) -> Any:
    if isinstance(value, dict):
        ordered = {}
        for key in _sorted_keys(value):
            item = value[key]
            ordered[key] = item if type(item) in _SCALARS else _key_sorted(item)
        return ordered
    if isinstance(value, list):
        return [item if type(item) in _SCALARS else _key_sorted(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_key_sorted(item) for item in value)
    return value


def render_value(value: Any) -> str:
    """``value`` as Python's ``str()`` renders it, with nested dict keys sorted so that
    key order never matters (``75`` and ``"75"`` both render as ``75``)."""
    kind = type(value)
    if kind is str:
        return value  # type: ignore[no-any-return]
    if kind in _SCALARS:
        return str(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (dict, list, tuple)):
        return str(_key_sorted(value))
    return str(value)


class StringComparison(Protocol):
    """Anything that scores two strings from 0.0 to 1.0 (every string metric does)."""

    def similarity(self, response: str, reference: str) -> float: ...


MISSING: Any = type("Missing", (), {"__repr__": lambda self: "<missing>"})()
"""Stands for an argument the prediction lacks."""


@dataclass(frozen=True, slots=True)
class ArgumentVerdict:
    """How one reference argument fared: its key, both values and its score."""

    key: str
    predicted: Any
    reference: Any
    score: float

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready form; a missing predicted value is marked ``missing: true``."""
        if self.predicted is MISSING:
            return {"key": self.key, "reference": self.reference, "missing": True, "score": 0.0}
        return {
            "key": self.key,
            "predicted": self.predicted,
            "reference": self.reference,
            "score": self.score,
        }

    def as_detail(self) -> dict[str, Any]:
        """The form ``Score.details`` holds: :meth:`as_dict`, less both values when the
        score is full (``{"key", "score"}``); a score below 1.0 keeps them to explain it."""
        if self.score < 1.0 or self.predicted is MISSING:
            return self.as_dict()
        return {"key": self.key, "score": self.score}


@dataclass(frozen=True, slots=True)
class ArgumentComparison:
    """The score of a predicted argument dict against a reference one, with verdicts."""

    score: float
    verdicts: tuple[ArgumentVerdict, ...]
    extra_keys: tuple[str, ...] = ()


class ArgumentComparator(Protocol):
    """Scores predicted arguments against reference arguments, from 0.0 to 1.0."""

    def compare(
        self, predicted: Mapping[str, Any], reference: Mapping[str, Any]
    ) -> ArgumentComparison: ...


class StringArgumentComparator:
    """Mean over the reference's keys of a string metric applied to both values' string
    forms. A key the prediction lacks scores 0; extra predicted keys are listed but not
    penalised. Both dicts empty score 1.0; an empty reference against a non-empty
    prediction scores 0.0."""

    def __init__(self, metric: StringComparison) -> None:
        self.metric = metric

    def compare(
        self, predicted: Mapping[str, Any], reference: Mapping[str, Any]
    ) -> ArgumentComparison:
        extra = tuple(key for key in predicted if key not in reference)
        if not reference:
            return ArgumentComparison(0.0 if predicted else 1.0, (), extra)
        similarity = self.metric.similarity
        verdicts = []
        total = 0.0
        for key, expected in reference.items():
            if key in predicted:
                actual = predicted[key]
                value = similarity(render_value(actual), render_value(expected))
            else:
                actual, value = MISSING, 0.0
            total += value
            verdicts.append(ArgumentVerdict(key, actual, expected, value))
        return ArgumentComparison(total / len(reference), tuple(verdicts), extra)


ArgumentScore = tuple[float, list[dict[str, Any]], list[str]]
"""An argument comparison in ``details`` form: the score, each reference argument's
verdict as :meth:`ArgumentVerdict.as_detail` gives it, and the extra predicted keys."""


def exact_argument_score(
    predicted: Mapping[str, Any], reference: Mapping[str, Any]
) -> ArgumentScore:
    """What ``StringArgumentComparator(ExactMatch()).compare`` finds, in ``details`` form,
    without building its objects: a value scores 1.0 when it renders as the reference's.

    :func:`render_value` is ``str()`` with every dict's keys sorted, so for JSON values
    equal ``str()`` forms (the same values, keys in the same order) render alike without
    the sorting.
    """
    same_keys = predicted.keys() == reference.keys()
    extra = [] if same_keys else [key for key in predicted if key not in reference]
    if not reference:
        return (0.0 if predicted else 1.0), [], extra
    verdicts = []
    alike = 0
    for key, expected in reference.items():
        actual = predicted.get(key, MISSING)
        if actual is MISSING:
            verdicts.append({"key": key, "reference": expected, "missing": True, "score": 0.0})
        elif (
            actual == expected  # two strings render as themselves
            if type(actual) is str and type(expected) is str
            else str(actual) == str(expected) or render_value(actual) == render_value(expected)
        ):
            alike += 1
            verdicts.append({"key": key, "score": 1.0})
        else:
            verdicts.append({"key": key, "predicted": actual, "reference": expected, "score": 0.0})
    return alike / len(reference), verdicts, extra


class CallMatcher(Protocol):
    """How a metric compares one predicted call with one reference call: whether it is
    the same call, and how well its arguments match. Every tool-call metric that takes
    ``matching=`` reads calls through one of these (see :mod:`tracegrade.metrics.arguments`
    for the configurable one); :data:`EXACT_CALLS` is the rule of the metrics' defaults."""

    def same(self, predicted: ToolCall, reference: ToolCall) -> bool:
        """Whether ``predicted`` is the call ``reference`` names."""
        ...

    def score(self, predicted: ToolCall, reference: ToolCall) -> ArgumentScore:
        """How well the arguments of ``predicted`` match those of ``reference`` (0.0 when
        the names differ), with each reference argument's verdict in ``details`` form and
        the extra predicted keys."""
        ...


class ExactCalls:
    """The rule of the tool-call metrics' defaults: the same name and equal arguments by
    :func:`call_key` (dict key order ignored, list order kept, scalars by Python
    equality); arguments scored as :func:`exact_argument_score` scores them."""

    def same(self, predicted: ToolCall, reference: ToolCall) -> bool:
        return predicted.name == reference.name and call_key(predicted) == call_key(reference)

    def score(self, predicted: ToolCall, reference: ToolCall) -> ArgumentScore:
        if predicted.name != reference.name:
            return 0.0, [], []
        return exact_argument_score(predicted.args, reference.args)


EXACT_CALLS = ExactCalls()
"""The default :class:`CallMatcher`."""


def checked_matcher(matching: Any) -> CallMatcher | None:
    """``matching`` if it is None or a CallMatcher (``same`` and ``score``), else TypeError."""
    if matching is None:
        return None
    if isinstance(matching, type) or not all(
        callable(getattr(matching, method, None)) for method in ("same", "score")
    ):
        raise TypeError(
            "matching needs a CallMatcher such as ArgumentMatch(...) (with same() and "
            f"score() methods); got {matching!r}"
        )
    return matching  # type: ignore[no-any-return]


def best_pairing(scores: Sequence[Sequence[float]]) -> list[tuple[int, int]]:
    """Pair rows with columns of a square score matrix so the total score is largest.

    The Hungarian algorithm with potentials, O(n^3); returns ``(row, column)`` pairs in
    row order.
    """
    size = len(scores)
    if size == 0:
        return []
    if size == 1:
        return [(0, 0)]
    infinity = float("inf")
    # Minimise cost = -score. Arrays are 1-based; index 0 is the algorithm's sentinel.
    row_potential = [0.0] * (size + 1)
    column_potential = [0.0] * (size + 1)
    row_of_column = [0] * (size + 1)
    way = [0] * (size + 1)
    for row in range(1, size + 1):
        row_of_column[0] = row
        column = 0
        slack = [infinity] * (size + 1)
        used = [False] * (size + 1)
        while True:
            used[column] = True
            current_row = row_of_column[column]
            delta = infinity
            next_column = 0
            for candidate in range(1, size + 1):
                if used[candidate]:
                    continue
                cost = (
                    -scores[current_row - 1][candidate - 1]
                    - row_potential[current_row]
                    - column_potential[candidate]
                )
                if cost < slack[candidate]:
                    slack[candidate] = cost
                    way[candidate] = column
                if slack[candidate] < delta:
                    delta = slack[candidate]
                    next_column = candidate
            for candidate in range(size + 1):
                if used[candidate]:
                    row_potential[row_of_column[candidate]] += delta
                    column_potential[candidate] -= delta
                else:
                    slack[candidate] -= delta
            column = next_column
            if row_of_column[column] == 0:
                break
        while column:
            previous = way[column]
            row_of_column[column] = row_of_column[previous]
            column = previous
    pairs = [(row_of_column[column] - 1, column - 1) for column in range(1, size + 1)]
    return sorted(pairs)


def best_nonzero_pairing(scores: list[list[float]]) -> list[tuple[int, int]]:
    """Rows paired with columns of a (possibly not square) score matrix so that the total
    is largest; pairs scoring 0 are left out."""
    rows = len(scores)
    columns = len(scores[0]) if rows else 0
    size = max(rows, columns)
    square = [
        [scores[row][column] if row < rows and column < columns else 0.0 for column in range(size)]
        for row in range(size)
    ]
    return [
        (row, column)
        for row, column in best_pairing(square)
        if row < rows and column < columns and square[row][column] > 0.0
    ]


def common_subsequence(
    first: Sequence[Hashable], second: Sequence[Hashable]
) -> list[tuple[int, int]]:
    """Index pairs ``(i, j)`` of a longest common subsequence of two sequences."""
    rows, columns = len(first), len(second)
    lengths = [[0] * (columns + 1) for _ in range(rows + 1)]
    for i in range(rows - 1, -1, -1):
        for j in range(columns - 1, -1, -1):
            if first[i] == second[j]:
                lengths[i][j] = lengths[i + 1][j + 1] + 1
            else:
                lengths[i][j] = max(lengths[i + 1][j], lengths[i][j + 1])
    pairs: list[tuple[int, int]] = []
    i = j = 0
    while i < rows and j < columns:
        if first[i] == second[j]:
            pairs.append((i, j))
            i += 1
            j += 1
        elif lengths[i + 1][j] >= lengths[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def describe_calls(calls: Sequence[ToolCall], limit: int = 5) -> str:
    """A short human list of calls: ``search(q='x'), book(id=3)`` (cut after ``limit``)."""
    shown = ", ".join([pretty_call(c.name, c.args, c.unparsed_args) for c in calls[:limit]])
    if len(calls) > limit:
        shown += f" and {len(calls) - limit} more"
    return shown


def describe_failed_arguments(arguments: list[dict[str, Any]], extra_keys: list[str]) -> str:
    """The failing verdicts as ``key (rule)`` and the extra arguments, for a reason."""
    failed = [
        f"{verdict['key']} ({verdict.get('rule', 'score ' + format(verdict['score'], '.3g'))})"
        for verdict in arguments
        if verdict["score"] < 1.0
    ]
    if extra_keys:
        failed.append(f"extra arguments {', '.join(extra_keys)}")
    return ", ".join(failed)
