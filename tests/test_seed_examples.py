"""The usage examples of ../shared/seeds (000, 001, 002), with only the import lines changed.

Each test body is the seed's example as written; where the seed awaits at top level, the
test is an async function. Placeholders the seed leaves to the reader (``your_llm``) are
given a value first.
"""

from __future__ import annotations

import asyncio

your_llm = object()  # the seeds assign a judge model; deterministic metrics ignore it


async def test_seed_000_tool_call_f1() -> None:
    from tracegrade import ToolCallF1
    from tracegrade import MultiTurnSample
    from tracegrade import HumanMessage, AIMessage, ToolCall, ToolMessage

    sample = MultiTurnSample(
        user_input=[
            HumanMessage(content="Find Chinese restaurants and book one"),
            AIMessage(
                content="Searching...",
                tool_calls=[
                    ToolCall(name="restaurant_search", args={"cuisine": "Chinese"}),
                    ToolCall(name="restaurant_book", args={"name": "Golden Dragon", "time": "8pm"})
                ]
            ),
            ToolMessage(content="Found and booked."),
            AIMessage(content="Done!")
        ],
        reference_tool_calls=[
            ToolCall(name="restaurant_search", args={"cuisine": "Chinese"}),
            ToolCall(name="restaurant_book", args={"name": "Golden Dragon", "time": "8pm"})
        ]
    )

    metric = ToolCallF1()
    # score = await metric._multi_turn_ascore(sample)
    # Expected: 1.0 (perfect precision and recall)
    score = await metric.multi_turn_ascore(sample)
    assert score == 1.0


def _seed_001_sample():  # type: ignore[no-untyped-def]
    from tracegrade import MultiTurnSample
    from tracegrade import HumanMessage, AIMessage, ToolMessage, ToolCall

    sample = [
        HumanMessage(content="What's the weather like in New York right now?"),
        AIMessage(content="The current temperature in New York is 75°F and it's partly cloudy.", tool_calls=[
            ToolCall(name="weather_check", args={"location": "New York"})
        ]),
        HumanMessage(content="Can you translate that to Celsius?"),
        AIMessage(content="Let me convert that to Celsius for you.", tool_calls=[
            ToolCall(name="temperature_conversion", args={"temperature_fahrenheit": 75})
        ]),
        ToolMessage(content="75°F is approximately 23.9°C."),
        AIMessage(content="75°F is approximately 23.9°C.")
    ]

    sample = MultiTurnSample(
        user_input=sample,
        reference_tool_calls=[
            ToolCall(name="weather_check", args={"location": "New York"}),
            ToolCall(name="temperature_conversion", args={"temperature_fahrenheit": 75})
        ]
    )
    return sample


async def test_seed_001_tool_call_accuracy() -> None:
    from tracegrade import ToolCallAccuracy

    sample = _seed_001_sample()
    scorer = ToolCallAccuracy()
    scorer.llm = your_llm
    assert await scorer.multi_turn_ascore(sample) == 1.0


async def test_seed_001_tool_call_accuracy_with_string_similarity() -> None:
    from tracegrade import NonLLMStringSimilarity
    from tracegrade import ToolCallAccuracy

    metric = ToolCallAccuracy()
    metric.arg_comparison_metric = NonLLMStringSimilarity()
    assert await metric.multi_turn_ascore(_seed_001_sample()) == 1.0


def test_seed_002_tool_correctness_usage() -> None:
    from tracegrade import ToolCorrectnessMetric, EvalTestCase, aevaluate as evaluate

    test_case = EvalTestCase(
        input="Search for hotels in Paris and book the cheapest one.",
        actual_output="I found and booked Hotel Le Marais for $120/night.",
        tools_called=["search_hotels", "sort_by_price", "book_hotel"],
        expected_tools=["search_hotels", "book_hotel"],
    )
    # Non-exact: passes (all expected tools were called)
    metric = ToolCorrectnessMetric(threshold=0.5)
    # Exact: fails (extra tool "sort_by_price" was called)
    metric_exact = ToolCorrectnessMetric(threshold=0.5, exact_match=True)
    # With ordering: checks if search happened before booking
    metric_ordered = ToolCorrectnessMetric(threshold=0.5, check_ordering=True)
    results = asyncio.run(evaluate([test_case], [metric]))

    assert results["tool_correctness"] == [1.0]
    assert results.rows[0].scores["tool_correctness"].success is True
    assert metric_exact.score(test_case).success is False
    assert metric_ordered.score(test_case).value == 1.0


def test_seed_002_scoring_examples() -> None:
    from tracegrade import EvalTestCase, ToolCorrectnessMetric

    def score(tools_called: list[str], expected_tools: list[str], **options: bool) -> float:
        case = EvalTestCase(input="q", actual_output="a", tools_called=tools_called,
                            expected_tools=expected_tools)
        return ToolCorrectnessMetric(**options).score(case).value  # type: ignore[arg-type]

    expected_tools = ["search", "book"]
    assert score(["search", "validate", "book"], expected_tools) == 1.0
    assert score(["search"], expected_tools) == 0.5
    assert score(["validate"], expected_tools) == 0.0
    assert score(["search", "book"], expected_tools, exact_match=True) == 1.0
    assert score(["search", "validate", "book"], expected_tools, exact_match=True) == 0.0
