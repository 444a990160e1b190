"""The project config file: defaults for ``tracegrade evaluate``.

The settings live in ``tracegrade.toml`` (at its top level) or in the ``[tool.tracegrade]``
table of ``pyproject.toml``. :func:`find_config` looks for one from a directory upwards,
stopping at the repository root; :func:`load_config` reads and checks it. Every problem is
a :class:`ConfigError` naming the file, the key and the rule broken.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import TracegradeError

CONFIG_NAME = "tracegrade.toml"
PYPROJECT_NAME = "pyproject.toml"
PROGRESS_MODES = ("auto", "bar", "lines", "off")
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
    """

    metrics: list[str] | None = None
    fail_under: dict[str, float] | None = None
    thresholds: dict[str, float] | None = None
    source: str | None = None
    judge_model: str | None = None
    judge_base_url: str | None = None
    concurrency: int | None = None
    out: Path | None = None
    progress: str | None = None
    pass_k: list[int] | None = None
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


# -- checking values --------------------------------------------------------------------


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
        return ConfigError(self.path, self.dotted, rule)


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


def _text(value: Any, key: _Key) -> str:
    if not isinstance(value, str) or not value.strip():
        raise key.error(f"must be a non-empty string, got {_got(value)}")
    return value


def _count(value: Any, key: _Key) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise key.error(f"must be an integer of at least 1, got {_got(value)}")
    return value


def _fraction(value: Any, key: _Key) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise key.error(f"must be a number between 0 and 1, got {_got(value)}")
    return float(value)


def _metrics(value: Any, key: _Key) -> list[str]:
    """Metric specs, each checked by building the metric it names."""
    from ..metrics.registry import MetricSpecError, build_metric

    if not isinstance(value, list) or not value:
        raise key.error(
            "must be a non-empty array of metric specs such as "
            f'["tool_call_f1", "tool_correctness:threshold=0.8"], got {_got(value)}'
        )
    seen: set[str] = set()
    for index, item in enumerate(value):
        spec = _text(item, key.child(index))
        try:
            name = build_metric(spec).name
        except MetricSpecError as error:
            raise key.child(index).error(str(error)) from None
        if name in seen:
            raise key.child(index).error(
                f"repeats the metric name {name!r}; give each a distinct name= option"
            )
        seen.add(name)
    return list(value)


def _per_metric(value: Any, key: _Key) -> dict[str, float]:
    if not isinstance(value, dict):
        raise key.error(
            f"must be a table of metric name = number, e.g. {{tool_call_f1 = 0.9}}, "
            f"got {_got(value)}"
        )
    return {name: _fraction(number, key.child(name)) for name, number in value.items()}


def _source(value: Any, key: _Key) -> str:
    from ..convert import SOURCES

    known = [OWN_SOURCE, *SOURCES]
    text = _text(value, key)
    if text not in known:
        raise key.error(
            f"unknown source {text!r}{_suggestion(text, known)}; known sources: " + ", ".join(known)
        )
    return text


def _out(value: Any, key: _Key) -> Path:
    return (key.path.parent / _text(value, key)).resolve()


def _progress(value: Any, key: _Key) -> str:
    if not isinstance(value, str) or value not in PROGRESS_MODES:
        modes = ", ".join(repr(mode) for mode in PROGRESS_MODES)
        raise key.error(f"must be one of {modes}, got {_got(value)}")
    return value


def _pass_k(value: Any, key: _Key) -> list[int]:
    if not isinstance(value, list):
        raise key.error(f"must be an array of integers of at least 1, got {_got(value)}")
    numbers: list[int] = []
    for index, item in enumerate(value):
        number = _count(item, key.child(index))
        if number in numbers:
            raise key.child(index).error(f"repeats {number}")
        numbers.append(number)
    return numbers


_FIELDS: dict[str, Callable[[Any, _Key], Any]] = {
    "metrics": _metrics,
    "fail_under": _per_metric,
    "thresholds": _per_metric,
    "source": _source,
    "judge_model": _text,
    "judge_base_url": _text,
    "concurrency": _count,
    "out": _out,
    "progress": _progress,
    "pass_k": _pass_k,
}
_SPELLINGS = {spelling: field for field in _FIELDS for spelling in (field, field.replace("_", "-"))}


# -- the table ---------------------------------------------------------------------------


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
    values = {
        field: _FIELDS[field](table[spelling], root.child(spelling))
        for field, spelling in given.items()
    }
    _check_names(root, given, values)
    return ProjectConfig(**values, path=path)


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


def _check_names(root: _Key, given: dict[str, str], values: dict[str, Any]) -> None:
    """When the file lists metrics, its per-metric tables must name metrics from the list."""
    if "metrics" not in values:
        return
    from ..metrics.registry import build_metric

    names = [build_metric(spec).name for spec in values["metrics"]]
    for field in ("fail_under", "thresholds"):
        for name in values.get(field) or {}:
            if name not in names:
                key = root.child(given[field]).child(name)
                raise key.error(
                    f"is not one of this file's metrics{_suggestion(name, names)}: "
                    + ", ".join(names)
                )
