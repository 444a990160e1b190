"""What every model class shares: msgspec Structs that check what they are built from.

msgspec checks types when it decodes JSON or converts builtins, not in ``__init__``, so
each class checks itself in ``__post_init__``, which msgspec runs on every path. How
much it checks depends on where the values come from, told by :data:`origin`:

- ``"python"`` (the default): built by a caller, so every field is checked, by
  converting the object's fields again with msgspec (dicts given for nested objects
  become those objects), and tool arguments are walked for values JSON cannot hold;
- ``"builtins"``: being converted from dicts and lists: msgspec checks the types, tool
  arguments are still walked;
- ``"json"``: being decoded from JSON text: types are checked by the decoder and every
  value is JSON, so only the rules about order are left.

Rule errors raised there are :class:`RuleError`; msgspec wraps them in its own
``ValidationError`` with the path of the object, and :mod:`tracegrade.model._problems`
reads both back into ``(field path, rule)`` pairs.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from ..errors import ValidationError
from ._origin import Origin, origin
from ._problems import problems

_Model = TypeVar("_Model", bound="Model")


class Model(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, kw_only=True, gc=False):
    """Base of the model classes: unknown fields are errors, never dropped; fields left
    at their default (``None``) are left out of the dict and JSON forms.

    Instances are not tracked by the cyclic garbage collector (they never form cycles
    of their own), so that millions of samples held in memory cost it nothing.
    """

    def __post_init__(self) -> None:
        if origin.get() == "python":
            self._check_fields()

    def _check_fields(self) -> None:
        """Check every field by converting them again, and take the converted values
        (dicts given for nested objects become those objects)."""
        checked: Model = convert(msgspec.structs.asdict(self), type(self), "builtins")
        for name in self.__struct_fields__:
            setattr(self, name, getattr(checked, name))

    def to_dict(self) -> dict[str, Any]:
        """The object as JSON-ready builtins (fields left at ``None`` are left out)."""
        data: dict[str, Any] = msgspec.to_builtins(self)
        return data

    def to_json(self) -> bytes:
        """The object as JSON text (UTF-8)."""
        return msgspec.json.encode(self)

    @classmethod
    def from_dict(cls: type[_Model], data: Any) -> _Model:
        """An object read from its dict form; raises :class:`ValidationError`."""
        built: _Model = convert(data, cls, "builtins")
        return built

    @classmethod
    def from_json(cls: type[_Model], text: str | bytes) -> _Model:
        """An object read from its JSON form; raises :class:`ValidationError`."""
        token = origin.set("json")
        try:
            return msgspec.json.decode(text, type=cls)
        except msgspec.MsgspecError as error:
            raise _invalid(cls, error) from None
        finally:
            origin.reset(token)

    def replace(self: _Model, **changes: Any) -> _Model:
        """A copy with ``changes`` to its fields, checked as a new object is."""
        return msgspec.structs.replace(self, **changes)


def convert(data: Any, kind: Any, source: Origin, what: str | None = None) -> Any:
    """``data`` (builtins, or objects of the model) as a ``kind``, built with ``source``
    as its :data:`origin`; raises :class:`ValidationError` naming every problem found
    (and ``what`` was being built: the kind's name by default)."""
    token = origin.set(source)
    try:
        return msgspec.convert(data, kind)
    except msgspec.ValidationError as error:
        raise _invalid(kind, error, data, what) from None
    finally:
        origin.reset(token)


def _invalid(
    kind: Any, error: msgspec.MsgspecError, data: Any = None, what: str | None = None
) -> ValidationError:
    return ValidationError(what or kind.__name__, problems(error, kind, data))


_JSON_SCALARS = (str, int, float, bool, type(None))


def non_json_value(value: Any, path: str) -> str | None:
    """Where ``value`` holds something JSON cannot (a set, a date, a non-string key...),
    as a readable message; ``None`` when it is all JSON."""
    kind = type(value)
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                return f"{path} has a key {key!r} that is not a string"
            found = non_json_value(item, f"{path}.{key}")
            if found:
                return found
        return None
    if kind is list:
        for index, item in enumerate(value):
            found = non_json_value(item, f"{path}[{index}]")
            if found:
                return found
        return None
    if kind in _JSON_SCALARS or isinstance(value, _JSON_SCALARS):
        return None
    return f"{path} is a {kind.__name__}, which is not a JSON value"
