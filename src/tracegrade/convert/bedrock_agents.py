"""AWS Bedrock Agents InvokeAgent traces (boto3's plain dicts, or their JSON), read by the
``bedrock`` source beside Converse.

An invocation is the list of events its ``completion`` stream gave (``{"trace":
TracePart}``, ``{"chunk": {"bytes"}}``, ``{"files"}``, ``{"returnControl"}``), or the
TraceParts alone as ragas' how-to collects them (``event["trace"]``), or a record
``{"inputText": ..., "events": [...]}`` (also ``completion``, ``traces`` or ``trace``
for the list). A list of records is a session: its invocations in order.

Read as messages: the user's input (the record's ``inputText``, else the last user
message of the first orchestration prompt); each orchestration step's invocation inputs
as tool calls (an action group's ``function``, or ``"<verb> <apiPath>"``, with its typed
``parameters`` and ``requestBody`` properties as ``args``; ``knowledge_base_lookup``;
``code_interpreter``; a collaborator agent by its name), answered by the observations that
follow, linked by the step's ``traceId`` (the n-th call of a step gets ``traceId#n``); a
``failureTrace`` answers the open call of its step, else is kept in the last message's
``metadata["failure"]``; the answer (the chunks' text, else ``finalResponse.text``).

Set aside: rationales are reasoning (``metadata["thinking"]`` with ``metadata=True``);
model invocation inputs and outputs (prompt, raw response, usage) are kept under
``metadata["trace"]`` with ``metadata=True``. Pre- and post-processing, guardrail,
routing-classifier and custom-orchestration traces, reprompts, return-of-control events,
the events of collaborator agents (a longer ``callerChain``) and a ``finalResponse`` that
differs from the streamed answer go there too, and are counted in ``options.skipped``
when metadata is off.

Read whatever the metadata option: each orchestration step's model invocation
(``modelInvocationOutput.metadata``: ``usage``, ``startTime``, ``endTime``,
``totalTimeMs``; the model from its ``modelInvocationInput.foundationModel``) as the usage
and timing of the message it produced (its calls, or the answer); each call's output
``metadata`` times as its result's timing; a collaborator agent's call as an ``AGENT``
call to that agent; a ``failureTrace`` that answers a call, and a code interpreter's
``executionError`` or ``executionTimeout``, as an error outcome. Other results carry no
status and have no outcome. The invocations of collaborators and of pre- and
post-processing are not the agent's own steps: their usage is set aside with them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..model.messages import HumanMessage, ToolCall, ToolCallType
from ..model.steps import Timing, TokenUsage, ToolOutcome, ToolStatus
from ._base import (
    AnyMessage,
    Builder,
    ConversionError,
    Options,
    checked,
    listed,
    not_one_of,
    plain_data,
    record,
    shown,
    string,
    without,
)
from ._readable import UnreadableJSON, parsed_json
from ._steps import amount, cache_apart, count, moment, outcome, timing, usage

TRACE_KINDS = (
    "orchestrationTrace",
    "preProcessingTrace",
    "postProcessingTrace",
    "failureTrace",
    "guardrailTrace",
    "routingClassifierTrace",
    "customOrchestrationTrace",
)
_EVENT_KINDS = ("chunk", "files", "returnControl")
_LIST_KEYS = ("events", "completion", "traces", "trace")
_STEP_PARTS = (
    "modelInvocationInput",
    "modelInvocationOutput",
    "rationale",
    "invocationInput",
    "observation",
)
_CALLS = {
    "actionGroupInvocationInput": "actionGroupInvocationOutput",
    "knowledgeBaseLookupInput": "knowledgeBaseLookupOutput",
    "codeInterpreterInvocationInput": "codeInterpreterInvocationOutput",
    "agentCollaboratorInvocationInput": "agentCollaboratorInvocationOutput",
}
_ENDINGS = ("finalResponse", "repromptResponse")
# How Bedrock Agents write a one-text-block message inside a JSON prompt (Claude's with
# ", type=text", Nova's without)
_RENDERED_TEXT = re.compile(r"\[\{text=(.*?)(?:, type=text)?\}\]", re.DOTALL)


def _is_trace_part(data: Mapping[str, Any]) -> bool:
    trace = data.get("trace")
    return isinstance(trace, Mapping) and any(kind in trace for kind in TRACE_KINDS)


def _is_event(data: Mapping[str, Any]) -> bool:
    trace = data.get("trace")
    if isinstance(trace, Mapping) and _is_trace_part(trace):
        return True
    return any(isinstance(data.get(kind), Mapping) for kind in _EVENT_KINDS)


def _is_record(data: Mapping[str, Any]) -> bool:
    return "inputText" in data or any(isinstance(data.get(key), list) for key in _LIST_KEYS)


def is_agents_item(item: Any) -> bool:
    """Is ``item`` a Bedrock Agents stream event, TracePart or invocation record?"""
    if not isinstance(item, Mapping):
        return False
    return _is_trace_part(item) or _is_event(item) or _is_record(item)


# --- values -----------------------------------------------------------------------------


def _json(value: str, where: str, what: str, kinds: tuple[type, ...]) -> Any:
    try:
        parsed = parsed_json(value)
    except UnreadableJSON as error:
        raise ConversionError(f"{where}: {error}") from None
    except ValueError:
        parsed = None
    if not isinstance(parsed, kinds) or isinstance(parsed, bool):
        raise ConversionError(f"{where}: the value {shown(value)} is not {what}")
    return parsed


def _boolean(value: str, where: str) -> bool:
    if value.lower() not in ("true", "false"):
        raise ConversionError(f"{where}: the value {shown(value)} is not a boolean")
    return value.lower() == "true"


_PARSERS: dict[str, Callable[[str, str], Any]] = {
    "string": lambda value, where: value,
    "number": lambda value, where: _json(value, where, "a number", (int, float)),
    "integer": lambda value, where: _json(value, where, "an integer", (int,)),
    "boolean": _boolean,
    "array": lambda value, where: _json(value, where, "a JSON array", (list,)),
    "object": lambda value, where: _json(value, where, "a JSON object", (dict,)),
}


def _typed(param: Any, where: str) -> tuple[str, Any]:
    """A ``{name, type, value}`` parameter as ``(name, value)``, the value's text read as
    its ``type`` says (a value given as its type already is kept)."""
    data = record(param, where)
    name = string(data.get("name"), where, "a parameter's name")
    kind, value = data.get("type"), data.get("value")
    place = f"{where} ({name})"
    if kind is None or not isinstance(value, str):
        return name, value
    parse = _PARSERS.get(kind) if isinstance(kind, str) else None
    if parse is None:
        raise ConversionError(
            f"{place}: unknown parameter type {shown(kind)}; expected one of " + ", ".join(_PARSERS)
        )
    return name, parse(value, place)


def _arguments(params: list[Any], where: str, args: dict[str, Any]) -> None:
    for index, param in enumerate(params):
        name, value = _typed(param, f"{where}[{index}]")
        if name in args:
            raise ConversionError(f"{where}[{index}]: the argument {name!r} is given twice")
        args[name] = value


def _action_call(data: dict[str, Any], where: str) -> tuple[str, dict[str, Any]]:
    """An action group's call: its function, or ``"<verb> <apiPath>"`` for an API schema."""
    function, path, verb = data.get("function"), data.get("apiPath"), data.get("verb")
    if function is not None:
        name = string(function, where, "function")
    elif path is not None:
        name = string(path, where, "apiPath")
        name = f"{string(verb, where, 'verb')} {name}" if verb is not None else name
    else:
        raise ConversionError(f"{where}: an action group call without function or apiPath")
    args: dict[str, Any] = {}
    _arguments(listed(data.get("parameters"), f"{where} parameters"), f"{where} parameters", args)
    body = record(data.get("requestBody") or {}, f"{where} requestBody")
    content = record(body.get("content") or {}, f"{where} requestBody.content")
    for media, schema in content.items():
        place = f"{where} requestBody.content[{media!r}]"
        if not isinstance(schema, list):  # a Lambda event's {"properties": [...]}
            place = f"{place} properties"
            schema = listed(record(schema, place).get("properties"), place)
        _arguments(schema, place, args)
    return name, args


