"""ToolCallValidity: calls checked against the tools' JSON Schemas.

Real fixture: tests/convert/fixtures/validity/anthropic_customer_service.json holds the
three tools of Anthropic's cookbook recipe "Creating a Customer Service Agent with
Client-Side Tools" (repository anthropics/anthropic-cookbook, path
tool_use/customer_service_agent.ipynb, commit af178a25cf526c2f66617d76c19bf139bf26128c),
as its second request sends them with the conversation the notebook printed for "Please
cancel order O1 for me." (the tool_use block and its result as recorded; the assistant's
thinking text trimmed to its first two sentences).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import call, conversation

from tracegrade import (
    AIMessage,
    EvalTestCase,
    HumanMessage,
    MissingFieldError,
    MultiTurnSample,
    ToolCall,
    ToolCallType,
    ToolCallValidity,
    sample_from_messages,
)
from tracegrade.metrics.registry import MetricSpecError, build_metric
from tracegrade.metrics.validity import ToolSchemaError, from_gemini, read_tools

FIXTURE = (
    Path(__file__).parents[1]
    / "convert"
    / "fixtures"
    / "validity"
    / "anthropic_customer_service.json"
)

BOOK_FLIGHT = {
    "type": "object",
    "properties": {
        "origin": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "passengers": {"type": "integer", "minimum": 1, "maximum": 9},
        "cabin": {"type": "string", "enum": ["economy", "business"]},
        "legs": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"from": {"type": "string"}, "to": {"type": "string"}},
                "required": ["from", "to"],
            },
        },
    },
    "required": ["origin", "passengers"],
    "additionalProperties": False,
}
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
PLAIN = {"book_flight": BOOK_FLIGHT, "get_weather": WEATHER}


def check(*calls: ToolCall, tools: Any = PLAIN) -> Any:
    """The Score of a conversation making ``calls``, checked against ``tools``."""
    return ToolCallValidity(tools).score(conversation(list(calls), None))


def violations(score: Any, index: int = 0) -> list[tuple[str, str]]:
    """Call ``index``'s violations as (path, keyword) pairs."""
    return [(v["path"], v["keyword"]) for v in score.details["calls"][index]["violations"]]


def test_valid_calls_score_one() -> None:
    score = check(call("book_flight", origin="SFO", passengers=2), call("get_weather", city="X"))
    assert score.value == 1.0
    assert score.reason == "all 2 tool call(s) are valid calls of the tools given"
    assert [entry["valid"] for entry in score.details["calls"]] == [True, True]


def test_a_tool_that_was_not_given_is_a_hallucinated_call() -> None:
    score = check(call("get_weather", city="Paris"), call("book_hotel", city="Paris"))
    assert score.value == 0.5
    assert violations(score, 1) == [("", "unknown_tool")]
    assert "book_hotel: no tool named 'book_hotel' was given (tools: book_flight, get_weather)" in (
        score.reason
    )


def test_a_missing_required_argument_is_named_by_its_path() -> None:
    score = check(call("book_flight", passengers=1))
    assert score.value == 0.0
    assert violations(score) == [("origin", "required")]
    assert "book_flight.origin: 'origin' is a required property" in score.reason


def test_a_wrong_type_is_a_violation_and_a_boolean_is_no_integer() -> None:
    assert violations(check(call("book_flight", origin="SFO", passengers="2"))) == [
        ("passengers", "type")
    ]
    assert violations(check(call("book_flight", origin="SFO", passengers=True))) == [
        ("passengers", "type")
    ]


def test_a_value_outside_the_enum_or_the_range_is_named_with_the_rule() -> None:
    score = check(call("book_flight", origin="SFO", passengers=0, cabin="first"))
    assert sorted(violations(score)) == [("cabin", "enum"), ("passengers", "minimum")]
    assert "book_flight.passengers: 0 is less than the minimum of 1" in score.reason
    assert "book_flight.cabin: 'first' is not one of ['economy', 'business']" in score.reason
    assert violations(check(call("book_flight", origin="SFO", passengers=10))) == [
        ("passengers", "maximum")
    ]


def test_an_extra_argument_is_a_violation_only_when_the_schema_forbids_it() -> None:
    score = check(call("book_flight", origin="SFO", passengers=1, seat="2A"))
    assert violations(score) == [("", "additionalProperties")]
    assert "('seat' was unexpected)" in score.reason
    assert check(call("get_weather", city="Paris", units="metric")).value == 1.0


