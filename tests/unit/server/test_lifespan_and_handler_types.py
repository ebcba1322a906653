"""What developers reach for every day, server side: the lifespan and what handlers can ask
for by type, tool time limits, and the parameter and result types people write."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import decimal
import pathlib
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any, TypedDict

import httpx
import msgspec
import pytest

from mcpkit import AccessToken, CallToolResult, Client, ClientOptions, Context, HttpTransport, McpError, Server, TextContent
from support.eras import LEGACY, MODERN
from support.ports import free_port
from support.serving import serve_in_thread


@dataclasses.dataclass
class AppState:
    db: dict[str, str]
    events: list[str]


def text(result: CallToolResult) -> str:
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def make_lifespan_server(events: list[str]) -> Server:
    @contextlib.asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[AppState]:
        events.append("enter")
        yield AppState(db={"answer": "42"}, events=events)
        events.append("exit")

    server = Server("dx", lifespan=lifespan)

    @server.tool
    def lookup(key: str, state: AppState, who: AccessToken | None, ctx: Context) -> str:
        assert ctx.lifespan is state
        return f"{state.db.get(key)} for {who.subject if who else 'anyone'}"

    @server.resource("state://events")
    def events_resource(state: AppState) -> str:
        return ",".join(state.events)

    @server.prompt
    def ask(topic: str, state: AppState) -> str:
        return f"{topic}: {len(state.db)} keys"

    return server


# --- lifespan and injection ------------------------------------------------------------------------


@pytest.mark.parametrize("era", [MODERN, LEGACY])
async def test_lifespan_is_entered_once_and_reaches_handlers(era: str) -> None:
    events: list[str] = []
    server = make_lifespan_server(events)
    schema = (await _tools(server))["lookup"]
    assert set(schema["properties"]) == {"key"}  # state, who and ctx are filled by the server
    assert events == ["enter", "exit"]
    events.clear()
    async with (
        Client(server, ClientOptions(protocol_version=era)) as one,
        Client(server, ClientOptions(protocol_version=era)) as two,
    ):
        assert text(await one.call_tool("lookup", {"key": "answer"})) == "42 for anyone"
        assert text(await two.call_tool("lookup", {"key": "answer"})) == "42 for anyone"
        assert (await one.read_resource("state://events")).contents[0].text == "enter"
        prompt = await two.get_prompt("ask", {"topic": "db"})
        assert prompt.messages[0].content.text == "db: 1 keys"  # type: ignore[union-attr]
        assert [a.name for a in (await one.list_prompts()).prompts[0].arguments or []] == ["topic"]
    assert events == ["enter", "exit"]  # once for both connections


async def _tools(server: Server) -> dict[str, Any]:
    async with Client(server, ClientOptions(protocol_version=MODERN)) as client:
        return {t.name: t.input_schema for t in (await client.list_tools()).tools}


@pytest.mark.e2e
def test_lifespan_runs_with_the_asgi_lifespan_and_when_mounted() -> None:
    from starlette.applications import Starlette
    from starlette.routing import Mount

    events: list[str] = []
    mcp = make_lifespan_server(events).asgi_app(path=None)
    host = Starlette(routes=[Mount("/mcp", app=mcp)], lifespan=lambda app: mcp.lifespan(app))
    with serve_in_thread(host) as port:
        assert events == ["enter"]
        assert _call_lookup(f"http://127.0.0.1:{port}/mcp/") == "42 for anyone"
    assert events == ["enter", "exit"]


@pytest.mark.e2e
def test_lifespan_starts_with_the_first_request_when_no_lifespan_event_arrives() -> None:
    events: list[str] = []
    mcp = make_lifespan_server(events).asgi_app()

    async def no_lifespan(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":  # a host that swallows lifespan events
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        await mcp(scope, receive, send)

    with serve_in_thread(no_lifespan) as port:
        assert events == []
        assert _call_lookup(f"http://127.0.0.1:{port}/mcp") == "42 for anyone"
        assert events == ["enter"]


def _call_lookup(url: str) -> str:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "lookup", "arguments": {"key": "answer"}, "_meta": meta},
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "lookup",
    }
    resp = httpx.post(url, json=body, headers=headers, timeout=10)
    assert resp.status_code == 200, resp.text
    return str(resp.json()["result"]["content"][0]["text"])


FAILING = textwrap.dedent(
    """
    import contextlib, sys
    from mcpkit import Server

    @contextlib.asynccontextmanager
    async def lifespan(server):
        raise ConnectionRefusedError("database at db.internal:5432 is not reachable")
        yield

    server = Server("broken", lifespan=lifespan)
    if sys.argv[1:] == ["http"]:
        server.run("http", port=int(sys.argv[2]) if len(sys.argv) > 2 else 0, log_level="warning")
    else:
        server.run()
    """
)


@pytest.mark.e2e
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_lifespan_that_fails_stops_the_server_with_a_clear_message(tmp_path: pathlib.Path, transport: str) -> None:
    script = tmp_path / "broken.py"
    script.write_text(FAILING)
    args = ["http", str(free_port())] if transport == "http" else []
    proc = subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
    )
    assert proc.returncode != 0
    assert "database at db.internal:5432 is not reachable" in proc.stderr
    assert "lifespan failed to start" in proc.stderr


# --- tool time limits --------------------------------------------------------------------------------


async def test_a_tool_past_its_time_limit_is_cancelled_while_others_are_served() -> None:
    server = Server("limits", tool_timeout=5)
    stopped = asyncio.Event()

    @server.tool(timeout=0.3)
    async def slow() -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            stopped.set()
            raise
        return "never"

    @server.tool
    async def quick() -> str:
        return "quick"

    @server.tool
    def blocking() -> str:
        time.sleep(4)  # a plain def cannot be interrupted: its result is dropped (well after the 0.5 s limit)
        return "late"

    server.tool_timeout = 0.5
    async with Client(server, ClientOptions(protocol_version=MODERN)) as client:
        started = time.monotonic()
        slow_call = asyncio.ensure_future(client.call_tool("slow"))
        assert text(await client.call_tool("quick")) == "quick"
        result = await slow_call
        assert result.is_error
        assert result.content[0].text == "Tool 'slow' timed out after 0.3 s"  # type: ignore[union-attr]
        assert stopped.is_set()
        assert time.monotonic() - started < 10  # the limit ended it, not the handler's 30 s
        result = await client.call_tool("blocking")  # the server default applies
        assert result.is_error
        assert result.content[0].text == "Tool 'blocking' timed out after 0.5 s"  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="positive"):
        server.tool(timeout=0)(lambda: "x")


# --- the types people write ------------------------------------------------------------------------


@dataclasses.dataclass
class Booking:
    when: datetime.datetime
    room: uuid.UUID


async def test_everyday_types_as_parameters_and_results() -> None:
    server = Server("types")

    @server.tool
    def describe(
        when: datetime.datetime,
        day: datetime.date,
        at: datetime.time,
        took: datetime.timedelta,
        ident: uuid.UUID,
        price: decimal.Decimal,
        where: pathlib.Path,
        blob: bytes,
    ) -> str:
        kinds = [type(v).__name__ for v in (when, day, at, took, ident, price, where, blob)]
        return f"{' '.join(kinds)} {when.year} {took.total_seconds():g} {price + 1} {where.name} {blob!r}"

    @server.tool
    def book(room: uuid.UUID) -> Booking:
        return Booking(when=datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.UTC), room=room)

    @server.tool
    def squares(n: int) -> list[int]:
        return [i * i for i in range(n)]

    @server.tool
    def greet(name: str) -> str:
        return f"hi {name}"

    async with Client(server, ClientOptions(protocol_version=MODERN)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        props = tools["describe"].input_schema["properties"]
        assert props["when"] == {"type": "string", "format": "date-time"}
        assert props["day"]["format"] == "date"
        assert props["ident"]["format"] == "uuid"
        assert props["blob"]["contentEncoding"] == "base64"
        args = {
            "when": "2026-11-30T12:00:00Z",
            "day": "2026-11-30",
            "at": "12:30:00",
            "took": "PT90S",
            "ident": "12345678-1234-5678-1234-567812345678",
            "price": "9.99",
            "where": "/srv/data/report.csv",
            "blob": "aGVsbG8=",
        }
        assert text(await client.call_tool("describe", args)) == (
            "datetime date time timedelta UUID Decimal PosixPath bytes 2026 90 10.99 report.csv b'hello'"
        )
        with pytest.raises(McpError) as caught:  # a value the type cannot take is -32602, naming it
            await client.call_tool("describe", {**args, "ident": "not-a-uuid"})
        assert caught.value.code == -32602
        assert "argument 'ident': Invalid UUID" in caught.value.message
        booked = await client.call_tool("book", {"room": args["ident"]})
        assert booked.structured_content == {"when": "2026-11-30T12:00:00Z", "room": args["ident"]}
        schema = tools["book"].output_schema
        assert schema is not None
        assert schema["properties"]["room"] == {"type": "string", "format": "uuid"}
        assert "$defs" not in schema  # the object is inlined, not repeated
        assert tools["squares"].output_schema == {
            "type": "object",
            "properties": {"result": {"type": "array", "items": {"type": "integer"}}},
            "required": ["result"],
        }
        assert (await client.call_tool("squares", {"n": 4})).structured_content == {"result": [0, 1, 4, 9]}
        plain = await client.call_tool("greet", {"name": "Ada"})
        assert plain.structured_content is None  # absent reads as None, not a sentinel
        assert tools["greet"].output_schema is None


@dataclasses.dataclass
class Upload:
    where: pathlib.Path
    copies: list[pathlib.Path]


class Stored(msgspec.Struct):
    path: pathlib.Path


class Report(TypedDict):
    zeta: int
    alpha: Inner
    middle: pathlib.Path


class Inner(TypedDict):
    zz: int
    aa: int


TRANSPORT_KINDS = [pytest.param("memory", id="memory"), pytest.param("http", id="http", marks=pytest.mark.e2e)]


@contextlib.asynccontextmanager
async def connected(server: Server, kind: str) -> AsyncIterator[Client]:
    if kind == "memory":
        async with Client(server, ClientOptions(protocol_version=MODERN)) as client:
            yield client
        return
    with serve_in_thread(server.asgi_app()) as port:
        async with Client(HttpTransport(f"http://127.0.0.1:{port}/mcp"), ClientOptions(protocol_version=LEGACY)) as client:
            yield client


@pytest.mark.parametrize("kind", TRANSPORT_KINDS)
async def test_paths_as_fields_and_typeddicts_in_declaration_order(kind: str) -> None:
    server = Server("fields")

    @server.tool("store")  # the name first, as FastMCP takes it
    def store(upload: Upload) -> Stored:
        kinds = {type(upload.where).__name__, *(type(c).__name__ for c in upload.copies)}
        assert kinds == {"PosixPath"}
        return Stored(path=upload.where / "stored")

    @server.tool
    def report() -> Report:
        return {"zeta": 1, "alpha": {"zz": 2, "aa": 3}, "middle": pathlib.Path("/m")}

    @server.prompt("hello")
    def hello(who: str) -> str:
        return f"Hello, {who}"

    async with connected(server, kind) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"store", "report"}
        upload = tools["store"].input_schema["$defs"]["Upload"]["properties"]
        assert upload == {"where": {"type": "string"}, "copies": {"type": "array", "items": {"type": "string"}}}
        assert tools["store"].output_schema == {
            "title": "Stored",
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        }
        stored = await client.call_tool("store", {"upload": {"where": "/srv", "copies": ["/a", "/b"]}})
        assert stored.structured_content == {"path": "/srv/stored"}
        schema = tools["report"].output_schema
        assert schema is not None
        assert list(schema["properties"]) == ["zeta", "alpha", "middle"]
        assert schema["required"] == ["zeta", "alpha", "middle"]
        assert list(schema["$defs"]["Inner"]["properties"]) == ["zz", "aa"]
        assert (await client.call_tool("report")).structured_content == {"zeta": 1, "alpha": {"zz": 2, "aa": 3}, "middle": "/m"}
        assert (await client.get_prompt("hello", {"who": "Ada"})).messages[0].content.text == "Hello, Ada"  # type: ignore[union-attr]


def test_a_name_given_twice_and_an_exploded_template_are_refused() -> None:
    server = Server("refusals")
    with pytest.raises(TypeError, match="give the name once"):
        server.tool("a", name="b")
    with pytest.raises(TypeError, match="give the name once"):
        server.prompt("a", name="b")
    for template, fix in [("files://{path*}", "{+path}"), ("files://{/parts*}", "{+parts}"), ("x://{a,b*}", "{+b}")]:
        with pytest.raises(ValueError, match="explode modifier") as caught:
            server.resource(template)(lambda **kw: "x")
        assert str(caught.value).endswith(f"write {fix}")
    server.resource("x://{name}{?tags*}")(lambda name, tags="": f"{name} {tags}")  # in the query it is a parameter


async def test_icons_titles_and_meta_per_handler() -> None:
    server = Server("decorated")
    icon = {"src": "https://example.com/i.png", "mimeType": "image/png", "sizes": ["48x48"]}

    @server.tool(title="Add", icons=[icon], meta={"team": "math"})
    def add(a: int, b: int) -> int:
        return a + b

    @server.resource("doc://one", title="One", icons=[icon])
    def one() -> str:
        return "1"

    @server.prompt(title="Hi", icons=[icon])
    def hi() -> str:
        return "hi"

    async with Client(server, ClientOptions(protocol_version=MODERN)) as client:
        tool = (await client.list_tools()).tools[0]
        resource = (await client.list_resources()).resources[0]
        prompt = (await client.list_prompts()).prompts[0]
    for item in (tool, resource, prompt):
        assert item.icons is not None
        assert (item.icons[0].src, item.icons[0].mime_type, item.icons[0].sizes) == (icon["src"], "image/png", ["48x48"])
    assert (tool.title, resource.title, prompt.title) == ("Add", "One", "Hi")
    assert tool.meta == {"team": "math"}
    with pytest.raises(ValueError, match="invalid icon"):
        server.tool(icons=[{"mimeType": "image/png"}])(lambda: "x")
