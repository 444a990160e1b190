"""Judged metrics end to end: OpenAIJudge on the scripted chat-completions server on
127.0.0.1, through evaluate, aevaluate and the command line."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import pytest
from tests.judge.server import JudgeServer, Reply, judge_env, judge_server  # noqa: F401
from tests.metrics.judges import sensible_answer

from tracegrade import (
    AgentGoalAccuracyWithoutReference,
    AgentGoalAccuracyWithReference,
    AIMessage,
    HumanMessage,
    Metric,
    MultiTurnSample,
    ToolCall,
    ToolMessage,
    TopicAdherenceScore,
    aevaluate,
    evaluate,
)
from tracegrade.cli import EXIT_FAILURES, EXIT_INPUT, EXIT_OK, EXIT_USAGE, main
from tracegrade.io.store import run_record_path
from tracegrade.judge import OpenAIJudge, Usage

# a judge left with open connections after a run is a failure, not a warning
pytestmark = pytest.mark.filterwarnings("error::ResourceWarning")

SECRET = "sk-test-SECRET-judged-run"
METRIC_NAMES = [
    "topic_adherence",
    "agent_goal_accuracy_with_reference",
    "agent_goal_accuracy_without_reference",
]


@pytest.fixture(autouse=True)
def _isolated(judge_env: pytest.MonkeyPatch) -> None:  # noqa: F811
    """No judge settings from the developer's environment; the default cache in tmp."""


def samples() -> list[MultiTurnSample]:
    def run(ask: str, result: str, answer: str) -> list[Any]:
        call = ToolCall(name="lookup", args={"q": ask}, id="c1")
        return [
            HumanMessage(content=ask),
            AIMessage(content="", tool_calls=[call]),
            ToolMessage(content=result, tool_call_id="c1"),
            AIMessage(content=answer),
        ]

    good = run("Which biology course fits me?", "Biology 101", "Biology 101 suits you.")
    broken = run("Enrol me in biology 101", "error: course full", "You're enrolled!")
    mixed = [
        *run("Biology exam dates?", "June 3", "The biology exam is on June 3."),
        HumanMessage(content="Any football tips?"),
        AIMessage(content="Sorry, I only help with courses."),
        HumanMessage(content="What about chemistry labs?"),
        AIMessage(content="Labs run on Fridays."),
    ]
    topics = ["biology", "chemistry"]
    return [
        MultiTurnSample(id=name, user_input=messages, reference_topics=topics, reference=goal)
        for name, messages, goal in [
            ("good", good, "A suitable biology course named"),
            ("broken", broken, "Enrolled in Biology 101"),
            ("mixed", mixed, "Exam date and lab times given"),
        ]
    ]


def metrics(judge: OpenAIJudge) -> list[Metric]:
    return [
        TopicAdherenceScore(llm=judge),
        AgentGoalAccuracyWithReference(llm=judge),
        AgentGoalAccuracyWithoutReference(llm=judge),
    ]


EXPECTED = {
    "topic_adherence": [1.0, 1.0, 1.0],  # mixed: football refused, the rest answered
    "agent_goal_accuracy_with_reference": [1.0, 0.0, 1.0],
    "agent_goal_accuracy_without_reference": [1.0, 0.0, 1.0],
}


