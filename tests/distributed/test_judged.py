"""Judged metrics on a real LocalCluster (2 worker processes) asking the scripted judge
server on 127.0.0.1: the same rows and summary as one machine, with a judge that fails
for some samples and malformed records in the input; the judge cache shared by the
workers, so a rerun asks nothing; the per-worker and overall concurrency limits."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from tests.judge.server import JudgeServer, Reply, judge_env, judge_server  # noqa: F401
from tests.metrics.judges import sensible_answer

from distributed import Client, LocalCluster
from tracegrade import (
    AgentGoalAccuracyWithReference,
    AIMessage,
    HumanMessage,
    Metric,
    MultiTurnSample,
    ToolCall,
    ToolCallF1,
    ToolMessage,
    TopicAdherenceScore,
    evaluate,
)
from tracegrade.distributed import evaluate_distributed
from tracegrade.judge import OpenAIJudge

MARKER = "UNANSWERABLE"
"""A sample whose text holds this gets HTTP 500 from the judge server, every time."""


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
        ) as cluster,
        Client(cluster) as connected,
    ):
        yield connected


@pytest.fixture(autouse=True)
def _isolated(judge_env: pytest.MonkeyPatch) -> None:  # noqa: F811
    """No judge settings from the developer's environment; the default cache in tmp."""


def _sample(number: int, *, failing: bool) -> MultiTurnSample:
    ask = f"Which biology course number {number} fits me?"
    if failing:
        ask += f" {MARKER}"
    result = "error: course full" if number % 3 == 0 else f"Biology {100 + number}"
    call = ToolCall(name="lookup", args={"q": ask}, id="c1")
    messages: list[Any] = [
        HumanMessage(content=ask),
        AIMessage(content="", tool_calls=[call]),
        ToolMessage(content=result, tool_call_id="c1"),
        AIMessage(content=f"Biology {100 + number} suits you."),
    ]
    if number % 4 == 1:
        messages += [
            HumanMessage(content="Any football tips?"),
            AIMessage(content="Sorry, I only help with courses."),
        ]
    return MultiTurnSample(
        id=f"s{number}",
        user_input=messages,
        reference_topics=["biology", "chemistry"],
        reference="A suitable biology course named",
        reference_tool_calls=[ToolCall(name="lookup", args={"q": ask})] if number % 2 else None,
    )


def _dataset(path: Path, count: int, *, failing: set[int], malformed: bool) -> Path:
    lines = [
        json.dumps(_sample(number, failing=number in failing).to_dict()) for number in range(count)
    ]
    if malformed:
        lines.insert(5, "{not json")
        lines.insert(17, json.dumps({"id": 3, "user_input": 5}))
        lines.insert(30, json.dumps(["a list, not a record"]))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _responder(body: Mapping[str, Any]) -> Reply | dict[str, Any]:
    if MARKER in json.dumps(body):
        return Reply.error(500, "the judge is down for this one")
    return sensible_answer(body)


def _judge(server: JudgeServer, cache: Path | bool) -> OpenAIJudge:
    """Two attempts, a moment apart: a failing sample's row fails quickly."""
    return OpenAIJudge(
        "test-judge",
        base_url=server.url,
        cache=cache,
        max_attempts=2,
        backoff=0.001,
        max_backoff=0.001,
    )


def _metrics(judge: OpenAIJudge) -> list[Metric]:
    return [
        TopicAdherenceScore(llm=judge),
        AgentGoalAccuracyWithReference(llm=judge),
        ToolCallF1(),
    ]


