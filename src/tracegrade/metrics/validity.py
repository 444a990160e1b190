"""ToolCallValidity: is each call the agent made a valid call of a tool it was given?

Each call is checked against its tool's JSON Schema with ``jsonschema`` (loaded on first
use, so ``import tracegrade`` stays quick): a tool that was not given, arguments that are
not JSON, and every rule of the schema the arguments break (a required argument missing,
a wrong type, a value outside an enum or a range, an argument the schema forbids ...).

:func:`read_tools` reads the tools' definitions in the forms providers use: OpenAI Chat
and Responses ``tools``, Anthropic ``tools``, Gemini function declarations, Bedrock
Converse ``toolSpec``, or a plain ``{name: schema}`` mapping. See ``docs/semantics.md``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..errors import InputError, MissingFieldError
from ..model.messages import AIMessage, ToolCall, ToolCallType
from ..model.results import Score
from ..model.samples import EvalTestCase, MultiTurnSample, Sample
from .base import Metric


class ToolSchemaError(InputError):
    """A tool definition cannot be read, or its schema is not valid JSON Schema; the
    message names the definition (its place and the tool)."""


_NO_ARGUMENTS: Mapping[str, Any] = {
    "type": "object",
    "properties": {},
    "additionalProperties": False,
}
"""The schema of a function defined without parameters: OpenAI and Gemini document such a
function as taking none."""

_GEMINI_LISTS = ("function_declarations", "functionDeclarations")
_GEMINI_SCHEMAS = ("parameters_json_schema", "parametersJsonSchema")
_GEMINI_TYPES = frozenset({"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"})


@dataclass
class Tools:
    """The tools an agent was given, as calls are checked against them.

    ``schemas`` holds each function's arguments schema by name; ``hosted`` the names (or,
    without a name, the types) of provider tools whose arguments are the provider's own
    (web search, code interpreter ...), which are known by name only; ``mcp`` is true when
    an MCP server was offered, whose tools are not listed.
    """

    schemas: dict[str, Any] = field(default_factory=dict)
    hosted: list[str] = field(default_factory=list)
    mcp: bool = False

    def names(self) -> list[str]:
        """Every tool name a call may use."""
        return [*self.schemas, *self.hosted]

    def hosts(self, name: str) -> bool:
        """Is ``name`` a hosted tool? A type such as ``web_search_preview`` hosts the calls
        named ``web_search``, as the Responses converter names them."""
        return any(tool == name or tool.startswith(name + "_") for tool in self.hosted)


def read_tools(value: Any, where: str = "tools") -> Tools:
    """The tools in ``value``, checked: every schema must be valid JSON Schema.

    ``value`` is a list of definitions (OpenAI Chat ``{"type": "function", "function":
    {...}}``, OpenAI Responses ``{"type": "function", "name", "parameters"}``, Anthropic
    ``{"name", "input_schema"}``, Bedrock ``{"toolSpec": {...}}``, Gemini
    ``{"function_declarations": [...]}`` or a bare declaration ``{"name", "parameters"}``,
    and hosted tools ``{"type": "web_search"}``), one Gemini tool, or a mapping of tool
    names to schemas. Errors name ``where``.
    """
    if isinstance(value, Tools):
        return value
    tools = Tools()
    if isinstance(value, Mapping) and _one_definition(value):
        raise ToolSchemaError(
            f"{where}: this is one tool definition, not the tools: give a list of definitions"
        )
    if isinstance(value, Mapping) and not any(key in value for key in _GEMINI_LISTS):
        for name, schema in value.items():
            _add_function(tools, name, schema, f"{where}[{name!r}]")
    elif isinstance(value, (Mapping, list, tuple)):
        entries = [value] if isinstance(value, Mapping) else value
        for index, entry in enumerate(entries):
            _add_definition(tools, entry, f"{where}[{index}]")
    else:
        raise ToolSchemaError(
            f"{where}: expected a list of tool definitions or a mapping of tool names to "
            f"schemas, got {type(value).__name__}"
        )
    return tools


_DEFINITION_KEYS = ("type", "name", "function", "input_schema", "toolSpec")


def _one_definition(value: Mapping[str, Any]) -> bool:
    """Does a mapping read as ``{name: schema}`` look like a single tool definition (a key
    such as ``type`` or ``name`` whose value is no schema)?"""
    return any(
        key in value and not isinstance(value[key], (Mapping, bool)) for key in _DEFINITION_KEYS
    )


def _add_definition(tools: Tools, entry: Any, where: str) -> None:
    """Add one tool definition, in whichever provider's form it is given."""
    if not isinstance(entry, Mapping):
        kind_of_entry = type(entry).__name__
        raise ToolSchemaError(f"{where}: a tool definition is an object, got {kind_of_entry}")
    kind = entry.get("type")
    if isinstance(entry.get("function"), Mapping) and kind in (None, "function"):
        declared = entry["function"]  # OpenAI Chat
        _add_function(tools, declared.get("name"), declared.get("parameters"), where)
    elif "input_schema" in entry:  # Anthropic
        _add_function(tools, entry.get("name"), entry["input_schema"], where, required=True)
    elif isinstance(entry.get("toolSpec"), Mapping):  # Bedrock Converse
        _add_bedrock(tools, entry["toolSpec"], where)
    elif set(entry) == {"cachePoint"}:
        pass  # a Bedrock cache marker between the tools, not a tool
    elif any(key in entry for key in _GEMINI_LISTS):
        _add_gemini_tool(tools, entry, where)
    elif kind == "function" or (kind is None and "name" in entry):
        # OpenAI Responses, or a bare declaration (Gemini's, or OpenAI's older `functions`)
        _add_declaration(tools, entry, where)
    elif kind == "mcp":
        tools.mcp = True
    elif isinstance(kind, str) and kind:
        _add_hosted(tools, entry, kind)
    else:
        raise ToolSchemaError(
            f"{where}: cannot tell the form of this tool definition: expected OpenAI's "
            "{'type': 'function', ...}, Anthropic's {'name', 'input_schema'}, Gemini's "
            "{'function_declarations': [...]} or a hosted tool's {'type': ...}"
        )


