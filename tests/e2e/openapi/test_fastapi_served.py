"""Acceptance: a real FastAPI app (tests/support/servers/openapi_app.py) served by
uvicorn on loopback, turned into an mcpkit server by ``from_openapi`` from the document
the app serves (tests/support/servers/openapi_mcp.py, with route maps), and exercised by
mcpkit's Client over stdio and Streamable HTTP: every kind of route (a path parameter, a
query with an enum and a list, a body of nested models, a name collision, a file, text,
an error status, retries of 503), a resource template, and the route maps' choices."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Iterator

import pytest

from mcpkit import INVALID_PARAMS, Client, HttpTransport, McpError, StdioTransport, TextContent
from support.ports import free_port
from support.processes import listening, server_command

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def api() -> Iterator[str]:
    """The FastAPI app under uvicorn on 127.0.0.1: its port."""
    port = free_port()
    with listening(server_command("openapi_app", str(port)), port):
        yield str(port)


@pytest.fixture(scope="module")
def mcp_url(api: str) -> Iterator[str]:
    """The generated MCP server over Streamable HTTP."""
    port = free_port()
    with listening(server_command("openapi_mcp", api, "--http", str(port)), port):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(params=["stdio", "http"])
async def client(request: pytest.FixtureRequest, api: str) -> AsyncIterator[Client]:
    if request.param == "stdio":
        transport = StdioTransport(server_command("openapi_mcp", api), stderr="devnull")
    else:
        transport = HttpTransport(request.getfixturevalue("mcp_url"))
    async with Client(transport) as c:
        yield c


async def test_tools_listed_as_the_route_maps_say(client: Client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert sorted(tools) == ["api_key", "brew", "create_item", "flaky", "get_item", "greeting", "list_items", "rename_item"]
    get_item = tools["get_item"]
    assert get_item.description == "Get one item"
    assert get_item.input_schema == {
        "type": "object",
        "properties": {"item_id": {"type": "integer", "title": "Item Id"}},
        "required": ["item_id"],
    }
    assert get_item.annotations is not None
    assert get_item.annotations.read_only_hint is True
    assert get_item.output_schema is not None
    assert get_item.output_schema["properties"]["color"] == {"type": "string", "enum": ["red", "green", "blue"], "title": "Color"}
    dimensions = tools["create_item"].input_schema["properties"]["dimensions"]
    assert dimensions["properties"]["width"] == {
        "type": "number",
        "exclusiveMinimum": 0.0,
        "title": "Width",
        "description": "in cm",
    }
    assert dimensions["required"] == ["width", "height"]
    assert tools["create_item"].input_schema["required"] == ["name", "color", "dimensions"]
    assert tools["rename_item"].input_schema["required"] == ["item_id", "item_id__body", "name"]
    templates = (await client.list_resource_templates()).resource_templates
    assert [(t.name, t.uri_template) for t in templates] == [("download", "api://files/{name}")]


async def test_calls_reach_the_api(client: Client) -> None:
    lamp = await client.call_tool("get_item", {"item_id": 1})
    assert lamp.structured_content is not None
    assert lamp.structured_content["name"] == "lamp"
    assert not lamp.is_error
    blue = await client.call_tool("list_items", {"color": "blue", "tag": ["wood"], "limit": 5})
    assert blue.structured_content is not None
    assert [i["name"] for i in blue.structured_content["items"]] == ["chair"]
    created = await client.call_tool(
        "create_item", {"name": "desk", "color": "green", "dimensions": {"width": 120, "height": 75}, "tags": ["office"]}
    )
    assert created.structured_content is not None
    assert created.structured_content["dimensions"] == {"width": 120.0, "height": 75.0, "unit": "cm"}
    new_id = created.structured_content["item_id"]
    moved = await client.call_tool("rename_item", {"item_id": new_id, "item_id__body": new_id + 100, "name": "big desk"})
    assert moved.structured_content is not None
    assert (moved.structured_content["item_id"], moved.structured_content["name"]) == (new_id + 100, "big desk")
    key = await client.call_tool("api_key", {})
    assert key.structured_content == {"key": "secret"}  # the server's configured headers
    hello = await client.call_tool("greeting", {"name": "Ada"})
    assert hello.content == [TextContent(text="Hello, Ada!")]


async def test_errors_are_tool_errors_with_the_status(client: Client) -> None:
    missing = await client.call_tool("get_item", {"item_id": 999})
    assert missing.is_error
    assert missing.content == [TextContent(text='HTTP 404 Not Found from GET /items/{item_id}: {"detail":"no item 999"}')]
    teapot = await client.call_tool("brew", {})
    assert teapot.is_error
    (block,) = teapot.content
    assert isinstance(block, TextContent)
    assert block.text.startswith('HTTP 418 I\'m a Teapot from GET /teapot: {"detail":"I\'m a teapot. xxx')  # uvicorn's reason
    assert block.text.endswith("…")
    assert len(block.text) < 600  # a bounded excerpt of the 5 kB body


async def test_a_503_is_retried(client: Client, request: pytest.FixtureRequest) -> None:
    key = request.node.callspec.id
    flaky = await client.call_tool("flaky", {"key": key})
    assert flaky.structured_content == {"attempts": 3}


async def test_a_file_as_image_and_as_resource(client: Client) -> None:
    read = await client.read_resource("api://files/logo")
    (contents,) = read.contents
    assert contents.mime_type == "image/png"
    assert contents.blob is not None
    assert base64.b64decode(contents.blob).startswith(b"\x89PNG")
    assert contents.uri == "api://files/logo"


@pytest.mark.parametrize("value", ["..", ".", ""])
async def test_a_path_parameter_cannot_leave_its_segment(client: Client, value: str) -> None:
    """GET /flaky/.. would be sent as GET / (the client normalizes dot segments), and
    GET /flaky/ is another route: such a value is refused before any request, a tool error
    for a tool and -32602 for a resource read."""
    refused = await client.call_tool("flaky", {"key": value})
    assert refused.is_error
    assert refused.content == [
        TextContent(text=f"GET /flaky/{{key}}: the path parameter 'key' cannot be {value!r}: it must name one path segment")
    ]
    if value:
        with pytest.raises(McpError) as caught:
            await client.read_resource(f"api://files/{value}")
        assert caught.value.code == INVALID_PARAMS
        assert "the path parameter 'name' cannot be" in caught.value.message
