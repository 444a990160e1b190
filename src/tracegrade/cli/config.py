"""The project config file: defaults for ``tracegrade evaluate`` (and the judge cache's
limits, for ``tracegrade cache`` too).

The settings live in ``tracegrade.toml`` (at its top level) or in the ``[tool.tracegrade]``
table of ``pyproject.toml``. :func:`find_config` looks for one from a directory upwards,
stopping at the repository root; :func:`load_config` reads and checks it. Every problem is
a :class:`ConfigError` naming the file, the key and the rule broken.

The keys and the types and ranges of their values are described by a msgspec struct
(:class:`_Settings`); what it cannot say (suggestions for misspelt keys, metric specs,
sources, repeats, the names in the per-metric tables) is checked around it.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import msgspec

from ..backends.base import is_backend_url
from ..errors import TracegradeError

CONFIG_NAME = "tracegrade.toml"
PYPROJECT_NAME = "pyproject.toml"
_Progress = Literal["auto", "bar", "lines", "off"]
PROGRESS_MODES: tuple[str, ...] = get_args(_Progress)
_Provider = Literal["openai", "anthropic", "bedrock", "gemini"]
JUDGE_PROVIDERS: tuple[str, ...] = get_args(_Provider)
OWN_SOURCE = "tracegrade"
"""The ``source`` naming tracegrade's own JSONL, as opposed to a framework's format."""


class ConfigError(TracegradeError, ValueError):
    """A project config file cannot be read or breaks a rule.

    ``path`` is the file, ``key`` the dotted key at fault (``tool.tracegrade.concurrency``)
    or ``None`` for the whole file, and ``rule`` what is wrong.
    """

    def __init__(self, path: Path, key: str | None, rule: str) -> None:
        self.path = path
        self.key = key
        self.rule = rule
        where = f"{path}, key {key}" if key else str(path)
        super().__init__(f"{where}: {rule}")


@dataclass(frozen=True, kw_only=True)
class ProjectConfig:
    """Defaults for ``tracegrade evaluate``; ``None`` means the file does not set it.

    ``metrics`` are metric specs as on the command line (``"tool_correctness:threshold=0.8"``),
    ``fail_under`` the least mean per metric name, ``thresholds`` the pass threshold per
    metric name, and ``out`` is absolute (a relative path is taken from the file's folder).
    ``judge_cache_max_mb`` and ``judge_cache_max_age_days`` are the judge cache's limits.
    ``matching`` holds, per metric name, the table of its argument rule (read by
    :meth:`tracegrade.metrics.arguments.ArgumentMatch.from_dict`); ``tools`` a JSON file of
    the tools' definitions for ``tool_call_validity`` (absolute, as ``out``); ``prices``
    a prices file (absolute, as ``out``; see :mod:`tracegrade.pricing.files`).
    the tools' definitions for ``tool_call_validity`` (absolute, as ``out``).
    ``success``, ``max_cost`` and ``max_p90_latency`` are as ``--success``,
    ``--max-cost`` and ``--max-p90-latency``. ``criteria`` holds, per criterion name, the
    table of a :class:`~tracegrade.metrics.criteria.Criteria` (``criteria``, ``rubric``,
    ``include``, ``threshold``); :func:`criteria_metrics` builds them.
    """

    metrics: list[str] | None = None
    fail_under: dict[str, float] | None = None
    thresholds: dict[str, float] | None = None
    source: str | None = None
    judge_provider: str | None = None
    judge_model: str | None = None
    judge_base_url: str | None = None
    judge_timeout: float | None = None
    judge_max_attempts: int | None = None
    sample_deadline: float | None = None
    judge_cache_max_mb: float | None = None
    judge_cache_max_age_days: float | None = None
    concurrency: int | None = None
    out: Path | None = None
    progress: str | None = None
    pass_k: list[int] | None = None
    matching: dict[str, dict[str, Any]] | None = None
    tools: Path | None = None
    prices: Path | None = None
    references: Path | str | None = None
    """A references file (absolute, as ``out``), or a backend dataset's URL."""
    success: str | None = None
    max_cost: float | None = None
    max_p90_latency: float | None = None
    criteria: dict[str, dict[str, Any]] | None = None
    pull: dict[str, Any] | None = None
    """The ``[pull]`` table: filters of a backend input, keyed as
    :func:`tracegrade.pull`'s arguments (see :mod:`tracegrade.cli.pull_flags`)."""
    path: Path


def find_config(start: Path) -> Path | None:
    """The config file that applies in directory ``start``, or ``None``.

    From ``start`` up: in each directory ``tracegrade.toml`` wins, else a ``pyproject.toml``
    with a ``[tool.tracegrade]`` table; the first directory with either ends the search.
    A directory holding ``.git`` is the last one looked at, so a file outside the
    repository never applies. A ``pyproject.toml`` that is not valid TOML raises
    :class:`ConfigError`, since it may hold the settings.
    """
    for directory in (start.resolve(), *start.resolve().parents):
        own = directory / CONFIG_NAME
        if own.is_file():
            return own
        pyproject = directory / PYPROJECT_NAME
        if pyproject.is_file() and _tool_table(pyproject, _read_toml(pyproject)) is not None:
            return pyproject
        if (directory / ".git").exists():
            return None
    return None


def load_config(path: Path) -> ProjectConfig:
    """Read and check the config file at ``path``.

    A file named ``pyproject.toml`` holds the settings in its ``[tool.tracegrade]`` table;
    any other file (``tracegrade.toml``) holds them at its top level.
    """
    path = path.resolve()
    data = _read_toml(path)
    if path.name != PYPROJECT_NAME:
        return _parse(path, data, prefix="")
    table = _tool_table(path, data)
    if table is None:
        raise ConfigError(path, None, "has no [tool.tracegrade] table")
    return _parse(path, table, prefix="tool.tracegrade.")


def _read_toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):  # the parser loads only when a file is read
        import tomllib
    else:  # pragma: no cover (Python 3.10)
        import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

    try:
        with open(path, "rb") as file:
            data: dict[str, Any] = tomllib.load(file)
            return data
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(path, None, f"not valid TOML: {error}") from None
    except UnicodeDecodeError:
        raise ConfigError(path, None, "not valid TOML: the file is not UTF-8 text") from None
    except OSError as error:
        raise ConfigError(path, None, f"cannot be read: {error.strerror or error}") from None


