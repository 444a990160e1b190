"""The Phoenix backend against a real Phoenix server (tests/backends/server_phoenix.py),
filled with real traces: an agent whose OpenAI client OpenInference instruments, run in
.venv-phoenix against a stand-in model on 127.0.0.1 (tests/backends/phoenix_traces.py).
What Phoenix holds is checked through its own REST API, not through the backend."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from tests.judge.server import JudgeServer, Reply
from tests.session_servers import ROOT, session_server

from tracegrade import AIMessage, HumanMessage, MultiTurnSample, ToolMessage, evaluate
from tracegrade._json import dumps
from tracegrade.backends import BackendError, PullFilters, PushedScore, open_backend
from tracegrade.convert._base import Skipped
from tracegrade.errors import RecordError
from tracegrade.metrics.tool_call_f1 import ToolCallF1
from tracegrade.model.origin import Origin

httpx = pytest.importorskip("httpx")

FILL = ROOT / "tests" / "backends" / "phoenix_traces.py"
SPANS = 12
"""Three turns, each an AGENT span, two LLM spans and a TOOL span."""


def _model_reply(body: Mapping[str, Any]) -> Reply:
    """The stand-in model: a get_weather call for the city the user names, then an
    answer made of the tool's result."""
    last = body["messages"][-1]
    if last["role"] == "user":
        city = last["content"].split()[-1].rstrip("?")
        arguments = json.dumps({"city": city})
        call = {"id": f"call_{city.lower()}", "type": "function"}
        call["function"] = {"name": "get_weather", "arguments": arguments}  # type: ignore[assignment]
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        message = {"role": "assistant", "content": f"It is {last['content']}."}
        finish = "stop"
    choice = {"index": 0, "message": message, "finish_reason": finish}
    usage = {"prompt_tokens": 20, "completion_tokens": 7, "total_tokens": 27}
    completion = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000}
    return Reply.json(200, {**completion, "model": "stand-in", "choices": [choice], "usage": usage})


@dataclass(frozen=True)
class Project:
    """A Phoenix project filled with the three turns, and what Phoenix says it holds."""

    url: str
    name: str
    trace_ids: list[str]
    """Oldest first: Paris (tagged ``smoke``, metadata team=weather), Oslo, Rome (the
    last two in session ``trip-1``)."""
    roots: dict[str, str]
    starts: list[datetime]

    @property
    def address(self) -> str:
        return f"phoenix://{self.url.removeprefix('http://')}/{self.name}"

    def get(self, path: str, **params: Any) -> Any:
        reply = httpx.get(f"{self.url}{path}", params=params, timeout=30)
        reply.raise_for_status()
        return reply.json()


def _fill(url: str) -> Project:
    """A new project of the Phoenix at ``url``, filled by the instrumented agent."""
    name = f"agents-{uuid.uuid4().hex[:8]}"
    python = ROOT / ".venv-phoenix" / "bin" / "python"
    with JudgeServer() as model:
        model.respond(_model_reply)
        subprocess.run([str(python), str(FILL), url, model.url, name], check=True, timeout=120)
    deadline = time.monotonic() + 60
    while True:  # Phoenix writes what it receives a moment later
        try:
            spans = httpx.get(
                f"{url}/v1/projects/{name}/spans/otlpv1", params={"limit": 100}, timeout=30
            ).json()["data"]
        except (KeyError, ValueError):
            spans = []
        if len(spans) == SPANS or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert len(spans) == SPANS
    traces = httpx.get(
        f"{url}/v1/projects/{name}/traces", params={"sort": "start_time", "order": "asc"}
    ).json()["data"]
    roots = {s["trace_id"]: s["span_id"] for s in spans if s["parent_span_id"] is None}
    return Project(
        url=url,
        name=name,
        trace_ids=[trace["trace_id"] for trace in traces],
        roots=roots,
        starts=[datetime.fromisoformat(trace["start_time"]) for trace in traces],
    )