def _call_of(kind: str, data: dict[str, Any], where: str) -> tuple[str, dict[str, Any]]:
    """The name and arguments of one invocation input."""
    if kind == "actionGroupInvocationInput":
        return _action_call(data, where)
    if kind == "knowledgeBaseLookupInput":
        args = {"query": string(data.get("text"), where, "knowledgeBaseLookupInput.text")}
        if data.get("knowledgeBaseId") is not None:
            args["knowledge_base_id"] = data["knowledgeBaseId"]
        return "knowledge_base_lookup", args
    if kind == "codeInterpreterInvocationInput":
        args = {"code": string(data.get("code"), where, "codeInterpreterInvocationInput.code")}
        if data.get("files"):
            args["files"] = data["files"]
        return "code_interpreter", args
    name = string(data.get("agentCollaboratorName"), where, "agentCollaboratorName")
    given = record(data.get("input") or {}, f"{where} input")
    args = without(given, "type")
    if "text" in args:
        args["input"] = args.pop("text")
    return name, args


def _references(output: dict[str, Any], where: str) -> tuple[str, list[Any], list[Any]]:
    """A knowledge-base lookup's retrieved texts (joined by blank lines), its references
    less their text, and the references that hold no text."""
    texts: list[str] = []
    kept: list[Any] = []
    media: list[Any] = []
    for index, item in enumerate(listed(output.get("retrievedReferences"), where)):
        place = f"{where} retrievedReferences[{index}]"
        reference = record(item, place)
        content = record(reference.get("content") or {}, f"{place} content")
        text = content.get("text")
        if text is None:
            media.append(reference)
            continue
        texts.append(string(text, place, "content.text"))
        rest = without(content, "text")
        kept.append({**without(reference, "content"), **({"content": rest} if rest else {})})
    return "\n\n".join(texts), kept, media