def _add_bedrock(tools: Tools, spec: Mapping[str, Any], where: str) -> None:
    """A Bedrock Converse ``toolSpec``: its schema is ``inputSchema["json"]``."""
    given = spec.get("inputSchema")
    if not isinstance(given, Mapping) or "json" not in given:
        raise ToolSchemaError(f"{where}: a toolSpec's inputSchema must be {{'json': schema}}")
    _add_function(tools, spec.get("name"), given["json"], f"{where}.toolSpec", required=True)


def _add_hosted(tools: Tools, entry: Mapping[str, Any], kind: str) -> None:
    """A provider's tool, known by its name (a custom tool's may be nested under ``custom``)
    or else by its type."""
    name = entry.get("name")
    nested = entry.get(kind)
    if name is None and isinstance(nested, Mapping):
        name = nested.get("name")
    tools.hosted.append(name if isinstance(name, str) and name else kind)


def _add_gemini_tool(tools: Tools, entry: Mapping[str, Any], where: str) -> None:
    """A Gemini tool: its function declarations, and its other kinds (``google_search``,
    ``code_execution`` ...) as hosted tools."""
    for key, value in entry.items():
        if key not in _GEMINI_LISTS:
            tools.hosted.append(key)
            continue
        if not isinstance(value, (list, tuple)):
            raise ToolSchemaError(f"{where}.{key}: expected a list, got {type(value).__name__}")
        for index, declaration in enumerate(value):
            place = f"{where}.{key}[{index}]"
            if not isinstance(declaration, Mapping):
                raise ToolSchemaError(
                    f"{place}: a declaration is an object, got {type(declaration).__name__}"
                )
            _add_declaration(tools, declaration, place)


def _add_declaration(tools: Tools, declared: Mapping[str, Any], where: str) -> None:
    """A function given as ``{"name", "parameters"}``; Gemini's ``parameters_json_schema``
    is taken as it is, and its ``parameters`` read as JSON Schema (see :func:`from_gemini`)."""
    schema = next((declared[key] for key in _GEMINI_SCHEMAS if key in declared), None)
    if schema is None and declared.get("parameters") is not None:
        schema = from_gemini(declared["parameters"])
    _add_function(tools, declared.get("name"), schema, where)


def from_gemini(schema: Any) -> Any:
    """A Gemini ``parameters`` schema as JSON Schema: its upper-case type names
    (``"STRING"``) in JSON Schema's spelling, and ``nullable: true`` as a ``"null"`` type.
    Anything already JSON Schema is unchanged."""
    if isinstance(schema, list):
        return [from_gemini(item) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    converted = {key: from_gemini(value) for key, value in schema.items() if key != "nullable"}
    kind = converted.get("type")
    if isinstance(kind, str) and kind in _GEMINI_TYPES:
        converted["type"] = kind = kind.lower()
    if schema.get("nullable") is True and isinstance(kind, str):
        converted["type"] = [kind, "null"]
    elif "nullable" in schema:
        converted["nullable"] = schema["nullable"]
    return converted


def _add_function(
    tools: Tools, name: Any, schema: Any, where: str, *, required: bool = False
) -> None:
    """Add a function and its arguments schema, checked; no schema means no arguments."""
    if not isinstance(name, str) or not name:
        raise ToolSchemaError(f"{where}: a tool needs a name (a non-empty string), got {name!r}")
    if schema is None and not required:
        schema = _NO_ARGUMENTS
    if not isinstance(schema, (Mapping, bool)):
        raise ToolSchemaError(
            f"{where} ({name}): the arguments' schema must be an object or a boolean, "
            f"got {type(schema).__name__}"
        )
    if name in tools.schemas and tools.schemas[name] != schema:
        raise ToolSchemaError(f"{where}: a second, different definition of the tool {name!r}")
    validator_for(schema, f"{where} ({name})")
    tools.schemas[name] = schema


def validator_for(schema: Mapping[str, Any] | bool, where: str) -> Any:
    """The validator of ``schema``, for the draft its ``$schema`` names (default 2020-12);
    a ToolSchemaError naming ``where`` when the schema is not valid JSON Schema."""
    try:
        text = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError) as error:
        raise ToolSchemaError(f"{where}: the schema is not JSON: {error}") from None
    try:
        return _compiled(text)
    except ToolSchemaError as error:
        raise ToolSchemaError(f"{where}: {error}") from None