def test_evaluate_on_a_real_endpoint_then_a_second_run_asks_nothing(
    judge_server: JudgeServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    judge_server.respond(sensible_answer)
    cache = tmp_path / "cache.sqlite"
    first = evaluate(
        samples(), metrics(OpenAIJudge("test-judge", base_url=judge_server.url, cache=cache))
    )
    assert {name: first[name] for name in METRIC_NAMES} == EXPECTED
    assert judge_server.count == 9  # one request per sample and metric
    assert first.usage == Usage(input_tokens=90, output_tokens=45, requests=9)
    mixed = first.rows[2].scores["topic_adherence"].details
    assert [t["topic"] for t in mixed["topics"]] == [
        "Biology exam dates?",
        "Any football tips?",
        "What about chemistry labs?",
    ]
    assert mixed["counts"]["refused_off_topic"] == 1

    bodies = [request.body for request in judge_server.requests]
    assert {body["response_format"]["json_schema"]["name"] for body in bodies} == {
        "topic_adherence",
        "goal_with_reference",
        "goal_without_reference",
    }

    judge = OpenAIJudge("test-judge", base_url=judge_server.url, cache=cache)
    second = asyncio.run(aevaluate(samples(), metrics(judge)))
    assert judge_server.count == 9
    assert [row.to_dict() for row in second] != []
    assert {name: second[name] for name in METRIC_NAMES} == EXPECTED
    assert second.usage is not None
    assert (second.usage.requests, second.usage.cached) == (0, 9)


async def _no_wait(seconds: float) -> None:
    pass


def impatient_judge(server: JudgeServer) -> OpenAIJudge:
    """Two attempts, no cache, a short timeout and no real waiting between attempts."""
    return OpenAIJudge(
        "test-judge",
        base_url=server.url,
        cache=False,
        max_attempts=2,
        backoff=0.001,
        timeout=0.3,
        sleep=_no_wait,
    )


def test_a_sample_whose_judge_fails_gets_an_error_and_the_run_goes_on(
    judge_server: JudgeServer,  # noqa: F811
) -> None:
    judge_server.respond(sensible_answer)
    # the first sample's judge answers nonsense twice; the second's endpoint keeps failing
    judge_server.script("no JSON here", "still none", *[Reply.error(500)] * 2)

    judge = impatient_judge(judge_server)
    # one sample at a time, so the scripted replies meet the samples in order
    result = evaluate(samples(), [AgentGoalAccuracyWithoutReference(llm=judge)], concurrency=1)
    values = result["agent_goal_accuracy_without_reference"]
    assert values == [None, None, 1.0]
    errors = [row.errors.get("agent_goal_accuracy_without_reference", "") for row in result]
    assert errors[0].startswith(
        "JudgeError: goal_without_reference: the judge's answer is unusable"
    )
    assert errors[1].startswith("JudgeError: judge test-judge: no answer to goal_without_reference")
    assert judge_server.count == 5
    assert result.summary()["agent_goal_accuracy_without_reference"].failed == 2


def _dataset(tmp_path: Path) -> Path:
    path = tmp_path / "runs.jsonl"
    lines = [json.dumps(sample.to_dict()) for sample in samples()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_cli_with_judge_flags_then_from_the_cache(
    judge_server: JudgeServer,  # noqa: F811
    judge_env: pytest.MonkeyPatch,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    judge_server.respond(sensible_answer)
    judge_env.setenv("TRACEGRADE_JUDGE_API_KEY", SECRET)
    out = tmp_path / "results.jsonl"
    arguments = [
        "evaluate",
        str(_dataset(tmp_path)),
        "-m",
        "topic_adherence:mode=precision",
        "-m",
        "agent_goal_accuracy_with_reference",
        "--judge-model",
        "test-judge",
        "--judge-base-url",
        judge_server.url,
        "--out",
        str(out),
    ]
    assert main(arguments) == EXIT_OK
    first = capsys.readouterr()
    printed = first.out
    assert SECRET not in first.out + first.err
    assert "Judge: 6 request(s), 0 answer(s) from the cache, 60 input + 30 output tokens" in printed
    # rows are written as they finish; each carries its index
    rows = sorted(
        (json.loads(line) for line in out.read_text().splitlines()), key=lambda row: row["index"]
    )
    assert [row["metrics"]["agent_goal_accuracy_with_reference"]["value"] for row in rows] == [
        1.0,
        0.0,
        1.0,
    ]
    assert rows[1]["metrics"]["agent_goal_accuracy_with_reference"]["reason"]
    assert rows[0]["metrics"]["topic_adherence"]["usage"]["requests"] == 1
    sent = {
        value
        for r in judge_server.requests
        for k, value in r.headers.items()
        if k.lower() == "authorization"
    }
    assert sent == {f"Bearer {SECRET}"}

    assert main(arguments) == EXIT_OK
    assert judge_server.count == 6
    second = capsys.readouterr()
    assert "Judge: 0 request(s), 6 answer(s) from the cache" in second.out
    assert SECRET not in second.out + second.err
    assert SECRET not in out.read_text()


USER_SECRET = "pw-SECRET-in-userinfo"
QUERY_SECRET = "key-SECRET-in-query"


def secret_url(server: JudgeServer) -> str:
    """The server's URL with a user and password and an API key in its query."""
    address = server.url.removeprefix("http://")
    return (
        f"http://judge-user:{USER_SECRET}@{address}?api-key={QUERY_SECRET}&api-version=2024-10-21"
    )


def leaks(folder: Path, *texts: str) -> list[str]:
    """Where a secret shows: the files under ``folder`` (every byte) and ``texts``."""
    found = []
    for secret in (USER_SECRET, QUERY_SECRET):
        for path in folder.rglob("*"):
            if path.is_file() and secret.encode() in path.read_bytes():
                found.append(f"{secret} in {path}")
        found += [f"{secret} in text {at}" for at, text in enumerate(texts) if secret in text]
    return found


def test_credentials_in_the_judge_url_are_used_and_never_written_or_shown(
    judge_server: JudgeServer,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)  # every library's log lines, httpx's URLs included
    url = secret_url(judge_server)
    echoed = url.replace("/v1?", "/v1/chat/completions?")  # the URL each request went to
    judge_server.script(
        # a proxy's page quoting the URL (retried), then a refusal quoting it (recorded)
        Reply.text(502, f"<html><body>Bad gateway for {echoed}</body></html>", "text/html"),
        Reply.error(403, f"no access for judge-user:{USER_SECRET} to {echoed}"),
    )
    judge_server.respond(sensible_answer)
    out = tmp_path / "results.jsonl"
    arguments = ["evaluate", str(_dataset(tmp_path)), "-m", "agent_goal_accuracy_with_reference"]
    judge = ["--judge-model", "test-judge", "--judge-base-url", url, "--concurrency", "1"]
    code = main([*arguments, *judge, "--out", str(out)])
    printed = capsys.readouterr()
    assert code == EXIT_FAILURES  # the 403's sample

    token = base64.b64encode(f"judge-user:{USER_SECRET}".encode()).decode()
    for request in judge_server.requests:  # the credentials were used as they are meant
        assert request.headers["authorization"] == f"Basic {token}"
        path, _, query = request.path.partition("?")
        assert path == "/v1/chat/completions"
        assert dict(parse_qsl(query)) == {"api-key": QUERY_SECRET, "api-version": "2024-10-21"}
    assert judge_server.count == 4

    assert leaks(tmp_path, printed.out, printed.err, caplog.text) == []
    address = judge_server.url.removeprefix("http://")
    record = json.loads((tmp_path / ".results.jsonl.run.json").read_text())
    assert record["judge"] == (
        f"test-judge at http://***@{address}?api-key=***&api-version=2024-10-21"
    )
    errors = [
        entry["error"]
        for row in map(json.loads, out.read_text().splitlines())
        for entry in row["metrics"].values()
        if "error" in entry
    ]
    assert errors == [
        "JudgeError: judge test-judge: the endpoint refused the request: HTTP 403: no access "
        f"for ***:*** to http://***@{address}/chat/completions?api-key=***"
        "&api-version=2024-10-21"  # the user too: a URL's user may be the key
    ]
    assert any("HTTP Request: POST" in line and "api-key=***" in line for line in caplog.messages)


def test_a_run_record_written_with_credentials_is_resumed_and_cleaned(
    judge_server: JudgeServer,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    judge_server.respond(sensible_answer)
    url = secret_url(judge_server)
    out = tmp_path / "results.jsonl"
    arguments = [
        *("evaluate", str(_dataset(tmp_path)), "-m", "agent_goal_accuracy_with_reference"),
        *("--judge-model", "test-judge", "--judge-base-url", url, "--out", str(out)),
    ]
    assert main(arguments) == EXIT_OK
    # as an older tracegrade wrote it: the URL as given
    record_path = tmp_path / ".results.jsonl.run.json"
    record = json.loads(record_path.read_text())
    record_path.write_text(json.dumps({**record, "judge": f"test-judge at {url}"}))
    out.write_text(out.read_text().splitlines(keepends=True)[0])  # stopped after one row

    assert main([*arguments, "--resume"]) == EXIT_OK
    printed = capsys.readouterr()
    cleaned = json.loads(record_path.read_text())
    # the same record, but for what the judge cost (the rows now: one asked, two cached)
    # and when the run's last part ran
    assert cleaned.pop("judge_usage")["cached"] == 2
    timing = {"judge_usage", "started", "duration_seconds"}
    assert cleaned.keys() - {"judge_usage"} == record.keys() - {"judge_usage"}
    assert {k: v for k, v in cleaned.items() if k not in timing} == {
        k: v for k, v in record.items() if k not in timing
    }
    assert len(out.read_text().splitlines()) == 3
    assert leaks(tmp_path, printed.out, printed.err) == []


def test_cli_takes_the_judge_from_the_environment(
    judge_server: JudgeServer,  # noqa: F811
    judge_env: pytest.MonkeyPatch,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    judge_server.respond(sensible_answer)
    judge_env.setenv("TRACEGRADE_JUDGE_MODEL", "env-judge")
    judge_env.setenv("TRACEGRADE_JUDGE_BASE_URL", judge_server.url)
    judge_env.setenv("TRACEGRADE_JUDGE_PRICES", "1,2")  # per million input, output tokens
    data = str(_dataset(tmp_path))
    assert main(["evaluate", data, "-m", "agent_goal_accuracy_without_reference"]) == EXIT_OK
    # 3 requests of 10 input and 5 output tokens: (30 · 1 + 15 · 2) / 1e6
    assert (
        "Judge: 3 request(s), 0 answer(s) from the cache, 30 input + 15 output tokens, "
        "cost 0.000060" in capsys.readouterr().out
    )
    assert {request.body["model"] for request in judge_server.requests} == {"env-judge"}


def test_cli_without_a_judge_model_is_a_usage_error(
    judge_env: pytest.MonkeyPatch,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = str(_dataset(tmp_path))
    assert main(["evaluate", data, "-m", "topic_adherence"]) == EXIT_USAGE
    assert "no judge model configured" in capsys.readouterr().err
    # deterministic metrics need no judge
    assert main(["evaluate", data, "-m", "tool_call_f1"]) != EXIT_USAGE
    assert "Judge:" not in capsys.readouterr().out


FAULTS = {
    "429 with Retry-After": lambda: Reply.rate_limited("0"),
    "500": lambda: Reply.error(500),
    "slower than the timeout": lambda: Reply.slow(5.0),
    "malformed JSON": Reply.malformed,
    "truncated body": Reply.truncated,
    "reset connection": Reply.reset,
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
@pytest.mark.parametrize("lasting", [False, True], ids=["passing", "lasting"])
def test_every_fault_ends_in_a_score_or_a_recorded_error(
    judge_server: JudgeServer,  # noqa: F811
    fault: str,
    lasting: bool,
) -> None:
    judge_server.respond(sensible_answer)
    # the first sample's first attempt (and with a lasting fault its second) meets the fault
    judge_server.script(*[FAULTS[fault]() for _ in range(2 if lasting else 1)])

    judge = impatient_judge(judge_server)
    # one sample at a time, so the scripted replies meet the samples in order
    result = evaluate(samples(), [AgentGoalAccuracyWithoutReference(llm=judge)], concurrency=1)
    values = result["agent_goal_accuracy_without_reference"]
    errors = [row.errors.get("agent_goal_accuracy_without_reference") for row in result]
    assert len(values) == 3
    assert judge_server.count == 4  # two attempts for the first sample, one for each other
    if lasting:
        assert values[0] is None and errors[0] is not None
        assert errors[0].startswith("JudgeError: judge test-judge: no answer")
    else:
        assert values[0] is not None and errors[0] is None
    assert all(value is not None for value in values[1:])


def _judged_arguments(data: Path, server: JudgeServer) -> list[str]:
    return [
        "evaluate", str(data), "-m", "agent_goal_accuracy_with_reference",
        "--judge-model", "test-judge", "--judge-base-url", server.url, "--no-samples",
    ]  # fmt: skip


def test_cli_refuses_a_folder_as_judge_cache_and_leaves_it_alone(
    judge_server: JudgeServer,  # noqa: F811
    judge_env: pytest.MonkeyPatch,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    judge_server.respond(sensible_answer)
    folder = tmp_path / "dot-cache"
    (folder / "pip").mkdir(parents=True)
    (folder / "pip" / "wheel").write_bytes(b"bytes")
    judge_env.setenv("TRACEGRADE_JUDGE_CACHE", str(folder))
    assert main(_judged_arguments(_dataset(tmp_path), judge_server)) == EXIT_INPUT
    err = capsys.readouterr().err
    assert err.startswith(f"tracegrade: judge cache {folder} is a folder, not a cache file")
    assert err.count("\n") == 1
    assert judge_server.count == 0
    assert sorted(path.name for path in folder.iterdir()) == ["pip"]
    assert (folder / "pip" / "wheel").read_bytes() == b"bytes"


def test_cli_says_once_that_a_damaged_cache_was_set_aside(
    judge_server: JudgeServer,  # noqa: F811
    judge_env: pytest.MonkeyPatch,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    judge_server.respond(sensible_answer)
    cache = tmp_path / "judge.sqlite"
    cache.write_bytes(b"SQLite format 3\x00" + b"\xa5" * 8192)
    judge_env.setenv("TRACEGRADE_JUDGE_CACHE", str(cache))
    assert main(_judged_arguments(_dataset(tmp_path), judge_server)) == EXIT_OK
    err = capsys.readouterr().err
    shown = [line for line in err.splitlines() if line.startswith("tracegrade: warning:")]
    assert len(shown) == 1, err
    assert f"judge cache {cache} is unreadable" in shown[0]
    assert list(tmp_path.glob("judge.sqlite.corrupt-*"))


def test_cli_takes_the_cache_age_limit_from_the_project_config(
    judge_server: JudgeServer,  # noqa: F811
    judge_env: pytest.MonkeyPatch,  # noqa: F811
    tmp_path: Path,
) -> None:
    judge_server.respond(sensible_answer)
    (tmp_path / ".git").mkdir()  # the search for a config file stops here
    judge_env.chdir(tmp_path)
    arguments = _judged_arguments(_dataset(tmp_path), judge_server)
    assert main(arguments) == EXIT_OK
    assert judge_server.count == 3
    with closing(sqlite3.connect(tmp_path / "judge-cache.sqlite")) as cache, cache:
        cache.execute("UPDATE answers SET created = created - 10 * 86400")  # 10 days old

    assert main(arguments) == EXIT_OK
    assert judge_server.count == 3  # no age limit yet: from the cache
    (tmp_path / "tracegrade.toml").write_text("judge-cache-max-age-days = 7\n")
    assert main(arguments) == EXIT_OK
    assert judge_server.count == 6  # past the config's limit: asked again


def test_every_request_sent_is_counted_failed_and_repaired_ones_too(
    judge_server: JudgeServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    judge_server.respond(sensible_answer)
    good = {"user_goal": "g", "end_state": "e", "reason": "done", "achieved": True}
    judge_server.script(
        Reply.answer("no JSON here", prompt_tokens=11, completion_tokens=3),  # 1st: unusable
        Reply.answer("still none", prompt_tokens=13, completion_tokens=4),
        Reply.error(500),  # 2nd: the endpoint fails twice
        Reply.error(500),
        Reply.answer("not yet", prompt_tokens=17, completion_tokens=5),  # 3rd: repaired
        Reply.answer(good, prompt_tokens=19, completion_tokens=6),
    )
    judge = OpenAIJudge(
        "test-judge",
        base_url=judge_server.url,
        cache=False,
        max_attempts=2,
        backoff=0.001,
        timeout=5,
        sleep=_no_wait,
        prices=(1_000_000.0, 2_000_000.0),  # a token costs 1 (input) or 2 (output)
    )
    out = tmp_path / "results.jsonl"
    name = "agent_goal_accuracy_without_reference"
    data = _dataset(tmp_path)
    result = evaluate(data, [AgentGoalAccuracyWithoutReference(llm=judge)], concurrency=1, out=out)
    assert judge_server.count == 6
    assert result[name] == [None, None, 1.0]
    spent = [Usage(24, 7, 24 + 14.0, 2), Usage(0, 0, 0.0, 2), Usage(36, 11, 36 + 22.0, 2)]
    rows = sorted((json.loads(line) for line in out.read_text().splitlines()), key=_index)
    assert [Usage(**row["metrics"][name]["usage"]) for row in rows] == spent
    assert result.usage == Usage(60, 18, 60 + 36.0, 6)  # what the provider bills
    record = json.loads(run_record_path(out).read_text())
    assert record["judge_usage"] == result.usage.to_dict()  # beside the rows, for people
    # a resumed run's summary counts them from the rows already written
    resumed = evaluate(data, [AgentGoalAccuracyWithoutReference(llm=judge)], out=out, resume=True)
    assert judge_server.count == 6
    assert resumed.usage == result.usage
    assert json.loads(run_record_path(out).read_text())["judge_usage"] == result.usage.to_dict()


def _index(row: dict[str, Any]) -> int:
    return int(row["index"])