def _prompt_input(text: Any) -> tuple[str | None, int]:
    """The user's input in a JSON prompt (its last user message, a rendered single text
    block unwrapped), and how many earlier messages the prompt holds."""
    if not isinstance(text, str):
        return None, 0
    try:
        prompt = parsed_json(text)
    except ValueError:
        return None, 0
    messages = prompt.get("messages") if isinstance(prompt, dict) else None
    if not isinstance(messages, list):
        return None, 0
    users = [
        index
        for index, message in enumerate(messages)
        if isinstance(message, dict) and message.get("role") == "user"
    ]
    if not users:
        return None, 0
    content = messages[users[-1]].get("content")
    if not isinstance(content, str):
        return None, 0
    rendered = _RENDERED_TEXT.fullmatch(content)
    if rendered and "}, {" not in rendered.group(1):
        content = rendered.group(1)
    return content, users[-1]


def _times(metadata: Any, where: str, total: str = "totalTimeMs") -> Timing | None:
    """A trace part's ``metadata`` times: ``startTime`` and ``endTime`` (RFC 3339 text)
    and its ``total`` milliseconds as the duration."""
    if metadata is None:
        return None
    place = f"{where}.metadata"
    found = record(metadata, place)
    millis = amount(found.get(total), f"{place}.{total}")
    return timing(
        place,
        started_at=moment(found.get("startTime"), f"{place}.startTime"),
        ended_at=moment(found.get("endTime"), f"{place}.endTime"),
        duration=None if millis is None else millis / 1000,
    )