@pytest.fixture(scope="module")
def project() -> Project:
    return _fill(session_server("phoenix"))


def _pull(project: Project, **filters: Any) -> list[Any]:
    backend = open_backend(project.address)
    try:
        return list(backend.pull(PullFilters(**filters), Skipped()))
    finally:
        backend.close()


def _calls(sample: MultiTurnSample) -> list[tuple[str, Any, str | None]]:
    return [
        (call.name, call.args, call.id)
        for message in sample.user_input
        if isinstance(message, AIMessage)
        for call in message.tool_calls or ()
    ]


def test_pull_reads_each_trace_with_its_tool_calls_and_ids(project: Project) -> None:
    skipped = Skipped()
    backend = open_backend(project.address)
    samples = list(backend.pull(PullFilters(), skipped))
    assert [sample.id for sample in samples] == project.trace_ids
    assert not skipped
    paris = samples[0]
    assert [type(message) for message in paris.user_input] == [
        HumanMessage,
        AIMessage,
        ToolMessage,
        AIMessage,
    ]
    assert paris.user_input[0].content == "Weather in Paris?"
    assert _calls(paris) == [("get_weather", {"city": "Paris"}, "call_paris")]
    assert paris.user_input[2].content == "18 C, sunny"
    assert paris.user_input[2].tool_call_id == "call_paris"
    assert paris.user_input[3].content == "It is 18 C, sunny."
    for sample, trace_id in zip(samples, project.trace_ids, strict=True):
        assert sample.origin.system == "phoenix"
        assert sample.origin.location == project.address
        assert sample.origin.project == project.name
        assert sample.origin.trace_ids == (trace_id,)
        assert sample.origin.root_ids == (project.roots[trace_id],)
    # the Rome turn's model call was sent the Oslo turn as history
    assert _calls(samples[2])[-1] == ("get_weather", {"city": "Rome"}, "call_rome")


def test_pull_by_session_joins_the_session_traces(project: Project) -> None:
    paris, oslo, rome = project.trace_ids
    samples = _pull(project, group_by="session")
    assert [sample.id for sample in samples] == [paris, "trip-1"]
    trip = samples[1]
    assert trip.origin.trace_ids == (oslo, rome)
    assert trip.origin.root_ids == (project.roots[oslo], project.roots[rome])
    assert trip.origin.session_id == "trip-1"
    assert _calls(trip) == [
        ("get_weather", {"city": "Oslo"}, "call_oslo"),
        ("get_weather", {"city": "Rome"}, "call_rome"),
    ]
    assert [m.content for m in trip.user_input if isinstance(m, HumanMessage)] == [
        "Weather in Oslo?",
        "And in Rome?",
    ]


def test_pull_filters(project: Project) -> None:
    paris, oslo, rome = project.trace_ids

    def ids(**filters: Any) -> list[Any]:
        return [getattr(item, "id", item) for item in _pull(project, **filters)]

    assert ids(tags=("smoke",)) == [paris]
    assert ids(tags=("smoke", "other")) == []
    assert ids(metadata=(("team", "weather"),)) == [paris]
    assert ids(metadata=(("team", "rain"),)) == []
    assert ids(session_ids=("trip-1",)) == [oslo, rome]
    assert ids(session_ids=("trip-1",), group_by="session") == ["trip-1"]
    assert ids(limit=2) == [oslo, rome]  # the newest two, oldest first
    assert ids(limit=1, until=project.starts[2]) == [oslo]
    assert ids(limit=1, group_by="session") == ["trip-1"]
    assert ids(since=project.starts[1]) == [oslo, rome]
    assert ids(until=project.starts[1]) == [paris]
    later = project.starts[2] + timedelta(hours=1)
    assert ids(since=later, until=later + timedelta(hours=1)) == []
    # trace ids are asked for by id: one Phoenix does not have is an error naming it
    missing = "0" * 31 + "1"
    found = _pull(project, trace_ids=(rome, missing, oslo))
    assert [item.id for item in found[:2]] == [oslo, rome]
    assert isinstance(found[2], RecordError)
    assert (found[2].kind, found[2].record_id, found[2].position) == ("trace", missing, 2)
    assert f"trace {missing}: Phoenix project {project.name!r} has no such trace" in str(found[2])
    # and so is a session it does not have, or one outside the window
    gone = _pull(project, session_ids=("trip-1", "trip-9"), group_by="session")
    assert [getattr(item, "id", None) for item in gone] == ["trip-1", None]
    assert (gone[1].kind, gone[1].record_id) == ("session", "trip-9")
    early = _pull(project, session_ids=("trip-1",), until=project.starts[1])
    assert [(item.kind, item.record_id) for item in early] == [("session", "trip-1")]
    assert "has no such session in the time window" in str(early[0])