def _tool_table(path: Path, data: dict[str, Any]) -> dict[str, Any] | None:
    """pyproject's ``[tool.tracegrade]`` table, or ``None`` when it has none."""
    tool = data.get("tool")
    if not isinstance(tool, dict) or "tracegrade" not in tool:
        return None
    table = tool["tracegrade"]
    if not isinstance(table, dict):
        raise ConfigError(path, "tool.tracegrade", f"must be a table, got {_got(table)}")
    return table


# -- the settings' shape -----------------------------------------------------------------

_Text = Annotated[str, msgspec.Meta(pattern=r"\S")]
"""A string with something besides whitespace in it."""
_YEAR = 365 * 24 * 3600
_Count = Annotated[int, msgspec.Meta(ge=1)]
_Seconds = Annotated[float, msgspec.Meta(gt=0, le=_YEAR)]
"""A positive number of seconds, up to a year (an integer becomes a float; NaN and
infinity are out of range)."""
_Fraction = Annotated[float, msgspec.Meta(ge=0, le=1)]
"""A number between 0 and 1 (an integer becomes a float; NaN is out of range)."""
_Positive = Annotated[float, msgspec.Meta(gt=0)]
"""A number above 0 (``inf`` included, NaN not)."""
_Limit = Annotated[float, msgspec.Meta(ge=0, le=sys.float_info.max)]
"""A finite number of at least 0."""


