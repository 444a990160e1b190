"""OpenInference spans (OTLP JSON, as Arize Phoenix and the OpenInference instrumentors
write them) into the standard model.

Reads ``LLM`` spans' flattened messages: ``llm.input_messages.N.message.role``,
``.content``, ``.contents.K.message_content.{type, text, image, ...}``,
``.tool_calls.M.tool_call.{id, function.name, function.arguments}``, ``.tool_call_id``
and ``.name`` (the same under ``llm.output_messages``), and ``TOOL`` spans (``tool.name``,
the call id in ``tool_call.id`` or ``tool.id``, the arguments as JSON in ``input.value``,
the result in ``output.value``). ``LLM`` spans without flattened messages are read from
``input.value`` / ``output.value`` (a message list or plain text), and ``AGENT`` /
``CHAIN`` spans' values only when no other span carries messages; other kinds only pass
their ``session.id`` on to the spans inside them. The rebuilding rules are the ``otel``
source's: see :func:`tracegrade.convert.otel.read_otlp`, and so is what is read beside the
messages (``llm.token_count.*``, ``llm.cost.total``, span times and statuses,
``agent.name``); calls inside ``GUARDRAIL`` and ``EVALUATOR`` spans are not the agent's and
are left out, counted.
"""

from __future__ import annotations

from typing import Any

from . import _otlp, _traces
from ._base import AnyMessage, Options
from ._genai_spans import FORMAT as GENAI
from ._openinference_spans import FORMAT

__all__ = ["convert", "items_of"]


items_of = _otlp.items_of


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """The messages of the single trace in these OTLP documents."""
    return _traces.single(items, FORMAT, options, others=[GENAI])
