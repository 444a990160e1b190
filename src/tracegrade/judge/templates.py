"""The packaged judge prompts (``judge/prompts/*.json``): loading, checking, and turning
one into a :class:`JudgeRequest`.

A prompt file holds ``name``, ``version`` (part of the cache key: change it whenever the
wording changes), ``system`` text, a ``user`` template (``string.Template``, e.g.
``$conversation``), the answer's JSON ``schema`` and few-shot ``examples``, each the
template's ``variables`` and the expected ``answer``. The examples are sent as earlier
turns of the chat, rendered exactly like the real question.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from importlib import resources
from string import Template
from typing import Any

from .._json import dumps
from ..errors import TracegradeError
from ..model.messages import AIMessage, HumanMessage, ToolMessage, parse_message
from .base import JudgeRequest

PROMPT_FILES = "prompts"


class PromptError(TracegradeError):
    """A packaged prompt file is missing or malformed."""


@dataclass(frozen=True)
class Example:
    """A few-shot example: the template's variables and the answer the judge should give."""

    variables: Mapping[str, Any]
    answer: Mapping[str, Any]


@dataclass(frozen=True)
class Prompt:
    """One versioned judge prompt."""

    name: str
    version: str
    system: str
    user: str
    schema: Mapping[str, Any]
    examples: tuple[Example, ...] = ()

    @cached_property
    def variables(self) -> frozenset[str]:
        """The names the user template expects."""
        found = set()
        for match in Template.pattern.finditer(self.user):
            name = match.group("named") or match.group("braced")
            if name:
                found.add(name)
        return frozenset(found)

    def render(self, variables: Mapping[str, Any]) -> str:
        """The user template filled in; values are rendered by :func:`render_value`."""
        expected = self.variables
        if set(variables) != expected:
            raise PromptError(
                f"prompt {self.name} takes {sorted(expected)}, got {sorted(variables)}"
            )
        return Template(self.user).substitute(
            {key: render_value(value) for key, value in variables.items()}
        )

    def request(
        self, variables: Mapping[str, Any], *, schema: Mapping[str, Any] | None = None
    ) -> JudgeRequest:
        """The JudgeRequest asking this prompt about ``variables``: the system text, each
        example as a question and its answer, then the question. ``schema`` replaces the
        file's schema (e.g. narrowed to one sample's choices)."""
        question = {"role": "user", "content": self.render(variables)}
        return JudgeRequest(
            prompt=self.name,
            version=self.version,
            # copies, so a judge that edits the messages it is sent changes no other request
            messages=(*(dict(message) for message in self._opening), question),
            schema=self.schema if schema is None else schema,
            schema_name=self.name,
        )

    @cached_property
    def _opening(self) -> tuple[Mapping[str, str], ...]:
        """The turns every request starts with: the system text, then each example as a
        question and its answer (the same every time, so rendered once)."""
        messages: list[Mapping[str, str]] = [{"role": "system", "content": self.system}]
        for example in self.examples:
            messages.append({"role": "user", "content": self.render(example.variables)})
            answer = json.dumps(example.answer, ensure_ascii=False)
            messages.append({"role": "assistant", "content": answer})
        return tuple(messages)


def render_value(value: Any) -> str:
    """A template value as text: strings as they are, a list of messages as a
    conversation, any other list as one ``- item`` line per item (``(none)`` if empty)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence):
        items = list(value)
        if items and all(
            isinstance(item, (Mapping, HumanMessage, AIMessage, ToolMessage)) for item in items
        ):
            return render_conversation(items)
        return "\n".join(f"- {item}" for item in items) if items else "(none)"
    raise TypeError(f"cannot put a {type(value).__name__} into a prompt")


def _indent(text: str) -> str:
    return text.replace("\n", "\n  ")


def render_conversation(messages: Sequence[Any]) -> str:
    """A conversation as plain text for the judge: one line per human, AI and tool turn,
    and one per tool call with its arguments as compact JSON. Continuation lines are indented."""
    lines: list[str] = []
    for item in messages:
        message = parse_message(item) if isinstance(item, Mapping) else item
        if isinstance(message, HumanMessage):
            lines.append(f"Human: {_indent(message.content)}")
        elif isinstance(message, AIMessage):
            if message.content or not message.tool_calls:
                lines.append(f"AI: {_indent(message.content)}")
            for call in message.tool_calls or ():
                args = (
                    call.unparsed_args
                    if call.unparsed_args is not None
                    else dumps(call.args).decode()
                )
                label = f" [{call.id}]" if call.id else ""
                lines.append(f"AI calls tool {call.name}{label}: {args}")
        else:
            label = f" [{message.tool_call_id}]" if message.tool_call_id else ""
            lines.append(f"Tool result{label}: {_indent(message.content)}")
    return "\n".join(lines)


def _field(data: Mapping[str, Any], key: str, kind: type, file: str) -> Any:
    value = data.get(key)
    if not isinstance(value, kind) or (kind is str and not value):
        raise PromptError(f"{file}: '{key}' must be a non-empty {kind.__name__}")
    return value


def _parse(data: Any, file: str) -> Prompt:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    from .asking import problem_with

    if not isinstance(data, dict):
        raise PromptError(f"{file}: a prompt file holds one JSON object")
    schema = _field(data, "schema", dict, file)
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        raise PromptError(
            f"{file}: the schema is not a valid JSON schema: {error.message}"
        ) from None
    examples = []
    for number, item in enumerate(_field(data, "examples", list, file), 1):
        if not isinstance(item, dict):
            raise PromptError(f"{file}: example {number} must be an object")
        example = Example(_field(item, "variables", dict, file), _field(item, "answer", dict, file))
        problem = problem_with(example.answer, schema)
        if problem is not None:
            raise PromptError(f"{file}: example {number}'s answer breaks the schema: {problem}")
        examples.append(example)
    prompt = Prompt(
        name=_field(data, "name", str, file),
        version=_field(data, "version", str, file),
        system=_field(data, "system", str, file),
        user=_field(data, "user", str, file),
        schema=schema,
        examples=tuple(examples),
    )
    for number, example in enumerate(prompt.examples, 1):
        try:
            prompt.render(example.variables)
        except (PromptError, TypeError, ValueError) as error:
            raise PromptError(f"{file}: example {number}: {error}") from None
    return prompt


@cache
def load_prompt(name: str) -> Prompt:
    """The packaged prompt ``name`` (e.g. ``"topic_adherence"``), checked: a valid
    schema, examples whose answers follow it and whose variables fill the template."""
    file = f"{name}.json"
    source = resources.files("tracegrade.judge").joinpath(PROMPT_FILES).joinpath(file)
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PromptError(f"no packaged prompt named {name!r}") from None
    except ValueError as error:
        raise PromptError(f"{file} is not valid JSON: {error}") from None
    prompt = _parse(data, file)
    if prompt.name != name:
        raise PromptError(f"{file} names itself {prompt.name!r}")
    return prompt


def prompt_names() -> list[str]:
    """The names of the packaged prompts."""
    folder = resources.files("tracegrade.judge").joinpath(PROMPT_FILES)
    return sorted(
        entry.name.removesuffix(".json")
        for entry in folder.iterdir()
        if entry.name.endswith(".json")
    )
