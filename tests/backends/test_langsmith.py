"""The LangSmith backend against a stand-in LangSmith API (real HTTP on 127.0.0.1, its
replies validated with the SDK's pydantic models), filled with traces the real SDK
recorded: LangChain's tracer and ``wrap_openai``."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from msgspec.structs import replace
from tests.backends import langsmith_traces as traces
from tests.backends.langsmith_server import LangSmithStandIn, running

from tracegrade import AIMessage, HumanMessage, ToolMessage
from tracegrade.backends import BackendError, PullFilters, PushedScore, open_backend
from tracegrade.backends._langsmith_query import start_of
from tracegrade.backends.base import parse_address
from tracegrade.backends.langsmith import LangSmithBackend, feedback_id, locate
from tracegrade.cli.main import main
from tracegrade.convert._base import Options, Skipped
from tracegrade.convert.langsmith_runs import read_runs
from tracegrade.errors import RecordError
from tracegrade.model.samples import MultiTurnSample

KEY = "ls-test-key-5f1e9c"


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[LangSmithStandIn, dict[str, str]]]:
    """Four traces in project weather-agent, two of them thread t-1 (the second carries
    the first's history), one traced by wrap_openai in thread s-2, one in no thread."""
    with running(KEY, page_size=2) as server:
        client = traces.client_of(server)
        history = traces.langchain_trace(
            client, "Paris", metadata={"thread_id": "t-1"}, tags=["prod"]
        )
        traces.langchain_trace(client, "Rome", history=history, metadata={"thread_id": "t-1"})
        traces.openai_trace(server, client, session="s-2")
        traces.langchain_trace(client, "Oslo", metadata={"user": "ana"}, tags=["dev"])
        roots = sorted(
            (run for run in server.runs.values() if run.get("parent_run_id") is None),
            key=start_of,
        )
        names = ["paris", "rome", "support", "oslo"]
        yield server, {name: str(run["id"]) for name, run in zip(names, roots, strict=True)}


@pytest.fixture
def backend(
    world: tuple[LangSmithStandIn, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> Iterator[LangSmithBackend]:
    server, _ = world
    monkeypatch.setenv("LANGSMITH_API_KEY", KEY)
    found = open_backend(f"langsmith://{server.url.removeprefix('http://')}/{traces.PROJECT}")
    assert isinstance(found, LangSmithBackend)
    yield found
    found.close()
    assert server.problems == []


def pulled(backend: LangSmithBackend, **filters: Any) -> list[Any]:
    return list(backend.pull(PullFilters(**filters), Skipped()))


def test_each_trace_is_a_conversation_with_its_calls_results_and_usage(
    world: tuple[LangSmithStandIn, dict[str, str]], backend: LangSmithBackend
) -> None:
    server, ids = world
    server.queries.clear()
    found = pulled(backend)
    assert [sample.id for sample in found] == [ids[n] for n in ("paris", "rome", "support", "oslo")]
    paris = found[0]
    human, call, result, answer = paris.user_input
    assert isinstance(human, HumanMessage) and human.content == "Weather in Paris?"
    assert isinstance(call, AIMessage) and call.tool_calls is not None
    assert [(c.name, c.args, c.id) for c in call.tool_calls] == [
        ("get_weather", {"city": "Paris"}, "call_Paris")
    ]
    assert call.usage is not None
    assert (call.usage.input_tokens, call.usage.output_tokens) == (20, 5)
    assert call.usage.model == "gpt-4o-mini"
    assert isinstance(result, ToolMessage) and result.content == "sunny in Paris"
    assert result.tool_call_id == "call_Paris" and result.outcome is not None
    assert isinstance(answer, AIMessage) and answer.content == "It is sunny in Paris."
    assert paris.origin.system == "langsmith"
    assert paris.origin.trace_ids == paris.origin.root_ids == (ids["paris"],)
    assert paris.origin.project == server.project(traces.PROJECT)["id"]
    # wrap_openai: Chat Completions messages, the usage from outputs.usage_metadata
    support = found[2].user_input
    assert [m.type for m in support] == ["human", "ai", "tool", "ai"]
    assert support[1].tool_calls[0].args == {"order": 7}
    assert support[2].content == '{"order": 7, "status": "shipped"}'
    assert (support[3].usage.input_tokens, support[3].usage.output_tokens) == (50, 4)
    assert support[3].content == "Order 7 has shipped."
    # four roots at two a page, then each trace's runs, a page of two at a time
    roots = [q for q in server.queries if q.get("is_root")]
    assert [q.get("cursor") for q in roots] == [None, "2"]
    assert all(q["order"] == "asc" and q["session"] == [paris.origin.project] for q in roots)
    assert len([q for q in server.queries if q.get("trace") == ids["paris"]]) == 2


def test_filters_are_asked_of_the_server_and_limit_stops_paging(
    world: tuple[LangSmithStandIn, dict[str, str]], backend: LangSmithBackend
) -> None:
    server, ids = world
    assert [s.id for s in pulled(backend, tags=("prod",))] == [ids["paris"]]
    assert [s.id for s in pulled(backend, metadata=(("user", "ana"),))] == [ids["oslo"]]
    missing = "0193d3a1-0000-7000-8000-0000000dead0"
    chosen = pulled(backend, trace_ids=(ids["oslo"], missing, ids["support"]))
    assert [s.id for s in chosen[:2]] == [ids["support"], ids["oslo"]]
    absent = chosen[2]  # asked for, not there: said, never silent
    assert isinstance(absent, RecordError) and (absent.kind, absent.record_id) == ("trace", missing)
    assert f"trace {missing}: LangSmith project 'weather-agent' has no such trace" in str(absent)
    gone = pulled(backend, session_ids=("t-1", "t-9"), group_by="session")
    assert [getattr(o, "id", None) for o in gone] == ["t-1", None]
    assert (gone[1].kind, gone[1].record_id) == ("session", "t-9")
    rome = start_of(server.runs[ids["rome"]])
    oslo = start_of(server.runs[ids["oslo"]])
    window = pulled(backend, since=rome, until=oslo)
    assert [s.id for s in window] == [ids["rome"], ids["support"]]
    bodies = [q for q in server.queries if q.get("is_root")][-1]
    assert bodies["start_time"] == rome.isoformat()
    assert bodies["filter"] == f'lt(start_time, "{oslo.isoformat()}")'
    server.queries.clear()  # the newest traces, oldest first, from the first page
    assert [s.id for s in pulled(backend, limit=2)] == [ids["support"], ids["oslo"]]
    assert [(q.get("cursor"), q["order"]) for q in server.queries if q.get("is_root")] == [
        (None, "desc")
    ]
    assert [s.id for s in pulled(backend, limit=1, group_by="session")] == [ids["oslo"]]
    newest_threads = pulled(backend, limit=2, group_by="session", until=oslo)
    assert [s.id for s in newest_threads] == ["t-1", "s-2"]
    assert pulled(backend, since=oslo + timedelta(seconds=1)) == []


def test_threads_join_their_traces_and_take_scores_on_the_last(
    world: tuple[LangSmithStandIn, dict[str, str]], backend: LangSmithBackend
) -> None:
    server, ids = world
    found = pulled(backend, group_by="session")
    assert [s.id for s in found] == ["t-1", "s-2", ids["oslo"]]
    thread = found[0]
    assert [m.type for m in thread.user_input] == ["human", "ai", "tool", "ai"] * 2
    assert thread.user_input[4].content == "Weather in Rome?"
    assert thread.origin.session_id == "t-1"
    assert thread.origin.trace_ids == (ids["paris"], ids["rome"])
    assert found[2].origin.session_id is None
    only = pulled(backend, group_by="session", session_ids=("s-2",))
    assert [s.id for s in only] == ["s-2"]
    asked = [q for q in server.queries if q.get("is_root")][-1]["filter"]
    assert asked == (
        'and(in(metadata_key, ["session_id", "thread_id", "conversation_id"]), '
        'eq(metadata_value, "s-2"))'
    )
    score = PushedScore(thread.origin, thread.id, "goal", 1.0, "done", "pass")
    elsewhere = PushedScore(replace(thread.origin, project="another"), "x", "goal", 1.0, "")
    local = PushedScore(replace(thread.origin, system="otlp"), "y", "goal", 1.0, "")
    outcome = backend.push([score, elsewhere, local])
    assert outcome.created == 1
    assert [(s.sample_id, "project another" in why) for s, why in outcome.refused] == [
        ("x", True),
        ("y", False),
    ]
    assert server.feedback[feedback_id(ids["rome"], "tracegrade.goal")]["run_id"] == ids["rome"]


def test_a_second_push_updates_the_feedback_and_the_sdk_reads_it_back(
    world: tuple[LangSmithStandIn, dict[str, str]], backend: LangSmithBackend
) -> None:
    server, ids = world
    (sample,) = pulled(backend, trace_ids=(ids["oslo"],))

    def scores(value: float) -> list[PushedScore]:
        return [
            PushedScore(sample.origin, sample.id, "tool_f1", value, "1 of 1 calls right", "pass"),
            PushedScore(sample.origin, sample.id, "handoffs", None, "no handoff to judge"),
        ]

    first = backend.push(scores(0.123456))
    assert (first.created, first.updated, first.refused) == (2, 0, [])
    server.refuse_next = 1  # a 429 with Retry-After: 0 in the middle: retried
    again = backend.push(scores(0.5))
    assert (again.created, again.updated) == (0, 2)
    read = list(traces.client_of(server).list_feedback(run_ids=[ids["oslo"]]))
    assert sorted((f.key, f.score, f.value, f.comment) for f in read) == [
        ("tracegrade.handoffs", None, "not applicable", "no handoff to judge"),
        ("tracegrade.tool_f1", 0.5, "pass", "1 of 1 calls right"),
    ]
    assert {str(f.id) for f in read} == {
        feedback_id(ids["oslo"], "tracegrade.tool_f1"),
        feedback_id(ids["oslo"], "tracegrade.handoffs"),
    }
    assert all(f.trace_id is not None and str(f.trace_id) == ids["oslo"] for f in read)
    assert any(line.startswith("PATCH /feedback/") for line in server.requests)


def test_a_malformed_run_is_a_record_error_while_the_others_are_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LANGSMITH_API_KEY", KEY)
    with running(KEY, page_size=5) as server:
        traces.langchain_trace(traces.client_of(server), "Lima")
        server.refuse_next = 2  # two 429s (Retry-After: 0) before the pull's first answer
        good = next(str(r["id"]) for r in server.runs.values() if r.get("parent_run_id") is None)
        bad = "0193d3a1-0000-7000-8000-00000000beef"
        when = "2099-01-01T00:00:00+00:00"
        for run_id, parent, kind, inputs in (
            (bad, None, "chain", {"question": "?"}),
            ("0193d3a1-0000-7000-8000-00000000bee0", bad, "llm", {"messages": "not a list"}),
        ):
            run = {"id": run_id, "trace_id": bad, "parent_run_id": parent, "name": kind}
            run |= {"run_type": kind, "start_time": when, "inputs": inputs, "dotted_order": ""}
            server.add_run(run, traces.PROJECT)
        backend = open_backend(f"langsmith://{server.url[7:]}/{traces.PROJECT}")
        assert isinstance(backend, LangSmithBackend)
        found = pulled(backend)
        assert server.problems == []
    asked = server.requests[server.requests.index("GET /sessions?name=weather-agent") :]
    assert asked[:4] == ["GET /sessions?name=weather-agent"] * 3 + ["POST /runs/query"]
    assert isinstance(found[0], MultiTurnSample) and found[0].id == good
    error = found[1]
    assert isinstance(error, RecordError) and error.kind == "trace" and error.record_id == bad
    assert f"trace {bad}" in str(error) and "inputs.messages" in str(error)


def test_a_run_without_a_start_time_or_a_reply_of_the_wrong_shape_is_named(
    world: tuple[LangSmithStandIn, dict[str, str]], backend: LangSmithBackend
) -> None:
    server, ids = world

    def undated(request: str, reply: Any) -> Any:
        if request != "POST /runs/query":
            return reply
        runs = [
            {k: v for k, v in run.items() if run["id"] != ids["rome"] or k != "start_time"}
            for run in reply["runs"]
        ]
        return {**reply, "runs": runs}

    server.mangle = undated
    try:
        found = pulled(backend)
    finally:
        server.mangle = None
    assert [getattr(o, "id", None) for o in found] == [
        ids["paris"],
        None,
        ids["support"],
        ids["oslo"],
    ]
    assert (found[1].kind, found[1].record_id) == ("trace", ids["rome"])
    assert "has no start_time that reads as a time" in str(found[1])
    for request, wrong in (
        ("POST /runs/query", {"runs": [{"name": "no id"}]}),
        ("POST /runs/query", ["not", "an", "object"]),
        ("GET /sessions", {"detail": "an object"}),
    ):
        server.mangle = lambda asked, reply, r=request, w=wrong: w if asked == r else reply
        try:
            with pytest.raises(BackendError, match=request.split()[1]):
                fresh = open_backend(backend.address.text)
                pulled(fresh)
        finally:
            server.mangle = None
    server.mangle = lambda asked, reply: 7 if asked == "GET /datasets" else reply
    try:
        with pytest.raises(BackendError, match=r"LangSmith at .*: GET /datasets: expected a list"):
            list(backend.dataset_references("any"))
    finally:
        server.mangle = None


def test_the_key_is_checked_and_never_shown(
    world: tuple[LangSmithStandIn, dict[str, str]],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, _ = world
    wrong = "ls-wrong-key-0a9b8c"
    monkeypatch.setenv("LANGSMITH_API_KEY", wrong)
    caplog.set_level(logging.DEBUG)
    backend = open_backend(f"langsmith://{server.url[7:]}/{traces.PROJECT}")
    with pytest.raises(BackendError, match="HTTP 401") as raised:
        pulled(backend)
    assert wrong not in str(raised.value) and "***" in str(raised.value)
    assert wrong not in caplog.text
    monkeypatch.setenv("LANGSMITH_API_KEY", KEY)
    sample = pulled(open_backend(f"langsmith://{server.url[7:]}/{traces.PROJECT}"), limit=1)[0]
    assert KEY not in str(sample.to_dict()) and KEY not in caplog.text
    monkeypatch.delenv("LANGSMITH_API_KEY")
    monkeypatch.delenv("LANGCHAIN_API_KEY", raising=False)
    with pytest.raises(BackendError, match="LANGSMITH_API_KEY or LANGCHAIN_API_KEY"):
        open_backend("langsmith://weather")


def test_the_two_address_forms(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LANGSMITH_ENDPOINT", raising=False)
    monkeypatch.delenv("LANGCHAIN_ENDPOINT", raising=False)
    public = "https://api.smith.langchain.com"
    assert locate(parse_address("langsmith://My%20Agent")) == (public, "My Agent")
    assert locate(parse_address("langsmith:///My%20Agent")) == (public, "My Agent")
    assert locate(parse_address("langsmith://127.0.0.1:1984/api/v1/agent")) == (
        "http://127.0.0.1:1984/api/v1",
        "agent",
    )
    assert locate(parse_address("langsmith+https://ls.example/agent")) == (
        "https://ls.example",
        "agent",
    )
    monkeypatch.setenv("LANGSMITH_ENDPOINT", "https://eu.api.smith.langchain.com/")
    assert locate(parse_address("langsmith://Agent")) == (
        "https://eu.api.smith.langchain.com",
        "Agent",
    )
    # no project: enough for a dataset URL's backend, not for a pull
    assert locate(parse_address("langsmith://127.0.0.1:1984")) == ("http://127.0.0.1:1984", None)
    monkeypatch.setenv("LANGSMITH_API_KEY", KEY)
    with pytest.raises(BackendError, match="name the project"):
        pulled(open_backend("langsmith:///"))  # type: ignore[arg-type]


def test_a_root_run_holding_the_graph_state_is_read_when_no_llm_run_is(
    world: tuple[LangSmithStandIn, dict[str, str]],
) -> None:
    server, ids = world
    runs = [run for run in server.runs.values() if run["trace_id"] == ids["paris"]]
    assert sorted(run["run_type"] for run in runs) == ["chain", "llm", "llm", "tool"]
    only_root = [run for run in runs if run["run_type"] == "chain"]
    messages = read_runs(only_root, Options())
    assert [m.type for m in messages] == ["human", "ai", "tool", "ai"]
    assert messages[1].tool_calls is not None and messages[1].tool_calls[0].id == "call_Paris"
    assert messages[1].usage is not None and messages[1].usage.input_tokens == 20
    # with the llm runs there, the state is not read, even when it holds no messages
    odd = {**only_root[0], "outputs": {"messages": [{"kind": "note"}]}}
    left_out = Options()
    with_llm = read_runs([odd, *(run for run in runs if run["run_type"] != "chain")], left_out)
    assert [m.type for m in with_llm] == ["human", "ai", "tool", "ai"]
    assert left_out.skipped.counts == {
        "LangSmith root run 'messages' that are not chat messages": 1
    }


def test_dataset_examples_are_references_of_the_traces_they_were_made_from(
    world: tuple[LangSmithStandIn, dict[str, str]], backend: LangSmithBackend
) -> None:
    server, ids = world
    call = {"name": "get_weather", "args": {"city": "Paris"}}
    server.add_dataset(
        "weather-goldens",
        [
            {
                "id": "0193d3a1-0000-7000-8000-0000000e0001",
                "source_run_id": ids["paris"],
                "inputs": {"input": "Weather in Paris?"},
                "outputs": {"reference_tool_calls": [call], "reference": "Sunny.", "x": 1},
            },
            {
                "id": "0193d3a1-0000-7000-8000-0000000e0002",
                "source_run_id": ids["oslo"],
                "outputs": {"reference_topics": ["weather"]},
            },
            {"id": "0193d3a1-0000-7000-8000-0000000e0003", "outputs": {"reference": "?"}},
        ],
    )
    assert list(backend.dataset_references("weather-goldens")) == [
        {"id": ids["paris"], "reference": "Sunny.", "reference_tool_calls": [call]},
        {"id": ids["oslo"], "reference_topics": ["weather"]},
        {"id": "0193d3a1-0000-7000-8000-0000000e0003", "reference": "?"},
    ]
    with pytest.raises(BackendError, match="no dataset named 'nothing'"):
        list(backend.dataset_references("nothing"))


def test_the_command_line_scores_a_pull_and_pushes_the_scores_back_once(
    world: tuple[LangSmithStandIn, dict[str, str]],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server, ids = world
    monkeypatch.setenv("LANGSMITH_API_KEY", KEY)
    url = f"langsmith://{server.url[7:]}/{traces.PROJECT}"
    paris = {"name": "get_weather", "args": {"city": "Paris"}}
    oslo = {"name": "get_weather", "args": {"city": "Oslo"}}
    taxi = {"name": "book_taxi", "args": {}}
    examples = [(ids["paris"], [paris]), (ids["oslo"], [oslo, taxi])]
    server.add_dataset(
        "cli-goldens",
        [
            {"id": str(uuid4()), "source_run_id": run, "outputs": {"reference_tool_calls": calls}}
            for run, calls in examples
        ],
    )
    out = tmp_path / "results.jsonl"
    command = ["evaluate", url, "-m", "tool_call_f1", "--trace-id", ids["oslo"]]
    command += ["--trace-id", ids["paris"], "--references", f"{url}/datasets/cli-goldens"]
    command += ["--out", str(out), "--progress", "off", "--no-config", "--push"]
    code = main(command)
    said = capsys.readouterr()
    assert code == 0, said
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [row["id"] for row in rows] == [ids["paris"], ids["oslo"]]
    # Paris made the one reference call; Oslo one of two: F1 = 2 * 1 * 0.5 / 1.5
    assert [row["metrics"]["tool_call_f1"]["value"] for row in rows] == [1.0, 0.6667]
    assert rows[0]["agent_usage"]["input_tokens"] == 60  # 20 + 40, the two model calls
    key = "tracegrade.tool_call_f1"
    written = {f["run_id"]: f for f in server.feedback.values() if f["key"] == key}
    assert {run: f["score"] for run, f in written.items()} == {
        ids["paris"]: 1.0,
        ids["oslo"]: 0.6667,
    }
    assert main(["push", str(out), "--again"]) == 0
    said = capsys.readouterr()
    again = [f for f in server.feedback.values() if f["key"] == key]
    assert len(again) == 2 and all(f["modified_at"] >= f["created_at"] for f in again)
    assert KEY not in said.out + said.err + out.read_text()
