"""Structure-aware mutations of JSON data: one change at one place of a seed.

A :class:`Mutation` names the place (a path of dict keys and list indexes from the
seed's root), its kind and, where the kind needs one, the value put there. Kinds fall
in two families, which the oracle treats differently:

- *value* kinds replace the value at the path and keep the structure around it: a value
  of another type, text made odd, a number made extreme, a value nested very deeply;
- *structure* kinds change the shape: a key removed or renamed, a list item removed,
  duplicated or moved, a container emptied or reversed.

:func:`mutations_of` draws mutations of a seed with a seeded random generator, so that
the same seed and the same generator state give the same mutants.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

Path = tuple[str | int, ...]

DEEP = 10_000
"""How deeply the deep kinds nest their value (far beyond any documented limit)."""
HUGE_TEXT = 200_000
"""The length of the text the ``text:huge`` kind writes."""


def deep_list(depth: int = DEEP) -> list[Any]:
    """``[[[...]]]``, ``depth`` lists deep, built without recursion."""
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def deep_object(depth: int = DEEP) -> dict[str, Any]:
    """``{"a": {"a": ...}}``, ``depth`` objects deep, built without recursion."""
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def deep_text(depth: int = DEEP) -> str:
    """JSON text of ``depth`` nested arrays, for fields a converter parses as JSON."""
    return "[" * depth + "]" * depth


# Non-empty replacements: a converter that reads one as nothing has lost something.
_TYPE_VALUES: dict[str, Any] = {
    "null": None,
    "bool": True,
    "int": 7,
    "float": 2.5,
    "str": "fuzz",
    "list": ["fuzz"],
    "object": {"fuzz": 1},
}
_ODD_TEXT = "\u202eodd\u2028text\ufeff \U0001d518\u0301"
VALUE_KINDS = (
    *(f"type:{name}" for name in _TYPE_VALUES),
    "deep:list",
    "deep:object",
    "deep:json-text",
    "text:surrogate",
    "text:nul",
    "text:huge",
    "text:odd",
    "text:empty",
    "number:huge",
    "number:negative",
    "number:float",
)
STRUCTURE_KINDS = (
    "key:remove",
    "key:rename",
    "item:remove",
    "item:duplicate",
    "item:move",
    "container:empty",
    "container:reverse",
)
EMPTYING_KINDS = frozenset({"type:null", "text:empty", "container:empty"})
"""Value kinds whose new value says nothing (so a message may lose its content by them)."""


@dataclass(frozen=True)
class Mutation:
    """One change: ``kind`` at ``path`` (see the module's docstring)."""

    path: Path
    kind: str

    @property
    def is_value(self) -> bool:
        """Does it replace one value and keep the structure around it?"""
        return self.kind in VALUE_KINDS

    @property
    def keeps_count(self) -> bool:
        """Does every message stay? A value kind that empties text or a container may take
        the message that held only it (nothing is lost with it)."""
        return self.is_value and self.kind not in ("text:empty", "container:empty")

    @property
    def writes_text(self) -> bool:
        """Is the new value text?"""
        return self.kind.startswith("text:") or self.kind in ("type:str", "deep:json-text")

    @property
    def says_something(self) -> bool:
        """Is the new value a value (not null, empty or gone)?"""
        return self.is_value and self.kind not in EMPTYING_KINDS

    def describe(self) -> str:
        return f"{self.kind} at {show_path(self.path)}"

    def apply(self, seed: Any) -> Any:
        """A mutated deep copy of ``seed`` (the seed is left as it was)."""
        mutant = copy.deepcopy(seed)
        *above, last = self.path
        parent = mutant
        for step in above:
            parent = parent[step]
        value = parent[last]
        if self.kind == "key:remove":
            del parent[last]
        elif self.kind == "key:rename":
            renamed = {
                (f"{key}_renamed" if key == last else key): item for key, item in parent.items()
            }
            parent.clear()
            parent.update(renamed)
        elif self.kind == "item:remove":
            del parent[last]
        elif self.kind == "item:duplicate":
            parent.insert(last, copy.deepcopy(value))
        elif self.kind == "item:move":
            other = last + 1 if last + 1 < len(parent) else last - 1
            parent[last], parent[other] = parent[other], parent[last]
        else:
            parent[last] = replacement(self.kind, value)
        return mutant


def replacement(kind: str, value: Any) -> Any:
    """The value a value or container kind puts in place of ``value``."""
    family, _, name = kind.partition(":")
    if family == "type":
        return copy.deepcopy(_TYPE_VALUES[name])
    if kind == "deep:list":
        return deep_list()
    if kind == "deep:object":
        return deep_object()
    if kind == "deep:json-text":
        return deep_text()
    if kind == "text:surrogate":
        return value[: len(value) // 2] + "\ud800" + value[len(value) // 2 :]
    if kind == "text:nul":
        return value + "\x00"
    if kind == "text:huge":
        return (value or "x") * (HUGE_TEXT // max(len(value), 1) + 1)
    if kind == "text:odd":
        return _ODD_TEXT + value
    if kind == "text:empty":
        return ""
    if kind == "number:huge":
        return 10**30 if isinstance(value, int) else 1e308
    if kind == "number:negative":
        return -value - 1
    if kind == "number:float":
        return value + 0.5
    if kind == "container:empty":
        return type(value)()
    if kind == "container:reverse":
        return list(reversed(value))
    raise ValueError(f"unknown mutation kind {kind!r}")


def kinds_for(value: Any, parent: Any) -> list[str]:
    """The kinds that apply at a place holding ``value`` inside ``parent``."""
    kinds = [f"type:{name}" for name in _TYPE_VALUES if type_name(value) != name]
    kinds += ["deep:list", "deep:object", "deep:json-text"]
    if isinstance(value, str):
        kinds += ["text:huge", "text:odd", "text:nul", "text:surrogate"]
        if value:
            kinds.append("text:empty")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        kinds += ["number:huge", "number:negative"]
        if isinstance(value, int):
            kinds.append("number:float")
    elif isinstance(value, (list, dict)) and value:
        kinds.append("container:empty")
        if isinstance(value, list) and len(value) > 1:
            kinds.append("container:reverse")
    if isinstance(parent, dict):
        kinds += ["key:remove", "key:rename"]
    else:
        kinds += ["item:remove", "item:duplicate"]
        if len(parent) > 1:
            kinds.append("item:move")
    return kinds


def type_name(value: Any) -> str:
    """The JSON type of ``value``, named as the ``type:`` kinds name it."""
    if value is None:
        return "null"
    for kind, name in ((bool, "bool"), (int, "int"), (float, "float"), (str, "str")):
        if isinstance(value, kind):
            return name
    return "list" if isinstance(value, list) else "object"


def places(seed: Any) -> Iterator[tuple[Path, Any, Any]]:
    """``(path, value, parent)`` of every place below the root of ``seed``, depth first,
    without recursion."""
    stack: list[tuple[Path, Any]] = [((), seed)]
    while stack:
        path, node = stack.pop()
        if not isinstance(node, (dict, list)):
            continue
        children = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in reversed(list(children)):
            yield (*path, key), value, node
            stack.append(((*path, key), value))


def mutations_of(seed: Any, rng: random.Random, count: int) -> list[Mutation]:
    """``count`` mutations of ``seed``, each a place drawn at random and a kind drawn from
    those that apply there (a seed with no place gives none)."""
    found = list(places(seed))
    if not found:
        return []
    drawn = []
    for _ in range(count):
        path, value, parent = rng.choice(found)
        drawn.append(Mutation(path, rng.choice(kinds_for(value, parent))))
    return drawn


def show_path(path: Path) -> str:
    """A path as a reader writes it: ``[3].content[0].text``."""
    shown = ""
    for step in path:
        shown += f"[{step}]" if isinstance(step, int) else f".{step}" if shown else step
    return shown or "(root)"


def to_json_text(value: Any) -> str:
    """``value`` as JSON text, written with an explicit stack so that deep values are
    written too (the standard library's encoder gives up on them). Text JSON cannot hold
    (a lone surrogate) is written escaped, as a writer that does not check it would."""
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Raw):
            out.append(item.text)
        elif isinstance(item, dict):
            out.append("{")
            pieces: list[Any] = []
            for index, (key, inner) in enumerate(item.items()):
                pieces += [_Raw(("," if index else "") + json.dumps(key) + ":"), inner]
            stack += [_Raw("}"), *reversed(pieces)]
        elif isinstance(item, list):
            out.append("[")
            pieces = []
            for index, inner in enumerate(item):
                pieces += [_Raw(","), inner] if index else [inner]
            stack += [_Raw("]"), *reversed(pieces)]
        else:
            out.append(json.dumps(item))
    return "".join(out)


@dataclass(frozen=True)
class _Raw:
    """Text put into the output as it is."""

    text: str
