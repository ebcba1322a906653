"""The tests of FastMCP's testing demo, ported to mcpkit: the same 18 tests, each
changed only where mcpkit's client returns something else (docs/migrate-fastmcp.md)."""

import re
from collections.abc import AsyncIterator

import pytest

from mcpkit import Client
from mcpkit.testing import as_json


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    """A client connected in memory for one test (asyncio_mode = "auto" runs it)."""
    from server import mcp

    async with Client(mcp) as client:
        yield client


async def test_add_tool(client: Client):
    """Test the add tool with simple addition"""
    result = await client.call_tool("add", {"a": 2, "b": 3})
    assert result.structured_content == {"result": 5}


async def test_greet_tool_default(client: Client):
    """Test the greet tool with default greeting"""
    result = await client.call_tool("greet", {"name": "Alice"})
    assert result.content[0].text == "Hello, Alice!"


async def test_greet_tool_custom(client: Client):
    """Test the greet tool with custom greeting"""
    result = await client.call_tool("greet", {"name": "Bob", "greeting": "Hi"})
    assert result.content[0].text == "Hi, Bob!"


async def test_async_multiply_tool(client: Client):
    """Test the async multiply tool"""
    result = await client.call_tool("async_multiply", {"x": 3.5, "y": 2.0})
    assert result.structured_content == {"result": 7.0}


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (0, 0, 0),
        (1, 1, 2),
        (-1, 1, 0),
        (100, 200, 300),
    ],
)
async def test_add_parametrized(client: Client, a: int, b: int, expected: int):
    """Test add tool with multiple parameter combinations"""
    result = await client.call_tool("add", {"a": a, "b": b})
    assert result.structured_content["result"] == expected


async def test_server_info_resource(client: Client):
    """Test the server info resource"""
    result = await client.read_resource("demo://info")
    assert len(result.contents) == 1
    assert result.contents[0].text == "This is the mcpkit Testing Demo server"


async def test_greeting_resource_template(client: Client):
    """Test the greeting resource template"""
    result = await client.read_resource("demo://greeting/Charlie")
    assert len(result.contents) == 1
    assert result.contents[0].text == "Welcome to mcpkit, Charlie!"


async def test_hello_prompt_default(client: Client):
    """Test hello prompt with default parameter"""
    result = await client.get_prompt("hello")
    assert result.messages[0].content.text == "Say hello to World in a friendly way."


async def test_hello_prompt_custom(client: Client):
    """Test hello prompt with custom name"""
    result = await client.get_prompt("hello", {"name": "Dave"})
    assert result.messages[0].content.text == "Say hello to Dave in a friendly way."


async def test_explain_prompt_levels(client: Client):
    """Test explain prompt with different detail levels"""
    # Simple level
    result = await client.get_prompt("explain", {"topic": "MCP", "detail_level": "simple"})
    assert "simple terms" in result.messages[0].content.text
    assert "MCP" in result.messages[0].content.text

    # Detailed level
    result = await client.get_prompt("explain", {"topic": "MCP", "detail_level": "detailed"})
    assert "detailed" in result.messages[0].content.text
    assert "technical" in result.messages[0].content.text


async def test_list_tools(client: Client):
    """Test listing available tools"""
    tools = (await client.list_tools()).tools
    tool_names = [tool.name for tool in tools]

    assert "add" in tool_names
    assert "greet" in tool_names
    assert "async_multiply" in tool_names


async def test_list_resources(client: Client):
    """Test listing available resources"""
    resources = await client.list_all_resources()
    resource_uris = [resource.uri for resource in resources]

    # The static resource is listed; the template is in list_resource_templates()
    assert resource_uris == ["demo://info"]
    templates = (await client.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == ["demo://greeting/{name}"]


async def test_list_prompts(client: Client):
    """Test listing available prompts"""
    prompts = (await client.list_prompts()).prompts
    prompt_names = [prompt.name for prompt in prompts]

    assert "hello" in prompt_names
    assert "explain" in prompt_names


# A pattern instead of dirty-equals' IsStr(regex=...)
async def test_greet_with_a_pattern(client: Client):
    """Test greet tool with a regular expression"""
    result = await client.call_tool("greet", {"name": "Eve"})
    assert re.fullmatch(r"Hello, \w+!", result.content[0].text)


# The whole tool as JSON instead of inline-snapshot
async def test_tool_schema_structure(client: Client):
    """Test tool schema structure"""
    tools = (await client.list_tools()).tools
    add_tool = next(tool for tool in tools if tool.name == "add")

    assert as_json(add_tool) == {
        "name": "add",
        "description": "Add two numbers together",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
        "outputSchema": {"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]},
    }
    assert add_tool.input_schema["properties"]["a"]["type"] == "integer"