def test_any_other_rule_of_the_schema_is_checked_with_nested_paths() -> None:
    legs = [{"from": "SFO", "to": "JFK"}, {"from": "JFK"}]
    score = check(call("book_flight", origin="sfo", passengers=1, legs=legs))
    assert violations(score) == [("legs[1].to", "required"), ("origin", "pattern")]


def test_arguments_that_are_not_json_are_a_violation() -> None:
    broken = ToolCall(name="get_weather", args={}, unparsed_args='{"city": "Par')
    score = check(broken)
    assert violations(score) == [("", "json")]
    assert score.reason == "0 of 1 tool call(s) are valid; get_weather: arguments are not JSON"


def test_details_list_every_call_and_the_reason_counts_the_violations_beyond_five() -> None:
    many = call("book_flight", origin="x", passengers=0, cabin="first", legs=[{}], extra=1)
    score = check(call("get_weather", city="Paris"), many)
    assert score.value == 0.5
    assert score.details["valid"] == 1 and score.details["total"] == 2
    first, second = score.details["calls"]
    assert first == {"index": 0, "name": "get_weather", "valid": True, "violations": []}
    assert second["index"] == 1 and len(second["violations"]) == 6
    assert score.reason.endswith("; and 1 more")


def test_no_calls_made_score_one_and_need_no_tools() -> None:
    sample = conversation([], None)
    assert ToolCallValidity().score(sample).value == 1.0
    assert ToolCallValidity(PLAIN).score(sample).reason == (
        "no tool calls were made; none can be invalid"
    )


# --- the forms the tools are given in ---------------------------------------------------


def test_openai_chat_tools() -> None:
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]
    assert check(call("get_weather", city="Paris"), tools=tools).value == 1.0
    assert violations(check(call("get_weather"), tools=tools)) == [("city", "required")]


def test_openai_responses_tools_and_hosted_tools() -> None:
    tools = [
        {"type": "function", "name": "get_weather", "parameters": WEATHER, "strict": False},
        {"type": "web_search_preview"},
        {"type": "mcp", "server_label": "deepwiki", "server_url": "https://mcp.example"},
    ]
    search = call("web_search", type="search", query="weather")
    remote = ToolCall(name="ask_question", args={"q": 1}, type=ToolCallType.MCP)
    score = check(call("get_weather", city=3), search, remote, tools=tools)
    assert violations(score) == [("city", "type")]
    assert score.details["calls"][1]["checked"].startswith("name only: a provider's hosted tool")
    assert score.details["calls"][2]["checked"].startswith("name only: an MCP server's tool")
    assert check(call("fetch_page"), tools=tools).value == 0.0


def test_anthropic_tools() -> None:
    tools = [{"name": "get_weather", "description": "Weather.", "input_schema": WEATHER}]
    assert check(call("get_weather", city="Paris"), tools=tools).value == 1.0
    assert violations(check(call("get_weather", city=None), tools=tools)) == [("city", "type")]
    with pytest.raises(ToolSchemaError, match=r"tools\[0\] \(get_weather\): the arguments' schema"):
        ToolCallValidity([{"name": "get_weather", "input_schema": None}])


def test_gemini_declarations_are_read_as_json_schema() -> None:
    declaration = {
        "name": "get_weather",
        "parameters": {
            "type": "OBJECT",
            "properties": {
                "city": {"type": "STRING"},
                "days": {"type": "INTEGER", "nullable": True},
            },
            "required": ["city"],
        },
    }
    tools = [{"function_declarations": [declaration], "google_search": {}}]
    assert check(call("get_weather", city="Paris", days=None), tools=tools).value == 1.0
    assert violations(check(call("get_weather", city=1), tools=tools)) == [("city", "type")]
    assert check(call("google_search", q="x"), tools=tools).value == 1.0
    one_tool = {"functionDeclarations": [declaration]}
    assert check(call("get_weather", city="Paris"), tools=one_tool).value == 1.0
    assert from_gemini({"type": "string", "nullable": False}) == {
        "type": "string",
        "nullable": False,
    }


def test_a_function_declared_without_parameters_takes_no_arguments() -> None:
    tools = [{"type": "function", "function": {"name": "now"}}]
    assert check(call("now"), tools=tools).value == 1.0
    assert violations(check(call("now", tz="UTC"), tools=tools)) == [("", "additionalProperties")]