def _annotations(project: Project) -> list[dict[str, Any]]:
    """Every annotation on the project's root spans, as Phoenix's API gives them."""
    reply = project.get(
        f"/v1/projects/{project.name}/span_annotations",
        span_ids=list(project.roots.values()),
        limit=100,
    )
    return sorted(reply["data"], key=lambda item: (item["span_id"], item["name"]))


def _upload_references(project: Project, dataset: str) -> str:
    """A Phoenix dataset, made through its API, of the references of the Paris trace
    (made from its root span) and of the session trip-1 (named in its metadata)."""
    paris = project.trace_ids[0]
    upload = {
        "action": "create",
        "name": dataset,
        "inputs": [{"question": "Weather in Paris?"}, {"question": "Oslo, then Rome"}],
        "outputs": [
            {"reference_tool_calls": [{"name": "get_weather", "args": {"city": "Paris"}}]},
            {
                "reference_tool_calls": [
                    {"name": "get_weather", "args": {"city": "Oslo"}},
                    {"name": "get_weather", "args": {"city": "Madrid"}},
                ],
                "reference": "It is 24 C, clear.",
            },
        ],
        # the first is made from the Paris trace's root span, the second names its session
        "metadata": [{}, {"session_id": "trip-1"}],
        "span_ids": [project.roots[paris], None],
    }
    reply = httpx.post(f"{project.url}/v1/datasets/upload?sync=true", json=upload, timeout=30)
    assert reply.status_code == 200, reply.text
    return dataset


def test_dataset_references_score_and_push_back(project: Project, tmp_path: Path) -> None:
    paris, oslo, rome = project.trace_ids
    dataset = _upload_references(project, f"refs-{project.name}")
    backend = open_backend(project.address)
    lines = list(backend.dataset_references(dataset))
    assert [line["id"] for line in lines] == [paris, "trip-1"]
    references = tmp_path / "references.jsonl"
    references.write_bytes(b"".join(dumps(line) + b"\n" for line in lines))

    samples = list(backend.pull(PullFilters(group_by="session"), Skipped()))
    result = evaluate(samples, [ToolCallF1()], references=references, progress=False)
    f1 = {row.id: row.scores["tool_call_f1"].value for row in result.rows}
    assert f1 == {paris: 1.0, "trip-1": 0.5}  # one of two reference calls made, one extra

    def scores(reason: str) -> list[PushedScore]:
        return [
            PushedScore(
                origin=row.origin,
                sample_id=row.id,
                metric="tool_call_f1",
                value=row.scores["tool_call_f1"].value,
                reason=f"{reason}: {row.scores['tool_call_f1'].reason}",
                label="pass" if row.scores["tool_call_f1"].value == 1.0 else "fail",
                details=row.scores["tool_call_f1"].details,
            )
            for row in result.rows
        ]

    first = backend.push(scores("first"))
    assert (first.created, first.updated, first.refused) == (2, 0, [])
    there = _annotations(project)
    # the trace's root span, and for the session the root span of its last trace
    expected = sorted([(project.roots[paris], 1.0, "pass"), (project.roots[rome], 0.5, "fail")])
    assert [
        (item["span_id"], item["result"]["score"], item["result"]["label"]) for item in there
    ] == expected
    for item in there:
        assert item["name"] == "tracegrade.tool_call_f1"
        assert item["annotator_kind"] == "CODE"
        assert item["identifier"] == "tracegrade"
        assert item["result"]["explanation"].startswith("first: ")
        assert item["metadata"]["source"] == "tracegrade"
    assert {item["metadata"]["sample_id"] for item in there} == {paris, "trip-1"}
    assert project.roots[oslo] not in {item["span_id"] for item in there}

    again = backend.push(scores("second"))
    assert (again.created, again.updated, again.refused) == (0, 2, [])
    after = _annotations(project)
    assert [item["id"] for item in after] == [item["id"] for item in there]  # updated in place
    assert all(item["result"]["explanation"].startswith("second: ") for item in after)
    backend.close()