@lru_cache(maxsize=256)
def _compiled(text: str) -> Any:
    """A checked validator for the schema given as canonical JSON text (one per schema,
    however many samples carry it)."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for as draft_of

    schema = json.loads(text)
    unknown: Any = None  # what validator_for gives for a $schema it does not know
    draft = draft_of(schema, default=unknown) if isinstance(schema, dict) else None
    if draft is None and isinstance(schema, dict) and "$schema" in schema:
        raise ToolSchemaError(f"$schema {schema['$schema']!r} names no draft jsonschema knows")
    draft = draft or Draft202012Validator
    try:
        draft.check_schema(schema)
    except SchemaError as error:
        place = _dotted(list(error.absolute_path)) or "the schema itself"
        raise ToolSchemaError(
            f"the arguments' schema is not valid JSON Schema ({draft.__name__}): "
            f"{error.message} (at {place})"
        ) from None
    return draft(schema)


def _dotted(path: Sequence[Any]) -> str:
    """A path into the arguments in dot notation, list positions in brackets:
    ``legs[0].from``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def schema_violations(validator: Any, args: Mapping[str, Any]) -> list[dict[str, str]]:
    """Every rule of the schema ``args`` break, as ``{"path", "keyword", "message"}``;
    a missing required argument's path names that argument."""
    found = []
    missing: dict[tuple[Any, ...], Iterator[str]] = {}
    for error in validator.iter_errors(dict(args)):
        path = list(error.absolute_path)
        if error.validator == "required" and isinstance(error.instance, dict):
            key = (*path, "@", *error.absolute_schema_path)
            if key not in missing:
                wanted = error.validator_value
                missing[key] = iter([name for name in wanted if name not in error.instance])
            name = next(missing[key], None)
            if name is not None:
                path.append(name)
        keyword = str(error.validator)
        found.append({"path": _dotted(path), "keyword": keyword, "message": error.message})
    return found


_SHOWN = 5
"""How many violations the reason names before counting the rest."""


