"""OpenAIJudge against a real HTTP server on 127.0.0.1: answers, faults, retries,
structured output, concurrency, the cache, and the API key staying secret."""

from __future__ import annotations

import asyncio
import gc
import gzip
import logging
import socket
import threading
import warnings
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest
from tests.judge.conftest import SECRET, Sleeps
from tests.judge.server import JudgeServer, Reply

from tracegrade.judge import (
    JudgeAnswer,
    JudgeCache,
    JudgeError,
    JudgeRequest,
    OpenAIJudge,
    TextReply,
    ask,
    default_judge,
)
from tracegrade.judge._gate import Gate
from tracegrade.judge.cache import CacheLimits
from tracegrade.judge.client import NO_KEY, Prices

MakeJudge = Callable[..., OpenAIJudge]

SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string"}},
    "required": ["verdict"],
    "additionalProperties": False,
}
GOOD = {"verdict": "yes"}


def question(text: str = "Is the sky blue?", **changes: Any) -> JudgeRequest:
    settings: dict[str, Any] = {
        "prompt": "test_prompt",
        "version": "1",
        "messages": (
            {"role": "system", "content": "You judge."},
            {"role": "user", "content": text},
        ),
        "schema": SCHEMA,
    }
    settings.update(changes)
    return JudgeRequest(**settings)


def wait_until(condition: Callable[[], bool]) -> None:
    """Poll ``condition`` (up to 10 s) in a thread-friendly way."""
    event = threading.Event()
    for _ in range(1000):
        if condition():
            return
        event.wait(0.01)
    raise AssertionError("the condition never came true")


# --- answers ---------------------------------------------------------------------------


async def test_an_answer_with_its_usage_and_what_was_sent(
    judge_server: JudgeServer, make_judge: MakeJudge
) -> None:
    judge_server.script(Reply.answer(GOOD, prompt_tokens=120, completion_tokens=30))
    judge = make_judge(prices=(2.0, 10.0))

    answer = await judge(question())

    assert isinstance(answer, JudgeAnswer)
    assert answer.data == GOOD
    assert answer.usage.input_tokens == 120
    assert answer.usage.output_tokens == 30
    assert answer.usage.requests == 1
    assert answer.usage.cached == 0
    assert answer.usage.cost == pytest.approx((120 * 2.0 + 30 * 10.0) / 1_000_000)
    [sent] = judge_server.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {SECRET}"
    assert sent.headers["content-type"] == "application/json"
    assert sent.body["model"] == "test-judge"
    assert sent.body["temperature"] == 0.0
    assert sent.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "verdict", "schema": SCHEMA, "strict": True},
    }
    system, user = sent.body["messages"]
    assert system["role"] == "system"
    assert system["content"].startswith("You judge.")
    assert '"verdict"' in system["content"]  # the schema is in the prompt too
    assert user == {"role": "user", "content": "Is the sky blue?"}


async def test_no_prices_means_no_cost(judge_server: JudgeServer, make_judge: MakeJudge) -> None:
    judge_server.script(GOOD)
    answer = await make_judge()(question())
    assert isinstance(answer, JudgeAnswer)
    assert answer.usage.cost is None


async def test_a_schema_without_a_system_message_gets_one(
    judge_server: JudgeServer, make_judge: MakeJudge
) -> None:
    judge_server.script(GOOD)
    await make_judge()(question(messages=({"role": "user", "content": "hi"},)))
    system, user = judge_server.requests[0].body["messages"]
    assert system["role"] == "system"
    assert "JSON schema" in system["content"]
    assert user == {"role": "user", "content": "hi"}


async def test_a_loose_schema_is_not_sent_as_strict(
    judge_server: JudgeServer, make_judge: MakeJudge
) -> None:
    judge_server.script(GOOD)
    loose = {"type": "object", "properties": {"verdict": {"type": "string"}}}
    await make_judge()(question(schema=loose))
    assert judge_server.requests[0].body["response_format"]["json_schema"]["strict"] is False


async def test_text_that_is_not_json_goes_back_as_text_with_usage(
    judge_server: JudgeServer, make_judge: MakeJudge
) -> None:
    judge_server.script(Reply.answer("I think yes.", prompt_tokens=7, completion_tokens=3))
    reply = await make_judge()(question())
    assert isinstance(reply, TextReply)
    assert reply == "I think yes."
    assert (reply.usage.input_tokens, reply.usage.output_tokens, reply.usage.requests) == (7, 3, 1)


def completion(message: dict[str, Any], **extra: Any) -> Reply:
    """A chat completion with ``message`` as its only choice and no usage block."""
    choice = {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}
    return Reply.json(200, {"id": "c", "object": "chat.completion", "choices": [choice], **extra})


