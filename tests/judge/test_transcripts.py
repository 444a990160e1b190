"""The transcript a trajectory judge reads: numbered steps, outcomes, cuts and left-out
steps, and the reference trajectory as text."""

from __future__ import annotations

from typing import Any

import pytest

from tracegrade import AIMessage, HumanMessage, MultiTurnSample, ToolCall, ToolMessage
from tracegrade.judge.transcripts import Budget, render_reference, render_transcript
from tracegrade.model.messages import ToolCallType
from tracegrade.model.steps import ToolOutcome, ToolStatus

OK = ToolOutcome(status=ToolStatus.OK)


def call(tool: str, call_id: str, **args: Any) -> ToolCall:
    return ToolCall(name=tool, args=args, id=call_id)


def sample(*messages: Any, **fields: Any) -> MultiTurnSample:
    return MultiTurnSample(user_input=list(messages), **fields)


def test_a_run_reads_as_numbered_steps_with_results_under_their_calls() -> None:
    run = sample(
        HumanMessage(content="Book the cheapest flight BER to CDG on March 3."),
        AIMessage(
            content="Searching.",
            tool_calls=[call("search_flights", "a", origin="BER", date="2026-03-03", seats=1)],
        ),
        ToolMessage(content='[{"flight":"AF1","price":89}]', tool_call_id="a", outcome=OK),
        AIMessage(content="", tool_calls=[call("book", "b", flight="AF1")]),
        ToolMessage(
            content="upstream timed out",
            tool_call_id="b",
            outcome=ToolOutcome(status=ToolStatus.ERROR, error_type="TimeoutError"),
        ),
        AIMessage(content="The booking timed out;\nshall I try again?"),
    )
    transcript = render_transcript(run)
    # hand-written: the agent's text and each call are steps of their own; results
    # sit under their call with the outcome; the last message is the final answer
    assert transcript.text == (
        "Step 1. The user said: Book the cheapest flight BER to CDG on March 3.\n"
        "Step 2. The agent said: Searching.\n"
        'Step 3. The agent called search_flights(origin="BER", date="2026-03-03", seats=1)\n'
        '   Result (ok): [{"flight":"AF1","price":89}]\n'
        'Step 4. The agent called book(flight="AF1")\n'
        "   Result (error: TimeoutError): upstream timed out\n"
        "Step 5. The agent's final answer: The booking timed out;\n"
        "   shall I try again?"
    )
    assert (transcript.steps, transcript.shown, transcript.shortened) == (5, (1, 2, 3, 4, 5), {})


def test_every_outcome_is_said_and_a_call_without_a_result_too() -> None:
    failed = ToolOutcome(status=ToolStatus.ERROR, error_type="429", error_message="slow down")
    run = sample(
        HumanMessage(content="go"),
        AIMessage(
            content="",
            tool_calls=[call("a", "1"), call("b", "2"), call("c", "3"), call("d", "4")],
        ),
        ToolMessage(content="", tool_call_id="1", outcome=OK),
        ToolMessage(content="busy", tool_call_id="2", outcome=failed),
        ToolMessage(content="?", tool_call_id="3"),
    )
    lines = render_transcript(run).text.splitlines()
    assert lines[1:] == [
        "Step 2. The agent called a()",
        "   Result (ok): (empty)",
        "Step 3. The agent called b()",
        "   Result (error: 429, slow down): busy",
        "Step 4. The agent called c()",
        "   Result (status not recorded): ?",
        "Step 5. The agent called d()",
        "   No result was recorded.",
    ]


def test_a_call_run_again_shows_each_attempt_and_a_stray_result_is_a_step() -> None:
    error = ToolOutcome(status=ToolStatus.ERROR, error_type="TimeoutError")
    run = sample(
        HumanMessage(content="weather?"),
        AIMessage(content="", tool_calls=[call("weather", "w", city="Oslo")]),
        ToolMessage(content="timeout", tool_call_id="w", outcome=error),
        ToolMessage(content="-3 C", tool_call_id="w", outcome=OK),
        ToolMessage(content="late echo"),
        HumanMessage(content="thanks"),
    )
    assert render_transcript(run).text.splitlines()[1:] == [
        'Step 2. The agent called weather(city="Oslo")',
        "   Result, attempt 1 (error: TimeoutError): timeout",
        "   Result, attempt 2 (ok): -3 C",
        "Step 3. A tool result came back for no call shown:",
        "   Result (status not recorded): late echo",
        "Step 4. The user said: thanks",
    ]


