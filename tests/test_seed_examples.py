"""The usage examples of ../shared/seeds (000, 001, 002), with only the import lines changed.

Each test body is the seed's example as written; where the seed awaits at top level, the
test is an async function. Placeholders the seed leaves to the reader (``your_llm``,
``openai_model``) are given a value first: for the judged metrics, an OpenAIJudge on the
scripted chat-completions server on 127.0.0.1 (or, where the seed sets no judge, the
environment pointing at it), answering as a careful judge would.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.judge.server import JudgeServer, judge_env, judge_server
from tests.metrics.judges import sensible_answer
from tracegrade.judge import OpenAIJudge

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


async def test_seed_001_topic_adherence(
    judge_server: JudgeServer, judge_env: pytest.MonkeyPatch  # noqa: F811
) -> None:
    judge_server.respond(sensible_answer)
    openai_model = OpenAIJudge("test-judge", base_url=judge_server.url)

    from tracegrade import  SingleTurnSample, MultiTurnSample, EvaluationDataset
    from tracegrade import HumanMessage,AIMessage,ToolMessage,ToolCall
    from tracegrade import TopicAdherenceScore


    sample_input_4 = [
    HumanMessage(content="Can you provide me with details about Einstein's theory of relativity?"),
    AIMessage(content="Sure, let me retrieve the relevant information for you.", tool_calls=[
        ToolCall(name="document_search", args={"query": "Einstein's theory of relativity"})
    ]),
    ToolMessage(content="Found relevant documents: 1. Relativity: The Special and the General Theory, 2. General Theory of Relativity by A. Einstein."),
    AIMessage(content="I found some documents on Einstein's theory of relativity. Which one would you like to know more about: 'Relativity: The Special and the General Theory' or 'General Theory of Relativity by A. Einstein'?"),
    HumanMessage(content="Tell me about the 'General Theory of Relativity'."),
    AIMessage(content="Got it! Let me fetch more details from 'General Theory of Relativity by A. Einstein'.", tool_calls=[
        ToolCall(name="document_retrieve", args={"document": "General Theory of Relativity by A. Einstein"})
    ]),
    ToolMessage(content="The document discusses how gravity affects the fabric of spacetime, describing the relationship between mass and spacetime curvature."),
    AIMessage(content="The 'General Theory of Relativity' explains how gravity affects the fabric of spacetime and the relationship between mass and spacetime curvature. Would you like more details or a specific explanation?"),
    HumanMessage(content="No, that's perfect. By the way, do you know any good recipes for a chocolate cake?"),
    AIMessage(content="Sure! Let me find a simple and delicious recipe for a chocolate cake.", tool_calls=[
        ToolCall(name="recipe_search", args={"query": "chocolate cake recipe"})
    ]),
    ToolMessage(content="Here’s a popular recipe for a chocolate cake: Ingredients include flour, sugar, cocoa powder, eggs, milk, and butter. Instructions: Mix dry ingredients, add wet ingredients, and bake at 350°F for 30-35 minutes."),
    AIMessage(content="I found a great recipe for chocolate cake! Would you like the full details, or is that summary enough?")
    ]


    sample = MultiTurnSample(user_input=sample_input_4, reference_topics=["science"])
    scorer = TopicAdherenceScore(mode="precision")
    scorer.llm = openai_model
    score = await scorer.multi_turn_ascore(sample)
    # relativity answered on-topic, the cake recipe answered off-topic
    assert score == 0.5

    scorer = TopicAdherenceScore(mode="recall")
    scorer.llm = openai_model
    assert await scorer.multi_turn_ascore(sample) == 1.0
    assert judge_server.count == 1  # the second mode reuses the cached answer
    await openai_model.aclose()


async def test_seed_001_agent_goal_accuracy_with_reference(
    judge_server: JudgeServer, judge_env: pytest.MonkeyPatch  # noqa: F811
) -> None:
    judge_server.respond(sensible_answer)
    your_llm = OpenAIJudge("test-judge", base_url=judge_server.url)

    from tracegrade import  MultiTurnSample
    from tracegrade import HumanMessage,AIMessage,ToolMessage,ToolCall
    from tracegrade import AgentGoalAccuracyWithReference


    sample = MultiTurnSample(user_input=[
        HumanMessage(content="Hey, book a table at the nearest best Chinese restaurant for 8:00pm"),
        AIMessage(content="Sure, let me find the best options for you.", tool_calls=[
            ToolCall(name="restaurant_search", args={"cuisine": "Chinese", "time": "8:00pm"})
        ]),
        ToolMessage(content="Found a few options: 1. Golden Dragon, 2. Jade Palace"),
        AIMessage(content="I found some great options: Golden Dragon and Jade Palace. Which one would you prefer?"),
        HumanMessage(content="Let's go with Golden Dragon."),
        AIMessage(content="Great choice! I'll book a table for 8:00pm at Golden Dragon.", tool_calls=[
            ToolCall(name="restaurant_book", args={"name": "Golden Dragon", "time": "8:00pm"})
        ]),
        ToolMessage(content="Table booked at Golden Dragon for 8:00pm."),
        AIMessage(content="Your table at Golden Dragon is booked for 8:00pm. Enjoy your meal!"),
        HumanMessage(content="thanks"),
    ],
        reference="Table booked at one of the chinese restaurants at 8 pm")

    scorer = AgentGoalAccuracyWithReference()
    scorer.llm = your_llm
    score = await scorer.multi_turn_ascore(sample)
    assert score == 1.0
    assert judge_server.requests[0].body["response_format"]["json_schema"]["name"] == "goal_with_reference"
    await your_llm.aclose()


async def test_seed_001_agent_goal_accuracy_without_reference(
    judge_server: JudgeServer, judge_env: pytest.MonkeyPatch  # noqa: F811
) -> None:
    judge_server.respond(sensible_answer)
    # the seed sets no judge: the environment configures the default one
    judge_env.setenv("TRACEGRADE_JUDGE_MODEL", "test-judge")
    judge_env.setenv("TRACEGRADE_JUDGE_BASE_URL", judge_server.url)

    from tracegrade import  MultiTurnSample
    from tracegrade import HumanMessage,AIMessage,ToolMessage,ToolCall
    from tracegrade import AgentGoalAccuracyWithoutReference
    # the seed's last line awaits 'metric', which it never defines (its scorer is 'scorer')
    metric = AgentGoalAccuracyWithoutReference()


    sample = MultiTurnSample(user_input=[
        HumanMessage(content="Hey, book a table at the nearest best Chinese restaurant for 8:00pm"),
        AIMessage(content="Sure, let me find the best options for you.", tool_calls=[
            ToolCall(name="restaurant_search", args={"cuisine": "Chinese", "time": "8:00pm"})
        ]),
        ToolMessage(content="Found a few options: 1. Golden Dragon, 2. Jade Palace"),
        AIMessage(content="I found some great options: Golden Dragon and Jade Palace. Which one would you prefer?"),
        HumanMessage(content="Let's go with Golden Dragon."),
        AIMessage(content="Great choice! I'll book a table for 8:00pm at Golden Dragon.", tool_calls=[
            ToolCall(name="restaurant_book", args={"name": "Golden Dragon", "time": "8:00pm"})
        ]),
        ToolMessage(content="Table booked at Golden Dragon for 8:00pm."),
        AIMessage(content="Your table at Golden Dragon is booked for 8:00pm. Enjoy your meal!"),
        HumanMessage(content="thanks"),
    ])

    scorer = AgentGoalAccuracyWithoutReference()
    score = await metric.multi_turn_ascore(sample)
    assert score == 1.0
    assert await scorer.multi_turn_ascore(sample) == 1.0
    assert judge_server.count == 1  # the second scorer's answer came from the cache
    await metric.release()


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
