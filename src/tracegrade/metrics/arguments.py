"""ArgumentMatch: the configurable rule by which tool-call metrics compare arguments.

One frozen value object, given to any tool-call metric as ``matching=``. It implements
:class:`~tracegrade.metrics.matching.CallMatcher`: :meth:`ArgumentMatch.same` says
whether a predicted call is the reference call, :meth:`ArgumentMatch.score` how well its
arguments match, each reference argument with the rule that decided it.

Modes (``mode``):

- ``"exact"``: the same JSON types and values (``1`` and ``1.0`` differ, ``True`` is
  never ``1``);
- ``"typed"``: JSON types compared, numbers by value (``1 == 1.0``), booleans never
  numbers; ``numeric_strings=True`` also lets ``"75"`` match ``75``;
- ``"normalised"``: strings compared after normalisation (``case``, ``whitespace``,
  ``punctuation``, ``unicode``), everything else as in typed;
- ``"names"``: arguments ignored, the same name is the same call;
- ``"subset"``: every predicted argument is a reference argument and matches; reference
  arguments may be absent (values compared by the ``values`` rule);
- ``"superset"``: every reference argument is present and matches; extra predicted
  arguments are allowed (values by the ``values`` rule).

Extra predicted arguments: in exact, typed, normalised and subset modes they make
:meth:`~ArgumentMatch.same` false, but :meth:`~ArgumentMatch.score` only lists them (as
ToolCallAccuracy lists them unscored today); nested extra keys fail their dict. The
key rule of a mode holds at every level of nested dicts.

References can say more inside their ``args``, in JSON-safe form: ``{"$any_of": [a, b]}``
(any one of these values) and ``{"$optional": v}`` (may be absent; compared with ``v``
when present); :func:`any_of` and :func:`optional` build them.

An argument rule may be judged: ``arguments={"city": semantic()}`` (see
:mod:`tracegrade.metrics.semantic`); :meth:`ArgumentMatch.asks_judge` says so.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from .matching import MISSING, ArgumentScore, StringComparison, best_pairing, render_value
from .semantic import RULE_NAME, SemanticRule, entering_tool
from .specs import MetricSpecError, build_from, options_of
from .strings import STRING_METRICS

if TYPE_CHECKING:
    from ..model.messages import ToolCall

Mode = Literal["exact", "typed", "normalised", "names", "subset", "superset"]
ValueRule = Literal["exact", "typed", "normalised"]
ListOrder = Literal["ordered", "unordered"]

_MODES = ("exact", "typed", "normalised", "names", "subset", "superset")
_VALUE_RULES = ("exact", "typed", "normalised")
_LIST_ORDERS = ("ordered", "unordered")
_UNICODE_FORMS = ("NFC", "NFD", "NFKC", "NFKD")
_ANY_OF = "$any_of"
_OPTIONAL = "$optional"
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")

Value = TypeVar("Value")


def any_of(*values: Any) -> dict[str, list[Any]]:
    """A reference value that accepts any one of ``values``: ``{"$any_of": [...]}``."""
    if not values:
        raise ValueError("any_of() needs at least one acceptable value")
    return {_ANY_OF: list(values)}


def optional(value: Any) -> dict[str, Any]:
    """A reference argument that may be absent, compared with ``value`` when present:
    ``{"$optional": value}``."""
    return {_OPTIONAL: value}


def _marker(value: Any) -> str | None:
    """``"$any_of"`` or ``"$optional"`` when ``value`` is that marker, else None."""
    if type(value) is dict and len(value) == 1:
        (key,) = value
        if key in (_ANY_OF, _OPTIONAL):
            return key  # type: ignore[no-any-return]
    return None


def _is_optional(value: Any) -> bool:
    return _marker(value) == _OPTIONAL


def _json_type(value: Any) -> str:
    """The JSON type name of ``value``: string, number, boolean, null, object or array."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    return type(value).__name__


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _where(path: str) -> str:
    """``path: `` for a value nested inside an argument (a top-level verdict already
    names its key), else nothing."""
    return f"{path}: " if "." in path or "[" in path else ""


