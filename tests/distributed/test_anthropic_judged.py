"""AnthropicJudge on a real LocalCluster (2 worker processes) asking the scripted server
speaking Anthropic's Messages API on 127.0.0.1: the rows of one machine, the judge
rebuilt on each worker as an AnthropicJudge (its options and the key from the worker's
environment), and a rerun answered from the cache the workers share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.distributed.test_judged import _dataset, _responder, _rows, _values
from tests.judge.anthropic_protocol import anthropic_server
from tests.judge.server import JudgeServer, judge_env

from tracegrade import (
    AgentGoalAccuracyWithReference,
    Metric,
    ToolCallF1,
    TopicAdherenceScore,
    evaluate,
)
from tracegrade.distributed import evaluate_distributed
from tracegrade.judge import AnthropicJudge

__all__ = ["anthropic_server", "judge_env"]


@pytest.fixture(autouse=True)
def _isolated(judge_env: pytest.MonkeyPatch) -> None:
    """No judge settings from the developer's environment; the default cache in tmp."""


def _metrics(judge: AnthropicJudge) -> list[Metric]:
    return [TopicAdherenceScore(llm=judge), AgentGoalAccuracyWithReference(llm=judge), ToolCallF1()]


def test_on_a_cluster_as_on_one_machine_then_from_the_shared_cache(
    client: Any, anthropic_server: JudgeServer, tmp_path: Path
) -> None:
    anthropic_server.respond(_responder)
    data = _dataset(tmp_path / "runs.jsonl", 20, failing={3, 8}, malformed=False)

    def judge(cache: Path | bool) -> AnthropicJudge:
        return AnthropicJudge(
            "claude-x",
            base_url=anthropic_server.url,
            cache=cache,
            max_attempts=2,
            backoff=0.001,
            max_backoff=0.001,
            max_tokens=512,
        )

    single = evaluate(data, _metrics(judge(False)), out=tmp_path / "single.jsonl", progress=False)
    asked_once = anthropic_server.count
    assert asked_once == 44  # 18 samples x 2 metrics, and 2 samples x 2 metrics x 2 attempts
    spread = evaluate_distributed(
        data,
        _metrics(judge(False)),
        client=client,
        out=tmp_path / "spread.jsonl",
        partition_bytes=4096,
    )
    assert spread.run_facts["distributed"]["partitions"] > 1
    assert anthropic_server.count == 2 * asked_once
    assert _rows(tmp_path / "spread.jsonl") == _rows(tmp_path / "single.jsonl")
    assert spread.usage == single.usage
    # the workers' judges were AnthropicJudges with the options given here
    assert {request.body["max_tokens"] for request in anthropic_server.requests} == {512}

    cache = tmp_path / "judge.sqlite"
    first = evaluate_distributed(
        data, _metrics(judge(cache)), client=client, out=tmp_path / "first.jsonl"
    )
    asked = anthropic_server.count
    again = evaluate_distributed(
        data, _metrics(judge(cache)), client=client, out=tmp_path / "again.jsonl"
    )
    # only the two failing samples' questions are asked again (2 x 2 metrics x 2
    # attempts): a failed judgement is never cached; the other 36 answers are
    assert anthropic_server.count == asked + 8
    assert first.usage is not None and again.usage is not None
    assert (again.usage.requests, again.usage.cached) == (8, 36)
    assert _values(tmp_path / "again.jsonl") == _values(tmp_path / "first.jsonl")