class _Settings(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """The config's keys (under their snake_case names) and what each may hold."""

    metrics: Annotated[list[_Text], msgspec.Meta(min_length=1)] | None = None
    fail_under: dict[str, _Fraction] | None = None
    thresholds: dict[str, _Fraction] | None = None
    source: _Text | None = None
    judge_provider: _Provider | None = None
    judge_model: _Text | None = None
    judge_base_url: _Text | None = None
    judge_timeout: _Seconds | None = None
    judge_max_attempts: _Count | None = None
    sample_deadline: _Seconds | None = None
    judge_cache_max_mb: _Positive | None = None
    judge_cache_max_age_days: _Positive | None = None
    concurrency: _Count | None = None
    out: _Text | None = None
    progress: _Progress | None = None
    pass_k: list[_Count] | None = None
    matching: dict[_Text, dict[str, Any]] | None = None
    tools: _Text | None = None
    prices: _Text | None = None
    references: _Text | None = None
    success: _Text | None = None
    max_cost: _Limit | None = None
    max_p90_latency: _Limit | None = None
    criteria: dict[_Text, dict[str, Any]] | None = None
    pull: dict[_Text, Any] | None = None


_FIELDS: tuple[str, ...] = _Settings.__struct_fields__
_SPELLINGS = {spelling: field for field in _FIELDS for spelling in (field, field.replace("_", "-"))}

_TEXT = "must be a non-empty string"
_COUNT = "must be an integer of at least 1"
_FRACTION = "must be a number between 0 and 1"
_SECONDS = "must be a positive number of seconds, up to a year"
_PER_METRIC = "must be a table of metric name = number, e.g. {tool_call_f1 = 0.9}"
_RULES: dict[str, tuple[str, str | None]] = {
    "metrics": (
        "must be a non-empty array of metric specs such as "
        '["tool_call_f1", "tool_correctness:threshold=0.8"]',
        _TEXT,
    ),
    "fail_under": (_PER_METRIC, _FRACTION),
    "thresholds": (_PER_METRIC, _FRACTION),
    "source": (_TEXT, None),
    "judge_provider": (
        "must be one of " + ", ".join(repr(name) for name in JUDGE_PROVIDERS),
        None,
    ),
    "judge_model": (_TEXT, None),
    "judge_base_url": (_TEXT, None),
    "judge_timeout": (_SECONDS, None),
    "judge_max_attempts": (_COUNT, None),
    "sample_deadline": (_SECONDS, None),
    "judge_cache_max_mb": ("must be a number of megabytes above 0 (inf for no limit)", None),
    "judge_cache_max_age_days": ("must be a number of days above 0 (inf for no limit)", None),
    "concurrency": (_COUNT, None),
    "out": (_TEXT, None),
    "tools": ("must be the path of a JSON file of tool definitions (for tool_call_validity)", None),
    "prices": ("must be the path of a prices file (TOML or JSON; see docs/behaviour.md)", None),
    "references": (
        "must be the path of a references file (JSON Lines; see docs/runner.md) or a "
        "backend dataset's URL (see docs/backends.md)",
        None,
    ),
    "pull": (
        'must be a table of filters for a backend input, e.g. [pull] since = "24h" '
        "(see docs/backends.md)",
        None,
    ),
    "success": ("must be the name of one of the run's metrics", None),
    "max_cost": ("must be a finite number of US dollars, at least 0", None),
    "max_p90_latency": ("must be a finite number of seconds, at least 0", None),
    "progress": ("must be one of " + ", ".join(repr(mode) for mode in PROGRESS_MODES), None),
    "pass_k": ("must be an array of integers of at least 1", _COUNT),
    "criteria": (
        "must be a table of criterion name = its table, e.g. "
        '[criteria.politeness] criteria = "The agent stays polite" (see docs/judge.md)',
        "must be a table of the criterion's options, e.g. "
        '{ criteria = "The agent stays polite", threshold = 1 }',
    ),
    "matching": (
        "must be a table of metric name = argument rule table, e.g. "
        '[matching.tool_call_accuracy] mode = "typed" (see docs/matching.md)',
        'must be a table of the argument rule\'s options, e.g. { mode = "typed" }',
    ),
}
"""The rule broken, per field: by the field's value, and by one of its items."""

_WHERE = re.compile(r" - at `\$\.(\w+)(?:\[(\d+|\.\.\.)\])?`$")
"""Where a msgspec.ValidationError found its fault: a field, and an index (or, in a
table, ``...`` for a value it does not name)."""


# -- reading the table --------------------------------------------------------------------


def _parse(path: Path, table: Mapping[str, Any], prefix: str) -> ProjectConfig:
    """The settings of ``table``, whose keys sit under ``prefix`` in the file."""
    root = _Key(path, prefix.rstrip("."))
    given: dict[str, str] = {}  # field -> the spelling the file uses
    for spelling in table:
        field = _SPELLINGS.get(spelling)
        if field is None:
            own_file = None if prefix else path.name
            raise root.child(spelling).error(_unknown_key(spelling, own_file))
        if field in given:
            raise root.child(spelling).error(
                f"set twice, as {given[field]!r} and {spelling!r}; keep one"
            )
        given[field] = spelling
    values = {field: table[spelling] for field, spelling in given.items()}
    try:
        settings = msgspec.convert(values, _Settings)
    except msgspec.ValidationError as error:
        fault = _fault(error)
        if fault is not None:
            # msgspec goes through the keys in the file's order and stops at the first
            # fault: the checks it cannot make of what comes before come first.
            _check_meaning(root, given, values, before=fault)
        raise _broken(root, given, values, fault, error) from None
    fields = msgspec.structs.asdict(settings)
    _check_meaning(root, given, fields)
    _check_names(root, given, fields)
    if settings.out is not None:
        fields["out"] = (path.parent / settings.out).resolve()
    if settings.tools is not None:
        fields["tools"] = (path.parent / settings.tools).resolve()
    if settings.prices is not None:
        fields["prices"] = (path.parent / settings.prices).resolve()
    if settings.references is not None and not is_backend_url(settings.references):
        fields["references"] = (path.parent / settings.references).resolve()
    return ProjectConfig(**fields, path=path)


@dataclass(frozen=True)
class _Key:
    """Where a value sits: the file and the dotted key, for error messages."""

    path: Path
    dotted: str

    def child(self, name: str | int) -> _Key:
        if isinstance(name, int):
            return _Key(self.path, f"{self.dotted}[{name}]")
        return _Key(self.path, f"{self.dotted}.{_bare(name)}" if self.dotted else _bare(name))

    def error(self, rule: str) -> ConfigError:
        return ConfigError(self.path, self.dotted or None, rule)


_Fault = tuple[str, int | str | None]
"""Where msgspec found a fault: the field, and the index of the item at fault, ``...``
for a value of a table, or ``None`` for the field's value itself."""


def _fault(error: msgspec.ValidationError) -> _Fault | None:
    where = _WHERE.search(str(error))
    if where is None:  # every key is known by now, so msgspec names one; just in case
        return None
    field, index = where.groups()
    return field, int(index) if index is not None and index.isdigit() else index


def _broken(
    root: _Key,
    given: dict[str, str],
    values: dict[str, Any],
    fault: _Fault | None,
    error: msgspec.ValidationError,
) -> ConfigError:
    """msgspec's complaint as the key at fault, the rule it breaks and what it holds."""
    if fault is None:
        return root.error(str(error))
    field, index = fault
    key = root.child(given[field])
    whole, item = _RULES[field]
    value = values[field]
    if index is None or item is None:
        return key.error(f"{whole}, got {_got(value)}")
    at = index if isinstance(index, int) else _first_not_a_fraction(value)
    if at is None:
        return key.error(str(error))
    return key.child(at).error(f"{item}, got {_got(value[at])}")


def _first_not_a_fraction(table: dict[str, Any]) -> str | None:
    """The first name in ``table`` whose value is not a number between 0 and 1 (msgspec
    says only that a table holds one)."""
    for name, value in table.items():
        try:
            msgspec.convert(value, _Fraction)
        except msgspec.ValidationError:
            return name
    return None


def _bare(name: str) -> str:
    """``name`` as TOML writes it in a dotted key: bare when it can be, else quoted."""
    if re.fullmatch(r"[A-Za-z0-9_-]+", name):
        return name
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _got(value: Any) -> str:
    """A value as an error message shows it: its TOML type, and itself when it is short."""
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, (int, float)):
        return repr(value)
    names: dict[type, str] = {list: "array", dict: "table"}
    return names.get(type(value), "date/time")


