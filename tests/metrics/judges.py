"""Custom judges for the judged-metric tests: objects following the Judge protocol (an
async callable taking a JudgeRequest), the documented way to plug in any judge."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tracegrade import AIMessage, HumanMessage, MultiTurnSample
from tracegrade.judge import JudgeAnswer, JudgeRequest, Usage

Answer = Mapping[str, Any] | str
USAGE = Usage(input_tokens=100, output_tokens=20, cost=0.001, requests=1)


class ScriptedJudge:
    """Answers with ``answers`` in order (a dict becomes a JudgeAnswer costing
    :data:`USAGE`; text is returned as it is), or with ``responder(request)`` once they
    run out. Every request is kept in ``requests``."""

    def __init__(
        self, *answers: Answer, responder: Callable[[JudgeRequest], Answer] | None = None
    ) -> None:
        self.answers = list(answers)
        self.responder = responder
        self.requests: list[JudgeRequest] = []

    async def __call__(self, request: JudgeRequest) -> JudgeAnswer | str:
        self.requests.append(request)
        if self.answers:
            answer = self.answers.pop(0)
        elif self.responder is not None:
            answer = self.responder(request)
        else:
            raise AssertionError("the judge was asked more often than scripted")
        return answer if isinstance(answer, str) else JudgeAnswer(answer, USAGE)


def question(request: JudgeRequest) -> str:
    """The text of the request's last user message: the question about this sample."""
    return request.messages[-1]["content"]


def chat(*turns: str) -> MultiTurnSample:
    """A conversation alternating human and AI turns (no references set)."""
    messages: list[Any] = [
        HumanMessage(content=text) if number % 2 == 0 else AIMessage(content=text)
        for number, text in enumerate(turns)
    ]
    return MultiTurnSample(user_input=messages)


def sensible_answer(body: Mapping[str, Any]) -> dict[str, Any]:
    """What a sensible judge would answer to one of tracegrade's prompts, worked out by
    rule from a chat-completions request body (for the scripted judge server).

    Topic adherence: a topic per human turn, under the first allowed topic its text
    names, refused when the next AI turn starts with "Sorry"; the seed's relativity and
    cake conversation gets the answer a careful judge gives. Goal accuracy: achieved
    unless a tool result reports an error. Trajectory: a rating of 5, or 3 faulting the
    steps whose result reports an error.
    """
    text = body["messages"][-1]["content"]
    _, found, transcript = text.partition("Transcript of the agent's run:\n")
    if found and text.startswith(("Reference:\n", "Transcript of the agent's run:\n")):
        return _trajectory_verdict(transcript)
    head, _, conversation = text.partition("Conversation:\n")
    lines = conversation.splitlines()
    if head.startswith("Allowed topics:"):
        if "chocolate cake" in conversation:
            return {
                "topics": [
                    {"topic": "relativity", "reference_topic": "science", "response": "answered"},
                    {"topic": "chocolate cake", "reference_topic": None, "response": "answered"},
                ]
            }
        allowed = [line[2:] for line in head.splitlines() if line.startswith("- ")]
        found = []
        for number, line in enumerate(lines):
            if not line.startswith("Human: "):
                continue
            asked = line.removeprefix("Human: ")
            reply = next((later for later in lines[number + 1 :] if later.startswith("AI: ")), "")
            reference = next((t for t in allowed if t.lower() in asked.lower()), None)
            refused = reply.startswith("AI: Sorry")
            found.append(
                {
                    "topic": asked,
                    "reference_topic": reference,
                    "response": "refused" if refused else "answered",
                }
            )
        return {"topics": found}
    failed = any(line.startswith("Tool result") and "error" in line for line in lines)
    return {
        "user_goal": "what the human asked for",
        "end_state": "a tool failed" if failed else "done as asked",
        "reason": "a tool reported an error" if failed else "every request was carried out",
        "achieved": not failed,
    }


def _trajectory_verdict(transcript: str) -> dict[str, Any]:
    """A trajectory judge's answer: each step whose tool result reports an error is
    faulted (rating 3), else none is (rating 5)."""
    faulted: list[int] = []
    step = 0
    for line in transcript.splitlines():
        if line.startswith("Step ") and "." in line:
            step = int(line[5 : line.index(".")])
        elif line.strip().startswith("Result") and "error" in line and step not in faulted:
            faulted.append(step)
    return {
        "user_goal": "what the user asked for",
        "reason": f"steps {faulted} failed" if faulted else "every step served the goal",
        "steps_faulted": faulted,
        "score": 3 if faulted else 5,
    }