def _step_usage(metadata: Any, model: Any, where: str) -> TokenUsage | None:
    """One model invocation's ``metadata.usage`` (``inputTokens``, ``outputTokens``, as
    Bedrock's runtime counts them: the cache's tokens, where given, apart and added) and
    the model its input named."""
    found = record(metadata or {}, f"{where}.metadata")
    place = f"{where}.metadata.usage"
    counts = record(found.get("usage") or {}, place)
    return usage(
        place,
        **cache_apart(
            counts, place, "inputTokens", "cacheReadInputTokens", "cacheWriteInputTokens"
        ),
        output_tokens=count(counts.get("outputTokens"), f"{place}.outputTokens"),
        model=model,
    )


def _code_outcome(body: dict[str, Any], where: str) -> ToolOutcome | None:
    """A code interpreter's ``executionError`` or ``executionTimeout`` as an error."""
    timed_out = body.get("executionTimeout")
    if timed_out is not None and not isinstance(timed_out, bool):
        raise ConversionError(f"{where}: executionTimeout must be true or false")
    if timed_out:
        return outcome(ToolStatus.ERROR, where, error_type="executionTimeout")
    if body.get("executionError"):
        return outcome(ToolStatus.ERROR, where)
    return None


# --- one invocation ---------------------------------------------------------------------


@dataclass
class _Open:
    """A call made and not yet answered."""

    call: ToolCall
    trace_id: str | None
    answer: str


