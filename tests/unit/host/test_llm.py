"""MCP tools in the LLM APIs' tool formats (issue 25): the definitions of OpenAI Chat
Completions, the OpenAI Responses API and the Anthropic Messages API, the schema and name
adjustments those formats need, and a model's tool calls — recorded responses in the
vendors' documented shapes (tests/support/payloads/) — turned back into ``call_tool``,
with the result given back in each format. In memory; tests/interop/test_host.py does the
same over real servers."""

from __future__ import annotations

import re
from typing import Any

import pytest

from mcpkit import CallToolResult, ClientGroup, ImageContent, LlmTools, Server, TextContent, Tool, ToolCall
from mcpkit.host.llm import FORMATS, adjust_schema, llm_name
from support.payloads import CALL_IDS, recorded

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
PLAIN = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def tool(name: str, schema: Any = None, **more: Any) -> Tool:
    return Tool(name=name, input_schema=PLAIN if schema is None else schema, **more)


def test_the_three_definition_shapes() -> None:
    tools = [tool("weather", description="The weather in a city.")]
    assert LlmTools(tools, "openai").definitions == [
        {"type": "function", "function": {"name": "weather", "description": "The weather in a city.", "parameters": PLAIN}}
    ]
    assert LlmTools(tools, "openai-responses").definitions == [
        {"type": "function", "name": "weather", "description": "The weather in a city.", "parameters": PLAIN, "strict": False}
    ]
    assert LlmTools(tools, "anthropic").definitions == [
        {"name": "weather", "description": "The weather in a city.", "input_schema": PLAIN}
    ]
    assert LlmTools([tool("t", title="A title")], "anthropic").definitions[0]["description"] == "A title"
    assert "description" not in LlmTools([tool("t")], "openai").definitions[0]["function"]
    with pytest.raises(ValueError, match="unknown tool format"):
        LlmTools(tools, "gemini")  # type: ignore[arg-type]


def test_names_become_what_the_apis_accept_and_map_back() -> None:
    names = ["weather.forecast", "files/read", "a b", "x" * 80, "same.name", "same_name", "ok-name_1"]
    tools = LlmTools([tool(n) for n in names], "openai")
    exported = [d["function"]["name"] for d in tools.definitions]
    assert all(NAME.fullmatch(n) for n in exported), exported
    assert len(set(exported)) == len(names)
    assert exported[:3] == ["weather_forecast", "files_read", "a_b"]
    assert exported[-1] == "ok-name_1"
    assert [tools.tool_name(n) for n in exported] == names
    assert tools.exported_name("x" * 80) == exported[3]
    assert tools.adjusted["weather.forecast"] == ["named 'weather_forecast'"]
    assert "ok-name_1" not in tools.adjusted
    assert llm_name("same.name", taken={"same_name"}) != "same_name"


