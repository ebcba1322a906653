"""The server side of the error contract (docs/errors.md §2), through the public API.

Every row of the §2 table that applies without HTTP, in both protocol eras, in memory
(``Client(server)``) and over a real stdio subprocess (``tests/support/servers/contract_errors.py``),
plus raw JSON-RPC where the client would hide what went over the wire. After every
failure, a normal call on the same connection must still work.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

import mcpkit
from mcpkit import (
    CallToolResult,
    Client,
    ClientOptions,
    Context,
    HttpError,
    McpError,
    Server,
    StdioTransport,
    TextContent,
    ToolError,
)
from support.eras import ERAS, LEGACY, MODERN
from support.paths import SERVERS
from support.processes import load_server
from support.transports import MEMORY_AND_STDIO
from support.waiting import until

pytestmark = pytest.mark.timeout(30)

TRANSPORTS = MEMORY_AND_STDIO
MAX_ERROR_TEXT = 1024


contract = load_server("contract_errors")
SECRET: str = contract.SECRET
CUSTOM = (contract.CUSTOM_CODE, contract.CUSTOM_MESSAGE, contract.CUSTOM_DATA)


# --- helpers ---------------------------------------------------------------------------------


class Conn:
    """A connected client plus where the server's log goes (caplog or captured stderr)."""

    def __init__(self, client: Client, logs: Callable[[], str]) -> None:
        self.client = client
        self.logs = logs

    async def alive(self) -> None:
        """The session survived: a normal call on the same connection still works."""
        result = await self.client.call_tool("echo", {"text": "still here"}, timeout=5)
        assert not result.is_error
        assert [c.text for c in result.content if isinstance(c, TextContent)] == ["still here"]


@contextlib.asynccontextmanager
async def connect(
    transport: str, era: str, caplog: pytest.LogCaptureFixture, *, flags: tuple[str, ...] = (), **server_opts: Any
) -> AsyncIterator[Conn]:
    options = ClientOptions(protocol_version=era, request_timeout=10)
    if transport == "memory":
        caplog.set_level(logging.INFO)
        server = contract.build(**server_opts)
        async with Client(server, options) as client:
            yield Conn(client, lambda: caplog.text)
    else:
        assert not server_opts, "pass stdio server options as flags"
        stdio = StdioTransport([sys.executable, str(SERVERS / "contract_errors.py"), *flags], stderr="capture")
        async with Client(stdio, options) as client:
            yield Conn(client, lambda: stdio.stderr_output.decode("utf-8", "replace"))


async def wait_for_log(conn: Conn, needle: str) -> str:
    """The server's log once it mentions ``needle`` (stderr of a subprocess can lag a little)."""
    return await until(lambda: text if needle in (text := conn.logs()) else "", what=f"{needle!r} in the server log")


def text_of(result: CallToolResult) -> str:
    assert len(result.content) == 1, result.content
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def reference_of(data: Any) -> str:
    """``data`` of an internal error carries only a reference id: a string, or an object
    with exactly one string member."""
    if isinstance(data, str):
        ref = data
    else:
        assert isinstance(data, dict), data
        assert len(data) == 1, f"data must carry only a reference id, got {data!r}"
        (ref,) = data.values()
    assert isinstance(ref, str)
    assert len(ref) >= 6, "a reference id must be distinctive enough to find in the log"
    return ref


def assert_one_line(message: str, limit: int = 300) -> None:
    assert "\n" not in message, message
    assert "\r" not in message, message
    assert len(message) <= limit, f"message too long ({len(message)}): {message!r}"


async def expect_error(awaitable: Any) -> McpError:
    with pytest.raises(McpError) as info:
        await awaitable
    err = info.value
    assert not err.local, f"expected an error sent by the server, got a local one: {err!r}"
    return err


def assert_internal_error(err: McpError, *, logs: str | None = None) -> str:
    assert err.code == -32603
    assert err.message == "Internal error"
    assert SECRET not in str(err)
    assert SECRET not in repr(err.data)
    ref = reference_of(err.data)
    if logs is not None:
        assert ref in logs
    return ref


# --- raw JSON-RPC ------------------------------------------------------------------------------


def modern_meta(version: str = MODERN, *, caps: Any = None, drop_caps: bool = False, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "0.0.1"},
    }
    if not drop_caps:
        meta["io.modelcontextprotocol/clientCapabilities"] = {} if caps is None else caps
    meta.update(extra)
    return meta