def _rows(path: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return sorted(rows, key=lambda row: int(row["index"]))


def _values(path: Path) -> list[dict[str, Any]]:
    """Each row's scores, without what they cost."""
    return [
        {name: score.get("value") for name, score in row["metrics"].items()} for row in _rows(path)
    ]


def test_a_failing_judge_and_malformed_records_give_the_rows_and_summary_of_one_machine(
    client: Client,
    judge_server: JudgeServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    judge_server.respond(_responder)
    data = _dataset(tmp_path / "runs.jsonl", 40, failing={4, 11, 12, 29}, malformed=True)
    judge = _judge(judge_server, cache=False)

    single = evaluate(data, _metrics(judge), out=tmp_path / "single.jsonl", progress=False)
    asked_once = judge_server.count
    distributed = evaluate_distributed(
        data,
        _metrics(judge),
        client=client,
        out=tmp_path / "distributed.jsonl",
        partition_bytes=4096,
    )

    assert distributed.run_facts["distributed"]["partitions"] > 2
    assert judge_server.count == 2 * asked_once  # no request more or less on the cluster
    expected, got = _rows(tmp_path / "single.jsonl"), _rows(tmp_path / "distributed.jsonl")
    assert len(got) == 43
    for mine, theirs in zip(got, expected, strict=True):
        assert mine == theirs
    assert distributed.summary() == single.summary()
    assert distributed.usage == single.usage

    # what the comparison covered: judged rows that failed, with what they cost, and
    # records rejected naming their lines
    failed = [row for row in got if row["status"] == "failed"]
    assert {row["id"] for row in failed} >= {"s4", "s11", "s12", "s29"}
    for row in failed:
        if row["id"] in ("s4", "s11", "s12", "s29"):
            error = row["metrics"]["topic_adherence"]["error"]
            assert error.startswith("JudgeError: judge test-judge: no answer to topic_adherence")
            assert "HTTP 500" in error
            # two attempts, both sent and counted
            assert row["metrics"]["topic_adherence"]["usage"]["requests"] == 2
    rejected = [row for row in got if row["status"] == "rejected"]
    assert [(row["index"], row["place"]) for row in rejected] == [
        (5, "line 6"),
        (17, "line 18"),
        (30, "line 31"),
    ]


def test_a_rerun_is_answered_from_the_cache_every_worker_shares(
    client: Client,
    judge_server: JudgeServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    judge_server.respond(_responder)
    data = _dataset(tmp_path / "runs.jsonl", 24, failing=set(), malformed=False)
    cache = tmp_path / "judge.sqlite"

    first = evaluate_distributed(
        data,
        _metrics(_judge(judge_server, cache)),
        client=client,
        out=tmp_path / "first.jsonl",
        partition_bytes=4096,
    )
    asked = judge_server.count
    assert first.usage is not None
    assert (first.usage.requests, first.usage.cached) == (asked, 0) == (48, 0)

    again = evaluate_distributed(
        data,
        _metrics(_judge(judge_server, cache)),
        client=client,
        out=tmp_path / "again.jsonl",
        partition_bytes=4096,
    )
    assert judge_server.count == asked
    assert again.usage is not None
    assert (again.usage.requests, again.usage.cached) == (0, 48)
    assert _values(tmp_path / "again.jsonl") == _values(tmp_path / "first.jsonl")

    # the workers wrote to the very file a run on one machine reads
    here = evaluate(data, _metrics(_judge(judge_server, cache)), progress=False)
    assert judge_server.count == asked
    assert here.usage is not None
    assert here.usage.requests == 0


def test_total_concurrency_caps_the_requests_in_flight_across_the_cluster(
    client: Client,
    judge_server: JudgeServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    judge_server.respond(_responder)
    judge_server.latency = 0.02  # replies take a moment, so requests overlap
    data = _dataset(tmp_path / "runs.jsonl", 24, failing=set(), malformed=False)
    judge = _judge(judge_server, cache=False)  # its own limit: 8 requests at once

    result = evaluate_distributed(
        data,
        _metrics(judge),
        client=client,
        out=tmp_path / "capped.jsonl",
        partition_bytes=2048,
        total_concurrency=2,  # two workers: one request in flight on each
    )

    assert judge_server.count == 48
    assert judge_server.max_in_flight <= 2
    assert result.summary()["topic_adherence"].failed == 0
    assert judge.max_concurrency == 8  # the metrics given were left as they were
