"""Pushing a finished run's scores (``tracegrade push``, :func:`tracegrade.push`) to a real
OTLP/HTTP receiver on 127.0.0.1 as GenAI evaluation events: what is sent and what is
counted, batches, the journal that resumes a killed push, ``--again``, credentials kept
out of every output, and the event's shape against the OpenTelemetry SDK's own."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.backends.otlp_receiver import Receiver, attributes, otlp_receiver
from tests.processes import run, start

import tracegrade
from tracegrade.model.origin import Origin
from tracegrade.model.results import SampleResult, Score
from tracegrade.run.push_journal import PushError, journal_path

TRACE = ["0" * 31 + str(n) for n in range(1, 4)]
ROOT = ["0" * 14 + f"a{n}" for n in range(1, 4)]


def rows(location: str | None) -> list[SampleResult]:
    """Three traced rows (5 scores to push, 1 failed metric), one from a plain file and
    one rejected record."""
    origins = [
        Origin(system="otlp", location=location, trace_ids=(TRACE[n],), root_ids=(ROOT[n],))
        for n in range(3)
    ]
    return [
        SampleResult(
            0,
            "t0",
            {
                "tool_call_f1": Score(0.5, "one of two calls", {"matched": 1}, False),
                "exact_match": Score(1.0, "same answer", {}, True),
            },
            origin=origins[0],
        ),
        SampleResult(
            1,
            "t1",
            {"tool_call_f1": Score.not_applicable("no calls expected")},
            errors={"exact_match": "boom"},
            origin=origins[1],
        ),
        SampleResult(
            2,
            "t2",
            {
                "tool_call_f1": Score(1.0, "all calls"),
                "exact_match": Score(0.0, "differs", {}, False),
            },
            origin=origins[2],
        ),
        SampleResult(3, "plain", {"tool_call_f1": Score(1.0, "all calls")}),
        SampleResult(4, None, rejected="not a sample", place="line 5"),
    ]


def write(path: Path, found: list[SampleResult]) -> Path:
    path.write_text("".join(json.dumps(row.to_dict()) + "\n" for row in found))
    return path


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with otlp_receiver() as found:
        yield found


def target(receiver: Receiver) -> str:
    return receiver.url.replace("http://", "otlp://")


def test_each_score_becomes_an_evaluation_event_on_its_trace(
    receiver: Receiver, tmp_path: Path
) -> None:
    results = write(tmp_path / "run.jsonl", rows(None))
    receiver.too_many_first = 1  # retried after Retry-After
    summary = tracegrade.push(results, target(receiver), batch_size=2)
    assert (summary.scores, summary.created, summary.pushed_rows) == (5, 5, 3)
    assert (summary.failed_metrics, summary.no_origin, summary.rejected) == (1, 1, 1)
    assert summary.ok and not summary.refused
    assert [len(r["resourceLogs"][0]["scopeLogs"][0]["logRecords"]) for r in receiver.requests] == [
        2,
        2,
        1,
    ]
    records = receiver.records()
    assert all(record["eventName"] == "gen_ai.evaluation.result" for record in records)
    seen = {
        (record["traceId"], attributes(record)["gen_ai.evaluation.name"][1]): record
        for record in records
    }
    first = seen[(TRACE[0], "exact_match")]
    assert first["spanId"] == ROOT[0]
    assert attributes(first) == {
        "event.name": ("stringValue", "gen_ai.evaluation.result"),
        "gen_ai.evaluation.name": ("stringValue", "exact_match"),
        "gen_ai.evaluation.score.value": ("doubleValue", 1.0),
        "gen_ai.evaluation.score.label": ("stringValue", "pass"),
        "gen_ai.evaluation.explanation": ("stringValue", "same answer"),
        "tracegrade.sample.id": ("stringValue", "t0"),
    }
    assert attributes(seen[(TRACE[0], "tool_call_f1")])["gen_ai.evaluation.score.label"] == (
        "stringValue",
        "fail",
    )
    not_applicable = attributes(seen[(TRACE[1], "tool_call_f1")])
    assert "gen_ai.evaluation.score.value" not in not_applicable
    assert not_applicable["gen_ai.evaluation.score.label"] == ("stringValue", "not applicable")
    assert "gen_ai.evaluation.score.label" not in attributes(seen[(TRACE[2], "tool_call_f1")])
    assert len(seen) == 5
    resource = receiver.requests[0]["resourceLogs"][0]
    assert attributes(resource["resource"])["service.name"] == ("stringValue", "tracegrade")
    journal = journal_path(results, target(receiver))
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    assert lines[0] == {"target": target(receiver)}
    assert [[pair[0] for pair in line["rows"]] for line in lines[1:]] == [[0], [1], [2]]

    again = tracegrade.push(results, target(receiver))
    assert (again.scores, again.already) == (0, 3)
    assert len(receiver.requests) == 3
    anew = tracegrade.push(results, target(receiver), again=True)
    assert (anew.scores, anew.already) == (5, 0)


def test_a_killed_push_resumes_where_it_stopped_and_again_sends_all(
    receiver: Receiver, tmp_path: Path
) -> None:
    results = write(tmp_path / "run.jsonl", rows(target(receiver)))
    receiver.hold_request = 2
    command = [sys.executable, "-m", "tracegrade", "push", str(results), "--batch-size", "2"]
    process = start(command)  # no BACKEND: each row's origin.location
    try:
        assert receiver.holding.wait(30), "the second batch never came"
        process.kill()
        process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    receiver.release.set()
    journal = journal_path(results, target(receiver))
    entries = [json.loads(line) for line in journal.read_text().splitlines()][1:]
    assert [[pair[0] for pair in entry["rows"]] for entry in entries] == [[0]]

    resumed = run(command)
    assert resumed.returncode == 0, resumed.stderr
    assert "3 scores of 2 rows (3 created, 0 updated, 0 refused)" in resumed.stderr
    assert "1 rows pushed before" in resumed.stderr
    later = [attributes(r)["tracegrade.sample.id"][1] for r in receiver.records()[4:]]
    assert later == ["t1", "t2", "t2"]

    anew = run([*command, "--again"])
    assert anew.returncode == 0, anew.stderr
    assert "5 scores of 3 rows" in anew.stderr


def test_refusals_no_backend_ids_and_bad_urls_exit_non_zero(
    receiver: Receiver, tmp_path: Path
) -> None:
    found = rows(None)
    found[0].origin = Origin(system="langfuse", trace_ids=("not-otel",))
    results = write(tmp_path / "run.jsonl", found)
    refused = run([sys.executable, "-m", "tracegrade", "push", str(results), target(receiver)])
    assert refused.returncode == 3
    assert "refused: sample 't0', exact_match: 'not-otel' is not an OpenTelemetry trace id" in (
        refused.stderr
    )
    entries = journal_path(results, target(receiver)).read_text().splitlines()[1:]
    journaled = [pair[0] for line in entries for pair in json.loads(line)["rows"]]
    assert journaled == [1, 2]  # row 0 is tried again next time

    plain = write(tmp_path / "plain.jsonl", rows(None)[3:])
    nothing = run([sys.executable, "-m", "tracegrade", "push", str(plain), target(receiver)])
    assert nothing.returncode == 3
    assert "hold no backend ids" in nothing.stderr
    bad = run([sys.executable, "-m", "tracegrade", "push", str(plain), "otlp://u:p@host:1"])
    assert bad.returncode == 2 and "credentials do not belong in the URL" in bad.stderr
    with pytest.raises(PushError, match="hold no backend ids"):
        tracegrade.push(rows(None)[3:], target(receiver))


@pytest.mark.parametrize("protocol", ["http/protobuf", "http/json"])
def test_a_partial_success_is_reported_journaled_and_not_sent_again(
    receiver: Receiver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, protocol: str
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
    receiver.partial = (2, "attribute limit exceeded")
    results = write(tmp_path / "run.jsonl", rows(target(receiver)))
    command = [sys.executable, "-m", "tracegrade", "push", str(results), "--batch-size", "3"]
    first = run(command)
    assert first.returncode == 3, first.stderr
    # 5 scores in 2 requests (3, then 2); each time the receiver said 2 were rejected
    assert "5 scores of 3 rows (1 created, 0 updated, 4 refused)" in first.stderr
    said = f"refused: {target(receiver)}: 2 of 3 events rejected by the receiver: attribute"
    assert said in first.stderr
    assert "2 of 2 events rejected by the receiver" in first.stderr
    entries = journal_path(results, target(receiver)).read_text().splitlines()[1:]
    assert [pair[0] for line in entries for pair in json.loads(line)["rows"]] == [0, 1, 2]
    again = run(command)  # OTLP has no update: a resend would duplicate those taken
    assert again.returncode == 0, again.stderr
    assert "3 rows pushed before" in again.stderr and len(receiver.records()) == 5


def test_headers_come_from_the_environment_and_never_show(
    receiver: Receiver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "s3cret-token-42"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Bearer%20{secret}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
    summary = tracegrade.push(rows(None), target(receiver))  # rows: no journal
    assert summary.created == 5
    assert receiver.headers[0]["authorization"] == f"Bearer {secret}"
    assert receiver.headers[0]["content-type"] == "application/json"
    receiver.echo_headers = True  # a 400 whose body quotes the credentials
    results = write(tmp_path / "run.jsonl", rows(None))
    failed = run([sys.executable, "-m", "tracegrade", "push", str(results), target(receiver)])
    assert failed.returncode == 3
    assert "HTTP 400" in failed.stderr and "3 rows not sent" in failed.stderr
    assert secret not in failed.stderr + failed.stdout
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret not in path.read_text()


def test_the_event_decodes_as_the_sdk_s_own_evaluation_event(receiver: Receiver) -> None:
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

    tracegrade.push(rows(None)[:1], target(receiver))
    ours = receiver.records()[0]
    provider = LoggerProvider()
    provider.add_log_record_processor(
        SimpleLogRecordProcessor(OTLPLogExporter(f"{receiver.url}/v1/logs"))
    )
    span = SpanContext(int(TRACE[0], 16), int(ROOT[0], 16), True, TraceFlags(1))
    provider.get_logger("sdk").emit(
        event_name="gen_ai.evaluation.result",
        context=set_span_in_context(NonRecordingSpan(span)),
        attributes={key: value for key, (_, value) in attributes(ours).items()},
    )
    provider.shutdown()
    sdk = receiver.records()[-1]
    for key in ("eventName", "traceId", "spanId"):
        assert ours[key] == sdk[key], key
    assert attributes(ours) == attributes(sdk)
