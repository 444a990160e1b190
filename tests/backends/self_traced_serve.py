"""``tracegrade serve`` in a process that traces itself into the server it runs: run in
.venv-phoenix as ``python self_traced_serve.py PORT SERVE_OPTION...``.

As a user's setup would (a sitecustomize, or ``opentelemetry-instrument``), the global
TracerProvider sends every span as OTLP/HTTP to 127.0.0.1:PORT, where this same process
then serves, and OpenInference instruments the OpenAI SDK, which the judge uses. Spans
are exported one by one as they end, so that any span of the judge's request would
reach the server at once. The service name is the user's own, not tracegrade's: the
server's ``service.name`` filter does not come into it.
"""

from __future__ import annotations

import sys

from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

SERVICE = "evaluations-box"


def main(port: str, options: list[str]) -> int:
    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE}))
    exporter = OTLPSpanExporter(f"http://127.0.0.1:{port}/v1/traces", timeout=5)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    OpenAIInstrumentor().instrument(tracer_provider=provider)

    from tracegrade.cli import main as tracegrade

    try:
        return tracegrade(["serve", "--listen", f"127.0.0.1:{port}", *options])
    finally:
        provider.shutdown()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