def test_agents_handoffs_and_unparsed_arguments_are_named() -> None:
    handoff = ToolCall(
        name="transfer", args={}, id="t", type=ToolCallType.HANDOFF, target_agent="Billing"
    )
    broken = ToolCall(name="pay", args={}, id="p", unparsed_args="{amount: 5")
    run = sample(
        HumanMessage(content="refund"),
        AIMessage(content="", tool_calls=[handoff], metadata={"agent": "Triage"}),
        ToolMessage(content="ok", tool_call_id="t"),
        AIMessage(content="", tool_calls=[broken], metadata={"agent": "Billing"}),
        ToolMessage(content="bad arguments", tool_call_id="p"),
        AIMessage(content="Done.", metadata={"agent": "Billing"}),
    )
    assert render_transcript(run).text.splitlines()[1:] == [
        "Step 2. The agent Triage handed the conversation to Billing by calling transfer()",
        "   Result (status not recorded): ok",
        "Step 3. The agent Billing called pay(arguments that are not valid JSON: {amount: 5)",
        "   Result (status not recorded): bad arguments",
        "Step 4. The agent Billing's final answer: Done.",
    ]


def test_an_agent_that_ends_by_calling_a_tool_has_no_final_answer() -> None:
    run = sample(
        HumanMessage(content="hi"),
        AIMessage(content="Looking.", tool_calls=[call("look", "l")]),
    )
    assert "final answer" not in render_transcript(run).text


def test_a_long_text_is_cut_saying_how_much() -> None:
    run = sample(
        HumanMessage(content="read it"),
        AIMessage(content="", tool_calls=[call("read", "r", path="x" * 150)]),
        ToolMessage(content="y" * 250, tool_call_id="r", outcome=OK),
    )
    transcript = render_transcript(run, Budget(step_chars=100, max_chars=10_000))
    # the call text is 'read(path="' + 150 x + '")' = 163 characters: 63 cut; the
    # result is 250 characters: 150 cut
    assert transcript.text.splitlines()[1:] == [
        'Step 2. The agent called read(path="' + "x" * 89 + " [... 63 characters cut]",
        "   Result (ok): " + "y" * 100 + " [... 150 characters cut]",
    ]
    assert transcript.shortened == {
        "texts_cut": 2,
        "characters_cut": 213,
        "budget": {"step_chars": 100, "max_chars": 10_000},
    }


def long_run(turns: int) -> MultiTurnSample:
    """A first human turn, then ``turns`` calls each with a 90-character result, then a
    final answer: ``turns + 2`` steps."""
    messages: list[Any] = [HumanMessage(content="Sum every page.")]
    for number in range(turns):
        messages.append(AIMessage(content="", tool_calls=[call("page", str(number), n=number)]))
        messages.append(ToolMessage(content=f"{number:02d}" + "z" * 88, tool_call_id=str(number)))
    messages.append(AIMessage(content="The sum is 42."))
    return sample(*messages)


def test_middle_steps_are_left_out_keeping_the_first_turn_and_the_last_steps() -> None:
    run = long_run(40)  # steps: 1 human, 2..41 calls, 42 final answer
    whole = render_transcript(run)
    assert whole.steps == 42 and whole.shortened == {}
    short = render_transcript(run, Budget(step_chars=100, max_chars=1_000))
    # a call step near the end is 'Step 38. The agent called page(n=36)' (36 characters)
    # and '   Result (status not recorded): ' + 90 (123), 161 with the two newlines; the
    # first step takes 39 and the last 50, the marker's room is 200:
    # (1000 - 200 - 39 - 50) // 161 = 4 call steps fit, 38 to 41
    assert short.shown == (1, 38, 39, 40, 41, 42)
    lines = short.text.splitlines()
    assert lines[0] == "Step 1. The user said: Sum every page."
    assert lines[1] == (
        "[... steps 2 to 37 left out to keep the transcript within 1,000 characters; "
        "they cannot be judged ...]"
    )
    assert lines[2] == "Step 38. The agent called page(n=36)"
    assert lines[-1] == "Step 42. The agent's final answer: The sum is 42."
    assert len(short.text) <= 1_000
    assert short.shortened == {
        "steps_left_out": 36,
        "budget": {"step_chars": 100, "max_chars": 1_000},
    }