class RawBase:
    """Raw JSON-RPC: write messages, read whole responses (bytes and decoded)."""

    def __init__(self) -> None:
        self.notifications: list[dict[str, Any]] = []
        self._next_id = 1000

    def write(self, message: dict[str, Any]) -> None:
        raise NotImplementedError

    async def read_line(self) -> bytes:
        raise NotImplementedError

    async def response(self, rid: Any) -> tuple[dict[str, Any], bytes]:
        async with asyncio.timeout(10):
            while True:
                line = await self.read_line()
                msg = json.loads(line)
                if "id" in msg and msg["id"] == rid and "method" not in msg:
                    return msg, line
                if "method" in msg and "id" not in msg:
                    self.notifications.append(msg)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> tuple[dict[str, Any], bytes]:
        self._next_id += 1
        rid = self._next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.write(message)
        return await self.response(rid)

    async def modern(self, method: str, params: dict[str, Any] | None = None) -> tuple[dict[str, Any], bytes]:
        return await self.request(method, {**(params or {}), "_meta": modern_meta()})

    async def initialize(self, version: str = LEGACY) -> dict[str, Any]:
        msg, _ = await self.request(
            "initialize",
            {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw-test", "version": "0.0.1"}},
        )
        assert "result" in msg, msg
        self.write({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return msg["result"]


class RawWire(RawBase):
    """A :class:`mcpkit.Transport` whose far end is the test itself (served with ``Server.serve``)."""

    def __init__(self) -> None:
        super().__init__()
        self._inbox: asyncio.Queue[bytes] = asyncio.Queue()
        self._on_message: Callable[[bytes], None] | None = None
        self._on_close: Callable[[str | None], None] | None = None
        self.started = asyncio.Event()
        self.closed = False

    # the Transport protocol, as the server sees it
    async def start(self, on_message: Callable[[bytes], None], on_close: Callable[[str | None], None]) -> None:
        self._on_message, self._on_close = on_message, on_close
        self.started.set()

    def send(self, data: bytes) -> None:
        for line in data.split(b"\n"):
            if line.strip():
                self._inbox.put_nowait(line)

    async def drain(self) -> None:
        return None

    async def close(self) -> None:
        self.hang_up()

    # the test's side
    def hang_up(self) -> None:
        if not self.closed:
            self.closed = True
            if self._on_close is not None:
                self._on_close("test finished")

    def write(self, message: dict[str, Any]) -> None:
        assert self._on_message is not None
        data = json.dumps(message).encode()
        asyncio.get_running_loop().call_soon(self._on_message, data)

    async def read_line(self) -> bytes:
        return await self._inbox.get()


class RawStdio(RawBase):
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        super().__init__()
        self.proc = proc

    def write(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")

    async def read_line(self) -> bytes:
        assert self.proc.stdout is not None
        line = await self.proc.stdout.readline()
        if not line:
            raise AssertionError("the server closed its stdout")
        return line


@contextlib.asynccontextmanager
async def raw_connection(transport: str, **server_opts: Any) -> AsyncIterator[RawBase]:
    if transport == "memory":
        wire = RawWire()
        task = asyncio.create_task(contract.build(**server_opts).serve(wire))
        await asyncio.wait_for(wire.started.wait(), 5)
        try:
            yield wire
        finally:
            wire.hang_up()
            await asyncio.wait_for(task, 5)
    else:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(SERVERS / "contract_errors.py"),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            limit=16 * 1024 * 1024,
        )
        try:
            yield RawStdio(proc)
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), 5)
            except TimeoutError:
                proc.kill()
                await proc.wait()


def error_of(msg: dict[str, Any]) -> dict[str, Any]:
    assert "error" in msg, msg
    assert "result" not in msg, msg
    assert msg["jsonrpc"] == "2.0"
    err = msg["error"]
    assert isinstance(err["code"], int)
    assert isinstance(err["message"], str)
    return err


async def raw_alive(raw: RawBase, era: str) -> None:
    params = {"name": "echo", "arguments": {"text": "still here"}}
    msg, _ = await (raw.modern("tools/call", params) if era == MODERN else raw.request("tools/call", params))
    assert msg["result"]["content"] == [{"type": "text", "text": "still here"}], msg


# === tool handlers raising: isError results ========================================================

TOOL_KINDS = ["sync_boom", "async_boom", "typed_boom", "raw_boom", "raw_async_boom"]


def _args(tool: str, message: str) -> dict[str, Any]:
    return {"message": message, "count": 3} if tool == "typed_boom" else {"message": message}


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_tool_exception_becomes_is_error_with_the_message(
    transport: str, era: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with connect(transport, era, caplog) as conn:
        for tool in TOOL_KINDS:
            result = await conn.client.call_tool(tool, _args(tool, "disk full on /var"))
            assert result.is_error is True, tool
            assert text_of(result) == "disk full on /var", tool
            await conn.alive()


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_tool_exception_text_is_flattened(transport: str, era: str, caplog: pytest.LogCaptureFixture) -> None:
    nasty = "first line\nsecond\r\nthird\tfourth\x00fifth\x7fsixth\x85seventh\u2028eighth\u2029ninth"
    async with connect(transport, era, caplog) as conn:
        for tool in TOOL_KINDS:
            result = await conn.client.call_tool(tool, _args(tool, nasty))
            assert result.is_error is True
            text = text_of(result)
            assert text == "first line second  third fourth fifth sixth seventh eighth ninth", (tool, text)
        await conn.alive()


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_tool_exception_text_is_bounded(transport: str, era: str, caplog: pytest.LogCaptureFixture) -> None:
    async with connect(transport, era, caplog) as conn:
        for tool in ("sync_boom", "raw_async_boom"):
            for long_message, unit in (("x" * 5000, "x"), ("é" * 5000, "é"), ("日本" * 3000, None)):
                result = await conn.client.call_tool(tool, _args(tool, long_message))
                assert result.is_error is True
                text = text_of(result)
                size = len(text.encode("utf-8"))
                assert size <= MAX_ERROR_TEXT, size
                assert size >= MAX_ERROR_TEXT - 8, "cut far below the bound"
                assert text.endswith("…")
                body = text[:-1]
                assert long_message.startswith(body)
                if unit is not None:
                    assert set(body) == {unit}
        await conn.alive()


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_tool_error_gives_exactly_its_text(transport: str, era: str, caplog: pytest.LogCaptureFixture) -> None:
    async with connect(transport, era, caplog) as conn:
        result = await conn.client.call_tool("tool_error", {"message": "Order 42 not found; check the id"})
        assert result.is_error is True
        assert text_of(result) == "Order 42 not found; check the id"
        await conn.alive()


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_returned_error_result_passes_through(transport: str, era: str, caplog: pytest.LogCaptureFixture) -> None:
    async with connect(transport, era, caplog) as conn:
        result = await conn.client.call_tool("returns_error", {})
        assert result.is_error is True
        assert all(isinstance(c, TextContent) for c in result.content)
        assert [c.text for c in result.content if isinstance(c, TextContent)] == ["returned failure", "second block"]
        await conn.alive()


@pytest.mark.parametrize("era", ERAS)
async def test_tool_exception_is_not_a_protocol_error_on_the_wire(era: str) -> None:
    async with raw_connection("memory") as raw:
        if era == LEGACY:
            await raw.initialize()
        params = {"name": "sync_boom", "arguments": {"message": "bad input"}}
        msg, _ = await (raw.modern("tools/call", params) if era == MODERN else raw.request("tools/call", params))
        assert "error" not in msg
        assert msg["result"]["isError"] is True
        assert msg["result"]["content"] == [{"type": "text", "text": "bad input"}]


# === masking and exposing ==============================================================================


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_mask_tool_errors_hides_the_text_behind_a_reference(
    transport: str, era: str, caplog: pytest.LogCaptureFixture
) -> None:
    kwargs: dict[str, Any] = {"flags": ("--mask",)} if transport == "stdio" else {"mask": True}
    async with connect(transport, era, caplog, **kwargs) as conn:
        result = await conn.client.call_tool("secret_tool", {})
        assert result.is_error is True
        text = text_of(result)
        assert text.startswith("Tool 'secret_tool' failed"), text
        assert SECRET not in text
        assert "password" not in text
        tokens = [t for t in re.findall(r"[A-Za-z0-9_-]{6,}", text[len("Tool 'secret_tool' failed") :])]
        assert tokens, f"no reference id in {text!r}"
        logs = await wait_for_log(conn, tokens[-1])
        assert SECRET in logs, "the masked exception must be logged server-side"

        # ToolError text is never masked
        result = await conn.client.call_tool("tool_error", {"message": "visible on purpose"})
        assert result.is_error is True
        assert text_of(result) == "visible on purpose"
        await conn.alive()


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_expose_internal_errors_sends_the_flattened_message(
    transport: str, era: str, caplog: pytest.LogCaptureFixture
) -> None:
    kwargs: dict[str, Any] = {"flags": ("--expose",)} if transport == "stdio" else {"expose": True}
    async with connect(transport, era, caplog, **kwargs) as conn:
        c = conn.client
        err = await expect_error(c.read_resource("contract://boom"))
        assert err.code == -32603
        assert err.message == f"resource exploded while reading {SECRET}"

        err = await expect_error(c.get_prompt("boom_prompt"))
        assert err.code == -32603
        assert err.message == f"prompt exploded: {SECRET}"

        err = await expect_error(c.complete({"type": "ref/prompt", "name": "boom_prompt"}, "topic", "p"))
        assert err.code == -32603
        assert err.message == f"completion exploded: {SECRET}"

        err = await expect_error(c.read_resource("contract://long-boom"))
        assert err.code == -32603
        assert len(err.message.encode()) <= MAX_ERROR_TEXT
        assert err.message.endswith("…")
        assert set(err.message[:-1]) == {"é"}
        await conn.alive()


# === resource / prompt / completion handlers raising: -32603 ============================================


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_resource_prompt_completion_exceptions_are_internal_errors(
    transport: str, era: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with connect(transport, era, caplog) as conn:
        c = conn.client
        calls = [
            lambda: c.read_resource("contract://boom"),
            lambda: c.read_resource("contract://items/42"),
            lambda: c.get_prompt("boom_prompt", {"topic": "t"}),
            lambda: c.complete({"type": "ref/prompt", "name": "boom_prompt"}, "topic", "p"),
        ]
        refs = []
        for call in calls:
            err = await expect_error(call())
            ref = assert_internal_error(err)
            logs = await wait_for_log(conn, ref)
            # logged server-side with that reference, together with what went wrong
            line = next(line for line in logs.splitlines() if ref in line)
            assert line.strip()
            refs.append(ref)
            await conn.alive()
        assert len(set(refs)) == len(refs), "every failure gets its own reference id"
        assert SECRET in conn.logs()


async def test_internal_error_is_logged_at_error_level_with_the_reference(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with Client(contract.build(), ClientOptions(protocol_version=MODERN)) as c:
        err = await expect_error(c.read_resource("contract://boom"))
        ref = reference_of(err.data)
    records = [r for r in caplog.records if ref in r.getMessage()]
    assert records, caplog.text
    assert max(r.levelno for r in records) >= logging.ERROR
    assert any(r.exc_info and SECRET in str(r.exc_info[1]) for r in records), "the exception itself must be logged"


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_internal_error_never_sends_the_message_on_the_wire(transport: str, era: str) -> None:
    async with raw_connection(transport) as raw:
        send = raw.modern if era == MODERN else raw.request
        if era == LEGACY:
            await raw.initialize()
        for method, params in [
            ("resources/read", {"uri": "contract://boom"}),
            ("resources/read", {"uri": "contract://items/7"}),
            ("prompts/get", {"name": "boom_prompt"}),
            (
                "completion/complete",
                {"ref": {"type": "ref/prompt", "name": "boom_prompt"}, "argument": {"name": "topic", "value": "x"}},
            ),
        ]:
            msg, line = await send(method, params)
            err = error_of(msg)
            assert err["code"] == -32603
            assert err["message"] == "Internal error"
            assert SECRET.encode() not in line
            assert b"exploded" not in line
            assert b"lookup failed" not in line
            reference_of(err.get("data"))
            assert set(msg) == {"jsonrpc", "id", "error"}
        await raw_alive(raw, era)


# === McpError: verbatim from any handler or middleware ====================================================


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_mcp_error_is_sent_verbatim_from_every_kind_of_handler(
    transport: str, era: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with connect(transport, era, caplog) as conn:
        c = conn.client
        for call in [
            lambda: c.call_tool("mcp_error", {}),
            lambda: c.call_tool("guarded_mcp", {}),  # raised by middleware
            lambda: c.read_resource("contract://mcp-error"),
            lambda: c.get_prompt("mcp_error_prompt"),
            lambda: c.complete({"type": "ref/prompt", "name": "mcp_error_prompt"}, "x", ""),
        ]:
            err = await expect_error(call())
            assert (err.code, err.message, err.data) == CUSTOM
            await conn.alive()


@pytest.mark.parametrize("era", ERAS)
async def test_mcp_error_wire_object_is_exact(era: str) -> None:
    async with raw_connection("memory") as raw:
        if era == LEGACY:
            await raw.initialize()
        send = raw.modern if era == MODERN else raw.request
        msg, _ = await send("tools/call", {"name": "mcp_error", "arguments": {}})
        code, message, data = CUSTOM
        assert error_of(msg) == {"code": code, "message": message, "data": data}


@pytest.mark.parametrize("era", ERAS)
async def test_mcp_error_without_data_and_with_any_code(era: str) -> None:
    server = Server("codes")

    @server.tool
    def fail(code: int) -> str:
        raise McpError(code, f"chosen {code}")

    @server.tool
    def echo(text: str) -> str:
        return text

    async with Client(server, ClientOptions(protocol_version=era)) as c:
        for code in (-32000, -32602, -32603, -1, 0, 1, 42, 2**31 - 1):
            err = await expect_error(c.call_tool("fail", {"code": code}))
            assert (err.code, err.message, err.data) == (code, f"chosen {code}", None)
        assert (await c.call_tool("echo", {"text": "ok"})).is_error is False


# === middleware ======================================================================================


@pytest.mark.parametrize("era", ERAS)
async def test_middleware_runs_outermost_first(era: str) -> None:
    server = Server("mw")
    trail: list[str] = []

    @server.tool
    def echo(text: str, ctx: Context) -> str:
        trail.append(f"handler:{ctx.state.get('tag')}")
        return text

    def make(name: str) -> Any:
        async def mw(ctx: Context, call_next: Any) -> Any:
            trail.append(f"{name}:in:{ctx.method}")
            ctx.state["tag"] = ctx.state.get("tag", "") + name
            result = await call_next()
            trail.append(f"{name}:out")
            return result

        return mw

    server.use(make("a"))
    server.use(make("b"))
    returned = server.use(make("c"))
    assert callable(returned)

    async with Client(server, ClientOptions(protocol_version=era)) as c:
        trail.clear()
        result = await c.call_tool("echo", {"text": "hi"})
        assert not result.is_error
    assert trail == ["a:in:tools/call", "b:in:tools/call", "c:in:tools/call", "handler:abc", "c:out", "b:out", "a:out"]


@pytest.mark.parametrize("era", ERAS)
async def test_middleware_can_answer_without_calling_the_handler(era: str) -> None:
    server = Server("mw")
    called: list[str] = []

    @server.tool
    def echo(text: str) -> str:
        called.append(text)
        return text

    @server.use
    async def short_circuit(ctx: Context, call_next: Any) -> Any:
        if ctx.method == "tools/call" and ctx.params.get("arguments", {}).get("text") == "blocked":
            return CallToolResult(is_error=True, content=[TextContent(text="blocked by policy")])
        return await call_next()

    async with Client(server, ClientOptions(protocol_version=era)) as c:
        result = await c.call_tool("echo", {"text": "blocked"})
        assert result.is_error
        assert text_of(result) == "blocked by policy"
        assert called == []
        assert text_of(await c.call_tool("echo", {"text": "fine"})) == "fine"


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_middleware_exception_is_an_internal_error(transport: str, era: str, caplog: pytest.LogCaptureFixture) -> None:
    async with connect(transport, era, caplog) as conn:
        err = await expect_error(conn.client.call_tool("guarded_plain", {}))
        ref = assert_internal_error(err)
        logs = await wait_for_log(conn, ref)
        assert SECRET in logs
        await conn.alive()


@pytest.mark.parametrize("era", ERAS)
async def test_middleware_exception_for_other_methods_too(era: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    server = Server("mw")

    @server.tool
    def echo(text: str) -> str:
        return text

    @server.resource("mw://r")
    def r() -> str:
        return "r"

    @server.use
    async def broken(ctx: Context, call_next: Any) -> Any:
        if ctx.method != "tools/call":
            raise ZeroDivisionError(SECRET)
        return await call_next()

    async with Client(server, ClientOptions(protocol_version=era)) as c:
        for call in (
            lambda: c.read_resource("mw://r"),
            c.list_tools,
            lambda: c.send_request("ping" if c.era == "legacy" else "server/discover"),
        ):
            err = await expect_error(call())
            assert_internal_error(err, logs=caplog.text)
        assert text_of(await c.call_tool("echo", {"text": "x"})) == "x"


# === exceptions carrying an HTTP status ==================================================================

LEGACY_STATUS = {
    400: -32602,
    422: -32602,
    401: -32001,
    403: -32003,
    404: -32004,
    408: -32008,
    409: -32009,
    429: -32029,
    301: -32000,
    302: -32000,
    304: -32000,
    402: -32000,
    405: -32000,
    410: -32000,
    418: -32000,
    451: -32000,
    499: -32000,
    100: -32603,
    200: -32603,
    204: -32603,
    500: -32603,
    502: -32603,
    503: -32603,
    504: -32603,
    599: -32603,
}


def modern_code(status: int) -> int:
    return -32602 if status in (400, 404, 409, 422) else -32603


@pytest.mark.parametrize("tool", ["http_error", "status_code_error"])
@pytest.mark.parametrize("era", ERAS)
async def test_http_status_exception_from_a_tool(era: str, tool: str, caplog: pytest.LogCaptureFixture) -> None:
    async with connect("memory", era, caplog) as conn:
        for status, legacy_code in LEGACY_STATUS.items():
            text = f"upstream said {status} {SECRET}"
            err = await expect_error(conn.client.call_tool(tool, {"status": status, "message": text}))
            if era == MODERN:
                assert err.code == modern_code(status), status
                assert "upstream said" not in err.message, "modern era collapses the message"
                assert SECRET not in err.message
                assert SECRET not in repr(err.data)
                assert err.message
            else:
                assert err.code == legacy_code, status
                assert err.message == text, "legacy era keeps the message"
        await conn.alive()


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_http_status_exception_key_rows(transport: str, era: str, caplog: pytest.LogCaptureFixture) -> None:
    async with connect(transport, era, caplog) as conn:
        c = conn.client
        # HttpError(404, "gone") from a tool, from a resource, from middleware
        err = await expect_error(c.call_tool("http_error", {"status": 404, "message": "gone"}))
        if era == MODERN:
            assert err.code == -32602
            assert "gone" not in err.message
        else:
            assert (err.code, err.message) == (-32004, "gone")

        err = await expect_error(c.read_resource("contract://http/404"))
        assert err.code == (-32602 if era == MODERN else -32004)
        assert ("resource is gone" in err.message) is (era == LEGACY)

        err = await expect_error(c.read_resource("contract://http/429"))
        assert err.code == (-32603 if era == MODERN else -32029)

        err = await expect_error(c.call_tool("guarded_http", {}))
        assert err.code == (-32603 if era == MODERN else -32003)
        if era == LEGACY:
            assert err.message == "forbidden by middleware"
        else:
            assert "forbidden by middleware" not in err.message

        err = await expect_error(c.call_tool("status_code_error", {"status": 409, "message": "conflict: version 3"}))
        assert err.code == (-32602 if era == MODERN else -32009)
        assert (err.message == "conflict: version 3") is (era == LEGACY)
        await conn.alive()


@pytest.mark.parametrize("era", ERAS)
async def test_http_status_from_prompt_and_completion(era: str) -> None:
    server = Server("http")

    @server.prompt
    def p(x: str = "") -> str:
        raise HttpError(401, "need a token")

    @server.completion(prompt="p")
    def comp(argument: str, value: str, context: dict[str, str]) -> list[str]:
        raise HttpError(400, "bad prefix")

    async with Client(server, ClientOptions(protocol_version=era)) as c:
        err = await expect_error(c.get_prompt("p"))
        assert err.code == (-32603 if era == MODERN else -32001)
        assert (err.message == "need a token") is (era == LEGACY)
        err = await expect_error(c.complete({"type": "ref/prompt", "name": "p"}, "x", "a"))
        assert err.code == -32602
        assert (err.message == "bad prefix") is (era == LEGACY)


@pytest.mark.parametrize("era", ERAS)
async def test_http_error_message_is_flattened_in_the_legacy_era(era: str) -> None:
    server = Server("http")

    @server.tool
    def fail() -> str:
        raise HttpError(403, "line one\nline two " + "y" * 3000)

    async with Client(server, ClientOptions(protocol_version=era)) as c:
        err = await expect_error(c.call_tool("fail", {}))
        assert "\n" not in err.message
        assert len(err.message.encode()) <= MAX_ERROR_TEXT
        if era == LEGACY:
            assert err.code == -32003
            assert err.message.startswith("line one line two yyy")
            assert err.message.endswith("…")


def test_http_error_is_public_and_carries_its_status() -> None:
    exc = HttpError(404, "gone")
    assert exc.status_code == 404
    assert "gone" in str(exc)
    assert "HttpError" in mcpkit.__all__
    assert "ToolError" in mcpkit.__all__


# === library validation errors ===========================================================================


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_unknown_tool_and_prompt(transport: str, era: str, caplog: pytest.LogCaptureFixture) -> None:
    async with connect(transport, era, caplog) as conn:
        c = conn.client
        err = await expect_error(c.call_tool("no_such_tool", {}))
        assert (err.code, err.message) == (-32602, "Unknown tool: no_such_tool")
        err = await expect_error(c.get_prompt("no_such_prompt"))
        assert (err.code, err.message) == (-32602, "Unknown prompt: no_such_prompt")

        err = await expect_error(c.call_tool("evil\nname\u2028here", {}))
        assert (err.code, err.message) == (-32602, "Unknown tool: evil name here")

        err = await expect_error(c.get_prompt("p" * 5000))
        assert err.code == -32602
        assert err.message.startswith("Unknown prompt: ppp")
        assert err.message.endswith("…")
        assert len(err.message.encode()) <= MAX_ERROR_TEXT + len("Unknown prompt: ")
        await conn.alive()


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_invalid_arguments_give_one_concise_line(transport: str, era: str, caplog: pytest.LogCaptureFixture) -> None:
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("echo", {}, "text"),  # missing required
        ("echo", {"text": 12}, "text"),  # wrong type
        ("typed_boom", {"message": "m", "count": "three"}, "count"),
        ("typed_boom", {"message": "m", "count": 1.5}, "count"),
        ("typed_boom", {"message": "m", "count": 1, "tags": ["a", 2]}, "tags"),
        ("typed_boom", {"message": "m", "count": 1, "ratio": "half"}, "ratio"),
        ("raw_boom", {"message": ["not", "a", "string"]}, "message"),
        ("raw_async_boom", {}, "message"),
    ]
    async with connect(transport, era, caplog) as conn:
        for tool, args, culprit in cases:
            err = await expect_error(conn.client.call_tool(tool, args))
            assert err.code == -32602, (tool, args)
            prefix = f"Invalid arguments for tool {tool}: "
            assert err.message.startswith(prefix), err.message
            reason = err.message[len(prefix) :]
            assert reason.strip(), "a reason must follow"
            assert culprit in reason, (culprit, reason)
            assert_one_line(err.message, 200)
            for dump_marker in ("Failed validating", "On instance", "{'type'", '{"type"', "Traceback"):
                assert dump_marker not in err.message
        await conn.alive()


@pytest.mark.parametrize("era", ERAS)
async def test_invalid_arguments_reason_survives_long_values(era: str) -> None:
    """The reason stays short and actionable even when the offending value is huge:
    the bound must not cut off the reason and leave only echoed input."""
    server = Server("long-values")
    schema = {
        "type": "object",
        "properties": {"code": {"type": "string", "maxLength": 3}, "count": {"type": "integer"}},
    }
    server.add_tool("limited", "Short strings only.", schema, lambda arguments: "ok")

    @server.tool
    def echo(text: str) -> str:
        return text

    async with Client(server, ClientOptions(protocol_version=era)) as c:
        for args in ({"code": "y" * 5000}, {"count": "z" * 5000}, {"count": {"k": list(range(2000))}}):
            err = await expect_error(c.call_tool("limited", args))
            assert err.code == -32602
            assert err.message.startswith("Invalid arguments for tool limited: ")
            assert_one_line(err.message, 300)
            assert ("code" in err.message) or ("count" in err.message)
            assert "y" * 200 not in err.message
            assert "z" * 200 not in err.message
        assert text_of(await c.call_tool("echo", {"text": "ok"})) == "ok"


@pytest.mark.parametrize("era", ERAS)
async def test_unencodable_mcp_error_data_still_gets_an_answer(era: str, caplog: pytest.LogCaptureFixture) -> None:
    """A handler's McpError whose data cannot be encoded as JSON is a server bug: the
    request must still be answered (-32603), not left without a response."""
    caplog.set_level(logging.CRITICAL + 1)
    server = Server("bad-data")

    @server.tool
    def bad_data() -> str:
        raise McpError(4000, "with odd data", data=object())

    @server.resource("bad://data")
    async def bad_resource() -> str:
        raise McpError(4000, "with odd data", data={"when": object()})

    @server.tool
    def echo(text: str) -> str:
        return text

    async with Client(server, ClientOptions(protocol_version=era, request_timeout=10)) as c:
        for call in (lambda: c.call_tool("bad_data", {}), lambda: c.read_resource("bad://data")):
            err = await expect_error(call())
            assert err.code == -32603
        assert text_of(await c.call_tool("echo", {"text": "ok"})) == "ok"


@pytest.mark.parametrize("era", ERAS)
async def test_unencodable_text_is_replaced_not_fatal(era: str) -> None:
    """Lone surrogates (not valid UTF-8) in tool error text become U+FFFD (§4)."""
    server = Server("surrogates")

    @server.tool
    def plain() -> str:
        raise RuntimeError("bad \udc80 byte")

    @server.tool
    def tool_err() -> str:
        raise ToolError("also \ud800 bad")

    async with Client(server, ClientOptions(protocol_version=era)) as c:
        assert text_of(await c.call_tool("plain", {})) == "bad \ufffd byte"
        assert text_of(await c.call_tool("tool_err", {})) == "also \ufffd bad"


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_unknown_resource(transport: str, era: str) -> None:
    async with raw_connection(transport) as raw:
        if era == LEGACY:
            await raw.initialize()
        send = raw.modern if era == MODERN else raw.request
        for uri in ("contract://missing", "contract://items/a/b", "other-scheme://ok"):
            msg, _ = await send("resources/read", {"uri": uri})
            err = error_of(msg)
            # -32602 in both eras: the modern era requires it; for the legacy era the
            # conformance suite grades -32602 a success and -32002 only a warning
            assert err["code"] == -32602, "mcpkit never uses -32002"
            assert err["data"] == {"uri": uri}
            assert_one_line(err["message"])
        await raw_alive(raw, era)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_bad_cursor(transport: str, era: str, caplog: pytest.LogCaptureFixture) -> None:
    async with connect(transport, era, caplog) as conn:
        c = conn.client
        for cursor in ("not-a-cursor", "eyJwYWdlIjogMn0=", "%%%", "\u00e9t\u00e9", "x" * 5000):
            for call in (c.list_tools, c.list_resources, c.list_resource_templates, c.list_prompts):
                err = await expect_error(call(cursor))
                assert (err.code, err.message) == (-32602, "Invalid cursor"), (call, cursor)
        await conn.alive()


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_malformed_uri(transport: str, era: str, caplog: pytest.LogCaptureFixture) -> None:
    async with connect(transport, era, caplog) as conn:
        for uri in ("not a uri", "", "no-scheme-here", "://missing-scheme", "contract://has space"):
            err = await expect_error(conn.client.read_resource(uri))
            assert err.code == -32602, uri
            assert err.message.strip()
            assert_one_line(err.message)
        await conn.alive()


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_unknown_method(transport: str, era: str, caplog: pytest.LogCaptureFixture) -> None:
    async with connect(transport, era, caplog) as conn:
        for method in ("tools/frobnicate", "nonsense", "resources/unsubscribe-all"):
            err = await expect_error(conn.client.send_request(method, {}))
            assert (err.code, err.message) == (-32601, f"Method not found: {method}")
        err = await expect_error(conn.client.send_request("bad\nmethod", {}))
        assert (err.code, err.message) == (-32601, "Method not found: bad method")
        await conn.alive()


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_output_schema_violations_are_internal_errors(transport: str, era: str, caplog: pytest.LogCaptureFixture) -> None:
    async with connect(transport, era, caplog) as conn:
        for tool in ("bad_point", "no_structured"):
            err = await expect_error(conn.client.call_tool(tool, {}))
            assert err.code == -32603, tool
            ref = reference_of(err.data)
            logs = await wait_for_log(conn, ref)
            assert tool in logs, "the log must say which tool broke its outputSchema"
            await conn.alive()


# === lifecycle and modern-era envelope errors (raw JSON-RPC) ===============================================


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_request_before_initialize_is_invalid_request(transport: str) -> None:
    async with raw_connection(transport) as raw:
        for method, params in [
            ("tools/list", None),
            ("tools/call", {"name": "echo", "arguments": {"text": "too early"}}),
            ("resources/read", {"uri": "contract://ok"}),
        ]:
            msg, _ = await raw.request(method, params)
            assert error_of(msg)["code"] == -32600, msg
            assert_one_line(error_of(msg)["message"])
        # the connection survives, and the handshake still works afterwards
        result = await raw.initialize()
        assert result["protocolVersion"] == LEGACY
        await raw_alive(raw, LEGACY)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_second_initialize_is_invalid_request(transport: str) -> None:
    async with raw_connection(transport) as raw:
        await raw.initialize()
        msg, _ = await raw.request(
            "initialize", {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "again", "version": "1"}}
        )
        assert error_of(msg)["code"] == -32600
        await raw_alive(raw, LEGACY)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_modern_unsupported_protocol_version(transport: str) -> None:
    async with raw_connection(transport) as raw:
        for requested in ("1900-01-01", "2099-12-31", "banana"):
            for method in ("tools/list", "server/discover", "tools/call"):
                params: dict[str, Any] = {"_meta": modern_meta(requested)}
                if method == "tools/call":
                    params.update(name="echo", arguments={"text": "x"})
                msg, _ = await raw.request(method, params)
                err = error_of(msg)
                assert err["code"] == -32022, msg
                data = err["data"]
                assert data["requested"] == requested
                assert isinstance(data["supported"], list)
                assert MODERN in data["supported"]
                assert requested not in data["supported"]
        await raw_alive(raw, MODERN)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_modern_request_missing_client_capabilities(transport: str) -> None:
    async with raw_connection(transport) as raw:
        for method in ("tools/list", "server/discover", "ping"):
            msg, _ = await raw.request(method, {"_meta": modern_meta(drop_caps=True)})
            err = error_of(msg)
            assert err["code"] == -32602, msg
            assert_one_line(err["message"])
        msg, _ = await raw.request("tools/list", {"_meta": modern_meta(caps="not an object")})
        assert error_of(msg)["code"] == -32602
        await raw_alive(raw, MODERN)


@pytest.mark.parametrize("era", ERAS)
async def test_malformed_meta_is_invalid_params_not_an_internal_error(era: str) -> None:
    async with raw_connection("memory") as raw:
        if era == LEGACY:
            await raw.initialize()
        for bad_meta in (5, "text", [1, 2]):
            msg, _ = await raw.request("tools/call", {"name": "echo", "arguments": {"text": "x"}, "_meta": bad_meta})
            err = error_of(msg)
            assert err["code"] in (-32602, -32600), f"_meta={bad_meta!r}: {err}"
            assert err["message"] != "Internal error"
        await raw_alive(raw, era)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_invalid_log_level_is_invalid_params(transport: str) -> None:
    """2026-07-28 logging: an unrecognized ``logLevel`` in ``_meta`` SHOULD be rejected with
    -32602; 2025-11-25: ``logging/setLevel`` with an unknown level is -32602."""
    async with raw_connection(transport) as raw:
        meta = modern_meta(**{"io.modelcontextprotocol/logLevel": "loud"})
        msg, _ = await raw.request("tools/call", {"name": "echo", "arguments": {"text": "x"}, "_meta": meta})
        assert error_of(msg)["code"] == -32602, msg
        await raw_alive(raw, MODERN)

        await raw.initialize()
        for level in ("loud", 5, None):
            msg, _ = await raw.request("logging/setLevel", {"level": level})
            assert error_of(msg)["code"] == -32602, msg
        msg, _ = await raw.request("logging/setLevel", {"level": "error"})
        assert "result" in msg
        await raw_alive(raw, LEGACY)


async def test_modern_requests_need_no_handshake_and_legacy_still_needs_one() -> None:
    """One dual-era server, one connection: modern requests are served statelessly,
    legacy ones still need ``initialize``."""
    async with raw_connection("memory") as raw:
        await raw_alive(raw, MODERN)
        msg, _ = await raw.request("tools/list")
        assert error_of(msg)["code"] == -32600


# === no handler exception ends the session =================================================================


@pytest.mark.parametrize("era", ERAS)
async def test_many_failures_then_success_in_memory(era: str, caplog: pytest.LogCaptureFixture) -> None:
    async with connect("memory", era, caplog) as conn:
        c = conn.client
        failing = [
            call
            for _ in range(5)
            for call in (
                c.call_tool("sync_boom", {"message": "a"}),
                c.call_tool("no_such_tool", {}),
                c.read_resource("contract://boom"),
                c.get_prompt("boom_prompt"),
                c.call_tool("guarded_plain", {}),
                c.call_tool("http_error", {"status": 500, "message": "x"}),
                c.call_tool("bad_point", {}),
                c.list_tools("bogus"),
                c.send_request("no/such/method"),
            )
        ]
        outcomes = await asyncio.gather(*failing, return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                assert isinstance(outcome, McpError), repr(outcome)
                assert not outcome.local, repr(outcome)
            else:
                assert getattr(outcome, "is_error", True)
        await conn.alive()


@pytest.mark.e2e
@pytest.mark.parametrize("era", ERAS)
async def test_base_exceptions_from_a_tool_do_not_end_the_server(era: str) -> None:
    """SystemExit or any other BaseException raised by a handler fails only that request
    (docs/errors.md §2: no handler exception, of any type, ends the session or the process)."""
    stdio = StdioTransport([sys.executable, str(SERVERS / "contract_errors.py")], stderr="capture")
    async with Client(stdio, ClientOptions(protocol_version=era, request_timeout=5)) as c:
        for tool in ("exit_sync", "exit_async", "base_exception"):
            outcome: CallToolResult | McpError
            try:
                outcome = await c.call_tool(tool, {})
            except McpError as err:
                outcome = err
            if isinstance(outcome, McpError):
                assert not outcome.local, f"{tool}: the server went away: {outcome!r}"
                assert outcome.code == -32603
            else:
                assert outcome.is_error
            text = await c.call_tool("echo", {"text": "survived"})
            assert text_of(text) == "survived"


def test_tool_error_is_an_exception_with_its_message() -> None:
    err = ToolError("exactly this")
    assert isinstance(err, Exception)
    assert err.message == "exactly this"
