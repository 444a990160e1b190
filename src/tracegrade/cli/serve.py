"""``tracegrade serve``: score OTLP traces live, as they arrive over HTTP.

Stopped with SIGTERM or Ctrl-C, it stops taking requests, scores every trace still open
(their rows written), prints its summary and exits as ``evaluate`` does when stopped:
143 after SIGTERM, 130 after Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from types import FrameType
from typing import Any

from .evaluate import (
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    EXIT_USAGE,
    Settings,
    add_judge_options,
    noted_and_judged,
)
from .values import seconds, whole_number

DEFAULT_LISTEN = "127.0.0.1:4318"


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


def add_serve_command(commands: Any) -> None:
    serve = commands.add_parser(
        "serve",
        help="score OTLP traces live as they arrive (OTLP/HTTP, protobuf or JSON)",
        description="Receive OTLP traces at /v1/traces, score each trace as it completes "
        "(its root span arrived, or it was quiet for --trace-timeout) and append its row "
        "to --out. GET /healthz answers 200. SIGTERM or Ctrl-C scores the traces still "
        "open, prints a summary and exits (143, 130).",
    )
    serve.add_argument(
        "--listen",
        type=_address,
        default=_address(DEFAULT_LISTEN),
        metavar="HOST:PORT",
        help=f"where to listen (default {DEFAULT_LISTEN}; port 0: any free port)",
    )
    serve.add_argument("--out", required=True, help="the results file rows are appended to")
    serve.add_argument(
        "-m", "--metric", action="append", required=True, dest="metrics", help="a metric spec"
    )
    serve.add_argument(
        "--from",
        dest="source",
        choices=("auto", "otel", "openinference"),
        default="auto",
        help="the span convention (default: told from each trace's spans)",
    )
    serve.add_argument(
        "--trace-timeout",
        type=seconds,
        default=10.0,
        metavar="SECONDS",
        help="score a trace whose root span has not come after this long quiet (default 10)",
    )
    serve.add_argument(
        "--max-open-traces",
        type=lambda text: whole_number(text, 1),
        default=10_000,
        metavar="N",
        help="the most traces held open; past it the one quiet longest is scored early "
        "(default 10000)",
    )
    serve.add_argument(
        "--push",
        metavar="BACKEND",
        help="send each row's scores to BACKEND (otlp://HOST:PORT, phoenix://..., ...) as "
        "it is written; a journal beside --out lets 'tracegrade push' finish what a stop "
        "left unsent",
    )
    add_judge_options(serve)


class _Stop:
    def __init__(self) -> None:
        self.event = threading.Event()
        self.signal: int | None = None

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self.signal is None:
            self.signal = signum
        self.event.set()


def suppress_own_tracing() -> None:
    """Keep this process's own requests (the judge's) out of any tracing that would
    send them back to the server: OpenTelemetry's SDK is disabled for what starts from
    here on, and instrumentations (OpenAI, httpx, OpenInference ...) are told to stay
    quiet in this thread's context, which the judge's tasks inherit."""
    os.environ["OTEL_SDK_DISABLED"] = "true"
    try:
        from opentelemetry import context
    except ImportError:  # no OpenTelemetry here: nothing traces the judge
        return
    context.attach(context.set_value(context._SUPPRESS_INSTRUMENTATION_KEY, True))


def run_serve(arguments: argparse.Namespace) -> int:
    from ..backends import BackendError, parse_address
    from ..metrics.registry import MetricSpecError, build_metric
    from ..run.live import LIVE_INPUT, LiveScorer, start_server
    from ..run.push_journal import PushError
    from ..run.pushing import BackgroundPusher, Pusher

    suppress_own_tracing()
    try:
        metrics = [build_metric(spec) for spec in arguments.metrics]
        scorer = LiveScorer(
            metrics,
            arguments.out,
            source=None if arguments.source == "auto" else arguments.source,
            trace_timeout=arguments.trace_timeout,
            max_open_traces=arguments.max_open_traces,
        )
        if arguments.push is not None:
            parse_address(arguments.push)
    except (MetricSpecError, ValueError, BackendError) as error:
        print(f"tracegrade: {error}", file=sys.stderr)
        return EXIT_USAGE
    judged = Settings(LIVE_INPUT, list(arguments.metrics), metrics)
    for name in ("provider", "model", "base_url", "timeout", "max_attempts"):
        setattr(judged, f"judge_{name}", getattr(arguments, f"judge_{name}"))
    failed = noted_and_judged(judged)
    if failed is not None:
        return failed
    try:
        if arguments.push is not None:
            pusher = Pusher(arguments.push, results=arguments.out)
            scorer.outputs.pusher = BackgroundPusher(pusher)
        scorer.open()
    except (PushError, BackendError, ImportError) as error:
        if scorer.outputs.pusher is not None:
            scorer.outputs.pusher.close()
        print(f"tracegrade: --push: {error}", file=sys.stderr)
        return EXIT_INPUT
    except (OSError, ValueError) as error:  # another run's file (ResumeError), in use
        if scorer.outputs.pusher is not None:
            scorer.outputs.pusher.close()
        print(f"tracegrade: {error}", file=sys.stderr)
        return EXIT_USAGE if isinstance(error, ValueError) else EXIT_INPUT
    stop = _Stop()
    previous = {number: signal.signal(number, stop) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        host, port = arguments.listen
        try:
            server, thread = start_server(host, port, scorer)
        except OSError as error:
            scorer.close()
            print(f"tracegrade: cannot listen on {host}:{port}: {error}", file=sys.stderr)
            return EXIT_INPUT
        bound_host, bound_port = server.server_address[:2]
        print(
            f"tracegrade serve: listening on http://{bound_host!s}:{bound_port}/v1/traces, "
            f"rows to {arguments.out}",
            file=sys.stderr,
            flush=True,
        )
        try:
            while not stop.event.wait(0.1):
                scorer.score_due()
        except OSError as error:  # the results file cannot be written (a full disk)
            print(f"tracegrade: {error}", file=sys.stderr)
            return EXIT_INPUT
        finally:
            server.shutdown()
            server.server_close()
            thread.join()
            try:
                scorer.flush()
            finally:
                scorer.close()
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    how = "terminated (SIGTERM)" if stop.signal == signal.SIGTERM else "interrupted"
    print(f"tracegrade serve: {how}; rows in {arguments.out}", file=sys.stderr)
    for line in scorer.counts.lines():
        print(f"  {line}", file=sys.stderr)
    if scorer.left_out:
        print(f"  left out: {scorer.left_out.describe()}", file=sys.stderr)
    pushed = scorer.outputs.pushed
    if pushed is not None:
        for line in pushed.lines():
            print(f"  {line}", file=sys.stderr)
    sys.stderr.flush()
    return EXIT_TERMINATED if stop.signal == signal.SIGTERM else EXIT_INTERRUPTED