async def test_a_reply_without_usage_counts_no_tokens(
    judge_server: JudgeServer, make_judge: MakeJudge
) -> None:
    judge_server.script(completion({"content": '{"verdict": "yes"}'}))
    answer = await make_judge(prices=(1.0, 1.0))(question())
    assert isinstance(answer, JudgeAnswer)
    assert answer.data == GOOD
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (0, 0)
    assert answer.usage.cost == 0.0
    assert answer.usage.requests == 1


async def test_content_given_as_parts_is_joined(
    judge_server: JudgeServer, make_judge: MakeJudge
) -> None:
    parts = [{"type": "text", "text": '{"verdict": '}, {"type": "text", "text": '"yes"}'}]
    judge_server.script(completion({"content": parts}))
    answer = await make_judge()(question())
    assert isinstance(answer, JudgeAnswer)
    assert answer.data == GOOD


async def test_a_refusal_goes_back_as_text(
    judge_server: JudgeServer, make_judge: MakeJudge
) -> None:
    judge_server.script(completion({"content": None, "refusal": "I can't judge that."}))
    reply = await make_judge()(question())
    assert reply == TextReply("I can't judge that.")


@pytest.mark.parametrize("content", [None, ""])
async def test_an_empty_reply_is_repaired_by_ask(
    judge_server: JudgeServer, make_judge: MakeJudge, content: str | None
) -> None:
    judge_server.script(
        Reply.answer(content, prompt_tokens=10, completion_tokens=0),
        Reply.answer(GOOD, prompt_tokens=20, completion_tokens=4),
    )
    answer = await ask(make_judge(), question())
    assert answer.data == GOOD
    assert judge_server.count == 2
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (30, 4)
    assert answer.usage.requests == 2
    repair = judge_server.requests[1].body["messages"]
    assert repair[-1]["role"] == "user"
    assert "could not be used" in repair[-1]["content"]


UNUSABLE_REPLIES = {
    "text": (
        Reply.answer("I think yes."),
        "the reply is not JSON (JSON is malformed: invalid character (byte 0)): 'I think yes.'",
    ),
    "null content": (Reply.empty(), "the reply is empty"),
    "blank": (Reply.answer("  \n"), "the reply is empty"),
    "a list": (Reply.answer("[1, 2]"), "the answer is JSON list, not an object"),
}


@pytest.mark.parametrize("reply, problem", UNUSABLE_REPLIES.values(), ids=UNUSABLE_REPLIES.keys())
async def test_an_unusable_reply_is_reported_with_its_real_problem(
    judge_server: JudgeServer, make_judge: MakeJudge, reply: Reply, problem: str
) -> None:
    judge_server.respond(lambda body: reply)
    with pytest.raises(JudgeError) as caught:
        await ask(make_judge(), question())
    assert str(caught.value) == f"test_prompt: the judge's answer is unusable: {problem}"
    repair = judge_server.requests[1].body["messages"][-1]["content"]
    assert f"Your answer could not be used: {problem}." in repair


HTML_PAGE = (
    "<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n"
    "<center><h1>502 Bad Gateway</h1></center>\n</body>\n</html>\n"
)
BAD_BODIES = {
    "plain text": (
        Reply.text(200, "Hello, I am not JSON"),
        "the reply is not a chat completion: its body is not JSON (JSON is malformed: invalid "
        "character (byte 0)): 'Hello, I am not JSON'",
    ),
    "malformed": (
        Reply.malformed(),
        "the reply is not a chat completion: its body is not JSON (Input data was truncated): "
        """'{"id": "chatcmpl-test", "choices": ['""",
    ),
    "empty body": (Reply.text(200, ""), "the reply is not a chat completion: its body is empty"),
    "an HTML page": (
        Reply.text(200, HTML_PAGE, "text/html"),
        "the reply is not a chat completion: its body is not JSON (JSON is malformed: invalid "
        "character (byte 0)): '502 Bad Gateway 502 Bad Gateway'",
    ),
    "an HTML error page": (
        Reply.text(502, HTML_PAGE, "text/html"),
        "HTTP 502: Error code: 502; the body is not JSON: '502 Bad Gateway 502 Bad Gateway'",
    ),
    "JSON null": (
        Reply.json(200, None),
        "the reply is not a chat completion: its JSON has no choices[0].message: 'null'",
    ),
}


@pytest.mark.parametrize("reply, problem", BAD_BODIES.values(), ids=BAD_BODIES.keys())
async def test_a_body_that_is_no_completion_is_reported_as_what_it_is(
    judge_server: JudgeServer, make_judge: MakeJudge, reply: Reply, problem: str
) -> None:
    judge_server.respond(lambda body: reply)
    with pytest.raises(JudgeError) as caught:
        await make_judge(max_attempts=1)(question())
    assert str(caught.value) == (
        f"judge test-judge: no answer to test_prompt after 1 attempts; the last: {problem}"
    )


