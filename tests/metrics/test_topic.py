from __future__ import annotations

from typing import Any

import pytest
from tests.metrics.judges import USAGE, ScriptedJudge, chat, question

from tracegrade import MissingFieldError, MultiTurnSample, TopicAdherenceScore, evaluate
from tracegrade.judge import JudgeError

REFERENCE = ["science", "cooking"]


def topics(*entries: tuple[str, str | None, bool]) -> dict[str, Any]:
    """A judge answer: (topic, reference topic or None, answered?) per topic."""
    return {
        "topics": [
            {
                "topic": topic,
                "reference_topic": reference,
                "response": "answered" if answered else "refused",
            }
            for topic, reference, answered in entries
        ]
    }


def sample(reference_topics: list[str] | None = REFERENCE) -> MultiTurnSample:
    return chat("What is a black hole?", "A region of spacetime ...").replace(
        reference_topics=reference_topics
    )


def on(name: str, answered: bool = True) -> tuple[str, str | None, bool]:
    return (name, "science", answered)


def off(name: str, answered: bool = True) -> tuple[str, str | None, bool]:
    return (name, None, answered)


async def scores(answer: dict[str, Any]) -> dict[str, float]:
    """The value in each mode for one judge answer."""
    values = {}
    for mode in ("precision", "recall", "f1"):
        metric = TopicAdherenceScore(mode=mode, llm=ScriptedJudge(answer))  # type: ignore[arg-type]
        values[mode] = (await metric.ascore(sample())).value
    return values


@pytest.mark.parametrize(
    "answer, expected",
    [
        # tp=1 fp=1 fn=0: P 1/2, R 1, F1 2·(1/2)/(3/2) = 2/3
        (topics(on("relativity"), off("cake recipe")), (0.5, 1.0, 0.6667)),
        # tp=2 fp=1 fn=1 (+1 rightly refused): P 2/3, R 2/3, F1 2/3
        (
            topics(on("a"), on("b"), off("c"), on("d", False), off("e", False)),
            (0.6667, 0.6667, 0.6667),
        ),
        # tp=3 fp=0 fn=1: P 1, R 3/4, F1 1.5/1.75 = 6/7
        (topics(on("a"), on("b"), on("c"), on("d", False)), (1.0, 0.75, 0.8571)),
        # tp=1 fp=3 fn=2: P 1/4, R 1/3, F1 (1/6)/(7/12) = 2/7
        (
            topics(on("a"), off("b"), off("c"), off("d"), on("e", False), on("f", False)),
            (0.25, 0.3333, 0.2857),
        ),
    ],
)
async def test_precision_recall_and_f1_from_the_counts(
    answer: dict[str, Any], expected: tuple[float, float, float]
) -> None:
    assert await scores(answer) == dict(zip(("precision", "recall", "f1"), expected, strict=True))


@pytest.mark.parametrize(
    "answer",
    [
        topics(),  # no topic raised
        topics(on("a", False), on("b", False)),  # every on-topic request refused
        topics(off("a", False)),  # only off-topic, rightly refused: nothing enters a formula
        topics(off("a"), off("b")),  # only off-topic, answered
    ],
)
async def test_zero_denominators_give_zero(answer: dict[str, Any]) -> None:
    assert await scores(answer) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}


