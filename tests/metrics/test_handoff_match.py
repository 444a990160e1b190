"""HandoffMatch: the handoffs made against ``reference_handoffs`` in each mode; agents
called as tools and failed handoffs left out; targets a source does not name; the CLI
name; real multi-agent runs converted (ADK, CrewAI, Swarm)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from tests.convert.adk_run import FIXTURES as ADK_FIXTURES
from tests.convert.crewai_run import FIXTURES as CREWAI_FIXTURES
from tests.convert.crewai_run import RESEARCHER
from tests.convert.test_swarm import ROWBOAT

from tracegrade import (
    AIMessage,
    HandoffMatch,
    HumanMessage,
    MissingFieldError,
    MultiTurnSample,
    ToolCall,
    ToolMessage,
    convert_messages,
)
from tracegrade.cli.main import main
from tracegrade.errors import ConversionWarning
from tracegrade.metrics.registry import MetricSpecError, build_metric
from tracegrade.model.messages import ToolCallType
from tracegrade.model.steps import ToolOutcome, ToolStatus

MODES = ["strict", "unordered", "subset", "superset", "in_order"]


def handoff(target: str | None, name: str | None = None) -> ToolCall:
    """A handoff call to ``target`` (named ``transfer_to_<target>`` unless given)."""
    return ToolCall(
        name=name or f"transfer_to_{target}",
        args={},
        type=ToolCallType.HANDOFF,
        target_agent=target,
    )


def agent_tool(agent: str) -> ToolCall:
    """A call of agent ``agent`` as a tool (its answer comes back; no handoff)."""
    return ToolCall(
        name=f"ask_{agent}", args={"task": "x"}, type=ToolCallType.AGENT, target_agent=agent
    )


def chat(*steps: list[ToolCall], reference: list[str] | None, failing: int | None = None) -> Any:
    """A conversation whose agent makes each list of ``steps`` in one AIMessage, each call
    answered (the answer to the call at position ``failing`` an error)."""
    messages: list[Any] = [HumanMessage(content="help me")]
    position = 0
    for calls in steps:
        messages.append(AIMessage(content="", tool_calls=calls, metadata={"agent": "triage"}))
        for _ in calls:
            outcome = ToolOutcome(status=ToolStatus.ERROR) if position == failing else None
            messages.append(ToolMessage(content="done", outcome=outcome))
            position += 1
    messages.append(AIMessage(content="all set"))
    return MultiTurnSample(user_input=messages, reference_handoffs=reference)


BILLING, REFUNDS, SHIPPING = handoff("billing"), handoff("refunds"), handoff("shipping")
EXPECTED = ["billing", "refunds"]

# Each case: the handoffs made (one message each) against EXPECTED, and the verdict of
# each mode in MODES order, worked out by each mode's rule.
CASES = {
    # the handoffs asked for, in order: every mode passes
    "right sequence": ([BILLING, REFUNDS], [1, 1, 1, 1, 1]),
    # refunds handed to shipping instead: one missing and one extra, so every mode fails
    "wrong target": ([BILLING, SHIPPING], [0, 0, 0, 0, 0]),
    # refunds never reached: only subset (nothing but reference targets) passes
    "missing handoff": ([BILLING], [0, 0, 1, 0, 0]),
    # shipping between the two: superset and in_order (others allowed between) pass
    "extra handoff": ([BILLING, SHIPPING, REFUNDS], [0, 0, 0, 1, 1]),
    # the same two the other way round: the unordered modes pass, strict and in_order fail
    "reordered": ([REFUNDS, BILLING], [0, 1, 1, 1, 0]),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("mode", MODES)
def test_each_mode_on_each_case(case: str, mode: str) -> None:
    made, verdicts = CASES[case]
    score = HandoffMatch(mode=mode).score(chat(*([call] for call in made), reference=EXPECTED))  # type: ignore[arg-type]
    assert score.value == verdicts[MODES.index(mode)], score.reason


def test_a_wrong_target_is_named_as_missing_and_extra() -> None:
    score = HandoffMatch().score(chat([BILLING], [SHIPPING], reference=EXPECTED))
    assert score.value == 0.0
    assert score.details == {
        "mode": "strict",
        "expected": ["billing", "refunds"],
        "handoffs": [
            {"position": 0, "from": "triage", "to": "billing", "by": "target_agent"},
            {"position": 1, "from": "triage", "to": "shipping", "by": "target_agent"},
        ],
        "parallel_groups": [],
        "matched": [[0, 0]],
        "out_of_order": [],
        "missing": [1],  # refunds, the second reference target
        "extra": [1],  # shipping, the second handoff made
        "agent_calls": [],
        "failed": [],
    }
    assert score.reason == (
        "strict fails: it asks for the reference handoffs, in order, and no other; "
        "handed to billing -> shipping; expected billing -> refunds; "
        "missing: 'refunds'; extra: 'shipping'"
    )


def test_handoffs_out_of_order_are_named_in_the_ordered_modes() -> None:
    score = HandoffMatch(mode="in_order").score(chat([REFUNDS], [BILLING], reference=EXPECTED))
    # only one of the two can pair in order (either one, a tie); the other pairs out of
    # order, so nothing is missing or extra, yet in_order fails
    assert score.value == 0.0
    pairs = score.details["matched"] + score.details["out_of_order"]
    assert len(score.details["matched"]) == len(score.details["out_of_order"]) == 1
    assert sorted(pairs) == [[0, 1], [1, 0]]  # refunds with refunds, billing with billing
    assert (score.details["missing"], score.details["extra"]) == ([], [])
    assert "out of order: " in score.reason


def test_an_agent_called_as_a_tool_is_not_a_handoff() -> None:
    sample = chat([agent_tool("researcher")], [BILLING], reference=["billing"])
    score = HandoffMatch().score(sample)
    assert score.value == 1.0, score.reason
    assert [item["to"] for item in score.details["handoffs"]] == ["billing"]
    assert score.details["agent_calls"] == [
        {"position": 0, "name": "ask_researcher", "from": "triage", "agent": "researcher"}
    ]
    assert "agents called as tools, not handoffs: 'researcher'" in score.reason
    # expecting the conversation to go to the researcher fails: it never did
    expecting = chat([agent_tool("researcher")], [BILLING], reference=["researcher", "billing"])
    missed = HandoffMatch(mode="superset").score(expecting)
    assert (missed.value, missed.details["missing"]) == (0.0, [0])


def test_a_failed_handoff_is_left_out_and_listed() -> None:
    # the handoff to "biling" (position 0) fails; the agent then hands to billing
    sample = chat([handoff("biling")], [BILLING], reference=["billing"], failing=0)
    score = HandoffMatch().score(sample)
    assert score.value == 1.0, score.reason
    assert score.details["failed"] == [
        {"position": 0, "from": "triage", "to": "biling", "by": "target_agent"}
    ]
    assert "failed handoff calls, left out: 'biling'" in score.reason


def test_a_handoff_of_unknown_outcome_counts_as_made() -> None:
    messages = [
        HumanMessage(content="help"),
        AIMessage(content="", tool_calls=[BILLING]),  # nothing answers the call
    ]
    score = HandoffMatch().score(
        MultiTurnSample(user_input=messages, reference_handoffs=["billing"])
    )
    assert score.value == 1.0, score.reason


def test_a_target_the_source_does_not_name_is_compared_by_the_calls_name() -> None:
    # langgraph-supervisor's handoff back names no agent (see convert/langchain.py)
    back = handoff(None, name="transfer_back_to_supervisor")
    sample = chat([handoff("math_expert")], [back], reference=["math_expert", "supervisor"])
    score = HandoffMatch().score(sample)
    assert score.value == 0.0
    assert score.details["handoffs"][1] == {
        "position": 1,
        "from": "triage",
        "to": "transfer_back_to_supervisor",
        "by": "name",
    }
    assert "compared by call name (the source names no agent)" in score.reason
    sample = chat(
        [handoff("math_expert")], [back], reference=["math_expert", "transfer_back_to_supervisor"]
    )
    assert HandoffMatch().score(sample).value == 1.0


def test_handoffs_made_together_are_unordered_among_themselves() -> None:
    sample = chat([REFUNDS, BILLING], reference=EXPECTED)  # one message, two handoffs
    score = HandoffMatch(mode="strict").score(sample)
    assert score.value == 1.0, score.reason
    assert score.details["parallel_groups"] == [[0, 1]]


def test_no_handoff_expected() -> None:
    # none expected, none made: nothing went wrong, in every mode
    for mode in MODES:
        assert HandoffMatch(mode=mode).score(chat([], reference=[])).value == 1.0  # type: ignore[arg-type]
    # none expected, one made: superset and in_order (which allow handoffs beyond the
    # reference) pass; strict, unordered and subset (which allow none) fail
    made = chat([BILLING], reference=[])
    assert [HandoffMatch(mode=mode).score(made).value for mode in MODES] == [0, 0, 0, 1, 1]  # type: ignore[arg-type]


def test_no_reference_handoffs_is_a_missing_field() -> None:
    with pytest.raises(
        MissingFieldError, match="handoff_match needs the sample field 'reference_handoffs'"
    ):
        HandoffMatch().score(chat([BILLING], reference=None))


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="mode must be one of strict, unordered"):
        HandoffMatch(mode="loose")  # type: ignore[arg-type]


def test_the_cli_name_takes_a_mode() -> None:
    metric = build_metric("handoff_match:mode=in_order")
    assert isinstance(metric, HandoffMatch) and metric.mode == "in_order"
    assert metric.score(chat([BILLING], [SHIPPING], [REFUNDS], reference=EXPECTED)).value == 1.0
    with pytest.raises(MetricSpecError, match="handoff_match: mode must be one of"):
        build_metric("handoff_match:mode=loose")


def test_a_cli_run_reads_reference_handoffs_from_jsonl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    line = {
        "id": "wrong",
        "user_input": [
            {"type": "human", "content": "refund please"},
            {
                "type": "ai",
                "content": "",
                "tool_calls": [
                    {
                        "name": "transfer_to_billing",
                        "args": {},
                        "type": "HANDOFF",
                        "target_agent": "billing",
                    }
                ],
            },
            {"type": "tool", "content": "handed over"},
        ],
        "reference_handoffs": ["refunds"],
    }
    (tmp_path / "data.jsonl").write_text(json.dumps(line) + "\n")
    arguments = ["evaluate", "data.jsonl", "-m", "handoff_match:mode=superset", "--out", "r.jsonl"]
    assert main([*arguments, "--progress", "off"]) == 0  # scored; no gate asked for
    row = json.loads((tmp_path / "r.jsonl").read_text().splitlines()[0])
    found = row["metrics"]["handoff_match"]
    assert (found["value"], found["details"]["missing"]) == (0.0, [0])


# --- real multi-agent runs, converted -----------------------------------------------------


def test_a_recorded_adk_transfer_to_agent_is_a_handoff() -> None:
    # tests/convert/fixtures/adk/session.json: a real ADK run (adk_run.py) in which the
    # weather agent calls get_weather twice, then transfer_to_agent(agent_name="greeter")
    session = json.loads((ADK_FIXTURES / "session.json").read_text())
    messages = convert_messages(session)
    sample = MultiTurnSample(user_input=messages, reference_handoffs=["greeter"])
    score = HandoffMatch().score(sample)
    assert score.value == 1.0, score.reason
    # calls 0 and 1 are get_weather, call 2 the transfer, call 3 the greeter's say_hello
    assert score.details["handoffs"] == [
        {"position": 2, "from": "weather_agent", "to": "greeter", "by": "target_agent"}
    ]
    no_handoff = MultiTurnSample(user_input=messages, reference_handoffs=[])
    assert HandoffMatch(mode="subset").score(no_handoff).value == 0.0


def test_a_recorded_crewai_delegation_is_an_agent_called_as_a_tool() -> None:
    # tests/convert/fixtures/crewai/delegation.json: a real crew (crewai_run.py) whose
    # editor delegates to the researcher through CrewAI's delegate_work_to_coworker
    crew = json.loads((CREWAI_FIXTURES / "delegation.json").read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConversionWarning)  # its token_usage is all 0
        messages = convert_messages(crew)
    score = HandoffMatch().score(MultiTurnSample(user_input=messages, reference_handoffs=[]))
    assert score.value == 1.0, score.reason
    assert [(item["name"], item["agent"]) for item in score.details["agent_calls"]] == [
        ("delegate_work_to_coworker", RESEARCHER)
    ]
    expecting = MultiTurnSample(user_input=messages, reference_handoffs=[RESEARCHER])
    assert HandoffMatch().score(expecting).value == 0.0


def test_a_recorded_swarm_transfer_is_a_handoff() -> None:
    # tests/convert/test_swarm.py ROWBOAT: a Swarm conversation recorded from rowboat,
    # the hub transferring to the "Outstanding Payments" agent
    messages = convert_messages(ROWBOAT, source="swarm")
    sample = MultiTurnSample(user_input=messages, reference_handoffs=["Outstanding Payments"])
    score = HandoffMatch().score(sample)
    assert score.value == 1.0, score.reason
    assert [item["to"] for item in score.details["handoffs"]] == ["Outstanding Payments"]