# --- faults ----------------------------------------------------------------------------

FAULTS = {
    "429": Reply.rate_limited("0"),
    "500": Reply.error(500),
    "503": Reply.error(503, "overloaded"),
    "slow": Reply.slow(5.0),
    "malformed": Reply.malformed(),
    "truncated": Reply.truncated(),
    "reset": Reply.reset(),
    "not a completion": Reply.json(200, {"object": "error"}),
}


@pytest.mark.parametrize("fault", FAULTS.values(), ids=FAULTS.keys())
async def test_a_fault_then_an_answer(
    judge_server: JudgeServer, make_judge: MakeJudge, sleeps: Sleeps, fault: Reply
) -> None:
    judge_server.script(fault, GOOD)
    answer = await make_judge(timeout=0.3)(question())
    assert isinstance(answer, JudgeAnswer)
    assert answer.data == GOOD
    assert answer.usage.requests == 2
    assert judge_server.count == 2
    assert len(sleeps) == 1


@pytest.mark.parametrize("fault", FAULTS.values(), ids=FAULTS.keys())
async def test_a_lasting_fault_ends_in_a_judge_error_after_max_attempts(
    judge_server: JudgeServer, make_judge: MakeJudge, sleeps: Sleeps, fault: Reply
) -> None:
    judge_server.respond(lambda body: fault)
    judge = make_judge(timeout=0.3, max_attempts=3)
    with pytest.raises(JudgeError, match="after 3 attempts"):
        await judge(question())
    assert judge_server.count == 3
    assert len(sleeps) == 2


