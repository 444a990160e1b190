"""Judged metrics through AnthropicJudge end to end, on the scripted server speaking
Anthropic's Messages API on 127.0.0.1: evaluate (then a rerun from the cache), and the
command line with ``--judge-provider anthropic`` and ``--workers 2`` (the run record
naming the provider, resume refusing another)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from tests.judge.anthropic_protocol import anthropic_server
from tests.judge.server import JudgeServer, judge_env
from tests.metrics.judges import sensible_answer
from tests.test_judged_run import EXPECTED, METRIC_NAMES, _dataset, metrics, samples

from tracegrade import evaluate
from tracegrade.cli import EXIT_OK, EXIT_USAGE, main
from tracegrade.io.store import run_record_path
from tracegrade.judge import AnthropicJudge, Usage

__all__ = ["anthropic_server", "judge_env"]

pytestmark = pytest.mark.filterwarnings("error::ResourceWarning")


@pytest.fixture(autouse=True)
def _isolated(judge_env: pytest.MonkeyPatch) -> None:
    """No judge settings from the developer's environment; the default cache in tmp."""


def test_evaluate_through_anthropic_then_a_rerun_asks_nothing(
    anthropic_server: JudgeServer, tmp_path: Path
) -> None:
    anthropic_server.respond(sensible_answer)
    cache = tmp_path / "cache.sqlite"
    judge = AnthropicJudge("claude-x", base_url=anthropic_server.url, cache=cache)
    first = evaluate(samples(), metrics(judge))  # type: ignore[arg-type]
    assert {name: first[name] for name in METRIC_NAMES} == EXPECTED
    assert anthropic_server.count == 9  # one request per sample and metric
    assert first.usage == Usage(input_tokens=90, output_tokens=45, requests=9)
    # each metric's schema is the tool the model is made to call
    assert {request.body["tool_choice"]["name"] for request in anthropic_server.requests} == {
        "topic_adherence",
        "goal_with_reference",
        "goal_without_reference",
    }

    again = AnthropicJudge("claude-x", base_url=anthropic_server.url, cache=cache)
    second = evaluate(samples(), metrics(again))  # type: ignore[arg-type]
    assert anthropic_server.count == 9
    assert {name: second[name] for name in METRIC_NAMES} == EXPECTED
    assert second.usage is not None
    assert (second.usage.requests, second.usage.cached) == (0, 9)


def test_cli_with_two_workers_then_from_the_cache_and_no_resume_on_another_provider(
    anthropic_server: JudgeServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    anthropic_server.respond(sensible_answer)
    out = tmp_path / "results.jsonl"
    arguments = [
        "evaluate",
        str(_dataset(tmp_path)),
        "-m",
        "topic_adherence",
        "-m",
        "agent_goal_accuracy_with_reference",
        "--judge-provider",
        "anthropic",
        "--judge-model",
        "claude-x",
        "--judge-base-url",
        anthropic_server.url,
        "--workers",
        "2",
        "--progress",
        "off",
        "--out",
        str(out),
    ]
    assert main(arguments) == EXIT_OK
    printed = capsys.readouterr().out
    assert "Judge: 6 request(s), 0 answer(s) from the cache, 60 input + 30 output tokens" in printed
    assert anthropic_server.count == 6
    rows = sorted(
        (json.loads(line) for line in out.read_text().splitlines()), key=lambda r: r["index"]
    )
    assert [row["metrics"]["agent_goal_accuracy_with_reference"]["value"] for row in rows] == [
        1.0,
        0.0,
        1.0,
    ]
    record = json.loads(run_record_path(out).read_text())
    assert record["judge"] == f"claude-x at {anthropic_server.url} (anthropic)"

    assert main(arguments) == EXIT_OK
    assert anthropic_server.count == 6
    assert "Judge: 0 request(s), 6 answer(s) from the cache" in capsys.readouterr().out

    other = [*arguments, "--resume"]
    other[other.index("anthropic")] = "openai"
    assert main(other) == EXIT_USAGE
    assert "another run's rows" in capsys.readouterr().err
    assert anthropic_server.count == 6


def test_the_project_config_chooses_the_provider(
    anthropic_server: JudgeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    anthropic_server.respond(sensible_answer)
    config = tmp_path / "tracegrade.toml"
    config.write_text(
        'judge-provider = "anthropic"\n'
        'judge-model = "claude-x"\n'
        f'judge-base-url = "{anthropic_server.url}"\n'
    )
    arguments = ["evaluate", str(_dataset(tmp_path)), "-m", "topic_adherence"]
    assert main([*arguments, "--config", str(config), "--progress", "off"]) == EXIT_OK
    assert anthropic_server.count == 3  # one topic question per sample, in Anthropic's protocol
    assert all(request.path == "/v1/messages" for request in anthropic_server.requests)
    capsys.readouterr()


def test_the_trajectory_judge_through_anthropic(anthropic_server: JudgeServer) -> None:
    from tests.metrics.test_trajectory_judge import refund, verdict

    from tracegrade import TrajectoryJudge

    anthropic_server.respond(lambda body: verdict(4, [3]))
    judge = AnthropicJudge("claude-x", base_url=anthropic_server.url, cache=False)
    result = evaluate(
        [refund("1"), refund("2", reference=False)],
        [TrajectoryJudge(llm=judge)],
    )
    assert anthropic_server.count == 2  # one call per sample
    names = [request.body["tool_choice"]["name"] for request in anthropic_server.requests]
    assert sorted(names) == ["trajectory_with_reference", "trajectory_without_reference"]
    for request in anthropic_server.requests:
        turns = [turn["role"] for turn in request.body["messages"]]
        # the few-shot examples as alternating turns, the question last
        assert turns[0] == turns[-1] == "user"
        assert all(a != b for a, b in itertools.pairwise(turns))
        assert "Step 3. The agent called refund(" in request.body["messages"][-1]["content"]
    for row in result.rows:
        score = row.scores["trajectory_judge"]
        assert (score.value, score.details["steps_faulted"]) == (0.75, [3])  # (4 - 1) / 4
