"""Live scoring (issue 33): how many spans a second ``tracegrade serve`` takes in, reads
into conversations, scores and writes out, and whether its memory stays bounded.

One server per size: ``tracegrade serve`` on a free port of 127.0.0.1 with
``--max-open-traces`` small, the metrics that need no reference (tool_call_efficiency,
tool_error_recovery). Agent traces in the GenAI semantic conventions (an
``invoke_agent`` root; four ``chat`` spans each calling a tool and its ``execute_tool``
span, one call in four traces failing; a last ``chat`` answering: 10 spans) are built
as OTLP protobuf ``ExportTraceServiceRequest`` messages beforehand, several whole
traces to a request, and sent from a few threads over kept-alive connections.
Measured: spans a second from the first request sent to the last row written (every
trace's row, the file read as it grows), the requests alone, and the server's resident
memory: when ready, its peak (VmHWM, and VmRSS sampled) and at the end. Each size is
sent twice: as fast as the server answers (its throughput), and paced below that
(``--rates``), where a peak that does not grow with the number of traces shows the
memory bounded.

    .venv/bin/python bench/serve.py --sizes 1000 4000 16000 --doc docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from measure import high_water_kb, replace_section  # noqa: E402

MARKERS = ("<!-- serve:start -->", "<!-- serve:end -->")
METRICS = ["tool_call_efficiency", "tool_error_recovery"]
TARGET = 1_000
"""Spans a second ``serve`` is to sustain (issue 33)."""
TARGET_ROW = "| `tracegrade serve` sustains ≥ 1,000 spans/s"
"""How the benchmark's row of the targets table begins (replaced by ``--doc``)."""
TOOL_STEPS = 4
SPANS_PER_TRACE = 2 + 2 * TOOL_STEPS
TOOLS = ["search_flights", "book_flight", "get_weather", "send_email"]


def _attributes(values: dict[str, str]) -> list[Any]:
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    return [KeyValue(key=key, value=AnyValue(string_value=text)) for key, text in values.items()]


def trace_spans(number: int) -> list[Any]:
    """The 10 spans of agent trace ``number`` (ids from the number: all distinct)."""
    from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

    trace_id = (number + 1).to_bytes(16, "big")
    clock = 1_700_000_000_000_000_000 + number * 1_000_000_000

    def span_id(index: int) -> bytes:
        return (number * 64 + index + 1).to_bytes(8, "big")

    root_id = span_id(0)
    ok = Status(code=Status.STATUS_CODE_OK)
    spans = []
    history: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"type": "text", "content": f"Plan trip {number}"}]}
    ]
    for step in range(TOOL_STEPS + 1):
        begin = clock + (1 + 3 * step) * 1_000_000
        if step < TOOL_STEPS:
            call_id = f"call_{number}_{step}"
            name = TOOLS[step % len(TOOLS)]
            arguments = {"city": f"city{(number + step) % 50}", "day": step}
            part = {"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}
            output = {"role": "assistant", "parts": [part], "finish_reason": "tool_call"}
        else:
            text = {"type": "text", "content": f"Done with trip {number}."}
            output = {"role": "assistant", "parts": [text], "finish_reason": "stop"}
        chat_attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "bench-model",
            "gen_ai.input.messages": json.dumps(history),
            "gen_ai.output.messages": json.dumps([output]),
        }
        spans.append(
            Span(
                trace_id=trace_id,
                span_id=span_id(1 + 2 * step),
                parent_span_id=root_id,
                name="chat bench-model",
                kind=Span.SPAN_KIND_CLIENT,
                start_time_unix_nano=begin,
                end_time_unix_nano=begin + 1_000_000,
                attributes=_attributes(chat_attributes),
            )
        )
        history.append(output)
        if step == TOOL_STEPS:
            break
        result = f"result of {name} {step}"
        tool_attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.call.arguments": json.dumps(arguments),
            "gen_ai.tool.call.result": result,
        }
        failed = number % 4 == 0 and step == 1  # a quarter of the traces: one call fails
        status = Status(code=Status.STATUS_CODE_ERROR, message="timeout") if failed else ok
        if failed:
            tool_attributes["error.type"] = "timeout"
        spans.append(
            Span(
                trace_id=trace_id,
                span_id=span_id(2 + 2 * step),
                parent_span_id=root_id,
                name=f"execute_tool {name}",
                kind=Span.SPAN_KIND_INTERNAL,
                start_time_unix_nano=begin + 1_000_000,
                end_time_unix_nano=begin + 2_000_000,
                attributes=_attributes(tool_attributes),
                status=status,
            )
        )
        history.append(
            {
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": call_id, "response": result}],
            }
        )
    root = Span(
        trace_id=trace_id, span_id=root_id, name="invoke_agent planner",
        kind=Span.SPAN_KIND_INTERNAL, start_time_unix_nano=clock,
        end_time_unix_nano=clock + (3 * TOOL_STEPS + 4) * 1_000_000,
        attributes=_attributes({"gen_ai.operation.name": "invoke_agent",
                                "gen_ai.agent.name": "planner"}),
        status=ok,
    )  # fmt: skip
    return [root, *spans]