async def test_a_refused_connection_is_reported_as_one_not_as_a_timeout(
    make_judge: MakeJudge, sleeps: Sleeps
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    judge = make_judge(base_url=f"http://127.0.0.1:{port}/v1", max_attempts=2)
    with pytest.raises(JudgeError, match=r"after 2 attempts.*connection failed.*Refused") as caught:
        await judge(question())
    assert "no reply within" not in str(caught.value)
    assert len(sleeps) == 1


def test_the_aiohttp_transport_is_used_when_the_sdk_has_it() -> None:
    from openai import DefaultAioHttpClient

    from tracegrade.judge._transport import http_client

    assert isinstance(http_client(5.0), DefaultAioHttpClient)


async def test_ask_records_a_lasting_fault_as_a_judge_error(
    judge_server: JudgeServer, make_judge: MakeJudge
) -> None:
    judge_server.respond(lambda body: Reply.error(502))
    with pytest.raises(JudgeError):
        await ask(make_judge(max_attempts=2), question())
    assert judge_server.count == 2


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_other_client_errors_are_not_retried(
    judge_server: JudgeServer, make_judge: MakeJudge, sleeps: Sleeps, status: int
) -> None:
    judge_server.respond(lambda body: Reply.error(status, "no such thing"))
    with pytest.raises(JudgeError, match=f"HTTP {status}: no such thing"):
        await make_judge()(question())
    assert judge_server.count == 1
    assert sleeps == []


async def test_backoff_doubles_with_jitter_up_to_its_cap(
    judge_server: JudgeServer, make_judge: MakeJudge, sleeps: Sleeps
) -> None:
    judge_server.respond(lambda body: Reply.error(500))
    judge = make_judge(max_attempts=6, backoff=1.0, max_backoff=4.0)
    with pytest.raises(JudgeError):
        await judge(question())
    assert judge_server.count == 6
    ceilings = [1.0, 2.0, 4.0, 4.0, 4.0]
    assert len(sleeps) == len(ceilings)
    for slept, ceiling in zip(sleeps, ceilings, strict=True):
        assert ceiling / 2 <= slept <= ceiling


@pytest.mark.parametrize(
    ("headers", "least"),
    [
        ({"retry_after": "3"}, 3.0),
        ({"retry_after": "2.5"}, 2.5),
        ({"retry_after_ms": "1500"}, 1.5),
        ({"retry_after_ms": "1500", "retry_after": "9"}, 1.5),
        ({"retry_after": "600"}, 30.0),  # capped by max_retry_after
    ],
)
async def test_retry_after_sets_the_least_wait(
    judge_server: JudgeServer,
    make_judge: MakeJudge,
    sleeps: Sleeps,
    headers: dict[str, str],
    least: float,
) -> None:
    judge_server.script(Reply.rate_limited(**headers), GOOD)
    answer = await make_judge(max_retry_after=30.0)(question())
    assert isinstance(answer, JudgeAnswer)
    assert judge_server.count == 2
    [slept] = sleeps
    assert least <= slept < least + 0.1


async def test_retry_after_as_an_http_date(
    judge_server: JudgeServer, make_judge: MakeJudge, sleeps: Sleeps
) -> None:
    when = datetime.now(timezone.utc) + timedelta(seconds=20)
    judge_server.script(Reply.rate_limited(format_datetime(when, usegmt=True)), GOOD)
    await make_judge()(question())
    [slept] = sleeps
    assert 10 <= slept <= 21


async def test_retry_after_on_a_503_is_honoured_too(
    judge_server: JudgeServer, make_judge: MakeJudge, sleeps: Sleeps
) -> None:
    judge_server.script(Reply.error(503, "busy", {"Retry-After": "4"}), GOOD)
    await make_judge()(question())
    assert sleeps[0] >= 4


async def test_a_401_never_shows_the_key_even_if_the_server_echoes_it(
    judge_server: JudgeServer, make_judge: MakeJudge
) -> None:
    judge_server.script(Reply.error(401, f"Incorrect API key provided: {SECRET}"))
    with pytest.raises(JudgeError) as raised:
        await make_judge()(question())
    assert SECRET not in str(raised.value)
    assert "Incorrect API key provided: ***" in str(raised.value)


# --- structured output -----------------------------------------------------------------


async def test_auto_steps_down_to_json_object_and_remembers(
    judge_server: JudgeServer, make_judge: MakeJudge, sleeps: Sleeps
) -> None:
    judge_server.script(Reply.reject_response_format(), GOOD, GOOD)
    judge = make_judge()
    first = await judge(question())
    second = await judge(question("Again?"))
    assert isinstance(first, JudgeAnswer)
    assert first.data == GOOD
    assert first.usage.requests == 2
    assert isinstance(second, JudgeAnswer)
    assert second.usage.requests == 1
    formats = [request.body.get("response_format") for request in judge_server.requests]
    assert formats[0]["type"] == "json_schema"
    assert formats[1:] == [{"type": "json_object"}, {"type": "json_object"}]
    assert judge.mode == "json_object"
    assert sleeps == []  # a step down is not a fault


async def test_auto_steps_down_to_no_response_format(
    judge_server: JudgeServer, make_judge: MakeJudge
) -> None:
    judge_server.script(
        Reply.reject_response_format(),
        Reply.reject_response_format("json_object"),
        GOOD,
    )
    judge = make_judge(max_attempts=1)
    answer = await judge(question())
    assert isinstance(answer, JudgeAnswer)
    assert judge_server.count == 3
    assert "response_format" not in judge_server.requests[2].body
    assert '"verdict"' in judge_server.requests[2].body["messages"][0]["content"]
    assert judge.mode == "none"


async def test_auto_with_no_format_left_fails_on_a_further_400(
    judge_server: JudgeServer, make_judge: MakeJudge
) -> None:
    judge_server.respond(lambda body: Reply.reject_response_format())
    with pytest.raises(JudgeError, match="HTTP 400"):
        await make_judge()(question())
    assert judge_server.count == 3  # json_schema, json_object, none


async def test_an_explicit_mode_never_steps_down(
    judge_server: JudgeServer, make_judge: MakeJudge
) -> None:
    judge_server.respond(lambda body: Reply.reject_response_format())
    judge = make_judge(structured_output="json_schema")
    with pytest.raises(JudgeError, match="response_format"):
        await judge(question())
    assert judge_server.count == 1
    assert judge.mode == "json_schema"


@pytest.mark.parametrize(
    ("mode", "sent"), [("json_object", {"type": "json_object"}), ("none", None)]
)
async def test_the_modes_send_what_they_say(
    judge_server: JudgeServer, make_judge: MakeJudge, mode: str, sent: Any
) -> None:
    judge_server.script(GOOD)
    await make_judge(structured_output=mode)(question())
    assert judge_server.requests[0].body.get("response_format") == sent


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="structured_output"):
        OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", structured_output="xml")  # type: ignore[arg-type]


# --- concurrency -----------------------------------------------------------------------


async def test_no_more_requests_in_flight_than_max_concurrency(
    judge_server: JudgeServer, make_judge: MakeJudge
) -> None:
    judge_server.respond(lambda body: GOOD)
    judge_server.hold()
    judge = make_judge(max_concurrency=3)
    tasks = [asyncio.create_task(judge(question(f"q{n}"))) for n in range(10)]
    await asyncio.to_thread(wait_until, lambda: judge_server.in_flight == 3)
    await asyncio.sleep(0.05)  # room for a fourth to slip in, if the limit leaked
    assert judge_server.in_flight == 3
    judge_server.release()
    answers = await asyncio.gather(*tasks)
    assert len(answers) == 10
    assert judge_server.count == 10
    assert judge_server.max_in_flight == 3