def _suggestion(word: str, known: list[str]) -> str:
    import difflib

    close = difflib.get_close_matches(word, known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _unknown_key(spelling: str, own_file: str | None) -> str:
    """Why ``spelling`` is refused; ``own_file`` names a file that is not pyproject.toml."""
    if spelling == "tool" and own_file:
        return (
            f"unknown key 'tool'; in {own_file} the settings go at the top level, "
            "without [tool.tracegrade]"
        )
    if "api_key" in spelling.replace("-", "_"):
        return (
            f"unknown key {spelling!r}; the judge's key is read only from "
            "$TRACEGRADE_JUDGE_API_KEY or $OPENAI_API_KEY, never from a file"
        )
    suggestion = _suggestion(spelling, list(_SPELLINGS))
    return f"unknown key {spelling!r}{suggestion}; known keys: {', '.join(sorted(_FIELDS))}"


# -- what the values mean ---------------------------------------------------------------


def _check_metrics(specs: list[str], key: _Key) -> None:
    """Each spec builds a metric, and no two metrics share a name."""
    from ..metrics.registry import MetricSpecError, build_metric

    seen: set[str] = set()
    for index, spec in enumerate(specs):
        try:
            name = build_metric(spec).name
        except MetricSpecError as error:
            raise key.child(index).error(str(error)) from None
        if name in seen:
            raise key.child(index).error(
                f"repeats the metric name {name!r}; give each a distinct name= option"
            )
        seen.add(name)


def _check_source(source: str, key: _Key) -> None:
    from ..convert import SOURCES

    known = [OWN_SOURCE, *SOURCES]
    if source not in known:
        raise key.error(
            f"unknown source {source!r}{_suggestion(source, known)}; known sources: "
            + ", ".join(known)
        )


def _check_pass_k(numbers: list[int], key: _Key) -> None:
    seen: set[int] = set()
    for index, number in enumerate(numbers):
        if number in seen:
            raise key.child(index).error(f"repeats {number}")
        seen.add(number)


def _check_matching(tables: dict[str, dict[str, Any]], key: _Key) -> None:
    """Each metric's table is an argument rule (its errors name the key path inside)."""
    from ..metrics.arguments import ArgumentMatch

    for name, table in tables.items():
        where = key.child(name)
        try:
            ArgumentMatch.from_dict(table, where=where.dotted)
        except (TypeError, ValueError) as error:
            inner, _, rule = str(error).partition(": ")
            raise ConfigError(where.path, inner, rule or str(error)) from None


CRITERION_KEYS = ("criteria", "rubric", "include", "threshold")
"""The keys of a ``[criteria.NAME]`` table."""


def criteria_metrics(tables: Mapping[str, Mapping[str, Any]], where: str = "criteria") -> list[Any]:
    """The :class:`~tracegrade.metrics.criteria.Criteria` of the config's ``[criteria.NAME]``
    tables, each named by its table; ValueError naming the table's dotted key (from
    ``where``) and the rule broken."""
    from ..metrics.criteria import Criteria
    from ..metrics.registry import METRICS

    built = []
    for name, table in tables.items():
        key = f"{where}.{_bare(name)}"
        if name in METRICS:
            raise ValueError(
                f"{key}: the name {name!r} is the metric {name}'s; give the criterion a name "
                "of its own"
            )
        for option in table:
            if option not in CRITERION_KEYS:
                raise ValueError(
                    f"{key}.{_bare(option)}: unknown key{_suggestion(option, list(CRITERION_KEYS))}"
                    f"; a criterion's keys are {', '.join(CRITERION_KEYS)}"
                )
        if "criteria" not in table:
            raise ValueError(f'{key}: needs criteria = "what a good conversation does"')
        for option in ("criteria", "rubric", "include", "threshold"):
            if option not in table:
                continue
            problem = _criterion_option_problem(option, table[option])
            if problem is not None:
                raise ValueError(f"{key}.{option}: {problem}, got {_got(table[option])}")
        try:
            built.append(Criteria(name=name, **table))
        except (TypeError, ValueError) as error:
            text = str(error)
            at = next((o for o in ("rubric", "include") if text.startswith(o)), None)
            if at is None:
                raise ValueError(f"{key}: {text}") from None
            raise ValueError(f"{key}.{at}: {text.removeprefix('include: ')}") from None
    return built


def _criterion_option_problem(option: str, value: Any) -> str | None:
    """What is wrong with the type of a criterion option's value, or None."""
    if option == "criteria" and not (isinstance(value, str) and value.strip()):
        return "must be non-empty text saying what a good conversation does"
    if option == "rubric" and not isinstance(value, dict):
        return 'must be a table of level = meaning, e.g. { 1 = "rude", 5 = "warm" }'
    if option == "include" and not (
        isinstance(value, list) and all(isinstance(item, str) for item in value)
    ):
        return 'must be an array of field names, e.g. ["conversation", "reference"]'
    if option == "threshold" and (
        isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1
    ):
        return _FRACTION
    return None


def _check_criteria(tables: dict[str, dict[str, Any]], key: _Key) -> None:
    """Each criterion's table builds a Criteria (its errors name the key inside)."""
    try:
        criteria_metrics(tables, key.dotted)
    except ValueError as error:
        inner, _, rule = str(error).partition(": ")
        raise ConfigError(key.path, inner, rule or str(error)) from None


PULL_KEYS = (
    "since",
    "until",
    "trace_ids",
    "session_ids",
    "tags",
    "metadata",
    "limit",
    "group_by",
)
"""The keys of the ``[pull]`` table."""


def _check_pull(table: dict[str, Any], key: _Key) -> None:
    """Each ``[pull]`` key is a filter, its value of the filter's type."""
    from ..backends.base import BackendError
    from ..backends.traces import point_in_time

    for name, value in table.items():
        where = key.child(name)
        if name not in PULL_KEYS:
            raise where.error(
                f"unknown key{_suggestion(name, list(PULL_KEYS))}; the pull's keys are "
                + ", ".join(PULL_KEYS)
            )
        if name in ("since", "until"):
            try:
                point_in_time(value, name)
            except BackendError as error:
                raise where.error(f"{error}, got {_got(value)}") from None
        elif name in ("trace_ids", "session_ids", "tags") and not (
            isinstance(value, list) and all(isinstance(v, str) and v for v in value)
        ):
            raise where.error(f"must be an array of non-empty strings, got {_got(value)}")
        elif name == "metadata" and not (
            isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
        ):
            raise where.error(
                f'must be a table of key = "value" strings, e.g. {{ env = "prod" }}, '
                f"got {_got(value)}"
            )
        elif name == "limit" and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise where.error(f"{_COUNT}, got {_got(value)}")
        elif name == "group_by" and value not in ("trace", "session"):
            raise where.error(f"must be 'trace' or 'session', got {_got(value)}")


_MEANING: dict[str, Callable[[Any, _Key], None]] = {
    "criteria": _check_criteria,
    "pull": _check_pull,
    "matching": _check_matching,
    "metrics": _check_metrics,
    "source": _check_source,
    "pass_k": _check_pass_k,
}
"""The checks of a field's value past its type and range."""


def _check_meaning(
    root: _Key, given: dict[str, str], values: dict[str, Any], before: _Fault | None = None
) -> None:
    """The :data:`_MEANING` checks, in the file's order; with ``before``, only of the
    fields before that fault, and of the items before the item at fault."""
    for field, spelling in given.items():
        check = _MEANING.get(field)
        if before is not None and field == before[0]:
            index = before[1]
            if check is not None and isinstance(index, int):
                check(values[field][:index], root.child(spelling))
            return
        if check is not None:
            check(values[field], root.child(spelling))


def _check_names(root: _Key, given: dict[str, str], fields: dict[str, Any]) -> None:
    """When the file lists metrics or criteria, its per-metric tables must name one of
    them, and no criterion may share a listed metric's name."""
    if fields["metrics"] is None and fields["criteria"] is None:
        return
    from ..metrics.registry import build_metric

    names = [build_metric(spec).name for spec in fields["metrics"] or []]
    for name in fields["criteria"] or {}:
        if name in names:
            raise (
                root.child(given["criteria"])
                .child(name)
                .error(
                    f"a metric in 'metrics' is named {name!r} too; give the criterion a name "
                    "of its own"
                )
            )
        names.append(name)
    for field in ("fail_under", "thresholds", "matching"):
        for name in fields[field] or {}:
            if name not in names:
                key = root.child(given[field]).child(name)
                raise key.error(
                    f"is not one of this file's metrics{_suggestion(name, names)}: "
                    + ", ".join(names)
                )
    success = fields["success"]
    if success is not None and success not in names:
        raise root.child(given["success"]).error(
            f"{success!r} is not one of this file's metrics{_suggestion(success, names)}: "
            + ", ".join(names)
        )
