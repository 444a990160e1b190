"""The pytest plugin, run in real inner pytest sessions (pytester, in-process)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

SAMPLES = """
from tracegrade import AIMessage, HumanMessage, MultiTurnSample, ToolCall, ToolMessage


def run(*calls, reference):
    return MultiTurnSample(
        id="tutorials",
        user_input=[
            HumanMessage(content="Top Python tutorials"),
            AIMessage(content="", tool_calls=list(calls)),
            *[ToolMessage(content="[...]") for _ in calls],
            AIMessage(content="Here they are."),
        ],
        reference_tool_calls=reference,
    )


SEARCH = ToolCall(name="search", args={"query": "python", "limit": 10})
GOOD = run(SEARCH, reference=[SEARCH])
BAD = run(
    ToolCall(name="search", args={"query": "python", "limit": 5}),
    ToolCall(name="log", args={}),
    reference=[SEARCH, ToolCall(name="rank", args={"by": "stars"})],
)
"""

MESSAGE = [
    "AssertionError: tool_call_f1 scored 0.0 on sample 'tutorials', below the threshold 1.0",
    "reason: F1 0 (precision 0, recall 0); missing: search(query='python', limit=10), "
    "rank(by='stars'); extra: search(query='python', limit=5), log()",
    "tool calls: 2 expected, 2 called",
    "  differs  search(query='python', limit=10)",
    "           limit: expected 10, got 5",
    "  missing  rank(by='stars')",
    "  extra    log()",
]


@pytest.fixture(autouse=True)
def inner_config(pytester: pytest.Pytester) -> None:
    """The inner sessions' ini file: pytest-asyncio's loop scope set, as it asks."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


def shown(lines: list[str]) -> list[str]:
    """Message lines as pytest shows them under a failing line of a test function."""
    return ["E       " + line for line in lines]


def test_fixture_passes_and_fails_with_score_reason_and_diff(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        samples=SAMPLES,
        test_agent="""
from samples import BAD, GOOD


def test_good(assert_score):
    assert assert_score(GOOD, "tool_call_f1").value == 1.0


def test_bad(assert_score):
    assert_score(BAD, "tool_call_f1")
""",
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            '>       assert_score(BAD, "tool_call_f1")',
            *shown(MESSAGE),
            "",
            "test_agent.py:9: AssertionError",
        ],
        consecutive=True,
    )


def test_import_form_hides_the_helpers_frames(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        samples=SAMPLES,
        test_agent="""
from tracegrade.testing import assert_score

from samples import BAD, GOOD


def test_good():
    assert_score(GOOD, "tool_call_accuracy")


def test_bad():
    assert_score(BAD, "tool_call_f1", threshold=0.5)
""",
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    first = MESSAGE[0].replace("threshold 1.0", "threshold 0.5")
    result.stdout.fnmatch_lines(
        ['>       assert_score(BAD, "tool_call_f1", threshold=0.5)', *shown([first, *MESSAGE[1:]])],
        consecutive=True,
    )
    assert "testing.py" not in result.stdout.str()


def test_async_fixture_with_a_judged_metric(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        samples=SAMPLES,
        test_agent="""
import json

from pathlib import Path

import pytest

from tracegrade import AgentGoalAccuracyWithReference
from samples import GOOD


def judge_saying(achieved):
    async def judge(request):
        return json.dumps({"user_goal": "tutorials", "end_state": "listed",
                           "reason": "the judge's reason", "achieved": achieved})
    return judge


@pytest.mark.asyncio
async def test_achieved(aassert_score):
    sample = GOOD.replace(reference="a list")
    metric = AgentGoalAccuracyWithReference(llm=judge_saying(True))
    assert (await aassert_score(sample, metric)).reason == "the judge's reason"


@pytest.mark.asyncio
async def test_not_achieved(aassert_score):
    sample = GOOD.replace(reference="a list")
    await aassert_score(sample, AgentGoalAccuracyWithReference(llm=judge_saying(False)))
""",
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        shown(
            [
                "AssertionError: agent_goal_accuracy_with_reference scored 0.0 on sample "
                "'tutorials', below the threshold 1.0",
                "reason: the judge's reason",
                "tool calls: 1 expected, 1 called",
                "  matched  search(query='python', limit=10)",
            ]
        ),
        consecutive=True,
    )


def test_metric_errors_are_errors_not_failed_assertions(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_agent="""
from tracegrade import EvalTestCase


def test_missing_field(assert_score):
    assert_score(EvalTestCase(input="q", tools_called=["a"]), "tool_correctness")
""",
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E * tracegrade.errors.MissingFieldError: tool_correctness needs the sample field "
            "'expected_tools', which is not set"
        ]
    )
    assert "AssertionError" not in result.stdout.str()


README_EXAMPLE = """
from pathlib import Path

from pathlib import Path

import pytest
from tracegrade import iter_jsonl

RUNS = list(iter_jsonl(Path(__file__).parent / "agent_runs.jsonl"))

@pytest.mark.parametrize("sample", RUNS, ids=lambda sample: str(sample.id))
def test_agent_calls_the_right_tools(sample, assert_score):
    assert_score(sample, "tool_call_accuracy:strict_order=false")
"""


def test_the_documented_example_shows_the_documented_failure(pytester: pytest.Pytester) -> None:
    runs = Path(__file__).parents[1] / "examples" / "agent_runs.jsonl"
    (pytester.path / "agent_runs.jsonl").write_bytes(runs.read_bytes())
    pytester.makepyfile(test_agent=README_EXAMPLE)
    result = pytester.runpytest("-W", "ignore::tracegrade.TracegradeWarning")
    result.assert_outcomes(passed=3, failed=7)
    result.stdout.fnmatch_lines(
        shown(
            [
                "AssertionError: tool_call_accuracy scored 0.5 on sample 'weather-ny', below "
                "the threshold 1.0",
                "reason: 1 call(s) aligned by name; mean argument score 0.5; weather_check: "
                "unit 'fahrenheit' vs 'celsius' (0)",
                "tool calls: 1 expected, 1 called",
                "  differs  weather_check(location='New York', unit='celsius')",
                "           unit: expected 'celsius', got 'fahrenheit'",
            ]
        ),
        consecutive=True,
    )