def test_unreadable_definitions_are_errors_naming_their_place() -> None:
    with pytest.raises(ToolSchemaError, match=r"tools\[1\]: cannot tell the form"):
        read_tools([{"name": "a", "input_schema": {}}, {"description": "no name"}])
    with pytest.raises(ToolSchemaError, match=r"tools\[0\]: a tool needs a name"):
        read_tools([{"type": "function", "function": {"parameters": {}}}])
    with pytest.raises(ToolSchemaError, match="a second, different definition of the tool 'a'"):
        read_tools([{"name": "a", "input_schema": {}}, {"name": "a", "input_schema": WEATHER}])
    with pytest.raises(ToolSchemaError, match="this is one tool definition, not the tools"):
        read_tools({"type": "function", "function": {"name": "a"}})
    assert read_tools({"name": {"type": "object"}}).schemas == {"name": {"type": "object"}}
    with pytest.raises(ToolSchemaError, match=r"tools: expected a list of tool definitions"):
        read_tools(3)
    with pytest.raises(ToolSchemaError, match=r"tools\['a'\] \(a\): the arguments' schema must be"):
        read_tools({"a": "string"})


# --- invalid schemas and drafts ----------------------------------------------------------


def test_an_invalid_schema_is_an_error_naming_the_tool() -> None:
    broken = {"get_weather": WEATHER, "book": {"type": "object", "properties": {"n": {"type": 3}}}}
    with pytest.raises(ToolSchemaError) as raised:
        ToolCallValidity(broken)
    message = str(raised.value)
    assert message.startswith(
        "tools['book'] (book): the arguments' schema is not valid JSON Schema"
    )
    assert "Draft202012Validator" in message and "(at properties.n.type)" in message


def test_the_draft_is_the_one_the_schema_names() -> None:
    # draft-04 writes an exclusive bound as a boolean beside "minimum"; 2020-12 rejects that
    old = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 0, "exclusiveMinimum": True}},
    }
    assert violations(check(call("count", n=0), tools={"count": old})) == [("n", "minimum")]
    with pytest.raises(ToolSchemaError, match="not valid JSON Schema"):
        read_tools({"count": {key: value for key, value in old.items() if key != "$schema"}})
    with pytest.raises(ToolSchemaError, match="names no draft jsonschema knows"):
        read_tools({"count": {"$schema": "https://example.com/my-draft"}})


def test_a_reference_that_does_not_resolve_is_an_error_naming_the_tool() -> None:
    dangling = {"type": "object", "properties": {"x": {"$ref": "#/$defs/missing"}}}
    with pytest.raises(ToolSchemaError, match=r"^count: the arguments' schema has a \$ref"):
        check(call("count", x=1), tools={"count": dangling})
    defined = {**dangling, "$defs": {"missing": {"type": "string"}}}
    assert violations(check(call("count", x=1), tools={"count": defined})) == [("x", "type")]


# --- where the tools come from ------------------------------------------------------------


def test_the_sample_gives_its_tools_in_metadata_and_the_metrics_own_tools_come_first() -> None:
    sample = conversation([call("get_weather", city="Paris")], None)
    sample.metadata = {"tools": {"get_weather": {"type": "object", "required": ["country"]}}}
    assert ToolCallValidity().score(sample).value == 0.0
    assert ToolCallValidity(PLAIN).score(sample).value == 1.0


def test_an_invalid_schema_in_a_sample_names_where_it_came_from() -> None:
    sample = conversation([call("get_weather", city="Paris")], None)
    sample.metadata = {"tools": {"get_weather": {"type": "objekt"}}}
    with pytest.raises(ToolSchemaError, match=r"metadata\['tools'\]\['get_weather'\]"):
        ToolCallValidity().score(sample)


def test_without_tools_anywhere_the_metric_says_where_to_give_them() -> None:
    with pytest.raises(MissingFieldError, match=r"give tools= to the metric, or set the sample's"):
        ToolCallValidity().score(conversation([call("get_weather", city="Paris")], None))
    with pytest.raises(ValueError, match="tools are given in code"):
        ToolCallValidity("get_weather")


def test_each_call_is_checked_against_the_latest_request_before_it() -> None:
    first = {"request": {"tools": {"get_weather": WEATHER}}}
    second = {"request": {"tools": {"book_flight": BOOK_FLIGHT}}}
    sample = MultiTurnSample(
        user_input=[
            HumanMessage(content="weather?", metadata=first),
            AIMessage(content="", tool_calls=[call("get_weather", city="Paris")]),
            HumanMessage(content="book it", metadata=second),
            AIMessage(content="", tool_calls=[call("get_weather", city="Rome")]),
        ]
    )
    score = ToolCallValidity().score(sample)
    assert score.value == 0.5
    assert violations(score, 1) == [("", "unknown_tool")]