def test_the_schema_root_is_made_a_plain_object_and_nothing_below_it_changes() -> None:
    nested = {"type": "object", "properties": {"q": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}
    assert adjust_schema(nested) == (nested, [])
    assert adjust_schema({}) == ({"type": "object", "properties": {}}, [])
    assert adjust_schema(None)[0] == {"type": "object", "properties": {}}

    either, notes = adjust_schema(
        {
            "type": "object",
            "properties": {"id": {"type": "string"}},
            "oneOf": [
                {"properties": {"id": {"type": "string"}, "name": {"type": "string"}}, "required": ["id", "name"]},
                {"properties": {"id": {"type": "string"}, "email": {"type": "string"}}, "required": ["id", "email"]},
            ],
        }
    )
    assert either == {
        "type": "object",
        "properties": {"id": {"type": "string"}, "name": {"type": "string"}, "email": {"type": "string"}},
        "required": ["id"],
    }
    assert notes == ["root oneOf flattened: every branch's properties, required only where all branches require"]

    merged, notes = adjust_schema(
        {"allOf": [{"properties": {"a": {"type": "integer"}}, "required": ["a"]}, {"properties": {"b": {"type": "string"}}}]}
    )
    assert merged == {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a"]}
    assert notes == ["root allOf merged into the root"]

    dropped, notes = adjust_schema({"type": "object", "properties": {}, "not": {"required": ["x"]}, "if": {}, "then": {}})
    assert dropped == {"type": "object", "properties": {}}
    assert notes == ["root not, if, then dropped"]
    original = {"type": "string"}
    assert adjust_schema(original)[1] == ["root type 'string' replaced by 'object'"]
    assert original == {"type": "string"}  # not modified


def server_of_two_tools() -> Server:
    server = Server("pair")

    @server.tool
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    @server.tool
    def chart(points: int) -> CallToolResult:
        """A chart of some points."""
        return CallToolResult(
            content=[TextContent(text=f"{points} points"), ImageContent(data="iVBORw0KGgo=", mime_type="image/png")]
        )

    @server.tool
    def fail() -> str:
        raise RuntimeError("no luck")

    return server


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_recorded_tool_call_round_trips_through_the_group(fmt: str) -> None:
    async with ClientGroup({"pair": server_of_two_tools()}) as group:
        tools = await group.llm_tools(fmt)  # type: ignore[arg-type]
        assert {t.name for t in tools.tools} == {"pair.weather", "pair.chart", "pair.fail"}
        response = recorded(fmt, ("pair_weather", {"city": "Paris"}), ("pair_chart", {"points": 3}))
        first, second = tools.calls(response)
        assert (first.id, second.id) == CALL_IDS[fmt]
        assert (first.name, first.arguments, first.called, first.error) == (
            "pair.weather",
            {"city": "Paris"},
            "pair_weather",
            None,
        )
        assert (second.name, second.arguments) == ("pair.chart", {"points": 3})
        results = [await group.call_tool(call.name, call.arguments) for call in (first, second)]
        back = [tools.result(call, result) for call, result in zip((first, second), results, strict=True)]
    if fmt == "openai":
        assert back[0] == {"role": "tool", "tool_call_id": first.id, "content": "sunny in Paris"}
        assert back[1]["content"] == "3 points\n[image: image/png]"
    elif fmt == "openai-responses":
        assert back[0] == {"type": "function_call_output", "call_id": first.id, "output": "sunny in Paris"}
    else:
        assert back[0] == {
            "type": "tool_result",
            "tool_use_id": first.id,
            "content": [{"type": "text", "text": "sunny in Paris"}],
        }
        assert back[1]["content"][1] == {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
        }


@pytest.mark.parametrize("fmt", FORMATS)
def test_calls_that_cannot_be_made_carry_their_error(fmt: str) -> None:
    tools = LlmTools([tool("weather")], fmt)  # type: ignore[arg-type]
    unknown, broken = tools.calls(recorded(fmt, ("lottery", {}), ("weather", {"city": "x"})))
    assert unknown.error is not None
    assert "there is no tool 'lottery' (offered: weather)" in unknown.error
    assert broken.error is None
    answer = tools.result(unknown, error=unknown.error)
    if fmt == "anthropic":
        assert answer["is_error"] is True
        assert answer["content"] == [{"type": "text", "text": unknown.error}]
    else:
        assert unknown.error in str(answer)
    failed = tools.result(broken, CallToolResult(content=[TextContent(text="no luck")], is_error=True))
    assert failed.get("is_error", fmt != "anthropic") is True
    with pytest.raises(ValueError, match="result or an error"):
        tools.result(broken)


def test_arguments_that_are_not_a_json_object() -> None:
    tools = LlmTools([tool("weather")], "openai")
    call = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{not json"}}
    (bad,) = tools.calls(call)
    assert bad.error is not None
    assert bad.error.startswith("the arguments are not valid JSON")
    (listed,) = tools.calls([{**call, "function": {"name": "weather", "arguments": "[1, 2]"}}])
    assert listed.error == "the arguments must be a JSON object, not list"
    (empty,) = tools.calls({**call, "function": {"name": "weather", "arguments": ""}})
    assert (empty.arguments, empty.error) == ({}, None)


@pytest.mark.parametrize(
    ("fmt", "payload"),
    [
        ("openai", {"role": "assistant", "content": "No tools needed."}),
        ("openai", {"choices": [{"message": {"role": "assistant", "content": "hi", "tool_calls": None}}]}),
        ("openai-responses", {"output": [{"type": "message", "content": []}]}),
        ("anthropic", {"type": "message", "content": [{"type": "text", "text": "hi"}]}),
        ("anthropic", {"type": "text", "text": "a block that is not a call"}),
    ],
)
def test_a_response_without_calls_has_none(fmt: str, payload: Any) -> None:
    assert LlmTools([tool("weather")], fmt).calls(payload) == []  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fmt", "payload"),
    [
        ("openai", {"name": "weather"}),
        ("openai", "weather"),
        ("openai", {"id": "call_1", "type": "function", "function": {"arguments": "{}"}}),
        ("anthropic", [1, 2]),
        ("openai-responses", {"call_id": "x"}),
    ],
)
def test_a_payload_of_another_shape_is_refused(fmt: str, payload: Any) -> None:
    with pytest.raises(ValueError, match=fmt):
        LlmTools([tool("weather")], fmt).calls(payload)  # type: ignore[arg-type]


def test_a_tool_call_is_plain_data() -> None:
    call = ToolCall("id-1", "pair.weather", {"city": "Rome"}, "pair_weather", "anthropic")
    assert call.error is None
    assert call == ToolCall("id-1", "pair.weather", {"city": "Rome"}, "pair_weather", "anthropic")