@dataclass
class _Invocation:
    """One InvokeAgent call's events, read into the builder's messages."""

    builder: Builder
    where: str
    input_text: str | None
    start: int
    started: bool = False
    depth: int | None = None
    prompt: Any = None
    calls: list[_Open] = field(default_factory=list)
    call_fields: list[dict[str, Any]] = field(default_factory=list)
    open: list[_Open] = field(default_factory=list)
    per_step: dict[str | None, int] = field(default_factory=dict)
    thinking: list[str] = field(default_factory=list)
    kept: list[dict[str, Any]] = field(default_factory=list)
    chunks: list[str] = field(default_factory=list)
    attributions: list[Any] = field(default_factory=list)
    files: list[Any] = field(default_factory=list)
    final: dict[str, Any] | None = None
    failure: dict[str, Any] | None = None
    envelope: dict[str, Any] = field(default_factory=dict)
    model: Any = None
    used: TokenUsage | None = None
    took: Timing | None = None

    @property
    def options(self) -> Options:
        return self.builder.options

    def aside(self, part: dict[str, Any], reason: str | None) -> None:
        """Keep ``part`` for metadata, or count it as left out for ``reason`` (``None``:
        plumbing that only metadata keeps, as every converter does)."""
        if self.options.metadata:
            self.kept.append(part)
        elif reason:
            self.options.skipped.add(reason)

    # events

    def event(self, index: int, item: Any) -> None:
        place = f"{self.where} event {index}"
        data = record(item, place)
        if _is_trace_part(data):
            self.part(data, place)
            return
        members = [(key, value) for key, value in data.items() if value is not None]
        if len(members) != 1:
            raise not_one_of(place, "an InvokeAgent stream event", data)
        kind, value = members[0]
        if kind == "trace":
            part = record(value, f"{place} trace")
            if not _is_trace_part(part):
                raise not_one_of(f"{place} trace", "a TracePart", part)
            self.part(part, f"{place} trace")
        elif kind == "chunk":
            self.chunk(record(value, f"{place} chunk"), f"{place} chunk")
        elif kind == "files":
            self.files.extend(listed(record(value, place).get("files"), f"{place} files"))
        elif kind == "returnControl":
            self.aside(
                {"returnControl": value},
                "Bedrock Agents returnControl event (calls left to the caller)",
            )
        else:
            raise ConversionError(
                f"{place}: unknown InvokeAgent event {kind!r}; expected trace, chunk, files "
                "or returnControl"
            )

    def chunk(self, data: dict[str, Any], where: str) -> None:
        raw = data.get("bytes")
        if isinstance(raw, (bytes, bytearray)):
            try:
                raw = bytes(raw).decode()
            except UnicodeDecodeError:
                raise ConversionError(f"{where}: the answer bytes are not UTF-8 text") from None
        self.chunks.append(string(raw, where, "chunk.bytes"))
        if data.get("attribution") is not None:
            self.attributions.append(data["attribution"])

    def part(self, data: dict[str, Any], where: str) -> None:
        """One TracePart: the invoked agent's own, or a collaborator's (set aside)."""
        chain = data.get("callerChain")
        depth = len(chain) if isinstance(chain, list) else None
        if not self.started:
            self.started, self.depth = True, depth
            self.envelope = without(data, "trace", "eventTime")
        elif depth is not None and self.depth is not None and depth > self.depth:
            self.aside(
                {"collaborator": data},
                "Bedrock Agents trace event of a collaborator agent (its caller's call and "
                "result are read)",
            )
            return
        trace = record(data["trace"], f"{where} trace")
        members = [(key, value) for key, value in trace.items() if value is not None]
        if len(members) != 1:
            found = ", ".join(repr(key) for key, _ in members)
            raise ConversionError(f"{where}: a trace holds exactly one part, found {found}")
        kind, value = members[0]
        place = f"{where} {kind}"
        if kind not in TRACE_KINDS:
            raise ConversionError(
                f"{where}: unknown trace part {kind!r}; expected one of " + ", ".join(TRACE_KINDS)
            )
        body = record(value, place)
        if kind == "orchestrationTrace":
            self.orchestration(body, place)
        elif kind == "failureTrace":
            self.failed(body, place)
        else:
            self.aside({kind: body}, f"Bedrock Agents {kind} (not a conversation turn)")

    def orchestration(self, trace: dict[str, Any], where: str) -> None:
        for key, value in trace.items():
            if value is None:
                continue
            place = f"{where}.{key}"
            if key not in _STEP_PARTS:
                raise ConversionError(
                    f"{place}: unknown orchestration part; expected one of "
                    + ", ".join(_STEP_PARTS)
                )
            body = record(value, place)
            if key == "rationale":
                self.thinking.append(string(body.get("text"), place, "rationale.text"))
            elif key == "invocationInput":
                self.invocation(body, place)
            elif key == "observation":
                self.observation(body, place)
            else:
                if key == "modelInvocationInput":
                    if self.prompt is None:
                        self.prompt = body.get("text")
                    self.model = body.get("foundationModel")
                else:
                    self.model_step(body, place)
                self.aside({key: body}, None)

    def model_step(self, body: dict[str, Any], where: str) -> None:
        """A model invocation's usage and timing, for the message it produces next."""
        self.unused()
        metadata = body.get("metadata")
        self.used = _step_usage(metadata, self.model, where)
        self.took = _times(metadata, where)

    def unused(self) -> None:
        """Count a model invocation that produced no message (with ``metadata``, it is
        kept in the trace parts)."""
        if (self.used or self.took) and not self.options.metadata:
            self.options.skipped.add(
                "Bedrock Agents model invocation that produced no message (its usage and "
                "timing are not on any message)"
            )
        self.used = self.took = None

    def step(self) -> dict[str, Any]:
        """The pending model invocation's usage and timing, for the message made now."""
        found = {"usage": self.used, "timing": self.took}
        self.used = self.took = None
        return found

    # calls and their answers

    def invocation(self, data: dict[str, Any], where: str) -> None:
        kinds = [key for key in _CALLS if data.get(key) is not None]
        if len(kinds) != 1:
            raise not_one_of(where, "an invocation input with one call", data)
        kind = kinds[0]
        place = f"{where}.{kind}"
        body = record(data[kind], place)
        name, args = _call_of(kind, body, place)
        trace_id = data.get("traceId")
        if trace_id is not None:
            trace_id = string(trace_id, where, "traceId")
        agent = kind == "agentCollaboratorInvocationInput"  # the trace says: another agent
        call = checked(
            place,
            ToolCall,
            name=name,
            args=args,
            id=self.call_id(trace_id),
            type=ToolCallType.AGENT if agent else None,
            target_agent=name if agent else None,
        )
        self.calls.append(_Open(call, trace_id, _CALLS[kind]))
        self.call_fields.append({"id": call.id, **without(data, "traceId")})

    def call_id(self, trace_id: Any) -> str | None:
        """The step's ``traceId``; ``traceId#n`` for its n-th call (n > 1); none without."""
        if trace_id is None:
            return None
        count = self.per_step.get(trace_id, 0) + 1
        self.per_step[trace_id] = count
        return trace_id if count == 1 else f"{trace_id}#{count}"

    def flush(self) -> None:
        """The calls made so far as one AIMessage (its reasoning and kept parts with it)."""
        if not self.calls:
            return
        extra: dict[str, Any] = {}
        if self.options.metadata:
            extra = {"calls": self.call_fields, **self.notes()}
        self.builder.ai("", [made.call for made in self.calls], extra or None, **self.step())
        self.open.extend(self.calls)
        self.calls, self.call_fields = [], []

    def notes(self) -> dict[str, Any]:
        """Reasoning and kept trace parts since the last message, for its metadata."""
        notes: dict[str, Any] = {}
        if self.thinking:
            notes["thinking"] = self.thinking
        if self.kept:
            notes["trace"] = self.kept
        self.thinking, self.kept = [], []
        return notes

    def answered(self, trace_id: Any, answer: str | None, where: str) -> _Open:
        """The earliest open call of the step (of the kind ``answer`` names, if given)."""
        self.flush()
        for made in self.open:
            same_step = trace_id is None or made.trace_id == trace_id
            if same_step and (answer is None or made.answer == answer):
                self.open.remove(made)
                return made
        step = f" of step {trace_id!r}" if trace_id is not None else ""
        raise ConversionError(f"{where}: no open call{step} for this observation to answer")

    def observation(self, data: dict[str, Any], where: str) -> None:
        kinds = [key for key in (*_CALLS.values(), *_ENDINGS) if data.get(key) is not None]
        if len(kinds) != 1:
            raise not_one_of(where, "an observation with one output", data)
        kind = kinds[0]
        place = f"{where}.{kind}"
        body = record(data[kind], place)
        if kind == "finalResponse":
            self.final = body
        elif kind == "repromptResponse":
            self.aside({"repromptResponse": body}, "Bedrock Agents repromptResponse")
        else:
            made = self.answered(data.get("traceId"), kind, place)
            self.result(kind, body, made, place)

    def result(self, kind: str, body: dict[str, Any], made: _Open, where: str) -> None:
        media: list[Any] = []
        ended = None
        if kind == "knowledgeBaseLookupOutput":
            text, references, media = _references(body, where)
            rest = {**without(body, "retrievedReferences"), "retrievedReferences": references}
        elif kind == "codeInterpreterInvocationOutput":
            parts = [body.get("executionOutput"), body.get("executionError")]
            text = "\n".join(string(part, where, "its output") for part in parts if part)
            media = listed(body.get("files"), f"{where} files")
            rest = without(body, "executionOutput", "files")
            ended = _code_outcome(body, where)
        elif kind == "agentCollaboratorInvocationOutput":
            output = record(body.get("output") or {}, f"{where} output")
            text = string(output.get("text") or "", where, "output.text")
            rest = {**without(body, "output"), **without(output, "text")}
        else:
            text = string(body.get("text") or "", where, "actionGroupInvocationOutput.text")
            rest = without(body, "text")
        extra = {"content_parts": media} if media else {}
        meta = self.builder.meta(rest, extra=extra)
        took = _times(body.get("metadata"), where)
        self.builder.tool(text, made.call.id, meta, outcome=ended, timing=took)

    def failed(self, data: dict[str, Any], where: str) -> None:
        """A failure: the answer to the open call of its step, else the invocation's."""
        reason = data.get("failureReason")
        trace_id = data.get("traceId")
        self.flush()
        for made in self.open:
            if trace_id is None or made.trace_id == trace_id:
                self.open.remove(made)
                text = string(reason or "", where, "failureReason")
                code = data.get("failureCode")
                ended = outcome(
                    ToolStatus.ERROR, where, error_type=None if code is None else str(code)
                )
                meta = {"failure": without(data, "failureReason")}
                self.builder.tool(text, made.call.id, meta, outcome=ended)
                return
        self.failure = data

    # the end

    def finish(self) -> None:
        self.flush()
        answer = "".join(self.chunks) if self.chunks else None
        final = self.final
        if final is not None:
            text = string(final.get("text") or "", self.where, "finalResponse.text")
            if answer is None:
                answer = text
            elif text != answer:
                self.aside(
                    {"finalResponse": final},
                    "Bedrock Agents finalResponse that differs from the streamed answer "
                    "(the answer read is the streamed one)",
                )
        if answer is not None:
            self.answer(answer, final)
        self.unused()
        self.human()
        self.leftovers()

    def answer(self, text: str, final: dict[str, Any] | None) -> None:
        extra: dict[str, Any] = {}
        if self.files:
            extra["content_parts"] = plain_data(self.files)
        if self.failure is not None:
            extra["failure"] = self.failure
            self.failure = None
        if self.options.metadata:
            if final is not None:
                extra["final_response"] = without(final, "text")
            if self.attributions:
                extra["attribution"] = self.attributions
            extra.update(self.notes())
        self.builder.ai(text, None, extra or None, **self.step())

    def human(self) -> None:
        text = self.input_text
        if text is None:
            text, earlier = _prompt_input(self.prompt)
            if earlier and not self.options.metadata:  # else kept with the prompt
                self.options.skipped.add(
                    "Bedrock Agents earlier session turns in the prompt (read each "
                    "invocation to have them)",
                    earlier,
                )
        if text is None:
            raise ConversionError(
                f"{self.where}: the user's input is not in these events (no JSON prompt with "
                'a user message); give the invocation as {"inputText": ..., "events": [...]}'
            )
        meta = self.envelope if self.options.metadata and self.envelope else None
        self.builder.messages.insert(self.start, HumanMessage(content=text, metadata=meta))

    def leftovers(self) -> None:
        """What is still set aside at the end goes to the invocation's last message."""
        extra = self.notes() if self.options.metadata else {}
        if self.failure is not None:
            extra["failure"] = self.failure
        if extra:
            last = self.builder.messages[-1]
            last.metadata = {**(last.metadata or {}), **extra}