def test_the_real_cookbook_request_converted_with_metadata_gives_its_tools() -> None:
    request = json.loads(FIXTURE.read_text(encoding="utf-8"))
    sample = sample_from_messages(request, "anthropic", metadata=True)
    assert ToolCallValidity().score(sample).value == 1.0
    tool_use = request["messages"][1]["content"][1]
    tool_use["input"] = {"order_id": 1}
    score = ToolCallValidity().score(sample_from_messages(request, "anthropic", metadata=True))
    assert (
        score.reason
        == "0 of 1 tool call(s) are valid; cancel_order.order_id: 1 is not of type 'string'"
    )
    tool_use.update(name="refund_order", input={"order_id": "O1"})
    score = ToolCallValidity(request["tools"]).score(conversation([call("refund_order")], None))
    assert "(tools: get_customer_info, get_order_details, cancel_order)" in score.reason


def converted_request(source: str, request: dict[str, Any]) -> Any:
    """The validity Score of a request read by a converter keeping its metadata."""
    return ToolCallValidity().score(sample_from_messages(request, source, metadata=True))


def test_each_converters_kept_request_gives_its_tools() -> None:
    bedrock: dict[str, Any] = {
        "messages": [
            {"role": "user", "content": [{"text": "weather?"}]},
            {
                "role": "assistant",
                "content": [
                    {"toolUse": {"toolUseId": "t1", "name": "get_weather", "input": {"city": 3}}}
                ],
            },
        ],
        "toolConfig": {
            "tools": [
                {"toolSpec": {"name": "get_weather", "inputSchema": {"json": WEATHER}}},
                {"cachePoint": {"type": "default"}},
            ]
        },
    }
    gemini: dict[str, Any] = {
        "contents": [
            {"role": "user", "parts": [{"text": "weather?"}]},
            {
                "role": "model",
                "parts": [{"function_call": {"name": "get_weather", "args": {"city": 3}}}],
            },
        ],
        "config": {
            "tools": [{"function_declarations": [{"name": "get_weather", "parameters": WEATHER}]}]
        },
    }
    responses: dict[str, Any] = {
        "input": [
            {"role": "user", "content": "weather?"},
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "get_weather",
                "arguments": '{"city": 3}',
            },
        ],
        "tools": [{"type": "function", "name": "get_weather", "parameters": WEATHER}],
    }
    for source, request in [
        ("bedrock", bedrock),
        ("gemini", gemini),
        ("openai_responses", responses),
    ]:
        score = converted_request(source, request)
        assert violations(score) == [("city", "type")], source
    with pytest.raises(ToolSchemaError, match=r"\['toolConfig'\]\['tools'\]\[0\]: a toolSpec's"):
        bedrock["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"] = WEATHER
        converted_request("bedrock", bedrock)


# --- the other sample kind, the registry, the import ---------------------------------------


def test_a_test_case_checks_its_tools_called_and_a_name_alone_is_checked_by_name() -> None:
    case = EvalTestCase(
        input="q",
        tools_called=[ToolCall(name="get_weather", args={"city": 3}), "book_flight"],
        metadata={"tools": PLAIN},
    )
    score = ToolCallValidity().score(case)
    assert score.value == 0.5
    assert score.details["calls"][1]["checked"] == (
        "name only: the call is given by name, without arguments"
    )
    assert ToolCallValidity(PLAIN).score(EvalTestCase(input="q", tools_called=["fly"])).value == 0.0
    with pytest.raises(MissingFieldError, match="tools_called"):
        ToolCallValidity(PLAIN).score(EvalTestCase(input="q"))


def test_the_registry_builds_it_and_refuses_tools_given_as_text() -> None:
    metric = build_metric("tool_call_validity:threshold=1")
    assert isinstance(metric, ToolCallValidity) and metric.threshold == 1.0
    with pytest.raises(MetricSpecError, match="tools are given in code"):
        build_metric("tool_call_validity:tools=x")


def test_jsonschema_loads_only_when_a_call_is_checked() -> None:
    code = (
        "import sys\n"
        "from tracegrade.metrics.registry import build_metric\n"
        "build_metric('tool_call_validity')\n"
        "print('jsonschema' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