def requests(traces: int, per_request: int) -> list[bytes]:
    """The export requests, ``per_request`` whole traces each, serialised."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
    from opentelemetry.proto.resource.v1.resource_pb2 import Resource
    from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans

    resource = Resource(attributes=_attributes({"service.name": "serve-bench"}))
    scope = InstrumentationScope(name="serve-bench", version="1.0")
    bodies = []
    for first in range(0, traces, per_request):
        spans = [span for number in range(first, min(first + per_request, traces))
                 for span in trace_spans(number)]  # fmt: skip
        request = ExportTraceServiceRequest(
            resource_spans=[ResourceSpans(resource=resource,
                                          scope_spans=[ScopeSpans(scope=scope, spans=spans)])]
        )  # fmt: skip
        bodies.append(request.SerializeToString())
    return bodies


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1])
    except (OSError, IndexError, ValueError):
        pass
    return 0


class Rows:
    """The results file's rows counted as it grows (only the new bytes read)."""

    def __init__(self, path: Path) -> None:
        self.path, self.count, self.at = path, 0, 0

    def poll(self) -> int:
        try:
            with open(self.path, "rb") as file:
                file.seek(self.at)
                chunk = file.read()
        except FileNotFoundError:
            return 0
        ends = chunk.rfind(b"\n") + 1
        self.count += chunk.count(b"\n", 0, ends)
        self.at += ends
        return self.count


