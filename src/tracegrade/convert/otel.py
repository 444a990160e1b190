"""OpenTelemetry GenAI spans (OTLP JSON) into the standard model.

Reads model-call spans (``gen_ai.operation.name`` ``chat``, ``generate_content``,
``text_completion``, or any span carrying messages) with ``gen_ai.input.messages``,
``gen_ai.output.messages`` and ``gen_ai.system_instructions`` (JSON text or structured
values, messages made of ``parts``); the older form with span events
``gen_ai.{system,user,assistant,tool}.message`` and ``gen_ai.choice``; ``invoke_agent``
spans when no model call inside them carries messages; and ``execute_tool`` spans
(``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.call.arguments``,
``gen_ai.tool.call.result``); the deprecated ``gen_ai.prompt`` / ``gen_ai.completion``
(attributes, or ``gen_ai.content.prompt`` / ``gen_ai.content.completion`` events);
OpenLLMetry's numbered ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` and its
``traceloop.span.kind`` ``tool`` spans. :func:`read_otlp` returns one conversation per trace or per
conversation id; ``convert_messages(document, source="otel")`` reads a single trace.

Beside the messages: each model call's ``gen_ai.usage.*`` counts, model and provider, and
its start and end, on the AIMessage its output became (leaf calls only: an agent's or a
parent span's total is not added again); each tool span's status, ``error.type`` and
``exception`` events and its times on its result; the invoking agent's
``gen_ai.agent.name`` as ``metadata["agent"]`` (docs/convert.md says how each is read).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from typing import Any, Literal

from ..errors import ConversionWarning
from . import _otlp, _traces
from ._base import AnyMessage, InvalidArguments, Options, Skipped
from ._genai_spans import FORMAT
from ._openinference_spans import FORMAT as OPENINFERENCE
from ._traces import TraceConversation

__all__ = ["TraceConversation", "convert", "items_of", "read_otlp"]

items_of = _otlp.items_of


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """The messages of the single trace in these OTLP documents."""
    return _traces.single(items, FORMAT, options, others=[OPENINFERENCE])


def read_otlp(
    source: str | os.PathLike[str] | bytes | Mapping[str, Any] | list[Any],
    format: Literal["otel", "openinference"] = "otel",
    group_by: Literal["trace", "conversation"] = "trace",
    metadata: bool = False,
    invalid_arguments: InvalidArguments = "raise",
    *,
    skipped: Skipped | None = None,
) -> list[TraceConversation]:
    """Every conversation in an OTLP JSON trace export, first one first.

    ``source`` is a file (one JSON document, or JSON Lines as the Collector's file
    exporter writes), JSON text, a parsed document, or a list of documents. ``format``
    names the span convention: ``"otel"`` (GenAI semantic conventions) or
    ``"openinference"``. ``group_by="trace"`` gives one conversation per trace;
    ``"conversation"`` one per ``gen_ai.conversation.id`` (``session.id`` for
    OpenInference), taken from the span or its nearest parent that has one; spans of a
    trace that names no conversation form a conversation of their own, keyed by the
    trace id (with ``conversation_id`` None). Spans that carry no messages and run no
    tool are ignored; a trace with none of them gives no conversation, and a source that
    gives none at all raises :class:`~tracegrade.convert._base.NothingReadError` saying what
    its spans hold (and which ``format`` reads them, when it is the other one).

    Spans holding content that gives no message (a convention tracegrade does not read)
    are counted in ``skipped``; without it, one :class:`~tracegrade.errors.ConversionWarning`
    says what was left out.
    """
    if invalid_arguments not in ("raise", "keep"):
        raise ValueError("invalid_arguments must be 'raise' or 'keep'")
    if group_by not in ("trace", "conversation"):
        raise ValueError("group_by must be 'trace' or 'conversation'")
    if format == "otel":
        form, other = FORMAT, OPENINFERENCE
    elif format == "openinference":
        form, other = OPENINFERENCE, FORMAT
    else:
        raise ValueError("format must be 'otel' or 'openinference'")
    tally = Skipped() if skipped is None else skipped
    options = Options(metadata=metadata, invalid_arguments=invalid_arguments, skipped=tally)
    found = _traces.conversations(source, form, group_by, options, others=[other])
    if skipped is None and tally:
        warnings.warn(f"left out: {tally.describe()}", ConversionWarning, stacklevel=2)
    return found
