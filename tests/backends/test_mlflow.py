"""The MLflow backend against a real MLflow tracking server (tests/backends/server_mlflow.py)
filled with real traces: MLflow's OpenAI autologging around a small tool-calling agent
whose model is a stand-in server on 127.0.0.1 (tests/backends/mlflow_agent.py). Pulled,
scored, pushed, and the assessments read back through MLflow's own REST API."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from tests.backends.server_mlflow import PYTHON, QUIET
from tests.session_servers import DIRECTORY_VARIABLE, session_server

from tracegrade.backends import BackendError, PullFilters, PushedScore, open_backend
from tracegrade.backends.datasets import dataset_references
from tracegrade.backends.mlflow import MlflowBackend
from tracegrade.cli.main import main
from tracegrade.convert._base import Skipped
from tracegrade.errors import RecordError
from tracegrade.model.messages import AIMessage, ToolCall, ToolMessage
from tracegrade.model.origin import Origin
from tracegrade.model.samples import MultiTurnSample

httpx = pytest.importorskip("httpx")
ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Filled:
    """The server, the experiment the agent traced into, and what each of its
    conversations was (``trace_id``, ``session``, ``question``, ``calls``)."""

    url: str
    experiment: str
    conversations: list[dict[str, Any]]
    empty_trace_id: str

    @property
    def address(self) -> str:
        return f"mlflow://{self.url.removeprefix('http://')}/{self.experiment}"


@pytest.fixture(scope="module")
def filled() -> Filled:
    """The traces the agent made, made once per test session: the first worker to ask
    runs the agent, the others read what it wrote beside the session's servers."""
    url = session_server("mlflow")
    directory = Path(os.environ[DIRECTORY_VARIABLE]) / "mlflow"  # the server's own folder
    with open(directory / "agent.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        made = directory / "agent.json"
        if not made.exists():
            made.write_text(json.dumps(_run_agent(url)))
        facts = json.loads(made.read_text())
    return Filled(url, facts["experiment"], facts["conversations"], facts["empty_trace_id"])


def _run_agent(url: str) -> dict[str, Any]:
    experiment = f"agent-{uuid.uuid4().hex[:8]}"
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_TRACKING_")}
    done = subprocess.run(
        [str(PYTHON), "-m", "tests.backends.mlflow_agent", url, experiment],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        env={**environment, **QUIET},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 4 and "empty_trace_id" in lines[3], done.stdout
    return {
        "experiment": experiment,
        "conversations": lines[:3],
        "empty_trace_id": lines[3]["empty_trace_id"],
    }


def _pull(filled: Filled, **filters: Any) -> list[MultiTurnSample | RecordError]:
    backend = open_backend(filled.address)
    try:
        return list(backend.pull(PullFilters(**filters), Skipped()))
    finally:
        backend.close()


def _samples(outcomes: list[MultiTurnSample | RecordError]) -> list[MultiTurnSample]:
    assert all(isinstance(o, MultiTurnSample) for o in outcomes), outcomes
    return [o for o in outcomes if isinstance(o, MultiTurnSample)]


def test_pull_reads_every_trace_with_its_calls_results_and_ids(filled: Filled) -> None:
    samples = _samples(_pull(filled))
    traced = filled.conversations
    assert [s.id for s in samples] == [c["trace_id"] for c in traced]  # first started first
    weather = samples[0]
    assert [m.type for m in weather.user_input] == ["human", "ai", "tool", "ai"]
    call, result = weather.user_input[1], weather.user_input[2]
    assert isinstance(call, AIMessage) and call.tool_calls
    assert [[c.id, c.name, c.args] for c in call.tool_calls] == traced[0]["calls"]
    assert isinstance(result, ToolMessage)
    assert (result.content, result.tool_call_id) == ("sunny, 21 C in Paris", "call_get_weather")
    assert call.usage is not None and (call.usage.input_tokens, call.usage.output_tokens) == (20, 7)
    # the second turn of session s-1 repeats the first in its requests, then adds its own
    assert [m.content for m in samples[1].user_input[4:]] == ["Add 2 and 3.", "", "5", "It is 5."]
    assert [m.content for m in samples[2].user_input] == ["Hello!", "Hi there."]
    for sample, conversation in zip(samples, traced, strict=True):
        origin = sample.origin
        assert origin is not None
        assert (origin.system, origin.location) == ("mlflow", filled.address)
        assert origin.trace_ids == (conversation["trace_id"],)
        assert len(origin.root_ids) == 1 and len(origin.root_ids[0]) == 16
        assert origin.project is not None and origin.project.isdigit()
        assert origin.session_id is None


def test_pull_by_session_and_the_filters(filled: Filled) -> None:
    traced = filled.conversations
    sessions = _samples(_pull(filled, group_by="session"))
    assert [s.id for s in sessions] == ["s-1", "s-2"]
    first = sessions[0]
    assert first.origin is not None and first.origin.session_id == "s-1"
    assert first.origin.trace_ids == (traced[0]["trace_id"], traced[1]["trace_id"])
    assert [m.content for m in first.user_input if m.type == "human"] == [
        "What is the weather in Paris?",
        "Add 2 and 3.",
    ]  # the history the second turn repeats is there once
    assert len(first.user_input) == 8

    def ids(**filters: Any) -> list[str | int | None]:
        return [s.id for s in _samples(_pull(filled, **filters))]

    assert ids(tags=("team=red",)) == [traced[2]["trace_id"]]
    # a limit keeps the newest: of the three traces, the last two; of the sessions, s-2
    assert ids(tags=("team",), limit=2) == [traced[1]["trace_id"], traced[2]["trace_id"]]
    assert ids(tags=("team=blue",), limit=1) == [traced[1]["trace_id"]]
    assert ids(group_by="session", limit=1) == ["s-2"]
    assert ids(session_ids=("s-1",)) == [traced[0]["trace_id"], traced[1]["trace_id"]]
    assert ids(trace_ids=(traced[1]["trace_id"],)) == [traced[1]["trace_id"]]
    assert ids(since=datetime.now(timezone.utc) + timedelta(hours=1)) == []
    # an id asked for that the pull does not find is said, never silent
    gone = "tr-" + "0" * 32
    only = (("mlflow.trace.session", "s-2"),)
    found = _pull(filled, session_ids=("s-1", "s-2"), trace_ids=(traced[2]["trace_id"], gone))
    found += _pull(filled, session_ids=("s-1", "s-9"), group_by="session", metadata=only)
    assert [getattr(o, "id", None) for o in found] == [
        traced[2]["trace_id"],
        None,
        None,
        None,
        None,
    ]
    errors = [o for o in found if isinstance(o, RecordError)]
    assert [(e.kind, e.record_id) for e in errors] == [
        ("trace", gone),
        ("session", "s-1"),  # its traces are not among those asked for
        ("session", "s-1"),  # not in session s-2, as the metadata filter asks
        ("session", "s-9"),
    ]
    where = f"MLflow experiment {filled.address.rsplit('/', 1)[1]!r}"
    assert f"trace {gone}: {where} has no such trace matching the other filters" in str(errors[0])


def _assessments(filled: Filled, trace_id: str) -> list[dict[str, Any]]:
    reply = httpx.get(f"{filled.url}/api/3.0/mlflow/traces/{trace_id}", timeout=30)
    reply.raise_for_status()
    found: list[dict[str, Any]] = reply.json()["trace"]["trace_info"].get("assessments", [])
    return found


PUSHED = {"tracegrade.tool_accuracy", "tracegrade.topic", "tracegrade.goal"}


def _add_assessment(filled: Filled, trace_id: str, kind: str, who: str) -> None:
    body = {
        "assessment": {
            "assessment_name": "tracegrade.tool_accuracy",
            "trace_id": trace_id,
            "source": {"source_type": kind, "source_id": who},
            "feedback": {"value": 0.9},
        }
    }
    url = f"{filled.url}/api/3.0/mlflow/traces/{trace_id}/assessments"
    httpx.post(url, json=body, timeout=30).raise_for_status()


def _scores(samples: list[MultiTurnSample], value: float) -> list[PushedScore]:
    scores = []
    for sample in samples:
        assert sample.origin is not None and sample.id is not None
        scores.append(
            PushedScore(sample.origin, sample.id, "tool_accuracy", value, "why", label="pass")
        )
        scores.append(PushedScore(sample.origin, sample.id, "topic", None, "no topics given"))
    return scores


def test_push_writes_each_score_once_and_a_second_push_updates_it(filled: Filled) -> None:
    traced = filled.conversations
    samples = _samples(_pull(filled))
    session = _samples(_pull(filled, group_by="session", session_ids=("s-1",)))
    backend = open_backend(filled.address)
    try:
        first = backend.push(_scores(samples, 0.5))
        on_session = PushedScore(session[0].origin, "s-1", "goal", 1.0, "done")  # type: ignore[arg-type]
        assert backend.push([on_session]).created == 1
        # an interrupted push's second copy, and a person's assessment of the same name
        _add_assessment(filled, traced[0]["trace_id"], "CODE", "tracegrade")
        _add_assessment(filled, traced[0]["trace_id"], "HUMAN", "ana@example.com")
        second = backend.push(_scores(samples, 0.25))
    finally:
        backend.close()
    assert (first.created, first.updated, first.refused) == (6, 0, [])
    assert (second.created, second.updated, second.refused) == (0, 6, [])
    for conversation in traced:
        found = _assessments(filled, conversation["trace_id"])
        ours = {a["assessment_name"]: a for a in found if a["source"]["source_id"] == "tracegrade"}
        # (other tests push other metrics to these traces)
        code = [a for a in found if a["source"]["source_type"] == "CODE"]
        names = sorted(a["assessment_name"] for a in code if a["assessment_name"] in PUSHED)
        people = [a for a in found if a["source"]["source_type"] == "HUMAN"]
        assert len(people) == (1 if conversation is traced[0] else 0)  # left as it was
        expected = ["tracegrade.tool_accuracy", "tracegrade.topic"]
        if conversation is traced[1]:  # the session's score lands on its last trace
            expected = ["tracegrade.goal", *expected]
        assert names == expected  # each once, after two pushes
        accuracy, topic = ours["tracegrade.tool_accuracy"], ours["tracegrade.topic"]
        assert accuracy["feedback"]["value"] == 0.25 and accuracy["rationale"] == "why"
        assert accuracy["source"] == {"source_type": "CODE", "source_id": "tracegrade"}
        assert accuracy["metadata"]["tracegrade.label"] == "pass"
        assert topic["feedback"].get("value") is None
        assert topic["metadata"]["tracegrade.label"] == "not applicable"


def test_an_evaluation_dataset_gives_references_by_trace(filled: Filled) -> None:
    weather = filled.conversations[0]["trace_id"]
    references = dataset_references(f"{filled.address}/datasets/gold")
    found = {key: entry.fields for key, entry in references.entries.items()}
    assert found.pop(weather) == {
        "reference_tool_calls": [ToolCall(name="get_weather", args={"city": "Paris"})]
    }
    ((record_id, fields),) = found.items()  # the record made by hand: its own id
    assert record_id.startswith("dr-") and fields == {"reference": "Hi."}
    with pytest.raises(BackendError, match="no evaluation dataset named 'silver'"):
        dataset_references(f"{filled.address}/datasets/silver")


def test_pages_of_one_and_the_other_ways_to_name_the_server(
    filled: Filled, monkeypatch: pytest.MonkeyPatch
) -> None:
    traced = [c["trace_id"] for c in filled.conversations]
    backend = open_backend(filled.address)
    assert isinstance(backend, MlflowBackend)
    backend.page_size = 1  # a search page and a span fetch per trace
    try:
        pulled = list(backend.pull(PullFilters(), Skipped()))
        assert [s.id for s in _samples(pulled)] == traced
        assert (
            backend.client.requests == 1 + 3 + 3 + 1
        )  # the experiment, 4 search pages (the last empty), 3 fetches
        sessions = list(backend.pull(PullFilters(group_by="session"), Skipped()))
        assert [s.id for s in _samples(sessions)] == ["s-1", "s-2"]
        experiment = backend.experiment_id()
    finally:
        backend.close()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", filled.url)
    for address in (f"mlflow:///{filled.experiment}", f"mlflow:///{experiment}"):
        by_environment = open_backend(address)
        try:
            found = list(by_environment.pull(PullFilters(limit=1), Skipped()))
        finally:
            by_environment.close()
        assert [s.id for s in _samples(found)] == traced[-1:]  # the newest


def test_an_empty_trace_is_rejected_by_id_a_stray_score_refused_a_lost_experiment_named(
    filled: Filled,
) -> None:
    gone = PushedScore(Origin(system="mlflow", trace_ids=("tr-0000",)), "x", "m", 1.0, "")
    otlp = PushedScore(Origin(system="otlp"), "y", "m", 1.0, "")
    backend = open_backend(filled.address + "-missing")
    empty = open_backend(filled.address + "-empty")
    try:
        (rejected,) = list(empty.pull(PullFilters(), Skipped()))
        assert isinstance(rejected, RecordError)
        assert (rejected.source, rejected.position, rejected.kind, rejected.record_id) == (
            filled.address + "-empty",
            0,
            "trace",
            filled.empty_trace_id,
        )
        assert rejected.rule.startswith(f"trace {filled.empty_trace_id}: ")
        assert rejected.rule.endswith("the span types are UNKNOWN")  # @mlflow.trace's default
        outcome = backend.push([gone, otlp])
        assert [reason for _, reason in outcome.refused] == [
            "MLflow has no trace 'tr-0000'",
            "not pulled from MLflow (otlp)",
        ]
        with pytest.raises(BackendError, match="no experiment named"):
            list(backend.pull(PullFilters(), Skipped()))
    finally:
        backend.close()
        empty.close()


class _Echo(BaseHTTPRequestHandler):
    """Answers every request with a 400 that quotes its headers back."""

    def do_GET(self) -> None:
        body = json.dumps({"authorization": self.headers.get("authorization")}).encode()
        self.send_response(400)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def echo() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    ("variables", "secret"),
    [
        ({"MLFLOW_TRACKING_TOKEN": "tok-3f9a1c"}, "tok-3f9a1c"),
        # the basic header carries base64("ana:pw-77e2"): that is a credential too
        (
            {"MLFLOW_TRACKING_USERNAME": "ana", "MLFLOW_TRACKING_PASSWORD": "pw-77e2"},
            "YW5hOnB3LTc3ZTI=",
        ),
    ],
)
def test_credentials_are_sent_and_never_shown(
    echo: str, monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], secret: str
) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    backend = open_backend(f"mlflow://{echo}/agents")
    with pytest.raises(BackendError) as raised:
        backend.experiment_id()
    backend.close()
    text = str(raised.value)
    assert "authorization" in text.lower()  # the server saw the header ...
    assert secret not in text and "pw-77e2" not in text  # ... and the error hides it
    assert ("Bearer ***" if "MLFLOW_TRACKING_TOKEN" in variables else "Basic ***") in text


