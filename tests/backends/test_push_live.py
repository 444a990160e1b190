"""Scores pushed while they are made: ``evaluate --push`` (and ``evaluate(push=...)``)
over OTLP traces read from a file, and ``serve --push`` fed by the real OpenTelemetry
SDK's exporter, both to a real OTLP/HTTP receiver on 127.0.0.1."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.backends.otlp_receiver import Receiver, attributes, otlp_receiver
from tests.convert.shapes_otel import as_otel
from tests.processes import run
from tests.test_serve import MESSAGES, export_with_sdk, serve, trace_id_of

import tracegrade
from tracegrade import MultiTurnSample
from tracegrade.backends import PushedScore, PushOutcome
from tracegrade.model.origin import Origin
from tracegrade.run.push_journal import journal_path


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with otlp_receiver() as found:
        yield found


def target(receiver: Receiver) -> str:
    return receiver.url.replace("http://", "otlp://")


def test_evaluate_push_sends_each_trace_s_scores_as_they_are_written(
    receiver: Receiver, tmp_path: Path
) -> None:
    documents = [as_otel(MESSAGES), as_otel(MESSAGES[:2])]
    traces = tmp_path / "traces.jsonl"
    traces.write_text("".join(json.dumps(document) + "\n" for document in documents))
    out = tmp_path / "run.jsonl"
    command = [sys.executable, "-m", "tracegrade", "evaluate", str(traces), "--source", "otel"]
    command += ["-m", "tool_call_efficiency", "-m", "exact_match", "--out", str(out)]
    done = run([*command, "--push", target(receiver)])
    assert done.returncode == 4, done.stderr  # exact_match fails on every trace
    assert "2 scores of 2 rows (2 created" in done.stderr
    assert "2 metric failures" in done.stderr  # exact_match needs a reference
    sent = {(r["traceId"], attributes(r)["gen_ai.evaluation.name"][1]) for r in receiver.records()}
    assert sent == {(trace_id_of(document), "tool_call_efficiency") for document in documents}
    journal = journal_path(out, target(receiver)).read_text()
    journaled = [
        index for line in journal.splitlines()[1:] for index, _ in json.loads(line)["rows"]
    ]
    assert sorted(journaled) == [0, 1]

    # a resumed run hands its earlier rows to the pusher: the journal has them all
    resumed = run([*command, "--resume", "--push", target(receiver)])
    assert resumed.returncode == 4, resumed.stderr
    assert "2 rows pushed before" in resumed.stderr
    assert len(receiver.records()) == 2

    # --push alone: back where each trace came from, which a file does not say
    home = run([*command[:-2], "--push"])
    assert home.returncode == 3, home.stderr
    assert "2 rows whose origin names no backend" in home.stderr


def test_evaluate_from_python_pushes_and_says_what_it_did(
    receiver: Receiver, tmp_path: Path
) -> None:
    origin = Origin(system="otlp", trace_ids=("ab" * 16,), root_ids=("cd" * 8,))
    samples = [tracegrade.MultiTurnSample(id="t", user_input=MESSAGES, origin=origin)]
    result = tracegrade.evaluate(
        samples, [tracegrade.ToolCallEfficiency()], push=target(receiver), progress=False
    )
    assert result.pushed is not None and result.pushed.created == 1, result.pushed
    (record,) = receiver.records()
    assert (record["traceId"], record["spanId"]) == ("ab" * 16, "cd" * 8)

    # rows scored by worker processes come back as lines: pushed all the same
    records = tmp_path / "samples.jsonl"
    lines = [
        json.dumps(
            {
                **samples[0].to_dict(),
                "id": f"w{n}",
                "origin": {
                    **origin.to_dict(),
                    "trace_ids": [f"{n:032x}"],
                    "root_ids": [f"{n:016x}"],
                },
            }
        )
        for n in range(1, 5)
    ]
    records.write_text("\n".join(lines) + "\n")
    parallel = tracegrade.evaluate(
        records,
        [tracegrade.ToolCallEfficiency()],
        workers=2,
        keep_rows=False,
        push=target(receiver),
        progress=False,
    )
    assert parallel.pushed is not None and parallel.pushed.created == 4, parallel.pushed
    assert {r["traceId"] for r in receiver.records()[1:]} == {f"{n:032x}" for n in range(1, 5)}
    with pytest.raises(ValueError, match="is not a backend URL"):
        tracegrade.evaluate(samples, [tracegrade.ToolCallEfficiency()], push="http://x")


def test_serve_push_sends_live_scores_and_reports_on_exit(
    receiver: Receiver, tmp_path: Path
) -> None:
    own = as_otel(MESSAGES)  # the judge's requests, were they traced back: not scored
    own["resourceSpans"][0]["resource"] = {
        "attributes": [{"key": "service.name", "value": {"stringValue": "tracegrade"}}]
    }
    spans = len(own["resourceSpans"][0]["scopeSpans"][0]["spans"])
    for server in serve(tmp_path, "--trace-timeout", "30", "--push", target(receiver)):
        assert server.post(json.dumps(own).encode()) == 200
        trace_id = export_with_sdk(server.url)
        assert len(server.wait_rows(1)) == 1
        code, errors = server.terminate()
        assert code == 143, errors
        assert "pushed to otlp://" in errors and "1 scores of 1 rows (1 created" in errors
        assert f"tracegrade's own spans (service.name tracegrade, not scored): {spans}" in errors
        assert len(server.rows()) == 1
    (record,) = receiver.records()
    assert record["traceId"] == trace_id
    assert attributes(record)["gen_ai.evaluation.name"][1] == "tool_call_efficiency"


def test_serve_keeps_the_judge_s_requests_out_of_instrumentation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_SDK_DISABLED", "false")  # put back as it was afterwards
    from opentelemetry.instrumentation.utils import is_instrumentation_enabled

    from tracegrade.cli.serve import suppress_own_tracing

    seen: list[bool] = []

    def serving() -> None:  # a thread of its own: the test's context stays as it was
        seen.append(is_instrumentation_enabled())
        suppress_own_tracing()
        seen.append(is_instrumentation_enabled())

    thread = threading.Thread(target=serving)
    thread.start()
    thread.join()
    assert seen == [True, False]
    assert is_instrumentation_enabled()
    assert os.environ["OTEL_SDK_DISABLED"] == "true"


def test_serve_sets_up_the_judge_from_its_flags(tmp_path: Path) -> None:
    from tests.processes import environment

    bare = {k: v for k, v in environment().items() if not k.startswith(("TRACEGRADE_", "OPENAI"))}
    out = tmp_path / "live.jsonl"
    command = [sys.executable, "-m", "tracegrade", "serve", "--listen", "127.0.0.1:0"]
    command += ["--out", str(out), "-m", "trajectory_judge", "--judge-provider", "openai"]
    refused = run(command, env=bare, timeout=60)  # a server that started would not end
    assert refused.returncode == 2, refused.stderr
    assert "cannot set up the judge: no judge model configured" in refused.stderr
    assert not out.exists()


class PulledBackend:
    """A backend standing in for Phoenix: two traces to pull, and every score pushed to
    it kept (a second push of a key on a trace updates it, as the real ones do)."""

    def __init__(self, address: Any) -> None:
        self.address = address

    def pull(self, filters: Any, skipped: Any) -> Iterator[MultiTurnSample]:
        for n in (1, 2):
            origin = Origin(
                system="phoenix",
                location=self.address.text,
                project=self.address.project,
                trace_ids=(f"{n:032x}",),
                root_ids=(f"{n:016x}",),
            )
            yield MultiTurnSample(id=f"{n:032x}", user_input=MESSAGES, origin=origin)

    def push(self, scores: Sequence[PushedScore]) -> PushOutcome:
        outcome = PushOutcome()
        for score in scores:
            key = (score.origin.root_ids[0], score.key)
            outcome.updated += key in PUSHED
            outcome.created += key not in PUSHED
            PUSHED[key] = score.value
        return outcome

    def dataset_references(self, name: str) -> Iterator[dict[str, Any]]:
        raise NotImplementedError

    def close(self) -> None:
        pass


PUSHED: dict[tuple[str, str], float | None] = {}


def test_a_pulled_run_pushes_back_where_it_came_from_then_on_to_otlp(
    receiver: Receiver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    import tracegrade.backends
    from tracegrade.cli.main import main

    real = tracegrade.backends.open_backend

    def open_backend(url: Any) -> Any:
        address = tracegrade.backends.parse_address(str(url))
        return PulledBackend(address) if address.scheme == "phoenix" else real(url)

    monkeypatch.setattr(tracegrade.backends, "open_backend", open_backend)
    PUSHED.clear()
    url, out = "phoenix://127.0.0.1:6006/default", tmp_path / "run.jsonl"
    command = ["evaluate", url, "-m", "tool_call_efficiency", "--out", str(out), "--push"]
    assert main(command) == 0
    assert "2 scores of 2 rows (2 created, 0 updated" in capsys.readouterr().err
    assert {(f"{n:016x}", "tracegrade.tool_call_efficiency"): 1.0 for n in (1, 2)} == PUSHED
    assert main(["push", str(out), "--again"]) == 0  # the rows' origin: the same backend
    assert "(0 created, 2 updated" in capsys.readouterr().err

    assert main(["push", str(out), target(receiver)]) == 0
    assert {r["traceId"] for r in receiver.records()} == {f"{n:032x}" for n in (1, 2)}