def _send(port: int, bodies: list[bytes], failures: list[str], every: float = 0.0) -> None:
    """Post ``bodies`` in turn, one each ``every`` seconds (0: as fast as answered)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    headers = {"Content-Type": "application/x-protobuf"}
    started = time.perf_counter()
    for number, body in enumerate(bodies):
        if every:
            wait = started + number * every - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
        while True:  # as an OTLP exporter does: a 503 is sent again after Retry-After
            connection.request("POST", "/v1/traces", body=body, headers=headers)
            reply = connection.getresponse()
            reply.read()
            if reply.status != 503:
                break
            failures.append("503")
            time.sleep(float(reply.getheader("Retry-After") or 1))
        if reply.status != 200:
            failures.append(str(reply.status))
    connection.close()


def measure_size(
    traces: int, work: Path, *, per_request: int, senders: int, max_open: int, rate: int = 0
) -> dict[str, Any]:
    """One server, ``traces`` traces sent to it (``rate`` spans a second in all, 0: as
    fast as it answers); what was measured."""
    bodies = requests(traces, per_request)
    out = work / f"serve-{traces}.jsonl"
    out.unlink(missing_ok=True)
    for stale in work.glob(f"serve-{traces}.jsonl*"):
        stale.unlink()
    metrics = [part for name in METRICS for part in ("-m", name)]
    command = [sys.executable, "-m", "tracegrade", "serve", "--listen", "127.0.0.1:0",
               "--out", str(out), *metrics, "--trace-timeout", "5",
               "--max-open-traces", str(max_open)]  # fmt: skip
    if os.environ.get("SERVE_BENCH_PROFILE"):  # cProfile the server, its stats written here
        profile = work / f"serve-{traces}.prof"
        command[1:3] = ["-m", "cProfile", "-o", str(profile), "-m", "tracegrade"]
    env = {**os.environ, "NO_COLOR": "1"}
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    assert process.stderr is not None
    line = process.stderr.readline()
    found = re.search(r"http://[^:]+:(\d+)", line)
    if not found:
        process.kill()
        raise SystemExit(f"bench: serve did not start: {line}{process.stderr.read()}")
    port = int(found.group(1))
    time.sleep(0.2)
    ready_kb = _rss_kb(process.pid)
    sampled = [ready_kb]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.05):
            sampled.append(_rss_kb(process.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    failures: list[str] = []
    shares = [bodies[index::senders] for index in range(senders)]
    every = senders * per_request * SPANS_PER_TRACE / rate if rate else 0.0
    threads = [
        threading.Thread(target=_send, args=(port, share, failures, every)) for share in shares
    ]
    rows = Rows(out)
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    sent = time.perf_counter() - started
    deadline = time.monotonic() + 600
    while rows.poll() < traces and time.monotonic() < deadline:
        time.sleep(0.01)
    finished = time.perf_counter() - started
    end_kb = _rss_kb(process.pid)
    peak_kb = max(max(sampled), high_water_kb(process.pid))
    done.set()
    sampler.join()
    process.send_signal(signal.SIGTERM)
    _, summary = process.communicate(timeout=120)
    refused = failures.count("503")  # sent again until taken: the server's backpressure
    failures = [failure for failure in failures if failure != "503"]
    if failures:
        raise SystemExit(f"bench: {len(failures)} requests failed ({failures[:3]})")
    if rows.count < traces:
        raise SystemExit(f"bench: {rows.count} of {traces} rows after 600 s\n{summary}")
    scored = [json.loads(line) for line in out.read_text().splitlines()[:50] if line]
    assert all(row["metrics"]["tool_call_efficiency"]["value"] is not None for row in scored)
    evicted = re.search(r"(\d+) evicted", summary)
    late = re.search(r"late spans \(their trace already scored\): (\d+)", summary)
    spans = traces * SPANS_PER_TRACE
    return {
        "traces": traces,
        "rate": rate,
        "spans": spans,
        "requests": len(bodies),
        "request_kb": sum(map(len, bodies)) / len(bodies) / 1024,
        "sent_seconds": sent,
        "seconds": finished,
        "spans_per_second": spans / finished,
        "sent_spans_per_second": spans / sent,
        "ready_mb": ready_kb / 1024,
        "peak_mb": peak_kb / 1024,
        "end_mb": end_kb / 1024,
        "evicted": int(evicted.group(1)) if evicted else None,
        "late_spans": int(late.group(1)) if late else None,
        "refused": refused,
        "exit": process.returncode,
    }


QUICK = {"sizes": [20, 40], "rates": [0, 2_000]}
FULL = {"sizes": [1_000, 4_000, 16_000], "rates": [0, 3_000]}
"""The sizes and rates of ``scripts/run-bench`` (quick, and measured)."""


def measure(
    sizes: list[int],
    work: Path,
    *,
    per_request: int = 10,
    senders: int = 4,
    max_open: int = 200,
    rates: list[int] = FULL["rates"],
) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    runs = []
    for rate in rates:
        for size in sizes:
            paced = f", {rate:,} spans/s" if rate else ", as fast as it answers"
            print(f"bench: serve, {size:,} traces{paced}", file=sys.stderr, flush=True)
            runs.append(measure_size(size, work, per_request=per_request, senders=senders,
                                     max_open=max_open, rate=rate))  # fmt: skip
    return {
        "when": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "per_request": per_request,
        "senders": senders,
        "max_open": max_open,
        "cpus": os.cpu_count(),
        "runs": runs,
    }


def _sent_at(each: dict[str, Any]) -> str:
    return f"{each['rate']:,} spans/s" if each["rate"] else "as fast as answered"


def table(found: dict[str, Any]) -> list[str]:
    lines = [
        "| sent at | traces | spans | end to end s | spans/s | requests alone, spans/s "
        "| MB ready | peak MB | MB at the end | evicted | refused (503) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for each in found["runs"]:
        lines.append(
            f"| {_sent_at(each)} | {each['traces']:,} | {each['spans']:,} | "
            f"{each['seconds']:.2f} | {each['spans_per_second']:,.0f} | "
            f"{each['sent_spans_per_second']:,.0f} | {each['ready_mb']:.0f} | "
            f"{each['peak_mb']:.0f} | {each['end_mb']:.0f} | {each['evicted'] or 0:,} | "
            f"{each.get('refused', 0):,} |"
        )
    return lines


def _flat(runs: list[dict[str, Any]]) -> bool:
    """Whether the peaks of ``runs`` (one rate, several sizes) stay within 25% of the
    smallest, however many traces were sent."""
    peaks = [each["peak_mb"] for each in runs]
    return len(peaks) > 1 and max(peaks) <= 1.25 * min(peaks)


def target_cells(found: dict[str, Any]) -> list[str]:
    """The targets table's row, its three cells: throughput from the runs sent as fast as
    answered, memory from the paced runs."""
    flooded = [each for each in found["runs"] if not each["rate"]] or found["runs"]
    paced = [each for each in found["runs"] if each["rate"]]
    slowest = min(each["spans_per_second"] for each in flooded)
    measured = f"{slowest:,.0f} spans/s"
    if paced:
        peaks = " / ".join(f"{each['peak_mb']:.0f}" for each in paced)
        sizes = " / ".join(f"{each['traces']:,}" for each in paced)
        measured += f"; peak {peaks} MB for {sizes} traces at {_sent_at(paced[0])}"
    bounded = _flat(paced)
    if slowest >= TARGET and bounded:
        verdict = "met"
        flooded_peaks = [each for each in found["runs"] if not each["rate"]]
        if len(flooded_peaks) > 1 and not _flat(flooded_peaks):
            verdict += " below its scoring rate; sent faster, memory grows (see Live scoring)"
    elif slowest < TARGET:
        verdict = f"**missed** (reaches {slowest / TARGET:.0%} of it)"
    else:
        verdict = "**missed** (memory grows with the traces sent)"
    return [f"{TARGET_ROW[2:]}, memory bounded", measured, verdict]


def target_row(found: dict[str, Any]) -> str:
    return "| " + " | ".join(target_cells(found)) + " |"


def _backlog_note(found: dict[str, Any]) -> list[str]:
    """What the runs sent faster than the server scores show of its memory."""
    flooded = [each for each in found["runs"] if not each["rate"]]
    if not flooded:
        return []
    if _flat(flooded):
        refused = sum(each.get("refused", 0) for each in flooded)
        return [
            "",
            "Sent faster than the server scores (scoring runs in one thread, most of its "
            "time in reading each trace's spans into a conversation), the traces waiting "
            f"are bounded: past `--max-open-traces` the quietest is scored early "
            f"(*evicted*), and while twice that many wait, requests are refused with 503 "
            f"and Retry-After ({refused:,} in all here), which the senders, as OTLP "
            "exporters do, send again: the peak does not grow with the traces sent.",
        ]
    peaks = ", ".join(f"{each['peak_mb']:.0f} MB for {each['traces']:,}" for each in flooded)
    return [
        "",
        f"Sent as fast as the server answers, the peak still grows with what was sent "
        f"({peaks} traces).",
    ]


def markdown(found: dict[str, Any]) -> list[str]:
    """The section of docs/benchmarks.md, within its markers."""
    return [
        MARKERS[0],
        "## Live scoring (tracegrade serve)",
        "",
        f"Measured {found['when']} by `bench/serve.py`: `tracegrade serve` on 127.0.0.1 "
        f"with `-m {' -m '.join(METRICS)} --max-open-traces {found['max_open']}`, one "
        "server per row, sent agent traces in the GenAI semantic conventions (an "
        "`invoke_agent` root, four `chat` spans each calling a tool, their four "
        f"`execute_tool` spans, one of them failed in a quarter of the traces, and a last `chat`: "
        f"{SPANS_PER_TRACE} spans, the chat spans "
        "carrying the conversation so far) as OTLP protobuf, "
        f"{found['per_request']} whole traces to a request, from {found['senders']} "
        "threads over kept-alive connections, as fast as the server answers or paced "
        "to the rate in *sent at*. *End to end* "
        "runs from the first request sent to the last trace's row written to `--out`; "
        "*requests alone* until the last request was answered. Memory is the server's "
        "resident set: when it was ready, its peak (VmHWM, and VmRSS sampled every 50 ms) "
        f"and once every row was written. The sender runs on the same {found['cpus']} CPUs.",
        "",
        *table(found),
        *_backlog_note(found),
        "",
        MARKERS[1],
    ]


def put_target(document: Path, found: dict[str, Any]) -> None:
    """The benchmark's row of the targets table, in place of the one there, else after
    the table's last row."""
    lines = document.read_text(encoding="utf-8").split("\n")
    row = target_row(found)
    kept = [row if line.startswith(TARGET_ROW) else line for line in lines]
    if row not in kept:
        start = kept.index("## Targets")
        at = start + 1
        while at < len(kept) and not kept[at].startswith("|"):
            at += 1
        while at < len(kept) and kept[at].startswith("|"):
            at += 1
        kept.insert(at, row)
    document.write_text("\n".join(kept), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=FULL["sizes"])
    parser.add_argument("--per-request", type=int, default=10, help="traces to a request")
    parser.add_argument("--senders", type=int, default=4, help="sending threads")
    parser.add_argument("--max-open-traces", type=int, default=200)
    parser.add_argument(
        "--rates",
        type=int,
        nargs="+",
        default=FULL["rates"],
        help="spans a second sent, each size at each (0: as fast as taken)",
    )
    parser.add_argument("--work", type=Path, default=BENCH / ".work")
    parser.add_argument("--doc", type=Path, help="a markdown file to put the section in")
    options = parser.parse_args()
    found = measure(options.sizes, options.work, per_request=options.per_request,
                    senders=options.senders, max_open=options.max_open_traces,
                    rates=options.rates)  # fmt: skip
    (options.work / "serve.json").write_text(json.dumps(found, indent=1))
    print("\n".join(table(found)))
    print(target_row(found))
    if options.doc is not None:
        replace_section(options.doc, MARKERS, markdown(found))
        put_target(options.doc, found)
        print(f"bench: wrote the serve section of {options.doc}", file=sys.stderr)


if __name__ == "__main__":
    main()