class _FrozenMapping(Mapping[str, Value]):
    """A read-only, hashable mapping (so an ArgumentMatch is hashable and picklable)."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, Value]) -> None:
        self._items = dict(items)

    def __getitem__(self, key: str) -> Value:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(frozenset(self._items.items()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self._items) == dict(other.items())

    def __repr__(self) -> str:
        return repr(self._items)

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self._items,)


Outcome = tuple[float, str]
"""A value's score and the rule that decided it (a failure says why)."""


@dataclass(frozen=True)
class ArgumentMatch:
    """How predicted tool-call arguments are compared with a reference's (see the module).

    ``lists``: ``"ordered"`` (element by element) or ``"unordered"`` (as multisets,
    elements paired to maximise the total score). ``values``: the value rule of subset
    and superset modes. ``numeric_strings``: in typed and normalised comparisons a string
    holding a JSON number matches that number. ``case`` (fold), ``whitespace`` (strip and
    collapse runs), ``punctuation`` (drop) and ``unicode`` (a normal form, or None): how
    normalised comparisons prepare strings.

    ``tools`` gives a whole other rule for one tool's calls; ``arguments`` another rule
    for one argument path (dot notation: ``"filters.city"``): an ArgumentMatch, any
    string metric (``similarity(response, reference)``, applied to both values' string
    forms), :func:`~tracegrade.metrics.semantic.semantic` (an LLM judge decides) or a
    callable ``(predicted, reference) -> float | bool``. ``paths``: only these
    argument paths are compared. A nested dict or list scores its lowest part's score.
    """

    mode: Mode = "exact"
    lists: ListOrder = "ordered"
    values: ValueRule = "exact"
    numeric_strings: bool = False
    case: bool = True
    whitespace: bool = True
    punctuation: bool = False
    unicode: str | None = "NFKC"
    paths: tuple[str, ...] | None = None
    tools: Mapping[str, ArgumentMatch] = field(default_factory=dict)
    arguments: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_choice("mode", self.mode, _MODES)
        _check_choice("lists", self.lists, _LIST_ORDERS)
        _check_choice("values", self.values, _VALUE_RULES)
        if self.unicode is not None:
            _check_choice("unicode", self.unicode, _UNICODE_FORMS)
        if self.values != "exact" and self.mode not in ("subset", "superset"):
            raise ValueError(
                f"values={self.values!r} is read by the subset and superset modes only; "
                f"mode {self.mode!r} compares values by its own rule"
            )
        if self.numeric_strings and self._value_rule() == "exact":
            raise ValueError("numeric_strings needs typed or normalised value comparison")
        if self.paths is not None:
            if isinstance(self.paths, str) or not all(isinstance(p, str) for p in self.paths):
                raise TypeError("paths must be a sequence of argument paths (strings)")
            object.__setattr__(self, "paths", tuple(self.paths))
        for name, rule in self.tools.items():
            if not isinstance(rule, ArgumentMatch):
                raise TypeError(
                    f"tools[{name!r}] must be an ArgumentMatch, not {type(rule).__name__}"
                )
        for path, rule in self.arguments.items():
            _check_argument_rule(path, rule)
        object.__setattr__(self, "tools", _FrozenMapping(self.tools))
        object.__setattr__(self, "arguments", _FrozenMapping(self.arguments))
        judged = any(rule.asks_judge() for rule in self.tools.values()) or any(
            isinstance(rule, SemanticRule)
            or (isinstance(rule, ArgumentMatch) and rule.asks_judge())
            for rule in self.arguments.values()
        )
        object.__setattr__(self, "_judged", judged)

    def asks_judge(self) -> bool:
        """Whether a rule here (or in a tool's or an argument's own rule) is judged by
        an LLM (:func:`~tracegrade.metrics.semantic.semantic`)."""
        return bool(self.__dict__["_judged"])

    # CallMatcher

    def same(self, predicted: ToolCall, reference: ToolCall) -> bool:
        """Whether ``predicted`` is the call ``reference`` names: the same name, every
        compared argument at full score and no extra argument the mode forbids."""
        if predicted.name != reference.name:
            return False
        rule = self.tools.get(reference.name)
        if rule is not None:
            return rule.same(predicted, reference)
        value, _, extra = self.score(predicted, reference)
        return value == 1.0 and not (extra and self._forbids_extra())

    def score(self, predicted: ToolCall, reference: ToolCall) -> ArgumentScore:
        """The mean score of the compared reference arguments (0.0 when the names
        differ), each argument's verdict with its ``rule``, and the extra predicted keys."""
        if predicted.name != reference.name:
            return 0.0, [], []
        rule = self.tools.get(reference.name)
        if rule is not None:
            return rule.score(predicted, reference)
        if self.mode == "names":
            return 1.0, [], []
        if predicted.unparsed_args is not None or reference.unparsed_args is not None:
            return _unparsed_score(predicted, reference)
        if self.__dict__["_judged"]:  # judged pairs name their tool
            entering_tool(reference.name)
        if self.paths is not None:
            return self._score_paths(predicted.args, reference.args)
        return self._score_arguments(predicted.args, reference.args)

    # The argument dicts

    def _score_arguments(
        self, predicted: Mapping[str, Any], reference: Mapping[str, Any]
    ) -> ArgumentScore:
        extra = [key for key in predicted if key not in reference]
        verdicts = [
            self._verdict(key, predicted.get(key, MISSING), expected)
            for key, expected in reference.items()
        ]
        return self._mean(verdicts, extra), verdicts, extra

    def _score_paths(
        self, predicted: Mapping[str, Any], reference: Mapping[str, Any]
    ) -> ArgumentScore:
        """Only the argument paths in ``paths``; nothing else counts, extra keys included.
        A path the reference lacks is not compared."""
        verdicts = []
        for path in self.paths or ():
            expected = _lookup(reference, path)
            if expected is not MISSING:
                verdicts.append(self._verdict(path, _lookup(predicted, path), expected))
        return self._mean(verdicts, []), verdicts, []

    def _mean(self, verdicts: list[dict[str, Any]], extra: list[str]) -> float:
        """The mean score of the counted verdicts; with none counted, 1.0 unless the
        prediction has extra arguments the mode forbids (then 0.0, as today's rule for
        an empty reference)."""
        counted = [verdict["score"] for verdict in verdicts if not verdict.get("absent")]
        if not counted:
            return 0.0 if extra and self._forbids_extra() else 1.0
        return float(sum(counted)) / len(counted)

    def _verdict(self, key: str, actual: Any, expected: Any) -> dict[str, Any]:
        """One reference argument's verdict in ``details`` form, with its ``rule``."""
        if actual is MISSING:
            if _is_optional(expected) or self.mode == "subset":
                return {"key": key, "absent": True, "score": 1.0, "rule": "optional: absent"}
            return {
                "key": key,
                "reference": expected,
                "missing": True,
                "score": 0.0,
                "rule": "missing",
            }
        value, rule = self._compare(actual, expected, key)
        if value >= 1.0:
            return {"key": key, "score": value, "rule": rule}
        return {
            "key": key,
            "predicted": actual,
            "reference": expected,
            "score": value,
            "rule": rule,
        }

    # One value

    def _compare(self, actual: Any, expected: Any, path: str) -> Outcome:
        """Score ``actual`` against the reference value ``expected`` at ``path``."""
        marker = _marker(expected)
        if marker == _ANY_OF:
            return self._compare_any_of(actual, expected[_ANY_OF], path)
        if marker == _OPTIONAL:
            return self._compare(actual, expected[_OPTIONAL], path)
        rule = self.arguments.get(path)
        if rule is not None:
            return _compare_by(rule, actual, expected, path)
        return self._compare_plain(actual, expected, path)

    def _compare_any_of(self, actual: Any, choices: Any, path: str) -> Outcome:
        if not isinstance(choices, list) or not choices:
            raise ValueError(f"{path}: {_ANY_OF} needs a non-empty list of values")
        best: Outcome = (0.0, "")
        for choice in choices:
            outcome = self._compare(actual, choice, path)
            if outcome[0] > best[0]:
                best = outcome
            if best[0] >= 1.0:
                return best[0], f"one of {len(choices)}: {best[1]}"
        if best[0] > 0.0:
            return best[0], f"best of {len(choices)}: {best[1]}"
        return 0.0, f"{_where(path)}{actual!r} is not one of {choices!r}"

    def _compare_plain(self, actual: Any, expected: Any, path: str) -> Outcome:
        if self.mode == "names":
            return 1.0, "names: not compared"
        if type(expected) is dict and type(actual) is dict:
            return self._compare_dicts(actual, expected, path)
        if type(expected) is list and type(actual) is list:
            if self.lists == "unordered":
                return self._compare_unordered(actual, expected, path)
            return self._compare_ordered(actual, expected, path)
        return self._compare_scalars(actual, expected, path)

    def _compare_dicts(
        self, actual: dict[str, Any], expected: dict[str, Any], path: str
    ) -> Outcome:
        lowest: Outcome = (1.0, self._value_rule())
        for key, value in expected.items():
            where = _child(path, key)
            if key not in actual:
                if _is_optional(value) or self.mode == "subset":
                    continue
                return 0.0, f"{where}: missing"
            outcome = self._compare(actual[key], value, where)
            if outcome[0] < lowest[0]:
                lowest = outcome
        if self._forbids_extra():
            extra = [key for key in actual if key not in expected]
            if extra:
                return 0.0, f"{_child(path, extra[0])}: extra key ({self.mode})"
        return lowest

    def _compare_ordered(self, actual: list[Any], expected: list[Any], path: str) -> Outcome:
        if len(actual) != len(expected):
            return 0.0, f"{_where(path)}{len(actual)} items where the reference has {len(expected)}"
        lowest: Outcome = (1.0, f"{self._value_rule()}, lists ordered")
        for index, (item, wanted) in enumerate(zip(actual, expected, strict=True)):
            outcome = self._compare(item, wanted, f"{path}[{index}]")
            if outcome[0] < lowest[0]:
                lowest = outcome
        return lowest

    def _compare_unordered(self, actual: list[Any], expected: list[Any], path: str) -> Outcome:
        """The lists as multisets: elements paired to maximise the total score."""
        if len(actual) != len(expected):
            return 0.0, f"{_where(path)}{len(actual)} items where the reference has {len(expected)}"
        outcomes = [
            [
                self._compare(item, wanted, f"{path}[{column}]")
                for column, wanted in enumerate(expected)
            ]
            for item in actual
        ]
        pairs = best_pairing([[outcome[0] for outcome in row] for row in outcomes])
        lowest: Outcome = (1.0, f"{self._value_rule()}, lists unordered")
        for row, column in pairs:
            if outcomes[row][column][0] < lowest[0]:
                lowest = outcomes[row][column]
        if lowest[0] < 1.0:
            return lowest[
                0
            ], f"{_where(path)}no pairing of the items matches (unordered): {lowest[1]}"
        return lowest

    def _compare_scalars(self, actual: Any, expected: Any, path: str) -> Outcome:
        rule = self._value_rule()
        if rule == "exact":
            alike = type(actual) is type(expected) and actual == expected
        elif rule == "typed" or not (isinstance(actual, str) and isinstance(expected, str)):
            alike = self._typed_equal(actual, expected)
        else:
            alike = self._normalise(actual) == self._normalise(expected)
        if alike:
            return 1.0, rule
        kinds = _json_type(actual), _json_type(expected)
        if kinds[0] != kinds[1]:
            shown = f"{actual!r} ({kinds[0]}) != {expected!r} ({kinds[1]})"
            return 0.0, f"{_where(path)}{rule}: {shown}"
        shown = f"{actual!r} != {expected!r}"
        if type(actual) is not type(expected):  # 1.0 against 1 in exact mode
            shown += f" ({type(actual).__name__} vs {type(expected).__name__})"
        return 0.0, f"{_where(path)}{rule}: {shown}"

    def _typed_equal(self, actual: Any, expected: Any) -> bool:
        """Typed equality of two values that are not both dicts or both lists."""
        kind, other = _json_type(actual), _json_type(expected)
        if kind == other:
            return bool(actual == expected)
        if self.numeric_strings and {kind, other} == {"string", "number"}:
            text, number = (actual, expected) if kind == "string" else (expected, actual)
            return _NUMBER.fullmatch(text.strip()) is not None and float(text) == number
        return False

    def _normalise(self, text: str) -> str:
        if self.unicode is not None:
            text = unicodedata.normalize(cast(Any, self.unicode), text)
        if self.case:
            text = text.casefold()
        if self.punctuation:
            text = "".join(c for c in text if not unicodedata.category(c).startswith("P"))
        if self.whitespace:
            text = " ".join(text.split())
        return text

    def _value_rule(self) -> str:
        if self.mode in ("subset", "superset"):
            return self.values
        return self.mode

    def _forbids_extra(self) -> bool:
        return self.mode not in ("superset", "names")

    # The config file

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "matching") -> ArgumentMatch:
        """An ArgumentMatch from a config table: every field by name; ``tools`` a table
        of tables; ``arguments`` a table whose values are tables (ArgumentMatch) or
        metric specs as ``tracegrade evaluate -m`` takes them (string metrics only).
        Errors name the key path (``where`` is the table's own)."""
        return _from_dict(cls, data, where)

    def to_dict(self) -> dict[str, Any]:
        """The fields that differ from the defaults, as :meth:`from_dict` reads them;
        TypeError for a callable argument rule (those are Python-only)."""
        return _to_dict(self)


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")