def test_the_limit_holds_across_event_loops_in_threads(
    judge_server: JudgeServer, make_judge: MakeJudge
) -> None:
    judge_server.respond(lambda body: GOOD)
    judge_server.hold()
    judge = make_judge(max_concurrency=2)

    async def four() -> list[Any]:
        return await asyncio.gather(*(judge(question(f"q{n}")) for n in range(4)))

    results: list[Any] = []
    threads = [threading.Thread(target=lambda: results.append(asyncio.run(four())))]
    threads.append(threading.Thread(target=lambda: results.append(asyncio.run(four()))))
    for thread in threads:
        thread.start()
    wait_until(lambda: judge_server.in_flight == 2)
    threading.Event().wait(0.05)
    assert judge_server.in_flight == 2
    judge_server.release()
    for thread in threads:
        thread.join()
    assert [len(result) for result in results] == [4, 4]
    assert judge_server.max_in_flight == 2


def test_one_judge_serves_successive_event_loops(
    judge_server: JudgeServer, make_judge: MakeJudge
) -> None:
    judge_server.respond(lambda body: GOOD)
    judge = make_judge()
    for _ in range(3):
        assert isinstance(asyncio.run(judge(question())), JudgeAnswer)
    assert judge_server.count == 3


@pytest.mark.parametrize("keep", [True, False], ids=["judge kept", "judge dropped"])
def test_connections_close_with_their_event_loop(
    judge_server: JudgeServer, make_judge: MakeJudge, keep: bool
) -> None:
    judge_server.respond(lambda body: GOOD)
    kept = []

    async def main() -> None:
        judge = make_judge()
        await asyncio.gather(*(judge(question(f"q{n}")) for n in range(3)))
        if keep:
            kept.append(judge)

    gc.collect()  # what earlier tests left behind is not this test's business
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(main())
        gc.collect()
    unclosed = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert [text for text in unclosed if "socket" in text or "transport" in text] == []
    assert judge_server.count == 3


async def test_a_cancelled_waiter_passes_its_turn_on() -> None:
    gate = Gate(1)
    await gate.__aenter__()
    waiting = asyncio.create_task(gate.__aenter__())
    after = asyncio.create_task(gate.__aenter__())
    await asyncio.sleep(0)
    waiting.cancel()
    await gate.__aexit__(None, None, None)
    await asyncio.wait_for(after, 1.0)  # it got the slot the cancelled waiter left
    with pytest.raises(asyncio.CancelledError):
        await waiting


# --- the cache -------------------------------------------------------------------------


async def test_a_second_identical_run_makes_no_requests(
    judge_server: JudgeServer, make_judge: MakeJudge, tmp_path: Path
) -> None:
    judge_server.respond(lambda body: Reply.answer(GOOD, prompt_tokens=50, completion_tokens=5))
    path = tmp_path / "cache.sqlite"
    questions = [question(f"q{n}") for n in range(5)]
    first = [await ask(make_judge(cache=path, prices=(1.0, 1.0)), q) for q in questions]
    assert judge_server.count == 5

    again = make_judge(cache=JudgeCache(path), prices=(1.0, 1.0))  # a new run: a new judge
    second = [await ask(again, q) for q in questions]

    assert judge_server.count == 5
    assert [a.data for a in second] == [a.data for a in first]
    for answer in second:
        assert answer.usage.cached == 1
        assert answer.usage.requests == 0
        assert answer.usage.cost == 0.0  # this run paid nothing
        assert (answer.usage.input_tokens, answer.usage.output_tokens) == (50, 5)


async def test_cached_answers_have_no_cost_without_prices(
    judge_server: JudgeServer, make_judge: MakeJudge, tmp_path: Path
) -> None:
    judge_server.script(GOOD)
    judge = make_judge(cache=tmp_path / "cache.sqlite")
    await judge(question())
    hit = await judge(question())
    assert isinstance(hit, JudgeAnswer)
    assert hit.usage.cost is None
    assert hit.usage.cached == 1


@pytest.mark.parametrize(
    "change",
    [
        {"version": "2"},
        {"prompt": "other_prompt"},
        {"temperature": 0.5},
        {"schema": {**SCHEMA, "title": "changed"}},
        {"messages": ({"role": "user", "content": "different"},)},
    ],
)
async def test_a_changed_request_is_asked_again(
    judge_server: JudgeServer, make_judge: MakeJudge, tmp_path: Path, change: dict[str, Any]
) -> None:
    judge_server.respond(lambda body: GOOD)
    judge = make_judge(cache=tmp_path / "cache.sqlite")
    await judge(question())
    await judge(question(**change))
    assert judge_server.count == 2


async def test_another_model_or_mode_is_asked_again(
    judge_server: JudgeServer, make_judge: MakeJudge, tmp_path: Path
) -> None:
    judge_server.respond(lambda body: GOOD)
    path = tmp_path / "cache.sqlite"
    await make_judge(cache=path)(question())
    await make_judge(cache=path, model="another-model")(question())
    await make_judge(cache=path, structured_output="none")(question())
    await make_judge(cache=path, api_key="sk-other-key")(question())  # the key is no part
    assert judge_server.count == 3