class ToolCallValidity(Metric):
    """The fraction of the agent's calls that are valid calls of the tools it was given.

    The tools are ``tools`` (any form :func:`read_tools` reads) when given, else the
    sample's ``metadata["tools"]``, else the ``tools`` of the requests a converter kept
    (``metadata["request"]`` on a message, with ``metadata=True``): each call is
    checked against the latest request at or before its message. A call is invalid when
    its tool was not given, its arguments are not JSON, or they break the tool's schema.
    No calls made scores 1.0 (nothing invalid was done).

    ``details["calls"]`` lists each call's ``index``, ``name``, ``valid`` and
    ``violations`` (``path``, ``keyword``, ``message``); ``checked`` says when only the
    name could be checked (a hosted tool, an MCP server's tool, a tool given by name).
    """

    name = "tool_call_validity"
    sample_types = (MultiTurnSample, EvalTestCase)

    def __init__(
        self, tools: Any = None, *, threshold: float | None = None, name: str | None = None
    ) -> None:
        super().__init__(name=name, threshold=threshold)
        if isinstance(tools, str):
            raise ValueError(
                "tools are given in code (a list or mapping of definitions), not as text; "
                "from the command line, give a JSON file of them with --tools FILE (or "
                "'tools' in the config), or each sample its tools in metadata['tools']"
            )
        self.tools = None if tools is None else read_tools(tools)

    def score(self, sample: Sample) -> Score:
        self.check(sample)
        calls = list(self._calls_with_tools(sample))
        checked = [self._check(index, call, tools) for index, (call, tools) in enumerate(calls)]
        valid = sum(entry["valid"] for entry in checked)
        details: dict[str, Any] = {"valid": valid, "total": len(checked), "calls": checked}
        if not checked:
            return self.result(1.0, "no tool calls were made; none can be invalid", details)
        return self.result(valid / len(checked), self._reason(checked, valid), details)

    def _calls_with_tools(self, sample: Sample) -> Iterator[tuple[str | ToolCall, Tools]]:
        """Each call made, with the tools it is checked against."""
        if isinstance(sample, EvalTestCase):
            self.require(sample, "tools_called")
            assert sample.tools_called is not None
            calls: list[tuple[int, str | ToolCall]] = [(0, call) for call in sample.tools_called]
        else:
            assert isinstance(sample, MultiTurnSample)
            calls = [
                (position, call)
                for position, message in enumerate(sample.user_input)
                if type(message) is AIMessage and message.tool_calls
                for call in message.tool_calls
            ]
        if not calls:
            return
        if self.tools is not None:
            yield from ((call, self.tools) for _, call in calls)
            return
        if sample.metadata is not None and "tools" in sample.metadata:
            tools = read_tools(sample.metadata["tools"], "metadata['tools']")
            yield from ((call, tools) for _, call in calls)
            return
        requests = _request_tools(sample)
        if not requests:
            raise MissingFieldError(
                f"{self.name} needs the tools' definitions: give tools= to the metric, or "
                "set the sample's metadata['tools'] (converters keep a request's tools under "
                "metadata['request']['tools'] with metadata=True)"
            )
        for position, call in calls:
            before = [tools for start, tools in requests if start <= position]
            yield call, (before[-1] if before else requests[0][1])

    def _check(self, index: int, call: str | ToolCall, tools: Tools) -> dict[str, Any]:
        """One call's entry in ``details["calls"]``."""
        name = call if isinstance(call, str) else call.name
        entry: dict[str, Any] = {"index": index, "name": name}
        violations: list[dict[str, str]] = []
        if isinstance(call, ToolCall) and call.type is ToolCallType.MCP and tools.mcp:
            entry["checked"] = "name only: an MCP server's tool, not listed in the tools"
        elif name in tools.schemas and isinstance(call, str):
            entry["checked"] = "name only: the call is given by name, without arguments"
        elif name in tools.schemas:
            assert isinstance(call, ToolCall)
            violations = self._argument_violations(call, tools.schemas[name])
        elif tools.hosts(name):
            entry["checked"] = "name only: a provider's hosted tool, whose arguments are its own"
        else:
            known = ", ".join(tools.names()) or "none"
            message = f"no tool named {name!r} was given (tools: {known})"
            violations = [{"path": "", "keyword": "unknown_tool", "message": message}]
        entry.update(valid=not violations, violations=violations)
        return entry

    @staticmethod
    def _argument_violations(call: ToolCall, schema: Any) -> list[dict[str, str]]:
        if call.unparsed_args is not None:
            return [{"path": "", "keyword": "json", "message": "arguments are not JSON"}]
        from referencing.exceptions import Unresolvable  # jsonschema's own dependency

        try:
            return schema_violations(validator_for(schema, call.name), call.args)
        except Unresolvable as error:
            raise ToolSchemaError(
                f"{call.name}: the arguments' schema has a $ref that does not resolve "
                f"(none is fetched): {error}"
            ) from None

    @staticmethod
    def _reason(checked: list[dict[str, Any]], valid: int) -> str:
        total = len(checked)
        if valid == total:
            return f"all {total} tool call(s) are valid calls of the tools given"
        notes = [
            f"{entry['name']}.{violation['path']}: {violation['message']}"
            if violation["path"]
            else f"{entry['name']}: {violation['message']}"
            for entry in checked
            for violation in entry["violations"]
        ]
        shown = "; ".join(notes[:_SHOWN])
        more = f"; and {len(notes) - _SHOWN} more" if len(notes) > _SHOWN else ""
        return f"{valid} of {total} tool call(s) are valid; {shown}{more}"


_REQUEST_TOOLS = (("tools",), ("config", "tools"), ("toolConfig", "tools"))
"""Where a request holds its tools: OpenAI's, Anthropic's and Gemini's REST ``tools``, the
Gemini SDK's ``config.tools``, Bedrock Converse's ``toolConfig.tools``."""


def _request_tools(sample: Sample) -> list[tuple[int, Tools]]:
    """The tools of each request a converter kept on a message, with its position."""
    if not isinstance(sample, MultiTurnSample):
        return []
    found = []
    for position, message in enumerate(sample.user_input):
        request = (message.metadata or {}).get("request")
        if not isinstance(request, Mapping):
            continue
        for keys in _REQUEST_TOOLS:
            value = _at(request, keys)
            if value is not None:
                where = f"user_input[{position}].metadata['request']" + "".join(
                    f"[{key!r}]" for key in keys
                )
                found.append((position, read_tools(value, where)))
                break
    return found


def _at(data: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    """``data[keys[0]][keys[1]]...``, or None where a key is missing."""
    value: Any = data
    for key in keys:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value