def test_the_command_line_scores_a_pull_pushes_it_twice_and_converts_it_by_session(
    filled: Filled, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traced = filled.conversations
    references = tmp_path / "references.jsonl"
    gold = [
        {"name": "get_weather", "args": {"city": "Paris"}},
        {"name": "get_weather", "args": {"city": "Rome"}},  # the agent added instead
    ]
    lines = [
        {"id": c["trace_id"], "reference_tool_calls": [g]}
        for c, g in zip(traced, gold, strict=False)
    ]
    references.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "results.jsonl"
    argv = ["evaluate", filled.address, "-m", "tool_call_f1", "--tag", "team=blue"]
    argv += ["--references", str(references), "--out", str(out), "--progress", "off", "--push"]
    assert main([*argv, "--no-config"]) == 0, capsys.readouterr()
    assert main(["push", str(out), "--again"]) == 0, capsys.readouterr()  # updates, once more
    for conversation, value in zip(traced[:2], (1.0, 0.0), strict=True):
        found = _assessments(filled, conversation["trace_id"])
        f1 = [a for a in found if a["assessment_name"] == "tracegrade.tool_call_f1"]
        assert [a["feedback"]["value"] for a in f1] == [value]  # pushed twice, there once
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(row["id"], row["metrics"]["tool_call_f1"]["value"]) for row in rows] == [
        (traced[0]["trace_id"], 1.0),
        (traced[1]["trace_id"], 0.0),
    ]
    assert [row["origin"]["trace_ids"] for row in rows] == [[c["trace_id"]] for c in traced[:2]]
    pulled = tmp_path / "pulled.jsonl"
    assert main(["convert", filled.address, str(pulled), "--group-by", "session"]) == 0
    samples = [json.loads(line) for line in pulled.read_text().splitlines()]
    assert [(s["id"], s["origin"]["session_id"], len(s["user_input"])) for s in samples] == [
        ("s-1", "s-1", 8),
        ("s-2", "s-2", 2),
    ]
