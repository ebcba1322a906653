"""The in-process variant: ``from_asgi`` turns the FastAPI app of the acceptance tests
(tests/support/servers/openapi_app.py) into a server from ``app.openapi()``, and calls go
through ``httpx.ASGITransport`` with no socket; served to a Client in memory and over
Streamable HTTP. And what a call does when the API cannot be reached, answers something
else than its document says, answers too much, or wants credentials."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request, Response

from mcpkit import Client, EmbeddedResource, HttpTransport, ImageContent, McpError, TextContent
from mcpkit.openapi import OpenAPIServer, Retries, RouteMap, from_asgi, from_openapi
from support.processes import load_server
from support.serving import serve_in_thread
from support.transports import HTTP, MEMORY

openapi_app = load_server("openapi_app")


@pytest.fixture(params=[MEMORY, HTTP])
async def client(request: pytest.FixtureRequest) -> AsyncIterator[Client]:
    server = from_asgi(openapi_app.app, route_maps=[RouteMap(pattern="^/greeting$", kind="resource")])
    if request.param == "memory":
        async with Client(server) as c:
            yield c
    else:
        with serve_in_thread(server.asgi_app()) as port:
            async with Client(HttpTransport(f"http://127.0.0.1:{port}/mcp")) as c:
                yield c


async def test_the_fastapi_app_in_process(client: Client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert "greeting" not in tools  # a resource now
    assert len(tools) == 9
    assert tools["tree_size_trees_size_post"].input_schema["$defs"]["Node"]["properties"]["children"]["items"] == {
        "$ref": "#/$defs/Node"
    }
    tree = {"label": "a", "children": [{"label": "b", "children": [{"label": "c"}]}, {"label": "d"}]}
    size = await client.call_tool("tree_size_trees_size_post", tree)
    assert size.structured_content == {"nodes": 4, "depth": 3}
    download = await client.call_tool("download", {"name": "logo"})
    (image,) = download.content
    assert isinstance(image, ImageContent)
    assert (image.mime_type, base64.b64decode(image.data)) == ("image/png", openapi_app.PNG)
    with pytest.raises(McpError, match="shorter than 1 character"):  # the input schema is checked before any request
        await client.call_tool("create_item", {"name": "", "color": "red", "dimensions": {"width": 1, "height": 1}})
    with pytest.raises(McpError, match="purple"):  # the enum too
        await client.call_tool("create_item", {"name": "x", "color": "purple", "dimensions": {"width": 1, "height": 1}})
    hello = await client.read_resource("api://greeting")
    assert [(c.uri, c.mime_type, c.text) for c in hello.contents] == [("api://greeting", "text/plain", "Hello, world!")]


def api(*routes: tuple[str, Any]) -> FastAPI:
    app = FastAPI()
    for path, handler in routes:
        app.get(path, operation_id=path.strip("/"))(handler)
    return app


async def test_an_api_that_cannot_be_reached_is_a_tool_error() -> None:
    document = openapi_app.app.openapi()
    server = from_openapi(document, base_url="http://127.0.0.1:9", retries=Retries(attempts=1, backoff=0))
    async with Client(server) as client:
        result = await client.call_tool("get_item", {"item_id": 1})
    assert result.is_error
    (block,) = result.content
    assert isinstance(block, TextContent)
    assert block.text.startswith("could not reach the API for GET /items/{item_id}: ConnectError")


async def test_an_answer_other_than_the_document_says() -> None:
    def wrong() -> Any:
        return [1, 2]

    app = api(("/wrong", wrong))
    document = app.openapi()
    document["paths"]["/wrong"]["get"]["responses"]["200"]["content"]["application/json"]["schema"] = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
    }
    async with Client(from_asgi(app, document)) as client:
        tool = (await client.list_tools()).tools[0]
        assert tool.output_schema == {"type": "object", "properties": {"a": {"type": "integer"}}}
        result = await client.call_tool("wrong", {})
    assert result.is_error
    assert result.content == [
        TextContent(text="the API answered GET /wrong with JSON list, not the object its document describes")
    ]
    async with Client(from_asgi(app, document, output_schemas=False)) as client:
        result = await client.call_tool("wrong", {})
    assert result.content == [TextContent(text="[1,2]")]  # JSON that is no object: text
    assert result.structured_content is None


async def test_too_large_an_answer_is_a_tool_error() -> None:
    def big() -> Any:
        return {"data": "x" * 5000}

    async with Client(from_asgi(api(("/big", big)), max_response_bytes=1000)) as client:
        result = await client.call_tool("big", {})
    assert result.is_error
    assert result.content == [TextContent(text="GET /big: the API's answer is larger than 1000 bytes")]


async def test_credentials_and_a_client_of_ones_own() -> None:
    def whoami(request: Request) -> Any:
        return {"authorization": request.headers.get("authorization"), "agent": request.headers.get("user-agent")}

    app = api(("/whoami", whoami))

    class Token(httpx.Auth):
        def auth_flow(self, request: httpx.Request) -> Any:
            request.headers["Authorization"] = "Bearer t0k3n"
            yield request

    async with Client(from_asgi(app, auth=Token(), headers={"User-Agent": "agent/1"})) as client:
        result = await client.call_tool("whoami", {})
    assert result.structured_content == {"authorization": "Bearer t0k3n", "agent": "agent/1"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://in.process") as http:
        server = OpenAPIServer(app.openapi(), client=http, headers={"Authorization": "not taken"})
        async with Client(server) as client:
            result = await client.call_tool("whoami", {})
        assert result.structured_content == {"authorization": None, "agent": "python-httpx/" + httpx.__version__}
        assert not http.is_closed  # the caller's, left open


async def test_bytes_of_no_known_type_are_an_embedded_file() -> None:
    def blob() -> Response:
        return Response(b"\x00\x01\x02", media_type="application/x-thing")

    async with Client(from_asgi(api(("/blob", blob)))) as client:
        result = await client.call_tool("blob", {})
    (block,) = result.content
    assert isinstance(block, EmbeddedResource)
    assert block.resource.mime_type == "application/x-thing"
    assert block.resource.blob == base64.b64encode(b"\x00\x01\x02").decode()


async def test_the_apps_lifespan_runs_within_the_servers() -> None:
    events: list[str] = []

    @contextlib.asynccontextmanager
    async def app_lifespan(app: FastAPI) -> AsyncIterator[None]:
        events.append("app up")
        yield
        events.append("app down")

    @contextlib.asynccontextmanager
    async def mine(server: Any) -> AsyncIterator[str]:
        events.append("mine up")
        yield "state"
        events.append("mine down")

    app = FastAPI(lifespan=app_lifespan)

    @app.get("/ready", operation_id="ready")
    def ready() -> dict[str, list[str]]:
        return {"events": list(events)}

    async with Client(from_asgi(app, lifespan=mine)) as client:
        result = await client.call_tool("ready", {})
    assert result.structured_content == {"events": ["app up", "mine up"]}
    assert events == ["app up", "mine up", "mine down", "app down"]


async def test_parameters_go_where_the_document_says() -> None:
    def echo(request: Request) -> Any:
        return {
            "query": sorted(request.query_params.multi_items()),
            "header": request.headers.get("x-trace"),
            "cookie": request.cookies.get("session"),
            "path": request.scope["raw_path"].decode(),
        }

    app = FastAPI()
    app.get("/echo/{name:path}", operation_id="echo")(echo)
    document = app.openapi()
    document["paths"]["/echo/{name}"]["get"]["parameters"] = [
        {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}},
        {"name": "many", "in": "query", "schema": {"type": "array", "items": {"type": "integer"}}},
        {"name": "joined", "in": "query", "explode": False, "schema": {"type": "array", "items": {"type": "string"}}},
        {"name": "flag", "in": "query", "schema": {"type": "boolean"}},
        {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
        {"name": "session", "in": "cookie", "schema": {"type": "string"}},
    ]
    arguments = {"name": "a b/c", "many": [1, 2], "joined": ["x", "y"], "flag": True, "X-Trace": "t-1", "session": "s 1"}
    async with Client(from_asgi(app, document)) as client:
        result = await client.call_tool("echo", arguments)
    assert result.structured_content == {
        "query": [["flag", "true"], ["joined", "x,y"], ["many", "1"], ["many", "2"]],
        "header": "t-1",
        "cookie": "s%201",  # percent-encoded: a cookie value has no spaces
        "path": "/echo/a%20b%2Fc",  # one path segment
    }


async def test_what_is_retried() -> None:
    calls: list[str] = []

    def busy(request: Request) -> Response:
        calls.append(request.method)
        if len(calls) % 2:
            return Response("busy", status_code=503, headers={"retry-after": "0"})
        return Response('{"ok": true}', media_type="application/json")

    app = FastAPI()
    app.get("/busy", operation_id="get_busy")(busy)
    app.post("/busy", operation_id="post_busy")(busy)
    async with Client(from_asgi(app, retries=Retries(attempts=2, backoff=0))) as client:
        got = await client.call_tool("get_busy", {})
        assert got.structured_content == {"ok": True}
        assert calls == ["GET", "GET"]
        posted = await client.call_tool("post_busy", {})  # not idempotent: its 503 is the answer
    assert posted.is_error
    assert posted.content == [TextContent(text="HTTP 503 Service Unavailable from POST /busy: busy")]
    assert calls == ["GET", "GET", "POST"]
