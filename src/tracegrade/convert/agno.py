"""Agno conversations: ``Message`` objects (a run's ``messages``, an agent's session
history) or their ``to_dict()`` / ``model_dump()`` dicts, and whole ``RunOutput`` /
``TeamRunOutput`` objects or their ``to_dict()`` forms.

Agno keeps calls in the OpenAI Chat Completions shape (``tool_calls[].function.{name,
arguments}``), so calls are read as :mod:`.openai_chat` reads them. ``role: tool``
messages are results linked by ``tool_call_id`` (their ``content`` may be any JSON
value, written as text). ``system`` and ``developer`` messages are set aside. A failing
tool's result is marked ``tool_call_error: true``, kept with ``metadata=True`` as every
other field is (``tool_name``, ``tool_args``, ``metrics``, ``reasoning_content`` ...).
Media (``images``, ``audio``, ``videos``, ``files``) go to ``metadata["content_parts"]``.

A run names its agent (``agent_name``; a team's run its ``team_name``): each AI turn and
tool result of the run gets it as ``metadata["agent"]``. A team's member runs
(``member_responses``) follow the leader's messages, each with its own agent's name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._base import (
    AnyMessage,
    Builder,
    ConversionError,
    Options,
    checked,
    flatten_text,
    plain,
    shown,
    text_of,
)
from ._speakers import Speaker, named, tag
from .openai_chat import tool_calls

_MEDIA = ("images", "audio", "videos", "files", "audio_output", "image_output")
_USED = ("role", "content", "tool_calls", "tool_call_id", *_MEDIA)


def _dump(item: Any) -> Any:
    """A ``Message`` object as its ``to_dict()``; anything else as ``plain`` gives it."""
    if isinstance(item, Speaker):
        return item
    to_dict = getattr(item, "to_dict", None)
    if type(item).__module__.startswith("agno.") and callable(to_dict):
        return to_dict()
    return plain(item)


def _is_run(data: Any) -> bool:
    """A run: a ``RunOutput`` / ``TeamRunOutput`` object, or a dict with ``messages``."""
    if isinstance(data, Mapping):
        return "role" not in data and "messages" in data
    return type(data).__module__.startswith("agno.run") and hasattr(data, "messages")


def _run_items(run: Any, out: list[Any]) -> None:
    """A run's messages after a marker naming its agent, then its members' runs."""

    def field(key: str) -> Any:
        return run.get(key) if isinstance(run, Mapping) else getattr(run, key, None)

    name = named(field("agent_name")) or named(field("team_name"))
    messages = field("messages") or []
    if not isinstance(messages, (list, tuple)):
        raise ConversionError(f"a run's 'messages' must be a list, got {type(messages).__name__}")
    out.append(Speaker(name))
    out.extend(messages)
    members = field("member_responses") or []
    for member in members if isinstance(members, (list, tuple)) else []:
        _run_items(member, out)


def items_of(obj: Any) -> list[Any]:
    """The messages of a list, of a run or team run (object or dict), in order."""
    if isinstance(obj, (list, tuple)):
        if obj and all(_is_run(item) for item in obj):
            out: list[Any] = []
            for run in obj:
                _run_items(run, out)
            return out
        return list(obj)
    if _is_run(obj):
        out = []
        _run_items(obj, out)
        return out
    raise ConversionError(
        f"expected a list of agno messages or a RunOutput, got {type(obj).__name__}"
    )


def _message(index: int, data: Mapping[str, Any], builder: Builder) -> None:
    where = f"message {index}"
    role = data.get("role")
    content = data.get("content")
    if role in ("system", "developer"):
        text, others = flatten_text(content, where)
        builder.add_system(role, text, others)
        return
    media = {key: data[key] for key in _MEDIA if data.get(key)}
    extra = {"content_parts": media} if media else None
    meta = builder.meta(data, *_USED, extra=extra)
    if role == "tool":
        text = text_of(content if content is not None else "", where)
        builder.tool(text, data.get("tool_call_id"), meta)
        return
    text, others = flatten_text(content, where)
    if others:
        raise ConversionError(f"{where}: unknown content part {shown(others[0])}")
    if role == "user":
        builder.human(text, meta)
    elif role in ("assistant", "model"):
        builder.ai(text, tool_calls(data, where, builder.options), meta)
    else:
        raise ConversionError(
            f"{where}: unknown role {shown(role)}; expected system, developer, user, "
            "assistant or tool"
        )


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """Convert agno messages (objects or dicts) in order; run markers name the agent."""
    builder = Builder(options)
    speaker: str | None = None
    for index, item in enumerate(items):
        data = _dump(item)
        if isinstance(data, Speaker):
            speaker = data.name
            continue
        if not isinstance(data, Mapping):
            raise ConversionError(
                f"message {index}: expected a message object, got {type(item).__name__}"
            )
        start = len(builder.messages)
        checked(f"message {index}", _message, index, data, builder)
        tag(builder.messages, start, speaker)
    return builder.finish()