def test_push_refuses_a_score_whose_span_phoenix_lacks(project: Project) -> None:
    elsewhere = Origin(system="phoenix", trace_ids=("ab" * 16,), root_ids=("cd" * 8,))
    backend = open_backend(project.address)
    outcome = backend.push([PushedScore(elsewhere, "x", "tool_call_f1", 0.0, "r")])
    assert (outcome.created, outcome.updated) == (0, 0)
    assert outcome.refused[0][1] == f"span {'cd' * 8} is not in Phoenix project {project.name!r}"


def test_credentials_are_sent_but_never_shown(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PHOENIX_API_KEY", "tg-secret-key-4471")
    monkeypatch.setenv("PHOENIX_CLIENT_HEADERS", "x-team-token=tg-secret-header-9")
    backend = open_backend(project.address)
    sent = backend.api.client._client.headers
    assert sent["authorization"] == "Bearer tg-secret-key-4471"
    assert sent["x-team-token"] == "tg-secret-header-9"
    assert len(list(backend.pull(PullFilters(limit=1), Skipped()))) == 1  # no auth here
    missing = open_backend(project.address.replace(project.name, "no-such-project"))
    with pytest.raises(BackendError) as caught:
        list(missing.pull(PullFilters(), Skipped()))
    text = str(caught.value)
    assert "HTTP 404" in text
    assert "tg-secret" not in text
    monkeypatch.setenv("PHOENIX_CLIENT_HEADERS", "no-equals-sign")
    with pytest.raises(BackendError, match="PHOENIX_CLIENT_HEADERS: expected name=value"):
        open_backend(project.address)


def test_dataset_output_that_is_no_reference_field_is_an_error(project: Project) -> None:
    dataset = f"bad-{project.name}"
    upload = {
        "action": "create",
        "name": dataset,
        "inputs": [{"q": "?"}],
        "outputs": [{"answer": "sunny"}],
        "metadata": [{"trace_id": project.trace_ids[0]}],
    }
    reply = httpx.post(f"{project.url}/v1/datasets/upload?sync=true", json=upload, timeout=30)
    assert reply.status_code == 200, reply.text
    backend = open_backend(project.address)
    with pytest.raises(BackendError, match=r"output keys answer are not reference fields"):
        list(backend.dataset_references(dataset))
    with pytest.raises(BackendError, match=r"no dataset named 'none-such'"):
        list(backend.dataset_references("none-such"))


def test_address_forms(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PHOENIX_BASE_URL", "PHOENIX_COLLECTOR_ENDPOINT", "PHOENIX_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("PHOENIX_CLIENT_HEADERS", raising=False)
    plain = open_backend("phoenix://example.test")
    assert (plain.api.client.base_url, plain.project) == ("http://example.test:6006", "default")
    tls = open_backend("phoenix+https://example.test/team%20a")
    assert (tls.api.client.base_url, tls.project) == ("https://example.test", "team a")
    assert tls.api.project_path == "/v1/projects/team%20a"
    monkeypatch.setenv("PHOENIX_BASE_URL", "http://10.0.0.2:7000/")
    assert open_backend("phoenix:///p").api.client.base_url == "http://10.0.0.2:7000"
    with pytest.raises(BackendError, match="expected phoenix://HOST:PORT/PROJECT"):
        open_backend("phoenix://example.test/a/b")


def test_paging_through_small_pages_reads_the_same(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracegrade.backends import _phoenix_client, phoenix

    whole = open_backend(project.address)
    expected = list(whole.pull(PullFilters(), Skipped()))
    monkeypatch.setattr(phoenix, "TRACES_PAGE", 2)
    monkeypatch.setattr(phoenix, "TRACES_PER_SPAN_QUERY", 2)
    monkeypatch.setattr(_phoenix_client, "SPANS_PAGE", 3)
    paged = open_backend(project.address)
    assert list(paged.pull(PullFilters(), Skipped())) == expected
    # traces: a page of 2, then one of 1; spans (4 a trace): the first page's 8 in pages of
    # 3, 3 and 2, the second page's 4 in pages of 3 and 1
    assert paged.api.client.requests == 2 + 3 + 2
    limited = open_backend(project.address)
    assert [s.id for s in limited.pull(PullFilters(limit=1), Skipped())] == project.trace_ids[2:]
    assert limited.api.client.requests == 1 + 3  # one page of traces (newest first) only


def _span(trace: str, span: str, start: int, attributes: dict[str, Any]) -> dict[str, Any]:
    moment = datetime(2026, 1, 2, 3, 4, start, tzinfo=timezone.utc)
    return {
        "name": "ChatCompletion",
        "context": {"trace_id": trace, "span_id": span},
        "span_kind": "LLM",
        "start_time": moment.isoformat(),
        "end_time": (moment + timedelta(milliseconds=500)).isoformat(),
        "status_code": "OK",
        "attributes": {"openinference.span.kind": "LLM", **attributes},
    }


def test_a_trace_that_cannot_be_read_is_an_error_naming_it(project: Project) -> None:
    name = f"broken-{uuid.uuid4().hex[:8]}"
    assert httpx.post(f"{project.url}/v1/projects", json={"name": name}).status_code == 200
    good, bad = "1" * 32, "2" * 32
    question = {"llm.input_messages.0.message.role": "user"}
    question["llm.input_messages.0.message.content"] = "Weather in Oslo?"
    call = "llm.output_messages.0.message.tool_calls.0.tool_call.function"
    spans = [
        _span(
            good,
            "a" * 16,
            1,
            {
                **question,
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": "Rain.",
            },
        ),
        _span(
            bad,
            "b" * 16,
            2,
            {
                **question,
                "llm.output_messages.0.message.role": "assistant",
                f"{call}.name": "get_weather",
                f"{call}.arguments": "{not json",
            },
        ),
    ]
    reply = httpx.post(f"{project.url}/v1/projects/{name}/spans", json={"data": spans})
    assert reply.status_code == 202, reply.text
    deadline = time.monotonic() + 30
    while len(project.get(f"/v1/projects/{name}/traces")["data"]) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.3)
    address = project.address.replace(project.name, name)
    backend = open_backend(address)
    found = list(backend.pull(PullFilters(), Skipped()))
    assert [type(item) for item in found] == [MultiTurnSample, RecordError]
    assert found[0].id == good
    error = found[1]
    assert (error.source, error.position, error.kind, error.record_id) == (address, 1, "trace", bad)
    assert error.rule.startswith(f"trace {bad} span {'b' * 16} ('ChatCompletion') ")
    assert "the arguments '{not json' are not valid JSON" in error.rule


def test_the_command_line_scores_phoenix_traces_and_pushes_the_scores_back(
    project: Project, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tracegrade.cli.main import main

    own = _fill(project.url)  # its own project: the annotations here are this test's
    paris, oslo, rome = own.trace_ids
    # Phoenix keeps one session per id across projects: trip-1 is the first project's,
    # and its traces here are still found by session id
    assert [sample.id for sample in _pull(own, session_ids=("trip-1",))] == [oslo, rome]
    dataset = _upload_references(own, f"cli-{own.name}")
    out = tmp_path / "results.jsonl"
    argv = ["evaluate", own.address, "-m", "tool_call_f1", "--group-by", "session"]
    argv += ["--references", f"{own.address}/datasets/{dataset}", "--out", str(out)]
    code = main([*argv, "--push", "--progress", "off", "--no-config"])
    said = capsys.readouterr().err
    assert code == 0, said
    assert "(2 created, 0 updated, 0 refused)" in said
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(row["id"], row["metrics"]["tool_call_f1"]["value"]) for row in rows] == [
        (paris, 1.0),
        ("trip-1", 0.5),
    ]
    assert rows[1]["origin"]["trace_ids"] == [oslo, rome]
    assert rows[1]["origin"]["root_ids"] == [own.roots[oslo], own.roots[rome]]

    def annotations() -> list[tuple[str, str, float, str]]:
        return [
            (item["span_id"], item["name"], item["result"]["score"], item["result"]["explanation"])
            for item in _annotations(own)
        ]

    reasons = {row["id"]: row["metrics"]["tool_call_f1"]["reason"] for row in rows}
    expected = sorted(
        [
            (own.roots[paris], "tracegrade.tool_call_f1", 1.0, reasons[paris]),
            (own.roots[rome], "tracegrade.tool_call_f1", 0.5, reasons["trip-1"]),
        ]
    )
    assert annotations() == expected
    # the finished run pushed again, by hand: updated where they are, none added
    assert main(["push", str(out), own.address, "--again"]) == 0
    assert "(0 created, 2 updated, 0 refused)" in capsys.readouterr().err
    assert annotations() == expected

    pulled = tmp_path / "pulled.jsonl"
    assert main(["convert", own.address, str(pulled), "--tag", "smoke"]) == 0
    (line,) = [json.loads(line) for line in pulled.read_text().splitlines()]
    assert line["id"] == paris
    assert line["origin"]["root_ids"] == [own.roots[paris]]


def test_a_trace_gone_between_listing_and_reading_is_an_error_naming_it(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracegrade.backends.phoenix import PhoenixBackend

    name = f"gone-{uuid.uuid4().hex[:8]}"
    assert httpx.post(f"{project.url}/v1/projects", json={"name": name}).status_code == 200
    kept, gone = "3" * 32, "4" * 32
    said = {"llm.output_messages.0.message.role": "assistant"}
    said["llm.output_messages.0.message.content"] = "Hello."
    spans = [_span(kept, "c" * 16, 1, said), _span(gone, "d" * 16, 2, said)]
    reply = httpx.post(f"{project.url}/v1/projects/{name}/spans", json={"data": spans})
    assert reply.status_code == 202, reply.text
    deadline = time.monotonic() + 30
    while len(project.get(f"/v1/projects/{name}/traces")["data"]) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.3)
    listed_then_read = PhoenixBackend._spans_of

    def deleting_first(self: PhoenixBackend, trace_ids: Any) -> Any:
        assert httpx.delete(f"{project.url}/v1/traces/{gone}").status_code == 204
        return listed_then_read(self, trace_ids)

    monkeypatch.setattr(PhoenixBackend, "_spans_of", deleting_first)
    found = list(
        open_backend(f"{project.address.rsplit('/', 1)[0]}/{name}").pull(PullFilters(), Skipped())
    )
    assert [getattr(item, "id", None) for item in found] == [kept, None]
    assert found[1].record_id == gone
    assert f"trace {gone}: Phoenix lists it but gave none of its spans" in str(found[1])