def test_a_budget_too_small_to_hold_the_ends_is_refused() -> None:
    with pytest.raises(ValueError, match="step_chars must be at least 100, not 50"):
        Budget(step_chars=50)
    with pytest.raises(
        ValueError, match=r"max_chars \(1000\) must be at least step_chars \(2000\)"
    ):
        Budget(step_chars=2_000, max_chars=1_000)


def test_the_reference_lists_the_expected_calls_and_outcome() -> None:
    calls = [call("find", "x", name="Anna"), call("send", "y", text="late", minutes=10)]
    both = sample(HumanMessage(content="hi"), reference_tool_calls=calls, reference="Anna told")
    assert render_reference(both) == (
        "Expected tool calls, in order:\n"
        '   1. find(name="Anna")\n'
        '   2. send(text="late", minutes=10)\n'
        "Expected outcome: Anna told"
    )
    none_needed = sample(HumanMessage(content="hi"), reference_tool_calls=[])
    assert render_reference(none_needed) == "Expected tool calls: none"
    only_outcome = sample(HumanMessage(content="hi"), reference="A greeting")
    assert render_reference(only_outcome) == "Expected outcome: A greeting"
    assert render_reference(sample(HumanMessage(content="hi"))) is None


def test_a_reference_per_turn_is_listed_per_turn() -> None:
    run = sample(
        HumanMessage(content="a"),
        AIMessage(content="A"),
        HumanMessage(content="b"),
        AIMessage(content="B"),
        reference_tool_calls_per_turn=[[], [call("lookup", "l", q="b")]],
    )
    assert render_reference(run) == (
        "Expected tool calls after user turn 1: none\n"
        "Expected tool calls after user turn 2:\n"
        '   1. lookup(q="b")'
    )


def test_the_prompts_examples_read_as_the_renderer_writes() -> None:
    """The few-shot examples hold transcripts as text; two of them, rebuilt as samples,
    render to exactly that text, so the examples show the judge the real format."""
    from tracegrade.judge.templates import load_prompt

    timeout = ToolOutcome(status=ToolStatus.ERROR, error_type="TimeoutError")
    dentist = sample(
        HumanMessage(content="Cancel my dentist appointment on Friday at 3pm."),
        AIMessage(content="", tool_calls=[call("list_appointments", "1", day="Friday")]),
        ToolMessage(
            content='[{"id":"ap-77","time":"15:00","title":"Dentist"},'
            '{"id":"ap-78","time":"17:00","title":"Gym"}]',
            tool_call_id="1",
            outcome=OK,
        ),
        AIMessage(content="", tool_calls=[call("cancel_appointment", "2", id="ap-78")]),
        ToolMessage(
            content="the calendar service did not answer within 10 s",
            tool_call_id="2",
            outcome=timeout,
        ),
        AIMessage(content="", tool_calls=[call("cancel_appointment", "3", id="ap-78")]),
        ToolMessage(content='{"cancelled":"ap-78"}', tool_call_id="3", outcome=OK),
        AIMessage(content="Your dentist appointment on Friday at 3pm is cancelled."),
    )
    example = load_prompt("trajectory_without_reference").examples[1]
    assert render_transcript(dentist).text == example.variables["transcript"]

    booking = sample(
        HumanMessage(content="Book Trattoria Luigi for the four of us at 8 tonight."),
        AIMessage(
            content="Booking it now.",
            tool_calls=[
                call("book_table", "b", restaurant="Trattoria Luigi", time="20:00", people=2)
            ],
        ),
        ToolMessage(
            content='{"booking":"TL-3310","people":2,"time":"20:00"}', tool_call_id="b", outcome=OK
        ),
        AIMessage(content="Your table at Trattoria Luigi is booked for 8 pm (booking TL-3310)."),
        reference_tool_calls=[
            call("book_table", "r", restaurant="Trattoria Luigi", time="20:00", people=4)
        ],
        reference="A table for four at Trattoria Luigi at 8 pm, confirmed to the person.",
    )
    example = load_prompt("trajectory_with_reference").examples[1]
    assert render_transcript(booking).text == example.variables["transcript"]
    assert render_reference(booking) == example.variables["reference"]