def _events_of(data: dict[str, Any], where: str) -> tuple[list[Any], dict[str, Any]]:
    """A record's event list and its other fields."""
    keys = [key for key in _LIST_KEYS if isinstance(data.get(key), list)]
    if len(keys) != 1:
        found = ", ".join(repr(key) for key in keys) or "none"
        raise ConversionError(
            f"{where}: an invocation record holds one list of events under "
            f"{', '.join(_LIST_KEYS)}; found {found}"
        )
    return data[keys[0]], without(data, keys[0], "inputText")


def _invoke(builder: Builder, events: list[Any], where: str, fields: dict[str, Any]) -> None:
    input_text = fields.pop("inputText", None)
    if input_text is not None:
        input_text = string(input_text, where, "inputText")
    reading = _Invocation(builder, where, input_text, len(builder.messages))
    for index, event in enumerate(events):
        reading.event(index, event)
    reading.finish()
    if fields and builder.options.metadata:
        first = builder.messages[reading.start]
        first.metadata = {**(first.metadata or {}), "invocation": fields}


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """Convert one invocation's events, or a session's invocation records, in order."""
    builder = Builder(options)
    data = [record(item, f"item {index}") for index, item in enumerate(items)]
    records = [_is_record(item) and not _is_event(item) for item in data]
    if all(records):
        for index, item in enumerate(data):
            where = f"invocation {index}"
            events, fields = _events_of(item, where)
            _invoke(builder, events, where, {**fields, "inputText": item.get("inputText")})
    elif any(records):
        raise ConversionError(
            f"item {records.index(True)}: an invocation record among stream events; give "
            "one invocation's events, or a list of invocation records"
        )
    else:
        _invoke(builder, data, "invocation", {})
    return builder.finish()