async def test_a_repaired_answer_is_cached_under_the_original_question(
    judge_server: JudgeServer, make_judge: MakeJudge, tmp_path: Path
) -> None:
    judge_server.script({"verdict": 3}, GOOD)
    path = tmp_path / "cache.sqlite"
    first = await ask(make_judge(cache=path), question())
    assert first.data == GOOD
    assert judge_server.count == 2

    second = await ask(make_judge(cache=path), question())
    assert second.data == GOOD
    assert second.usage.cached == 1
    assert judge_server.count == 2


async def test_an_unusable_answer_is_never_cached(
    judge_server: JudgeServer, make_judge: MakeJudge, tmp_path: Path
) -> None:
    judge_server.respond(lambda body: {"verdict": 3})
    judge = make_judge(cache=tmp_path / "cache.sqlite")
    for _ in range(2):
        with pytest.raises(JudgeError, match="unusable"):
            await ask(judge, question())
    assert judge_server.count == 4
    assert len(JudgeCache(tmp_path / "cache.sqlite")) == 0


async def test_a_failed_question_is_asked_again_next_run(
    judge_server: JudgeServer, make_judge: MakeJudge, tmp_path: Path
) -> None:
    judge_server.script(Reply.error(500), Reply.error(500), GOOD)
    judge = make_judge(cache=tmp_path / "cache.sqlite", max_attempts=2)
    with pytest.raises(JudgeError):
        await ask(judge, question())
    answer = await ask(judge, question())
    assert answer.data == GOOD
    assert judge_server.count == 3


# --- the bound on a reply's size ----------------------------------------------------------

MIB = 1 << 20


def big_answer(size: int) -> Reply:
    """A chat completion of about ``size`` bytes, with its Content-Length."""
    return Reply.answer({"verdict": "yes", "padding": "x" * size})


async def test_a_reply_over_the_bound_is_refused_from_its_length_and_not_retried(
    judge_server: JudgeServer, make_judge: MakeJudge, sleeps: Sleeps
) -> None:
    reply = big_answer(5 * MIB)
    judge_server.respond(lambda body: reply)
    with pytest.raises(JudgeError) as caught:
        await ask(make_judge(), question())
    assert str(caught.value) == (
        f"judge test-judge: the reply (HTTP 200) has {len(reply.body)} bytes, over the bound "
        f"of {MIB}: not read further; if the endpoint's replies are that large, raise "
        "max_response_bytes (TRACEGRADE_JUDGE_MAX_RESPONSE_BYTES)"
    )
    assert caught.value.usage.requests == 1
    assert judge_server.count == 1 and sleeps == []


@pytest.mark.parametrize("status", [200, 500])
async def test_an_endless_reply_is_cut_at_the_bound_not_read_whole(
    judge_server: JudgeServer, make_judge: MakeJudge, status: int
) -> None:
    judge_server.script(Reply.endless(status))
    with pytest.raises(JudgeError) as caught:
        await make_judge(timeout=30.0)(question())
    assert str(caught.value).startswith(
        f"judge test-judge: the reply (HTTP {status}) has more than {MIB} bytes, over the "
        f"bound of {MIB}: not read further"
    )
    # what the kernel's socket buffers took besides the bound, and no more
    assert judge_server.bytes_sent < 8 * MIB