def _check_argument_rule(path: str, rule: Any) -> None:
    if isinstance(rule, (ArgumentMatch, SemanticRule)):
        return
    if isinstance(rule, type) or not callable(getattr(rule, "similarity", rule)):
        raise TypeError(
            f"arguments[{path!r}] must be an ArgumentMatch, a string metric object or a "
            f"callable (predicted, reference) -> float | bool; got {rule!r}"
        )


def _compare_by(rule: Any, actual: Any, expected: Any, path: str) -> Outcome:
    """Score a value by the override ``rule`` given for its path."""
    if isinstance(rule, ArgumentMatch):
        return rule._compare(actual, expected, "")
    if isinstance(rule, SemanticRule):
        return rule.compare(actual, expected, path)
    similarity = getattr(rule, "similarity", None)
    if similarity is not None:
        value = float(similarity(render_value(actual), render_value(expected)))
        return value, f"{_where(path)}{_rule_name(rule)} {value:.3g}"
    result = rule(actual, expected)
    value = float(result) if isinstance(result, (bool, int, float)) else math.nan
    if not 0.0 <= value <= 1.0:
        raise ValueError(
            f"{path}: the argument rule {_rule_name(rule)} returned {result!r}; "
            "it must return a bool or a number from 0 to 1"
        )
    return value, f"{_where(path)}{_rule_name(rule)} {value:.3g}"


