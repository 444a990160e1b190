"""The Langfuse backend against a stand-in of Langfuse's public API whose replies are
checked against the official SDK's models (tests/backends/langfuse_server.py): paging,
filters, limit, sessions, a malformed trace, score upserts, 429 retries, credentials."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langfuse")
pytest.importorskip("httpx")

from tracegrade.backends import BackendError, PullFilters, PushedScore, open_backend
from tracegrade.backends._langfuse_scores import score_id
from tracegrade.cli.main import main
from tracegrade.convert._base import Skipped
from tracegrade.errors import RecordError
from tracegrade.model.messages import AIMessage, HumanMessage, ToolMessage
from tracegrade.model.origin import Origin
from tracegrade.model.samples import MultiTurnSample

from .langfuse_server import StandIn

PUBLIC, SECRET = "pk-lf-1d2c3b4a-0000", "sk-lf-9f8e7d6c-5b4a-secret"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The current weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
SYSTEM = {"role": "system", "content": "You are a weather assistant."}


def _at(day: int, second: int) -> str:
    return f"2026-01-{day:02d}T10:00:{second:02d}.000Z"


def _observation(trace: str, ident: str, kind: str, name: str, **fields: Any) -> dict[str, Any]:
    """One observation with every field group, as Langfuse stores what its SDK sent."""
    return {
        "id": ident,
        "traceId": trace,
        "projectId": "cm4proj0001",
        "type": kind,
        "name": name,
        "parentObservationId": None,
        "isRootObservation": False,
        "level": "DEFAULT",
        "statusMessage": None,
        "version": None,
        "environment": "default",
        "bookmarked": False,
        "public": False,
        "userId": None,
        "sessionId": None,
        "completionStartTime": None,
        "input": None,
        "output": None,
        "metadata": {},
        "model": None,
        "internalModelId": None,
        "modelParameters": None,
        "usageDetails": {},
        "costDetails": {},
        "totalCost": None,
        "tags": [],
        "release": None,
        "traceName": "weather-agent",
        **fields,
    }


def openai_trace(
    number: int,
    day: int,
    city: str,
    *,
    session: str | None = None,
    tags: tuple[str, ...] = (),
    metadata: dict[str, str] | None = None,
    history: list[dict[str, Any]] | None = None,
    arguments: str | None = None,
) -> list[dict[str, Any]]:
    """A trace as Langfuse's OpenAI integration records an agent turn: an ``@observe``
    root span, a generation calling get_weather, the tool (``@observe(as_type="tool")``,
    called with keywords) and the generation answering; times on ``day``."""
    trace = f"7d3f0a9b2c1e4f5a8b6c{number:012x}"
    ids = [f"{number:04x}a1b2c3d4e5f{part}" for part in range(4)]
    call = f"call_{number}Xy7Qw"
    question = {"role": "user", "content": f"What is the weather in {city}?"}
    before = [SYSTEM, *(history or []), question]
    asked = {
        "role": "assistant",
        "tool_calls": [
            {
                "id": call,
                "function": {
                    "arguments": arguments or json.dumps({"city": city}),
                    "name": "get_weather",
                },
                "type": "function",
            }
        ],
        "content": None,
    }
    answer = f"It is 18 C and sunny in {city}."
    shared = {
        "sessionId": session,
        "userId": "user-42",
        "tags": list(tags),
        "metadata": metadata or {},
    }
    return [
        _observation(
            trace,
            ids[0],
            "SPAN",
            "weather-agent",
            startTime=_at(day, 0),
            endTime=_at(day, 9),
            isRootObservation=True,
            input=json.dumps({"args": [question["content"]], "kwargs": {}}),
            output=json.dumps(answer),
            **shared,
        ),
        _observation(
            trace,
            ids[1],
            "GENERATION",
            "OpenAI-generation",
            parentObservationId=ids[0],
            startTime=_at(day, 1),
            endTime=_at(day, 3),
            completionStartTime=_at(day, 2),
            input=json.dumps({"tools": TOOLS, "messages": before}),
            output=json.dumps(asked),
            model="gpt-4o-mini-2024-07-18",
            modelParameters={"temperature": 0},
            usageDetails={"input": 80, "input_cached_tokens": 12, "output": 17, "total": 109},
            costDetails={"input": 0.0000138, "output": 0.0000102, "total": 0.000024},
            totalCost=0.000024,
            **shared,
        ),
        _observation(
            trace,
            ids[2],
            "TOOL",
            "get_weather",
            parentObservationId=ids[0],
            startTime=_at(day, 4),
            endTime=_at(day, 5),
            input=json.dumps({"args": [], "kwargs": {"city": city}}),
            output=json.dumps("18 C, sunny"),
            **shared,
        ),
        _observation(
            trace,
            ids[3],
            "GENERATION",
            "OpenAI-generation",
            parentObservationId=ids[0],
            startTime=_at(day, 6),
            endTime=_at(day, 8),
            input=json.dumps(
                {
                    "tools": TOOLS,
                    "messages": [
                        *before,
                        {**asked, "refusal": None, "annotations": [], "audio": None},
                        {"role": "tool", "tool_call_id": call, "content": "18 C, sunny"},
                    ],
                }
            ),
            output=json.dumps({"role": "assistant", "content": answer}),
            model="gpt-4o-mini-2024-07-18",
            usageDetails={"input": 120, "output": 11, "output_reasoning_tokens": 3, "total": 134},
            totalCost=0.00003,
            **shared,
        ),
    ]


def trace_id(number: int) -> str:
    return f"7d3f0a9b2c1e4f5a8b6c{number:012x}"


def turn(number: int, city: str) -> list[dict[str, Any]]:
    """What trace ``number``'s turn of a session leaves in the next turn's history."""
    call = f"call_{number}Xy7Qw"
    return [
        {"role": "user", "content": f"What is the weather in {city}?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": json.dumps({"city": city})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call, "content": "18 C, sunny"},
        {"role": "assistant", "content": f"It is 18 C and sunny in {city}."},
    ]


def observations() -> list[dict[str, Any]]:
    """Six traces: two of session s-1 (the second carries the first's turn), one of s-2,
    tags and metadata on some, and trace 6 with arguments that are not JSON."""
    return [
        *openai_trace(1, 3, "Paris", session="s-1", tags=("prod",), metadata={"tier": "gold"}),
        *openai_trace(2, 4, "Oslo", tags=("prod", "eu")),
        *openai_trace(3, 5, "Lima", session="s-1", history=turn(1, "Paris"), tags=("prod",)),
        *openai_trace(4, 6, "Rome", session="s-2", metadata={"tier": "gold"}),
        *openai_trace(5, 7, "Kyiv", tags=("eu",)),
        *openai_trace(6, 8, "Baku", arguments="{city: Baku"),
    ]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandIn]:
    stand_in = StandIn(PUBLIC, SECRET, observations()).start()
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET)
    yield stand_in
    stand_in.stop()
    assert not stand_in.problems, stand_in.problems


def _pull(server: StandIn, path: str = "/support-bot", **filters: Any) -> list[Any]:
    backend = open_backend(server.url.replace("http://", "langfuse://") + path)
    backend.page_size = 2  # type: ignore[attr-defined]  # several pages of roots
    try:
        return list(backend.pull(PullFilters(**filters), Skipped()))
    finally:
        backend.close()


def _ids(outcomes: list[Any]) -> list[str]:
    return [
        str(o.id) if isinstance(o, MultiTurnSample) else f"error {o.record_id}" for o in outcomes
    ]


def test_pull_rebuilds_each_trace_oldest_first_across_pages(server: StandIn) -> None:
    skipped = Skipped()
    backend = open_backend(server.url.replace("http://", "langfuse://") + "/cm4proj0001")
    backend.page_size = 2  # type: ignore[attr-defined]
    outcomes = list(backend.pull(PullFilters(), skipped))
    backend.close()
    assert _ids(outcomes) == [trace_id(n) for n in range(1, 6)] + [f"error {trace_id(6)}"]
    first = outcomes[0]
    assert isinstance(first, MultiTurnSample)
    human, ask, result, answer = first.user_input
    assert isinstance(human, HumanMessage) and human.content == "What is the weather in Paris?"
    assert isinstance(ask, AIMessage) and ask.tool_calls is not None
    assert [(c.name, c.args, c.id) for c in ask.tool_calls] == [
        ("get_weather", {"city": "Paris"}, "call_1Xy7Qw")
    ]
    assert ask.usage is not None and ask.timing is not None
    # Langfuse counts the cached tokens apart from "input": 80 + 12
    assert (ask.usage.input_tokens, ask.usage.cache_read_tokens, ask.usage.output_tokens) == (
        92,
        12,
        17,
    )
    assert (ask.usage.model, ask.usage.cost) == ("gpt-4o-mini-2024-07-18", 0.000024)
    assert ask.timing.time_to_first_token == 1.0
    assert isinstance(result, ToolMessage) and result.content == "18 C, sunny"
    assert result.tool_call_id == "call_1Xy7Qw"
    assert result.outcome is not None and result.outcome.status.value == "ok"
    assert result.timing is not None and result.timing.ended_at is not None
    assert result.timing.started_at == datetime(2026, 1, 3, 10, 0, 4, tzinfo=timezone.utc)
    assert result.timing.ended_at == datetime(2026, 1, 3, 10, 0, 5, tzinfo=timezone.utc)
    assert isinstance(answer, AIMessage) and answer.content == "It is 18 C and sunny in Paris."
    assert answer.usage is not None and (
        answer.usage.output_tokens,
        answer.usage.reasoning_tokens,
    ) == (14, 3)
    assert first.origin == Origin(
        system="langfuse",
        location=backend.address.text,
        project="cm4proj0001",
        trace_ids=(trace_id(1),),
        root_ids=(trace_id(1),),
    )
    assert first.metadata == {
        "trace_name": "weather-agent",
        "user_id": "user-42",
        "tags": ["prod"],
        "environment": "default",
    }
    # the root span restates the turn: counted, not read
    assert skipped.counts == {
        "Langfuse SPAN observation with an input or output (only GENERATION and TOOL "
        "observations are read)": 5
    }
    root_pages = [q for m, p, q in server.requests if "filter" in q]
    assert len(root_pages) == 3 and "cursor" in root_pages[2]  # 6 roots, 2 a page


def test_a_malformed_trace_is_a_record_error_naming_it(server: StandIn) -> None:
    outcomes = _pull(server, trace_ids=(trace_id(6), trace_id(2)))
    assert _ids(outcomes) == [trace_id(2), f"error {trace_id(6)}"]
    error = outcomes[1]
    assert isinstance(error, RecordError) and error.kind == "trace" and error.position == 1
    assert error.source.startswith("langfuse://127.0.0.1:")
    assert f"trace {trace_id(6)}" in error.rule and "{city: Baku" in error.rule


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (
            {
                "since": datetime(2026, 1, 4, 10, tzinfo=timezone.utc),
                "until": datetime(2026, 1, 6, 10, tzinfo=timezone.utc),
            },
            [2, 3],
        ),
        ({"tags": ("prod", "eu")}, [2]),
        ({"metadata": (("tier", "gold"),)}, [1, 4]),
        ({"session_ids": ("s-1",)}, [1, 3]),
        ({"trace_ids": (trace_id(5), trace_id(1))}, [1, 5]),
        ({"tags": ("prod",), "limit": 2}, [2, 3]),  # the newest two, oldest first
    ],
)
def test_filters_select_the_traces(
    server: StandIn, filters: dict[str, Any], expected: list[int]
) -> None:
    assert _ids(_pull(server, **filters)) == [trace_id(n) for n in expected]


def test_limit_stops_paging(server: StandIn) -> None:
    assert _ids(_pull(server, limit=1)) == [f"error {trace_id(6)}"]
    assert len([q for m, p, q in server.requests if "filter" in q]) == 1


def test_ids_not_found_and_an_unreadable_start_are_record_errors(server: StandIn) -> None:
    missing = "f" * 32
    found = _pull(server, trace_ids=(trace_id(2), missing))
    assert _ids(found) == [trace_id(2), f"error {missing}"]
    assert (found[1].kind, found[1].position) == ("trace", 1)
    assert f"trace {missing}: Langfuse project 'cm4proj0001' has no such trace" in str(found[1])
    both = _pull(server, trace_ids=(trace_id(1), trace_id(2)), session_ids=("s-1",))
    assert _ids(both) == [trace_id(1), f"error {trace_id(2)}"]  # trace 2 is in no session
    assert "has no such trace matching the other filters" in str(both[1])
    sessions = _pull(server, session_ids=("s-2", "s-9"), group_by="session")
    assert _ids(sessions) == ["s-2", "error s-9"] and sessions[1].kind == "session"
    window = _pull(server, session_ids=("s-2",), since=datetime(2026, 1, 7, tzinfo=timezone.utc))
    assert "session s-2: Langfuse project 'cm4proj0001' has no such session in the time " in str(
        window[0]
    )

    def undated(request: str, reply: Any) -> Any:
        if request != "GET /api/public/v2/observations":
            return reply
        data = [
            {**item, "startTime": "soon"} if item["traceId"] == trace_id(4) else item
            for item in reply["data"]
        ]
        return {**reply, "data": data}

    server.mangle = undated
    outcomes = _pull(server, trace_ids=(trace_id(2), trace_id(4)))
    assert _ids(outcomes) == [f"error {trace_id(4)}", trace_id(2)]
    assert f"trace {trace_id(4)}'s startTime is not a time" in str(outcomes[0])


@pytest.mark.parametrize(
    ("request_path", "wrong"),
    [
        ("GET /api/public/v2/observations", {"data": [], "meta": ["not", "an object"]}),
        ("GET /api/public/v2/observations", ["a", "list"]),
        ("GET /api/public/v3/scores", ["a", "list"]),
        ("GET /api/public/v3/scores", {"data": {"not": "a list"}}),
    ],
)
def test_a_reply_of_the_wrong_shape_is_a_backend_error_naming_the_request(
    server: StandIn, request_path: str, wrong: Any
) -> None:
    server.mangle = lambda asked, reply: wrong if asked == request_path else reply
    backend = open_backend(server.url.replace("http://", "langfuse://"))
    try:
        with pytest.raises(BackendError, match=f"(?i)langfuse.*{request_path}"):
            if "scores" in request_path:
                backend.push(_scores(0.5, "")[:1])
            else:
                list(backend.pull(PullFilters(), Skipped()))
    finally:
        backend.close()


def test_group_by_session_joins_its_traces(server: StandIn) -> None:
    outcomes = _pull(server, group_by="session", until=datetime(2026, 1, 7, tzinfo=timezone.utc))
    assert _ids(outcomes) == ["s-1", trace_id(2), "s-2"]
    session = outcomes[0]
    assert isinstance(session, MultiTurnSample) and session.origin is not None
    assert session.origin.session_id == "s-1"
    assert session.origin.trace_ids == (trace_id(1), trace_id(3))
    assert [m.content for m in session.user_input if isinstance(m, HumanMessage)] == [
        "What is the weather in Paris?",
        "What is the weather in Lima?",
    ]
    assert len(session.user_input) == 8  # two turns of four messages, none twice
    assert outcomes[1].origin.session_id is None  # type: ignore[union-attr]
    limited = _pull(server, group_by="session", limit=1, session_ids=("s-1",))
    assert _ids(limited) == ["s-1"]  # the session whole, though the limit stopped paging
    assert limited[0].origin.trace_ids == (trace_id(1), trace_id(3))  # type: ignore[union-attr]


def _scores(value: float | None, reason: str) -> list[PushedScore]:
    origin = Origin(system="langfuse", trace_ids=(trace_id(1),), root_ids=(trace_id(1),))
    session = Origin(system="langfuse", trace_ids=(trace_id(1), trace_id(3)), session_id="s-1")
    return [
        PushedScore(origin, trace_id(1), "tool_correctness", value, reason, label="pass"),
        PushedScore(origin, trace_id(1), "goal_accuracy", 1.0, "reached"),
        PushedScore(session, "s-1", "tool_correctness", 0.5, "half"),
        PushedScore(Origin(system="phoenix", trace_ids=("ab",)), "x", "goal_accuracy", 1.0, ""),
        PushedScore(
            Origin(system="langfuse", project="cm4other", trace_ids=("cd",)), "y", "goal", 1.0, ""
        ),
    ]


def test_push_twice_updates_one_score_per_target_and_name(server: StandIn) -> None:
    backend = open_backend(server.url.replace("http://", "langfuse://"))
    first = backend.push(_scores(0.75, "one call missed"))
    assert (first.created, first.updated) == (3, 0)
    assert [reason for _, reason in first.refused] == [
        "sample x was read from phoenix, not Langfuse",
        "sample y was read from Langfuse project cm4other, not this one (cm4proj0001)",
    ]
    second = backend.push(_scores(None, "no reference calls"))
    assert (second.created, second.updated) == (0, 3)
    assert len(server.scores) == 3  # same ids and timestamps: updated in place
    reply = backend.http.get(  # type: ignore[attr-defined]
        "/api/public/v3/scores",
        params={"traceId": trace_id(1), "name": "tracegrade.tool_correctness"},
    )
    backend.close()
    (score,) = reply["data"]
    assert score["id"] == score_id("traceId", trace_id(1), "tracegrade.tool_correctness")
    assert (score["value"], score["dataType"], score["comment"]) == (
        "not applicable",
        "CATEGORICAL",
        "no reference calls",
    )
    assert score["metadata"] == {
        "producer": "tracegrade",
        "metric": "tool_correctness",
        "sample_id": trace_id(1),
        "label": "pass",
    }
    assert score["subject"] == {"kind": "trace", "id": trace_id(1)}
    session_scores = [s for s in server.scores.values() if s.get("sessionId") == "s-1"]
    assert [(s["name"], s["value"]) for s in session_scores] == [
        ("tracegrade.tool_correctness", 0.5)
    ]


def test_a_refused_score_is_reported(server: StandIn) -> None:
    server.refuse_score_names = {"tracegrade.goal_accuracy"}
    backend = open_backend(server.url.replace("http://", "langfuse://"))
    outcome = backend.push(_scores(0.75, "")[:3])
    backend.close()
    assert (outcome.created, outcome.updated) == (2, 0)
    assert [(s.metric, reason) for s, reason in outcome.refused] == [
        ("goal_accuracy", "score 0: name 'tracegrade.goal_accuracy' refused")
    ]


def test_429_is_retried_after_the_wait_it_asks(server: StandIn) -> None:
    server.throttle = 1
    started = time.monotonic()
    assert _ids(_pull(server, trace_ids=(trace_id(2),))) == [trace_id(2)]
    assert time.monotonic() - started >= 1.0
    assert server.requests[0][1] == server.requests[1][1] == "/api/public/projects"


def test_credentials_are_checked_and_never_shown(
    server: StandIn, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    rows = json.dumps(
        [o.to_dict() if isinstance(o, MultiTurnSample) else str(o) for o in _pull(server, limit=2)]
    )
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET + "-wrong")
    with pytest.raises(BackendError) as raised:
        _pull(server)
    assert "HTTP 401" in str(raised.value)
    monkeypatch.delenv("LANGFUSE_PUBLIC_KEY")
    with pytest.raises(BackendError, match="set LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY"):
        _pull(server)
    for text in (rows, str(raised.value), caplog.text):
        assert PUBLIC not in text and SECRET not in text and "sk-lf" not in text


def test_the_url_project_must_be_the_keys_project(server: StandIn) -> None:
    with pytest.raises(BackendError, match="belong to project 'support-bot' \\(id cm4proj0001\\)"):
        _pull(server, "/other-project")
    assert len(_pull(server, "", limit=1)) == 1


def _item(number: int, expected: Any, source: str | None, status: str = "ACTIVE") -> dict[str, Any]:
    return {
        "id": f"item-{number}",
        "status": status,
        "input": {"question": "What is the weather in Paris?"},
        "expectedOutput": expected,
        "metadata": None,
        "sourceTraceId": source,
        "sourceObservationId": None,
        "datasetId": "cm4data0001",
        "datasetName": "weather-golden",
        "createdAt": "2026-01-02T09:00:00.000Z",
        "updatedAt": "2026-01-02T09:00:00.000Z",
        "mediaReferences": [],
    }


def test_dataset_items_are_references_lines(server: StandIn) -> None:
    calls = [{"name": "get_weather", "args": {"city": "Paris"}}]
    server.dataset_items = [
        _item(1, {"reference_tool_calls": calls, "reference": "18 C"}, trace_id(1)),
        _item(2, "It is sunny in Oslo.", trace_id(2)),
        _item(3, {"answer": 18}, None),
        _item(4, "old", trace_id(4), status="ARCHIVED"),
        {**_item(5, None, None), "datasetName": "other"},
    ]
    backend = open_backend(server.url.replace("http://", "langfuse://"))
    backend.page_size = 2  # type: ignore[attr-defined]
    lines = list(backend.dataset_references("weather-golden"))
    backend.close()
    assert lines == [
        {"id": trace_id(1), "reference_tool_calls": calls, "reference": "18 C"},
        {"id": trace_id(2), "reference": "It is sunny in Oslo."},
        {"id": "item-3", "reference": '{"answer":18}'},
    ]


def test_the_command_line_scores_a_pull_with_a_dataset_as_references(
    server: StandIn, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = server.url.replace("http://", "langfuse://") + "/support-bot"
    weather = {"name": "get_weather", "args": {"city": "Paris"}}
    oslo = {"name": "get_weather", "args": {"city": "Oslo"}}
    server.dataset_items = [
        _item(1, {"reference_tool_calls": [weather]}, trace_id(1)),
        _item(2, {"reference_tool_calls": [oslo, {"name": "book_taxi", "args": {}}]}, trace_id(2)),
    ]
    out = tmp_path / "results.jsonl"
    code = main(
        [
            "evaluate",
            url,
            "-m",
            "tool_call_f1",
            "--tag",
            "prod",
            "--until",
            "2026-01-05",
            "--references",
            f"{url}/datasets/weather-golden",
            "--out",
            str(out),
            "--progress",
            "off",
            "--no-config",
        ]
    )
    said = capsys.readouterr()
    assert code == 0, said
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [row["id"] for row in rows] == [trace_id(1), trace_id(2)]
    # trace 1 made the one reference call; trace 2 one of two: F1 = 2 * 1 * 0.5 / 1.5
    values = [row["metrics"]["tool_call_f1"]["value"] for row in rows]
    assert values == [1.0, 0.6667]  # rows keep four decimals
    # the usage read from the generations: input 80 + 12 cached + 120, output 17 + 11 + 3
    usage = rows[0]["agent_usage"]
    assert (usage["input_tokens"], usage["output_tokens"], usage["cache_read_tokens"]) == (
        212,
        31,
        12,
    )
    assert usage["cost"] == pytest.approx(0.000054) and usage["tools_ok"] == 1
    assert rows[1]["origin"] == {
        "system": "langfuse",
        "location": url,
        "project": "cm4proj0001",
        "trace_ids": [trace_id(2)],
        "root_ids": [trace_id(2)],
    }
    assert SECRET not in said.out + said.err + out.read_text()