async def test_a_perfect_conversation_scores_exactly_one() -> None:
    perfect = topics(on("a"), on("b"), on("c"), off("d", False))
    assert await scores(perfect) == {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    assert await scores(topics(on("only"))) == {"precision": 1.0, "recall": 1.0, "f1": 1.0}


async def test_details_show_what_the_judge_decided() -> None:
    answer = topics(("relativity", "science", True), off("cake recipe"), off("stocks", False))
    score = await TopicAdherenceScore(mode="precision", llm=ScriptedJudge(answer)).ascore(sample())
    assert score.details["topics"] == [
        {
            "topic": "relativity",
            "answered": True,
            "on_topic": True,
            "reference_topic": "science",
        },
        {"topic": "cake recipe", "answered": True, "on_topic": False, "reference_topic": None},
        {"topic": "stocks", "answered": False, "on_topic": False, "reference_topic": None},
    ]
    assert score.details["counts"] == {
        "answered_on_topic": 1,
        "answered_off_topic": 1,
        "refused_on_topic": 0,
        "refused_off_topic": 1,
    }
    assert score.details["mode"] == "precision"
    assert score.details["prompt"] == {"name": "topic_adherence", "version": "1"}
    assert (score.details["precision"], score.details["recall"]) == (0.5, 1.0)
    assert score.usage == USAGE
    assert "answered off-topic: cake recipe" in score.reason
    assert "rightly refused off-topic: stocks" in score.reason


@pytest.mark.parametrize("count", [1, 5, 20])
async def test_judge_calls_do_not_grow_with_the_topics(count: int) -> None:
    turns = []
    for number in range(count):
        turns += [f"question {number} about physics", f"answer {number}"]
    conversation = chat(*turns).replace(reference_topics=["physics"])
    answer = topics(*(("q", "physics", True) for _ in range(count)))
    judge = ScriptedJudge(answer)
    score = await TopicAdherenceScore(llm=judge).ascore(conversation)
    assert score.value == 1.0 and len(score.details["topics"]) == count
    assert len(judge.requests) <= 2


async def test_the_judge_may_only_name_the_samples_reference_topics() -> None:
    """The schema limits reference_topic to this sample's topics; a judge naming another
    is shown its mistake once, and its corrected answer counts (two calls in all)."""
    judge = ScriptedJudge(topics(("relativity", "physics", True)), topics(on("relativity")))
    score = await TopicAdherenceScore(llm=judge).ascore(sample())
    assert score.value == 1.0
    assert len(judge.requests) == 2
    schema_topic = judge.requests[0].schema["properties"]["topics"]["items"]["properties"]
    assert schema_topic["reference_topic"]["enum"] == ["science", "cooking", None]
    assert "physics" in question(judge.requests[1])


async def test_the_request_shows_the_conversation_and_the_reference_topics() -> None:
    judge = ScriptedJudge(topics())
    await TopicAdherenceScore(llm=judge).ascore(sample())
    request = judge.requests[0]
    assert (request.prompt, request.version) == ("topic_adherence", "1")
    assert question(request) == (
        "Allowed topics:\n- science\n- cooking\n\nConversation:\n"
        "Human: What is a black hole?\nAI: A region of spacetime ..."
    )


def test_unusable_answers_are_a_recorded_error_and_the_run_goes_on() -> None:
    judge = ScriptedJudge("not json", "still {not json", topics(on("a")))
    result = evaluate([sample(), sample()], [TopicAdherenceScore(llm=judge)])
    assert result["topic_adherence"] == [None, 1.0]
    error = result.rows[0].errors["topic_adherence"]
    assert error.startswith("JudgeError: topic_adherence: the judge's answer is unusable")
    assert len(judge.requests) == 3


def test_missing_reference_topics_is_a_recorded_error_without_a_judge_call() -> None:
    judge = ScriptedJudge()
    result = evaluate([sample(None)], [TopicAdherenceScore(llm=judge)])
    assert "needs the sample field 'reference_topics'" in result.rows[0].errors["topic_adherence"]
    assert judge.requests == []
    with pytest.raises(MissingFieldError):
        TopicAdherenceScore(llm=judge).score(sample(None))


def test_score_runs_the_judge_where_no_event_loop_runs() -> None:
    metric = TopicAdherenceScore(mode="recall", llm=ScriptedJudge(topics(on("a"), on("b", False))))
    assert metric.score(sample()).value == 0.5


async def test_score_inside_a_running_loop_says_to_await_ascore() -> None:
    metric = TopicAdherenceScore(llm=ScriptedJudge())
    with pytest.raises(RuntimeError, match=r"await metric\.ascore"):
        metric.score(sample())
    with pytest.raises(RuntimeError, match=r"await aevaluate"):
        evaluate([sample()], [metric])


async def test_the_ragas_way_of_setting_the_judge() -> None:
    scorer = TopicAdherenceScore(mode="precision")
    scorer.llm = ScriptedJudge(topics(on("a"), off("b")))
    assert await scorer.multi_turn_ascore(sample()) == 0.5


async def test_a_judge_that_is_not_callable_is_refused_clearly() -> None:
    scorer = TopicAdherenceScore()
    scorer.llm = "gpt-4o"
    with pytest.raises(TypeError, match="llm must be a judge"):
        await scorer.ascore(sample())


def test_mode_is_checked() -> None:
    with pytest.raises(ValueError, match="mode must be"):
        TopicAdherenceScore(mode="accuracy")  # type: ignore[arg-type]


async def test_a_judge_error_propagates_from_ascore() -> None:
    with pytest.raises(JudgeError):
        await TopicAdherenceScore(llm=ScriptedJudge("x", "y")).ascore(sample())
