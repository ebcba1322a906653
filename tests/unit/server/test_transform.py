"""Tool transformation (``Server.transform_tool``, server/transform.py) through the public
API, both eras, in memory, over a real stdio process and over real HTTP
(tests/support/servers/transformed.py): what is listed, what the source receives, what a
client may not give, a wrapper before and after, a source that comes and goes, a proxied
source, and what registration refuses."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import msgspec
import pytest

from mcpkit import (
    ArgTransform,
    Client,
    ClientOptions,
    Context,
    HttpTransport,
    McpError,
    Proxy,
    Server,
    StdioTransport,
    TextContent,
)
from support.eras import ERAS, LEGACY, MODERN
from support.ports import free_port
from support.processes import listening, load_server, server_command
from support.serving import serve_in_thread
from support.transports import TRANSPORTS
from support.waiting import until
from support.wire import messages, modern


def text_of(result: Any) -> str:
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    port = free_port()
    with listening(server_command("transformed", "--http", str(port)), port):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture
def connect(request: pytest.FixtureRequest) -> Any:
    @contextlib.asynccontextmanager
    async def make(kind: str, era: str, **options: Any) -> AsyncIterator[Client]:
        options.setdefault("request_timeout", 20)
        opts = ClientOptions(protocol_version=era, **options)
        if kind == "memory":
            client = Client(load_server("transformed").server, opts)
        elif kind == "stdio":
            client = Client(StdioTransport(server_command("transformed"), stderr="devnull"), opts)
        else:
            client = Client(HttpTransport(request.getfixturevalue("http_url")), opts)
        async with client:
            yield client

    return make


async def _refused(client: Client, name: str, arguments: dict[str, Any]) -> McpError:
    with pytest.raises(McpError) as caught:
        await client.call_tool(name, arguments)
    return caught.value


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_a_transformed_tool_is_listed_in_place_of_its_source(connect: Any, kind: str, era: str) -> None:
    async with connect(kind, era) as client:
        tools = {t.name: t for t in await client.list_all_tools()}
        assert {"to_euros", "forecast"} <= tools.keys()
        assert not {"convert", "weather_forecast"} & tools.keys()  # the sources' own names are not offered
        assert not {"alerts", "weather_alerts"} & tools.keys()  # its source does not exist yet
        euros = tools["to_euros"]
        assert euros.description == "An amount in euros."
        assert euros.input_schema == {
            "type": "object",
            "properties": {
                "amount": {"type": "number"},
                "from_currency": {"type": "string", "description": "ISO 4217 code"},
            },
            "required": ["amount", "from_currency"],
        }
        forecast = tools["forecast"]
        assert forecast.description == "Tomorrow's weather where you are going."
        assert forecast.input_schema == {
            "type": "object",
            "properties": {
                "place": {"type": "string", "description": "The city's name."},
                "days": {"type": "integer", "default": 2},
            },
            "required": ["place"],
        }
        assert forecast.meta == {"io.mcpkit/tags": ["travel"]}  # replacing the source's tags


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_the_source_gets_its_own_names_and_the_fixed_values(connect: Any, kind: str, era: str) -> None:
    async with connect(kind, era) as client:
        answer = await client.call_tool("to_euros", {"amount": 12.5, "from_currency": "NOK"})
        assert text_of(answer) == "12.5 NOK in euros, by the ECB table"


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_what_the_transformed_tool_does_not_take_is_minus_32602(connect: Any, kind: str, era: str) -> None:
    async with connect(kind, era) as client:
        cases = {
            ("to_euros", "currency"): "Invalid arguments for tool to_euros: 'currency' is not an argument of this tool",
            ("to_euros", "rate_table"): "Invalid arguments for tool to_euros: 'rate_table' is not an argument of this tool",
        }
        for (name, extra), message in cases.items():
            error = await _refused(client, name, {"amount": 1, "from_currency": "NOK", extra: "x"})
            assert (error.code, error.message) == (-32602, message)
        error = await _refused(client, "to_euros", {"amount": "many", "from_currency": "NOK"})
        assert (error.code, error.message) == (
            -32602,
            'Invalid arguments for tool to_euros: argument \'amount\': "many" is not of type "number"',
        )
        error = await _refused(client, "to_euros", {"amount": 1})
        assert (error.code, "from_currency" in error.message) == (-32602, True)
        for source in ("convert", "weather_forecast"):
            error = await _refused(client, source, {"amount": 1, "currency": "NOK", "rate_table": "mine", "city": "Oslo"})
            assert (error.code, error.message) == (-32602, f"Unknown tool: {source}")


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_a_wrapper_runs_before_and_after_a_mounted_source(connect: Any, kind: str, era: str) -> None:
    logged: list[str] = []
    async with connect(kind, era, log_level="info", on_log=lambda level, data, logger: logged.append(data)) as client:
        answer = await client.call_tool("forecast", {"place": "Oslo"})
        # the wrapper saw days=2 (the default), forwarded 3; the hidden units are fixed
        assert text_of(answer) == "Oslo: sunny for 3 day(s), in imperial units (checked by the wrapper)"
        await until(lambda: logged == ["forecast asked for Oslo"], what=str(logged))
        seen = (await client.call_tool("seen_so_far")).structured_content
        assert seen is not None
        assert seen["result"][-1] == "weather middleware: forecast [('city', 'Oslo'), ('days', 3), ('units', 'imperial')]"
        refused = await client.call_tool("forecast", {"place": "Nowhere"})
        assert (refused.is_error, refused.content[0].text) == (True, "Nowhere has no weather")  # type: ignore[union-attr]
        failed = await client.call_tool("forecast", {"place": "Atlantis"})
        assert (failed.is_error, failed.content[0].text) == (True, "no weather under the sea")  # type: ignore[union-attr]


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_a_source_that_comes_and_goes_takes_its_transformation_along(connect: Any, kind: str, era: str) -> None:
    async with connect(kind, era) as client:
        assert text_of(await client.call_tool("toggle_alerts")) == "added"
        try:
            tools = {t.name: t for t in await client.list_all_tools()}
            assert "weather_alerts" not in tools
            assert tools["alerts"].input_schema["properties"] == {"region": {"default": "north"}}
            assert text_of(await client.call_tool("alerts")) == "no alerts in north"
            assert text_of(await client.call_tool("alerts", {"region": "south"})) == "no alerts in south"
        finally:
            assert text_of(await client.call_tool("toggle_alerts")) == "removed"
        assert "alerts" not in {t.name for t in await client.list_all_tools()}
        error = await _refused(client, "alerts", {})
        assert (error.code, error.message) == (-32602, "Unknown tool: alerts")


@pytest.mark.parametrize("era", ERAS)
async def test_clients_are_told_when_a_transformation_is_registered(era: str) -> None:
    server = Server("live")
    server.tool(name="ping_it")(lambda: "pong")
    changed: list[str] = []
    async with Client(server, ClientOptions(protocol_version=era)) as client:
        async with client.listen(tools=True) as events:
            server.transform_tool("ping_it", name="ping_again")
            async for event in events:
                changed.append(event.kind)
                break
        assert changed == ["tools"]
        assert [t.name for t in await client.list_all_tools()] == ["ping_again"]
        assert text_of(await client.call_tool("ping_again")) == "pong"


def upstream() -> Server:
    up = Server("upstream")

    @up.tool
    def book(room: str, hours: int, who: str) -> str:
        return f"{room} booked for {hours} h by {who}"

    @up.tool
    def strict(n: int) -> int:
        return n

    return up


@pytest.mark.parametrize("up_era", ERAS)
@pytest.mark.parametrize("era", ERAS)
async def test_a_proxied_source_is_transformed_once_it_is_listed(era: str, up_era: str, caplog: pytest.LogCaptureFixture) -> None:
    proxy = Proxy(upstream(), client_options=ClientOptions(protocol_version=up_era, request_timeout=10))
    proxy.transform_tool(
        "book", name="book_room", args={"who": ArgTransform(hide=True, default="the proxy"), "hours": ArgTransform(default=1)}
    )
    proxy.transform_tool("strict", args={"missing": ArgTransform(name="other")})  # does not fit: not offered
    with caplog.at_level(logging.WARNING, logger="mcpkit.server"):
        async with Client(proxy, ClientOptions(protocol_version=era, request_timeout=10)) as client:
            tools = {t.name: t for t in await client.list_all_tools()}
            assert set(tools) == {"book_room"}
            assert {t.name for t in await client.list_all_tools()} == {"book_room"}  # listed again: logged once
            assert tools["book_room"].input_schema["required"] == ["room"]
            assert text_of(await client.call_tool("book_room", {"room": "A1"})) == "A1 booked for 1 h by the proxy"
            error = await _refused(client, "book_room", {"room": "A1", "who": "me"})
            assert error.code == -32602
            error = await _refused(client, "strict", {"n": 1})
            assert (error.code, error.message) == (-32602, "Unknown tool: strict")
    assert caplog.messages.count("the transformed tool 'strict' is not offered: tool 'strict' has no argument 'missing'") == 1


def test_scopes_of_a_transformed_tool_are_its_sources() -> None:
    server = Server("scoped")
    server.tool(scopes=["money"])(lambda amount: amount)
    server.transform_tool("<lambda>", name="pay")
    assert server.scopes_for("tools/call", msgspec.Raw(b'{"name": "pay"}')) == ("money",)
    assert server.scopes_for("tools/call", msgspec.Raw(b'{"name": "<lambda>"}')) == ()


def _schema_server(schema: dict[str, Any]) -> Server:
    server = Server("s")
    server.add_tool("t", None, schema, lambda arguments: "ok")
    return server


@pytest.mark.parametrize(
    ("schema", "args", "error"),
    [
        (
            {"type": "object", "properties": {"a": {"type": "string"}}},
            {"b": ArgTransform(name="c")},
            "tool 't' has no argument 'b'",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"a": ArgTransform(hide=True)},
            "tool 't': argument 'a' is required, so hiding it needs a default",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "integer", "minimum": 3}}},
            {"a": ArgTransform(default=2)},
            "tool 't': the default of argument 'a' is not valid",
        ),
        (
            {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"enum": ["x"]}}},
            {"a": ArgTransform(default="y")},
            "tool 't': the default of argument 'a' is not valid",
        ),
        (
            {"type": "object", "properties": {"a": {}, "b": {}}, "dependentRequired": {"a": ["b"]}},
            {"b": ArgTransform(name="c")},
            "tool 't': cannot rename or hide arguments of a schema with dependentRequired at its top level",
        ),
        (
            {"type": "object", "properties": {"a": {}}, "minProperties": 1},
            {"a": ArgTransform(hide=True, default=1)},
            "tool 't': cannot rename or hide arguments of a schema with minProperties at its top level",
        ),
    ],
)
def test_a_transformation_that_does_not_fit_its_source_is_refused(
    schema: dict[str, Any], args: dict[str, ArgTransform], error: str
) -> None:
    server = _schema_server(schema)
    with pytest.raises(ValueError, match="^" + re.escape(error)):
        server.transform_tool("t", args=args)


def test_what_transform_tool_refuses_at_once() -> None:
    server = _schema_server({"type": "object", "properties": {"a": {}, "b": {}}})
    with pytest.raises(TypeError, match="ArgTransform"):
        server.transform_tool("t", args={"a": "b"})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="async"):
        server.transform_tool("t", wrap=lambda arguments, forward, ctx: None)
    with pytest.raises(ValueError, match="same name"):
        server.transform_tool("t", args={"a": ArgTransform(name="c"), "b": ArgTransform(name="c")})
    with pytest.raises(ValueError, match=r"^tool 't': two arguments would be named 'b'$"):
        server.transform_tool("t", args={"a": ArgTransform(name="b")})
    with pytest.raises(TypeError, match="one string"):
        server.transform_tool("t", tags="word")
    server.transform_tool("t", name="u")
    with pytest.raises(ValueError, match="transformed already"):
        server.transform_tool("t", name="v")
    server.add_tool("w", None, {"type": "object"}, lambda arguments: "ok")
    with pytest.raises(ValueError, match=r"named 'u' exists"):
        server.transform_tool("w", name="u")


async def test_a_rename_keeps_an_additional_properties_false_schema_exact() -> None:
    server = _schema_server(
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": False}
    )
    server.transform_tool("t", args={"a": ArgTransform(name="b")})
    async with Client(server, ClientOptions(protocol_version=MODERN)) as client:
        (tool,) = await client.list_all_tools()
        assert tool.input_schema == {
            "type": "object",
            "properties": {"b": {"type": "string"}},
            "required": ["b"],
            "additionalProperties": False,
        }
        assert text_of(await client.call_tool("t", {"b": "x"})) == "ok"
        error = await _refused(client, "t", {"b": "x", "z": 1})
        assert (error.code, "'z'" in error.message) == (-32602, True)


async def test_a_wrapper_that_raises_is_masked_like_a_tool(caplog: pytest.LogCaptureFixture) -> None:
    server = Server("masked", mask_tool_errors=True)
    server.tool(name="t")(lambda: "ok")

    async def broken(arguments: dict[str, Any], forward: Any, ctx: Context) -> Any:
        raise RuntimeError("secret detail")

    server.transform_tool("t", wrap=broken)
    async with Client(server, ClientOptions(protocol_version=LEGACY)) as client:
        answer = await client.call_tool("t")
        assert answer.is_error
        text = answer.content[0].text  # type: ignore[union-attr]
        assert re.fullmatch(r"Tool 't' failed \(reference [0-9a-f]{12}\)", text), text


@pytest.mark.e2e
async def test_a_renamed_arguments_header_rule_is_checked_under_its_new_name() -> None:
    """Over real HTTP in the 2026-07-28 era: the source mirrors ``region`` in
    ``Mcp-Param-Region``; renamed ``area``, the header still mirrors it — a client that
    reads the listing sends it, a mismatch is 400 with -32020 before the tool runs."""
    calls: list[dict[str, Any]] = []
    server = Server("headers")
    schema = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}, "required": ["region"]}
    server.add_tool("where", None, schema, lambda args: calls.append(args) or f"in {args['region']}")
    server.transform_tool("where", name="where_is", args={"region": ArgTransform(name="area")})
    with serve_in_thread(server.asgi_app()) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        async with Client(HttpTransport(url), ClientOptions(protocol_version=MODERN)) as client:
            assert text_of(await client.call_tool("where_is", {"area": "eu"})) == "in eu"
        body, headers = modern(
            "tools/call", {"name": "where_is", "arguments": {"area": "eu"}}, headers={"mcp-param-region": "us"}
        )
        resp = await asyncio.to_thread(httpx.post, url, json=body, headers=headers, timeout=30)
        (reply,) = [m for m in messages(resp) if "id" in m]
        assert (resp.status_code, reply["error"]["code"]) == (400, -32020)
    assert calls == [{"region": "eu"}]
