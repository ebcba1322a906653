"""How a server's handler exceptions and pagination reach the wire (docs/errors.md §2;
src/mcpkit/protocol/wire_errors.py, src/mcpkit/protocol/cursors.py).

Raw JSON-RPC against a served :class:`mcpkit.Server`: the test is the client and reads
what went over the wire, so that nothing a client library does (flattening, bounding)
hides what the server sent. The modern era's HTTP statuses are read through the ASGI app.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from starlette.exceptions import HTTPException

from mcpkit import HttpError, McpError, Server
from mcpkit.protocol.cursors import encode_cursor
from support.eras import LEGACY, MODERN

pytestmark = pytest.mark.timeout(30)

META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


class StatusError(Exception):
    """Any exception with an integer ``status_code`` maps like an HTTP error."""

    def __init__(self, status_code: Any, text: str = "") -> None:
        super().__init__(*([text] if text else []))
        self.status_code = status_code


class Wire:
    """A transport whose far end is the test: it writes requests and reads the replies."""

    def __init__(self) -> None:
        self.inbox: asyncio.Queue[bytes] = asyncio.Queue()
        self.on_message: Callable[[bytes], None] | None = None
        self.on_close: Callable[[str | None], None] | None = None
        self.started = asyncio.Event()
        self.era = MODERN
        self._ids = 0

    async def start(self, on_message: Callable[[bytes], None], on_close: Callable[[str | None], None]) -> None:
        self.on_message, self.on_close = on_message, on_close
        self.started.set()

    def send(self, data: bytes) -> None:
        self.inbox.put_nowait(data)

    async def drain(self) -> None:
        return None

    async def close(self) -> None:
        self.hang_up()

    def hang_up(self) -> None:
        if self.on_close is not None:
            on_close, self.on_close = self.on_close, None
            on_close("test finished")

    async def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send one request (with the modern ``_meta`` in the modern era) and return the
        response, as decoded JSON."""
        self._ids += 1
        params = dict(params or {})
        if self.era == MODERN:
            params["_meta"] = META
        assert self.on_message is not None
        self.on_message(json.dumps({"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params}).encode())
        async with asyncio.timeout(10):
            while True:
                message = json.loads(await self.inbox.get())
                if message.get("id") == self._ids and "method" not in message:
                    return dict(message)

    async def error(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        response = await self.call(method, params)
        assert "error" in response, response
        return dict(response["error"])

    async def tool_error(self, name: str, **arguments: Any) -> dict[str, Any]:
        return await self.error("tools/call", {"name": name, "arguments": arguments})


@contextlib.asynccontextmanager
async def serving(server: Server, era: str = MODERN) -> AsyncIterator[Wire]:
    wire = Wire()
    task = asyncio.create_task(server.serve(wire))
    await asyncio.wait_for(wire.started.wait(), 5)
    try:
        if era != MODERN:
            wire.era = era
            hello = {"protocolVersion": era, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
            assert "result" in await wire.call("initialize", hello)
            assert wire.on_message is not None
            wire.on_message(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        yield wire
    finally:
        wire.hang_up()
        await asyncio.wait_for(task, 5)


def raising_server(**options: Any) -> Server:
    """A server whose tool ``fail`` raises what ``kind`` names."""
    server = Server("mapping", "1.0", **options)

    @server.tool
    def fail(kind: str, status: int = 0, text: str = "") -> str:
        if kind == "mcp":
            raise McpError(-32050, text, {"echo": text[:10]})
        if kind == "http":
            raise HttpError(status, text)
        if kind == "starlette":
            raise HTTPException(status, detail=text or None)
        if kind == "starlette-object-detail":
            raise HTTPException(status, detail={"field": "bad"})  # type: ignore[arg-type]
        if kind == "status":
            raise StatusError(status, text)
        if kind == "bool-status":
            raise StatusError(True, text)
        raise RuntimeError(text)

    @server.resource("res://broken")
    def broken() -> str:
        raise ValueError("the secret path /etc/x")

    return server


# --- a handler's McpError: verbatim, but flattened and bounded -----------------------------------


@pytest.mark.parametrize("era", [MODERN, LEGACY])
async def test_a_handler_mcp_error_reaches_the_wire_flattened_and_bounded(era: str) -> None:
    async with serving(raising_server(max_error_text=64), era) as wire:
        long = "line one\nline two\x1b[31m\u2028" + "z" * 500
        error = await wire.tool_error("fail", kind="mcp", text=long)
        assert error["code"] == -32050
        assert error["message"] == ("line one line two [31m " + "z" * 500).encode()[:61].decode() + "…"
        assert len(error["message"].encode()) == 64
        assert error["data"] == {"echo": long[:10]}  # data is the handler's own choice: verbatim

        short = await wire.tool_error("fail", kind="mcp", text="plain")
        assert short == {"code": -32050, "message": "plain", "data": {"echo": "plain"}}


async def test_a_handler_mcp_error_keeps_its_http_status_when_its_message_is_cut() -> None:
    server = Server("status", "1.0", max_error_text=32)

    @server.tool
    def conflict() -> str:
        raise McpError(-32000, "c" * 100, status=409)

    status, body = await post_modern(server, "tools/call", {"name": "conflict", "arguments": {}})
    assert status == 409
    assert body["error"] == {"code": -32000, "message": "c" * 29 + "…"}


# --- exceptions that carry an HTTP status ----------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (299, -32603),
        (300, -32000),
        (302, -32000),
        (399, -32000),
        (400, -32602),
        (401, -32001),
        (403, -32003),
        (404, -32004),
        (408, -32008),
        (409, -32009),
        (410, -32000),
        (422, -32602),
        (429, -32029),
        (499, -32000),
        (500, -32603),
        (503, -32603),
    ],
)
async def test_the_legacy_status_table(status: int, code: int) -> None:
    async with serving(raising_server(), LEGACY) as wire:
        error = await wire.tool_error("fail", kind="http", status=status, text="why it failed")
        assert error == {"code": code, "message": "why it failed"}


@pytest.mark.parametrize(
    ("kind", "status", "text", "message"),
    [
        ("starlette", 404, "no such order", "no such order"),  # the detail, not "404: no such order"
        ("starlette", 404, "", "Not Found"),  # Starlette fills in the phrase
        ("starlette-object-detail", 422, "", "422: {'field': 'bad'}"),  # a detail that is no text
        ("http", 404, "", "HTTP 404"),
        ("status", 418, "", "I'm a Teapot"),  # no text at all: the status phrase
        ("status", 299, "", "HTTP 299"),  # no phrase either
        ("status", 409, "taken", "taken"),
        ("starlette", 400, "bad\ninput\x00" + "x" * 2000, "bad input " + "x" * 1011 + "…"),
    ],
)
async def test_the_legacy_message_of_an_http_error(kind: str, status: int, text: str, message: str) -> None:
    async with serving(raising_server(), LEGACY) as wire:
        error = await wire.tool_error("fail", kind=kind, status=status, text=text)
        assert error["message"] == message
        assert "data" not in error


@pytest.mark.parametrize(
    ("status", "code", "message", "http"),
    [
        (400, -32602, "Invalid params", 400),
        (404, -32602, "Invalid params", 400),
        (409, -32602, "Invalid params", 400),
        (422, -32602, "Invalid params", 400),
        (401, -32603, "Internal error", 500),
        (403, -32603, "Internal error", 500),
        (302, -32603, "Internal error", 500),
        (500, -32603, "Internal error", 500),
    ],
)
async def test_the_modern_status_map_collapses_the_message(status: int, code: int, message: str, http: int) -> None:
    http_status, body = await post_modern(
        raising_server(), "tools/call", {"name": "fail", "arguments": {"kind": "http", "status": status, "text": "secret"}}
    )
    assert http_status == http
    error = body["error"]
    assert (error["code"], error["message"]) == (code, message)
    assert "secret" not in json.dumps(body)
    if code == -32603:
        assert set(error["data"]) == {"reference"}
    else:
        assert "data" not in error


async def test_a_modern_internal_status_error_is_logged_with_its_status(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="mcpkit.server")
    async with serving(raising_server()) as wire:
        error = await wire.tool_error("fail", kind="http", status=503, text="backend down")
    ref = error["data"]["reference"]
    (record,) = [r for r in caplog.records if ref in r.getMessage()]
    assert record.getMessage() == f"handler for tools/call (HTTP status 503) failed (reference {ref})"
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], HttpError)


async def test_a_legacy_status_message_is_bounded_by_max_error_text() -> None:
    async with serving(raising_server(max_error_text=16), LEGACY) as wire:
        error = await wire.tool_error("fail", kind="http", status=404, text="n" * 100)
    assert error == {"code": -32004, "message": "n" * 13 + "…"}


@pytest.mark.parametrize("era", [MODERN, LEGACY])
async def test_a_boolean_status_code_is_no_http_status(era: str) -> None:
    # An exception whose status_code is True is an ordinary exception: from a tool, a
    # failed tool call with its text; it is not mapped as HTTP status 1.
    async with serving(raising_server(), era) as wire:
        response = await wire.call("tools/call", {"name": "fail", "arguments": {"kind": "bool-status", "text": "no status"}})
        assert response["result"]["isError"] is True
        assert response["result"]["content"] == [{"type": "text", "text": "no status"}]


# --- exceptions from user code: never their text, unless exposed ---------------------------------


async def test_an_internal_error_carries_only_a_reference_that_the_log_has(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="mcpkit.server")
    async with serving(raising_server()) as wire:
        error = await wire.error("resources/read", {"uri": "res://broken"})
    assert (error["code"], error["message"]) == (-32603, "Internal error")
    assert set(error["data"]) == {"reference"}
    ref = error["data"]["reference"]
    assert len(ref) == 12
    assert int(ref, 16) >= 0
    assert "secret" not in json.dumps(error)
    (record,) = [r for r in caplog.records if ref in r.getMessage()]  # the details are in the server's log
    assert record.getMessage() == f"handler for resources/read failed (reference {ref})"
    assert record.exc_info is not None
    assert str(record.exc_info[1]) == "the secret path /etc/x"


async def test_an_exposed_internal_error_sends_the_flattened_bounded_text() -> None:
    async with serving(raising_server(expose_internal_errors=True, max_error_text=16)) as wire:
        error = await wire.error("resources/read", {"uri": "res://broken"})
    assert error["code"] == -32603
    assert error["message"] == "the secret pa…"
    assert set(error["data"]) == {"reference"}


async def test_an_exposed_internal_error_without_text_names_the_exception_type() -> None:
    server = Server("quiet", "1.0", expose_internal_errors=True)

    @server.resource("res://quiet")
    def quiet() -> str:
        raise LookupError

    async with serving(server) as wire:
        error = await wire.error("resources/read", {"uri": "res://quiet"})
    assert (error["code"], error["message"]) == (-32603, "LookupError")


async def post_modern(server: Server, method: str, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """One modern-era request through the server's ASGI app: (HTTP status, JSON body)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": META}}
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": MODERN, "mcp-method": method}
    if "name" in params:
        headers["mcp-name"] = params["name"]
    transport = httpx.ASGITransport(app=server.asgi_app(path="/mcp", json_response=True))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        response = await http.post("/mcp", json=body, headers=headers)
    return response.status_code, response.json()


# --- pagination cursors --------------------------------------------------------------------------


def paged_server(tools: int, page_size: int = 2) -> Server:
    server = Server("paged", "1.0", page_size=page_size)
    for i in range(tools):
        server.add_tool(f"t{i}", None, {"type": "object"}, lambda arguments: "ok")
    return server


async def list_all(wire: Wire) -> list[list[str]]:
    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        response = await wire.call("tools/list", {"cursor": cursor} if cursor is not None else {})
        result = response["result"]
        pages.append([t["name"] for t in result["tools"]])
        cursor = result.get("nextCursor")
        if cursor is None:
            return pages
        assert len(pages) < 10


@pytest.mark.parametrize(
    ("tools", "pages"),
    [
        (0, [[]]),
        (1, [["t0"]]),
        (2, [["t0", "t1"]]),  # exactly one page: no cursor to an empty page
        (3, [["t0", "t1"], ["t2"]]),
        (4, [["t0", "t1"], ["t2", "t3"]]),
        (5, [["t0", "t1"], ["t2", "t3"], ["t4"]]),
    ],
)
async def test_pages_cover_the_list_once_and_end_without_a_cursor(tools: int, pages: list[list[str]]) -> None:
    async with serving(paged_server(tools)) as wire:
        assert await list_all(wire) == pages


async def test_pages_of_one() -> None:
    async with serving(paged_server(3, page_size=1)) as wire:
        assert await list_all(wire) == [["t0"], ["t1"], ["t2"]]


async def test_a_cursor_at_the_end_of_a_list_that_shrank_gives_an_empty_last_page() -> None:
    server = paged_server(4)
    async with serving(server) as wire:
        first = (await wire.call("tools/list"))["result"]
        cursor = first["nextCursor"]
        server.remove_tool("t3")
        server.remove_tool("t2")  # two tools left: the cursor now points just past the end
        page = (await wire.call("tools/list", {"cursor": cursor}))["result"]
        assert page["tools"] == []
        assert "nextCursor" not in page
        server.remove_tool("t1")  # one tool left: the cursor points beyond the end
        assert await wire.error("tools/list", {"cursor": cursor}) == {"code": -32602, "message": "Invalid cursor"}


@pytest.mark.parametrize(
    "cursor",
    [
        encode_cursor(0),  # the first page has no cursor: none is ever minted for offset 0
        encode_cursor(-1),
        encode_cursor(5),
        base64.urlsafe_b64encode(b"mcpkit:x").decode(),
        base64.urlsafe_b64encode(b"other:2").decode(),
        base64.urlsafe_b64encode(b"mcpkit:").decode(),
        "not base64!",
        "bWNwa2l0OjI",  # padding missing
        "é",
        "",
    ],
)
async def test_a_cursor_the_server_did_not_mint_is_invalid(cursor: str) -> None:
    async with serving(paged_server(4)) as wire:
        assert await wire.error("tools/list", {"cursor": cursor}) == {"code": -32602, "message": "Invalid cursor"}
        assert len((await wire.call("tools/list", {"cursor": encode_cursor(2)}))["result"]["tools"]) == 2
