"""What judged metrics work out alike from a sample (its transcript) is worked out once
while a run asks them about it, and never kept beyond that: outside a run, a sample
changed between two calls is rendered anew."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.metrics.judges import ScriptedJudge

import tracegrade.judge.transcripts as transcripts
from tracegrade import Criteria, MultiTurnSample, TrajectoryJudge, evaluate
from tracegrade.judge.base import JudgeRequest
from tracegrade.model.sample_memo import remembered, remembering


def _answer(request: JudgeRequest) -> dict[str, Any]:
    if "steps_faulted" in request.schema.get("properties", {}):
        return {"user_goal": "g", "reason": "r", "steps_faulted": [], "score": 4}
    return {"reason": "r", "level": "pass"}


def _samples() -> list[MultiTurnSample]:
    return [
        MultiTurnSample.from_dict(
            {
                "id": f"s{at}",
                "user_input": [
                    {"type": "human", "content": f"question {at}"},
                    {"type": "ai", "content": "answer"},
                ],
            }
        )
        for at in range(3)
    ]


def test_a_run_renders_each_transcript_once(monkeypatch: pytest.MonkeyPatch) -> None:
    rendered: list[str] = []
    real = transcripts._rendered

    def counting(sample: MultiTurnSample, budget: transcripts.Budget) -> Any:
        rendered.append(str(sample.id))
        return real(sample, budget)

    monkeypatch.setattr(transcripts, "_rendered", counting)
    judge = ScriptedJudge(responder=_answer)
    metrics = [
        TrajectoryJudge(llm=judge),
        Criteria(name="a", criteria="Polite", llm=judge),
        Criteria(name="b", criteria="Short", llm=judge),
    ]
    result = evaluate(_samples(), metrics, progress=False)
    assert result.counts.scored == 3 and len(judge.requests) == 9
    assert sorted(rendered) == ["s0", "s1", "s2"]  # one rendering per sample, not three
    # the three questions about one sample hold the same transcript
    about_s0 = [request for request in judge.requests if "question 0" in str(request.messages)]
    assert len(about_s0) == 3


def test_outside_a_run_nothing_is_kept() -> None:
    sample = _samples()[0]
    first = transcripts.render_transcript(sample)
    sample.user_input[0].content = "question changed"
    assert "question changed" in transcripts.render_transcript(sample).text
    assert "question changed" not in first.text


def test_a_memo_answers_only_for_its_own_sample() -> None:
    one, other = _samples()[:2]
    made: list[str] = []

    def make(name: str) -> str:
        made.append(name)
        return name

    async def run() -> None:
        with remembering(one):
            assert remembered(one, "k", lambda: make("one")) == "one"
            assert remembered(one, "k", lambda: make("again")) == "one"  # kept
            assert remembered(other, "k", lambda: make("other")) == "other"  # not its sample

            async def inside_a_task() -> str:
                return remembered(one, "k", lambda: make("task"))

            assert await asyncio.create_task(inside_a_task()) == "one"  # tasks share it
        assert remembered(one, "k", lambda: make("after")) == "after"  # closed

    asyncio.run(run())
    assert made == ["one", "other", "after"]