def _rule_name(rule: Any) -> str:
    name = getattr(rule, "name", None) or getattr(rule, "__name__", None)
    return str(name) if name else type(rule).__name__


def _lookup(arguments: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted ``path`` (an ``$optional`` marker on the way is read
    through), or MISSING."""
    value: Any = arguments
    for key in path.split("."):
        if _is_optional(value):
            value = value[_OPTIONAL]
        if not isinstance(value, Mapping) or key not in value:
            return MISSING
        value = value[key]
    return value


def _unparsed_score(predicted: ToolCall, reference: ToolCall) -> ArgumentScore:
    """Arguments that were not JSON match only the same raw text."""
    if predicted.unparsed_args == reference.unparsed_args:
        return 1.0, [{"key": "<arguments>", "score": 1.0, "rule": "same raw text"}], []
    verdict = {
        "key": "<arguments>",
        "predicted": predicted.unparsed_args or predicted.args,
        "reference": reference.unparsed_args or reference.args,
        "score": 0.0,
        "rule": "arguments are not JSON: only the same raw text matches",
    }
    return 0.0, [verdict], []


# from_dict / to_dict

_FLAGS = ("numeric_strings", "case", "whitespace", "punctuation")
_CHOICES = {"mode": _MODES, "lists": _LIST_ORDERS, "values": _VALUE_RULES}


def _from_dict(cls: type[ArgumentMatch], data: Any, where: str) -> ArgumentMatch:
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: expected a table of matching options, got {data!r}")
    known = {item.name for item in fields(cls)}
    options: dict[str, Any] = {}
    for key, value in data.items():
        at = f"{where}.{key}"
        if key not in known:
            raise ValueError(f"{at}: unknown option; options are {', '.join(sorted(known))}")
        options[key] = _read_option(cls, key, value, at)
    try:
        return cls(**options)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{where}: {error}") from None


def _read_option(cls: type[ArgumentMatch], key: str, value: Any, at: str) -> Any:
    if key in _CHOICES:
        if value not in _CHOICES[key]:
            raise ValueError(f"{at}: expected one of {', '.join(_CHOICES[key])}; got {value!r}")
        return value
    if key in _FLAGS:
        if not isinstance(value, bool):
            raise ValueError(f"{at}: expected true or false, got {value!r}")
        return value
    if key == "unicode":
        if value is False or value == "none":
            return None
        if value not in _UNICODE_FORMS:
            raise ValueError(f"{at}: expected one of {', '.join(_UNICODE_FORMS)} or 'none'")
        return value
    if key == "paths":
        if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
            raise ValueError(f"{at}: expected a list of argument paths, got {value!r}")
        return tuple(value)
    if not isinstance(value, Mapping):
        raise ValueError(f"{at}: expected a table, got {value!r}")
    if key == "tools":
        return {name: _from_dict(cls, rule, f"{at}.{name}") for name, rule in value.items()}
    return {path: _read_argument_rule(cls, rule, f"{at}.{path}") for path, rule in value.items()}


def _read_argument_rule(cls: type[ArgumentMatch], rule: Any, at: str) -> Any:
    if rule == RULE_NAME:
        return SemanticRule()
    if isinstance(rule, Mapping) and "rule" in rule:
        return _read_semantic(rule, at)
    if isinstance(rule, str):
        try:
            metric = build_from(rule, STRING_METRICS)
        except MetricSpecError as error:
            raise ValueError(f"{at}: {error}; or 'semantic' (an LLM judges)") from None
        if not callable(getattr(metric, "similarity", None)):
            raise ValueError(f"{at}: {rule!r} is not a string metric")
        return metric
    return _from_dict(cls, rule, at)


def _read_semantic(table: Mapping[str, Any], at: str) -> SemanticRule:
    """A rule written as a table: ``{rule = "semantic", instructions = "..."}``."""
    if table["rule"] != RULE_NAME:
        raise ValueError(f"{at}.rule: the only rule written as a table is {RULE_NAME!r}")
    unknown = sorted(set(table) - {"rule", "instructions"})
    if unknown:
        raise ValueError(f"{at}.{unknown[0]}: unknown option; options are instructions, rule")
    instructions = table.get("instructions")
    if instructions is not None and not (isinstance(instructions, str) and instructions.strip()):
        raise ValueError(f"{at}.instructions: expected non-empty text, got {instructions!r}")
    return SemanticRule(instructions)


def _to_dict(match: ArgumentMatch) -> dict[str, Any]:
    default = ArgumentMatch()
    data: dict[str, Any] = {}
    for item in fields(match):
        value = getattr(match, item.name)
        if value == getattr(default, item.name):
            continue
        if item.name == "paths":
            data["paths"] = list(value)
        elif item.name == "unicode" and value is None:
            data["unicode"] = "none"
        elif item.name == "tools":
            data["tools"] = {name: _to_dict(rule) for name, rule in value.items()}
        elif item.name == "arguments":
            data["arguments"] = {path: _argument_rule_dict(path, r) for path, r in value.items()}
        else:
            data[item.name] = value
    return data


def _argument_rule_dict(path: str, rule: Any) -> Any:
    if isinstance(rule, ArgumentMatch):
        return _to_dict(rule)
    if isinstance(rule, SemanticRule):
        return rule.to_config()
    if callable(getattr(rule, "similarity", None)):
        return _metric_spec(path, rule)
    raise TypeError(f"arguments[{path!r}]: a callable cannot be written to a config file")


def _metric_spec(path: str, metric: StringComparison) -> str:
    """The registry spec of a string metric: ``name`` or ``name:key=value,...``."""
    import inspect

    kind: Any = type(metric)
    names = [name for name, registered in STRING_METRICS.items() if registered is kind]
    if not names:
        raise TypeError(f"arguments[{path!r}]: {type(metric).__name__} is not a registered metric")
    options = []
    for key, parameter in options_of(kind).items():
        value = getattr(metric, key, parameter.default)
        if key == "name" or parameter.default is inspect.Parameter.empty:
            continue
        if value != parameter.default and value is not None:
            options.append(f"{key}={getattr(value, 'value', value)}")
    return names[0] + (":" + ",".join(options) if options else "")
