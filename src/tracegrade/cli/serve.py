"""``tracegrade serve``: score OTLP traces live, as they arrive over HTTP.

Stopped with SIGTERM or Ctrl-C, it stops taking requests, scores every trace still open
(their rows written), prints its summary and exits as ``evaluate`` does when stopped:
143 after SIGTERM, 130 after Ctrl-C.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from types import FrameType
from typing import Any

from .evaluate import EXIT_INPUT, EXIT_INTERRUPTED, EXIT_TERMINATED, EXIT_USAGE
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


class _Stop:
    def __init__(self) -> None:
        self.event = threading.Event()
        self.signal: int | None = None

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self.signal is None:
            self.signal = signum
        self.event.set()


def run_serve(arguments: argparse.Namespace) -> int:
    from ..metrics.registry import MetricSpecError, build_metric
    from ..run.live import LiveScorer, start_server

    try:
        metrics = [build_metric(spec) for spec in arguments.metrics]
        scorer = LiveScorer(
            metrics,
            arguments.out,
            source=None if arguments.source == "auto" else arguments.source,
            trace_timeout=arguments.trace_timeout,
            max_open_traces=arguments.max_open_traces,
        )
    except (MetricSpecError, ValueError) as error:
        print(f"tracegrade: {error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        scorer.open()
    except (OSError, ValueError) as error:  # another run's file (ResumeError), in use
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
    sys.stderr.flush()
    return EXIT_TERMINATED if stop.signal == signal.SIGTERM else EXIT_INTERRUPTED
