"""What every model class shares: msgspec Structs that check what they are built from.

msgspec checks every type when it decodes JSON or converts builtins, but not when a
class is called. So calling a model class (``ToolCall(name=..., args=...)``) goes
through :class:`_Checked`, which builds the object by converting the keyword arguments
with msgspec: the same checks, and dicts given for nested objects become those objects.
Decoding never calls the class, so it pays for none of this.

Two rules are not types. Tool arguments must hold JSON values: what JSON decoding gives
always does, so only objects built from Python values are walked (:func:`convert` with
``parsed_json=False``, which every call of a class is). A ToolMessage must follow a tool
call: samples check that in ``__post_init__``, which msgspec runs on every path.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from ..errors import ValidationError
from ._problems import problems
from ._rules import non_json_value

_Model = TypeVar("_Model", bound="Model")


class _Checked(msgspec.StructMeta):
    """Calling a model class converts its keyword arguments into the object, checked."""

    def __call__(cls, *args: Any, **fields: Any) -> Any:
        if args:
            raise TypeError(f"{cls.__name__} takes keyword arguments only")
        model: type[Model] = cls  # type: ignore[assignment]  # every class made here is one
        return convert(model.keyword_fields(fields), cls)


class Model(
    msgspec.Struct,
    metaclass=_Checked,
    forbid_unknown_fields=True,
    omit_defaults=True,
    kw_only=True,
    gc=False,
):
    """Base of the model classes: unknown fields are errors, never dropped; fields left
    at their default (``None``) are left out of the dict and JSON forms.

    Instances are not tracked by the cyclic garbage collector (they never form cycles
    of their own), so that millions of samples held in memory cost it nothing.
    """

    @classmethod
    def keyword_fields(cls, fields: dict[str, Any]) -> dict[str, Any]:
        """The fields a call of the class by keyword stands for (as given, unless a
        class also takes another library's names for them)."""
        return fields

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
        built: _Model = convert(data, cls)
        return built

    @classmethod
    def from_json(cls: type[_Model], text: str | bytes) -> _Model:
        """An object read from its JSON form; raises :class:`ValidationError`."""
        try:
            return msgspec.json.decode(text, type=cls)
        except msgspec.MsgspecError as error:
            raise ValidationError(cls.__name__, problems(error)) from None

    def replace(self: _Model, **changes: Any) -> _Model:
        """A copy with ``changes`` to its fields, checked as a new object is."""
        fields = {name: getattr(self, name) for name in self.__struct_fields__}
        return type(self)(**{**fields, **changes})

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled by its fields (calling the class by keyword rebuilds it)."""
        fields = {name: getattr(self, name) for name in self.__struct_fields__}
        return _rebuild, (type(self), fields)


def _rebuild(kind: type[_Model], fields: dict[str, Any]) -> _Model:
    built: _Model = kind(**fields)
    return built


def convert(data: Any, kind: Any, what: str | None = None, *, parsed_json: bool = False) -> Any:
    """``data`` (builtins, or objects of the model) as a ``kind``; raises
    :class:`ValidationError` naming every problem found (and ``what`` was being built:
    the kind's name by default). ``parsed_json`` says the data was just parsed from JSON
    text, which spares the walk of tool arguments for values JSON cannot hold."""
    try:
        built = msgspec.convert(data, kind)
    except msgspec.ValidationError as error:
        raise ValidationError(what or kind.__name__, problems(error, kind, data)) from None
    if not parsed_json:
        problem = _argument_problem(built)
        if problem is not None:
            raise ValidationError(what or kind.__name__, [problem])
    return built


def _argument_problem(value: Any) -> tuple[str, str] | None:
    """The first tool call in ``value`` whose arguments hold something JSON cannot, as
    ``(path of the call, rule)``."""
    for path, call in _tool_calls(value, ""):
        problem = non_json_value(call.args, "args")
        if problem:
            return path, problem
    return None


def _tool_calls(value: Any, path: str) -> list[tuple[str, Any]]:
    """Every ToolCall in a model object, with its path (found by field name, so this
    module need not import the classes)."""
    found: list[tuple[str, Any]] = []
    if type(value) is list:  # a list of lists (reference_tool_calls_per_turn)
        for index, item in enumerate(value):
            found += _tool_calls(item, f"{path}[{index}]")
        return found
    fields = getattr(value, "__struct_fields__", ())
    if "args" in fields and "name" in fields:
        return [(path, value)]
    for name in _CALL_HOLDERS:
        items = getattr(value, name) if name in fields else None
        for index, item in enumerate(items if isinstance(items, list) else ()):
            found += _tool_calls(item, f"{path}.{name}[{index}]".lstrip("."))
    return found


_CALL_HOLDERS = (
    "user_input",
    "tool_calls",
    "reference_tool_calls",
    "reference_tool_calls_per_turn",
    "tools_called",
    "expected_tools",
)