async def test_the_bound_holds_on_the_sdks_httpx_transport_too(
    judge_server: JudgeServer, make_judge: MakeJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    import openai

    def no_aiohttp(**options: Any) -> Any:
        raise RuntimeError("as the SDK says when aiohttp is not installed")

    monkeypatch.setattr(openai, "DefaultAioHttpClient", no_aiohttp)
    judge_server.script(Reply.endless(), GOOD)
    judge = make_judge(timeout=30.0)
    with pytest.raises(JudgeError, match=f"has more than {MIB} bytes, over the bound of {MIB}"):
        await judge(question())
    assert judge_server.bytes_sent < 8 * MIB
    answer = await judge(question())  # the connection pool is still good
    assert isinstance(answer, JudgeAnswer) and answer.data == GOOD


async def test_replies_are_asked_for_uncompressed_and_a_compressed_one_is_bounded_unpacked(
    judge_server: JudgeServer, make_judge: MakeJudge
) -> None:
    plain = big_answer(5 * MIB).body
    packed = gzip.compress(plain)
    assert len(packed) < MIB  # under the bound as sent
    judge_server.script(Reply(200, packed, {"Content-Encoding": "gzip"}))
    with pytest.raises(JudgeError, match=f"has {len(plain)} bytes, over the bound of {MIB}"):
        await make_judge()(question())
    assert judge_server.requests[0].headers["accept-encoding"] == "identity"


async def test_the_bound_is_an_argument_or_comes_from_the_environment(
    judge_server: JudgeServer, make_judge: MakeJudge, judge_env: pytest.MonkeyPatch
) -> None:
    judge_server.respond(lambda body: big_answer(3000))
    assert make_judge().max_response_bytes == MIB
    judge = make_judge(max_response_bytes=2000)
    with pytest.raises(JudgeError, match="over the bound of 2000: not read further"):
        await judge(question())
    assert isinstance(await make_judge(max_response_bytes=4000)(question()), JudgeAnswer)
    judge_env.setenv("TRACEGRADE_JUDGE_MAX_RESPONSE_BYTES", "2000")
    with pytest.raises(JudgeError, match="over the bound of 2000"):
        await make_judge()(question())
    assert make_judge(max_response_bytes=4000).max_response_bytes == 4000


@pytest.mark.parametrize("value", ["", "lots", "0", "-1", "1.5"])
def test_a_bad_bound_in_the_environment_is_a_clear_error(
    judge_env: pytest.MonkeyPatch, value: str
) -> None:
    judge_env.setenv("TRACEGRADE_JUDGE_MAX_RESPONSE_BYTES", value)
    if not value:
        assert OpenAIJudge("m", base_url="http://127.0.0.1:9/v1").max_response_bytes == MIB
        return
    with pytest.raises(JudgeError, match="TRACEGRADE_JUDGE_MAX_RESPONSE_BYTES must be a whole"):
        OpenAIJudge("m", base_url="http://127.0.0.1:9/v1")


@pytest.mark.parametrize("value", [0, -5, True, 1.5])
def test_a_bad_bound_argument_is_refused(value: Any) -> None:
    with pytest.raises(ValueError, match="max_response_bytes must be a whole number"):
        OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", max_response_bytes=value)


# --- the key stays secret --------------------------------------------------------------


async def test_the_key_is_sent_and_never_shown(
    judge_server: JudgeServer,
    make_judge: MakeJudge,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    path = tmp_path / "cache" / "judge.sqlite"
    judge = make_judge(cache=path, max_attempts=2)
    judge_server.script(
        Reply.rate_limited("0"),
        GOOD,
        {"verdict": 1},
        GOOD,
        Reply.reset(),
        Reply.reset(),
        Reply.error(401, f"bad key {SECRET}"),
    )
    await ask(judge, question("one"))
    await ask(judge, question("two"))
    errors = []
    for text in ("three", "four"):
        try:
            await ask(judge, question(text))
        except JudgeError as error:
            errors.append(error)
    await judge.aclose()

    assert judge_server.count == 7
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in judge_server.requests)
    assert len(errors) == 2
    for error in errors:
        assert SECRET not in str(error)
        assert SECRET not in repr(error)
    assert SECRET not in repr(judge)
    assert SECRET not in repr(vars(judge))
    assert caplog.records  # the SDK and the judge did log
    assert SECRET not in caplog.text
    for record in caplog.records:
        assert SECRET not in record.getMessage()
    files = list(path.parent.iterdir())
    assert path in files
    assert all(SECRET.encode() not in file.read_bytes() for file in files)


# --- configuration ---------------------------------------------------------------------


def test_the_environment_configures_the_judge(
    judge_env: pytest.MonkeyPatch, judge_server: JudgeServer
) -> None:
    judge_env.setenv("OPENAI_API_KEY", "sk-openai")
    judge_env.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    judge_env.setenv("TRACEGRADE_JUDGE_MODEL", "env-model")
    judge_env.setenv("TRACEGRADE_JUDGE_BASE_URL", judge_server.url)
    judge_env.setenv("TRACEGRADE_JUDGE_API_KEY", SECRET)
    judge_server.script(GOOD)

    judge = OpenAIJudge(cache=False)
    asyncio.run(judge(question()))

    [sent] = judge_server.requests
    assert sent.body["model"] == "env-model"
    assert sent.headers["authorization"] == f"Bearer {SECRET}"


def test_the_openai_variables_are_the_fallback(judge_env: pytest.MonkeyPatch) -> None:
    judge_env.setenv("OPENAI_API_KEY", "sk-openai")
    judge_env.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    judge = OpenAIJudge("m", cache=False)
    assert judge.base_url == "http://127.0.0.1:1/v1"
    assert judge._key.value == "sk-openai"


def test_arguments_beat_the_environment(judge_env: pytest.MonkeyPatch) -> None:
    judge_env.setenv("TRACEGRADE_JUDGE_MODEL", "env-model")
    judge_env.setenv("TRACEGRADE_JUDGE_BASE_URL", "http://127.0.0.1:1/v1")
    judge = OpenAIJudge("arg-model", base_url="http://127.0.0.1:2/v1", cache=False)
    assert (judge.model, judge.base_url) == ("arg-model", "http://127.0.0.1:2/v1")


def test_no_model_is_a_clear_error() -> None:
    with pytest.raises(JudgeError, match="TRACEGRADE_JUDGE_MODEL"):
        OpenAIJudge(base_url="http://127.0.0.1:1/v1")


def test_openai_itself_needs_a_key() -> None:
    with pytest.raises(JudgeError, match="no API key"):
        OpenAIJudge("gpt-4o-mini")


async def test_a_local_server_needs_no_key(judge_server: JudgeServer) -> None:
    judge_server.script(GOOD)
    judge = OpenAIJudge("local", base_url=judge_server.url, cache=False)
    await judge(question())
    assert judge_server.requests[0].headers["authorization"] == f"Bearer {NO_KEY}"


def test_the_default_judge_follows_the_environment(
    judge_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    judge_env.setenv("TRACEGRADE_JUDGE_MODEL", "one")
    judge_env.setenv("TRACEGRADE_JUDGE_BASE_URL", "http://127.0.0.1:1/v1")
    judge_env.setenv("TRACEGRADE_JUDGE_PRICES", "0.5, 2")
    first = default_judge()
    assert default_judge() is first
    assert first.model == "one"
    assert first.prices == Prices(0.5, 2.0)
    assert first.cache is not None
    assert first.cache.path == tmp_path / "judge-cache.sqlite"

    judge_env.setenv("TRACEGRADE_JUDGE_MODEL", "two")
    judge_env.setenv("TRACEGRADE_JUDGE_CACHE", "off")
    second = default_judge()
    assert second is not first
    assert second.model == "two"
    assert second.cache is None


def test_bad_prices_in_the_environment_are_a_clear_error(judge_env: pytest.MonkeyPatch) -> None:
    judge_env.setenv("TRACEGRADE_JUDGE_MODEL", "m")
    judge_env.setenv("TRACEGRADE_JUDGE_BASE_URL", "http://127.0.0.1:1/v1")
    judge_env.setenv("TRACEGRADE_JUDGE_PRICES", "cheap")
    with pytest.raises(JudgeError, match="TRACEGRADE_JUDGE_PRICES"):
        default_judge()


def test_the_cache_limits_come_from_the_environment_unless_given(
    judge_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    judge_env.setenv("TRACEGRADE_JUDGE_MODEL", "m")
    judge_env.setenv("TRACEGRADE_JUDGE_BASE_URL", "http://127.0.0.1:1/v1")
    judge = default_judge()
    assert judge.cache is not None
    assert judge.cache.limits == CacheLimits(max_mb=1024, max_age_days=None)

    judge_env.setenv("TRACEGRADE_JUDGE_CACHE_MAX_MB", "64")
    judge_env.setenv("TRACEGRADE_JUDGE_CACHE_MAX_AGE_DAYS", "30")
    limits = [
        default_judge().cache,
        default_judge(cache_max_mb=8).cache,  # the project config's, over the environment
        default_judge(cache_max_age_days=2).cache,
        OpenAIJudge("m", base_url="http://127.0.0.1:1/v1", cache=tmp_path / "c.sqlite").cache,
        OpenAIJudge("m", base_url="http://127.0.0.1:1/v1", cache=JudgeCache(tmp_path / "c")).cache,
    ]
    assert [cache.limits if cache is not None else None for cache in limits] == [
        CacheLimits(64, 30),
        CacheLimits(8, 30),
        CacheLimits(64, 2),
        CacheLimits(64, 30),
        CacheLimits(1024, None),  # a cache made by hand keeps its own
    ]


def test_a_bad_cache_limit_in_the_environment_is_a_clear_error(
    judge_env: pytest.MonkeyPatch,
) -> None:
    judge_env.setenv("TRACEGRADE_JUDGE_MODEL", "m")
    judge_env.setenv("TRACEGRADE_JUDGE_BASE_URL", "http://127.0.0.1:1/v1")
    judge_env.setenv("TRACEGRADE_JUDGE_CACHE_MAX_AGE_DAYS", "a month")
    with pytest.raises(JudgeError) as caught:
        default_judge()
    assert str(caught.value) == (
        "TRACEGRADE_JUDGE_CACHE_MAX_AGE_DAYS must be a number of days above 0 (inf for no "
        "limit), got 'a month'"
    )
    judge_env.setenv("TRACEGRADE_JUDGE_CACHE", "off")  # no cache: its limits do not matter
    assert default_judge().cache is None


def test_the_default_cache_location(judge_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    judge_env.delenv("TRACEGRADE_JUDGE_CACHE")
    judge_env.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    judge = OpenAIJudge("m", base_url="http://127.0.0.1:1/v1")
    assert judge.cache is not None
    assert judge.cache.path == tmp_path / "xdg" / "tracegrade" / "judge.sqlite"
