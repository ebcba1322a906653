"""The client's error contract (docs/errors.md §4), through the public API.

Over a real stdio server process (``tests/support/servers/basic.py``) and in memory (the same
``Server`` object, or one built here), in both protocol eras: deadlines, cancellation,
error responses, tool failures, connection loss and era negotiation.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from mcpkit import (
    CallToolResult,
    Client,
    ClientOptions,
    ConnectionClosed,
    Context,
    McpError,
    RequestOptions,
    RequestTimeout,
    Server,
    StdioTransport,
)
from support.eras import LEGACY, MODERN
from support.paths import SERVERS
from support.transports import MEMORY_AND_STDIO
from support.waiting import until

SERVER = str(SERVERS / "basic.py")
BAD_TIMEOUTS = [0, 0.0, -1, -0.001, math.nan, math.inf, -math.inf]
BAD_IDS = ["zero", "zero-float", "negative", "tiny-negative", "nan", "inf", "-inf"]


def _load_basic_server() -> Server:
    spec = importlib.util.spec_from_file_location("mcpkit_tests_basic_server", SERVER)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    server = module.server
    assert isinstance(server, Server)
    return server


BASIC = _load_basic_server()  # the stdio server's own object, served in memory


def tag() -> str:
    return uuid.uuid4().hex


def text_of(result: CallToolResult) -> str:
    assert len(result.content) == 1
    text = getattr(result.content[0], "text", None)
    assert isinstance(text, str), result
    return text


async def wait_state(client: Client, tag: str, state: str) -> None:
    """Wait (server-side, event-driven) until the ``sleep`` call tagged ``tag`` reached
    ``state``; fails if it does not within 10 s."""
    result = await client.call_tool("wait_for", {"tag": tag, "state": state, "timeout": 10.0}, timeout=20)
    assert text_of(result) == state, f"the server never saw sleep {tag!r} {state}"


async def echo_works(client: Client) -> None:
    result = await client.call_tool("echo", {"text": "still fine"}, timeout=10)
    assert not result.is_error
    assert text_of(result) == "still fine"


def stdio() -> StdioTransport:
    return StdioTransport([sys.executable, SERVER])


def target(transport: str) -> Any:
    return stdio() if transport == "stdio" else BASIC


def options(era: str, **kw: Any) -> ClientOptions:
    return ClientOptions(protocol_version=LEGACY if era == "legacy" else None, **kw)


@pytest.fixture(
    params=[
        pytest.param(("memory", "modern"), id="memory-modern"),
        pytest.param(("stdio", "modern"), id="stdio-modern", marks=pytest.mark.e2e),
        pytest.param(("memory", "legacy"), id="memory-legacy"),
        pytest.param(("stdio", "legacy"), id="stdio-legacy", marks=pytest.mark.e2e),
    ],
)
async def client(request: pytest.FixtureRequest) -> AsyncIterator[Client]:
    transport, era = request.param
    async with Client(target(transport), options(era)) as c:
        assert c.era == era
        yield c


# --- defaults and validation ---------------------------------------------------------------


def test_default_request_timeout_is_30_seconds() -> None:
    assert ClientOptions().request_timeout == 30.0
    assert Client(BASIC).options.request_timeout == 30.0
    assert Client(stdio()).options.request_timeout == 30.0
    assert RequestOptions().timeout is None  # None: the client's default applies


@pytest.mark.parametrize("value", BAD_TIMEOUTS, ids=BAD_IDS)
def test_client_options_reject_bad_timeouts(value: float) -> None:
    with pytest.raises(ValueError, match="timeout"):
        ClientOptions(request_timeout=value)


@pytest.mark.parametrize("value", BAD_TIMEOUTS, ids=BAD_IDS)
def test_request_options_reject_bad_timeouts(value: float) -> None:
    with pytest.raises(ValueError, match="timeout"):
        RequestOptions(timeout=value)


def test_good_timeouts_are_accepted() -> None:
    assert ClientOptions(request_timeout=0.001).request_timeout == 0.001
    assert ClientOptions(request_timeout=5).request_timeout == 5
    assert RequestOptions(timeout=1e6).timeout == 1e6


def recording_server() -> tuple[Server, list[str]]:
    """A server that records every method that reaches its middleware."""
    server = Server("recording", "1.0.0")
    seen: list[str] = []

    @server.use
    async def record(ctx: Context, call_next: Callable[[], Awaitable[Any]]) -> Any:
        seen.append(ctx.method)
        return await call_next()

    @server.tool
    def echo(text: str) -> str:
        return text

    @server.tool
    def whoami(ctx: Context) -> str:
        return f"{ctx.era} {ctx.protocol_version}"

    @server.resource("demo://r")
    def r() -> str:
        return "r"

    @server.prompt
    def p() -> str:
        return "p"

    return server, seen


TYPED_CALLS: dict[str, Callable[[Client, float], Awaitable[Any]]] = {
    "call_tool": lambda c, t: c.call_tool("echo", {"text": "x"}, timeout=t),
    "list_tools": lambda c, t: c.list_tools(timeout=t),
    "read_resource": lambda c, t: c.read_resource("demo://r", timeout=t),
    "list_resources": lambda c, t: c.list_resources(timeout=t),
    "list_resource_templates": lambda c, t: c.list_resource_templates(timeout=t),
    "list_prompts": lambda c, t: c.list_prompts(timeout=t),
    "get_prompt": lambda c, t: c.get_prompt("p", timeout=t),
    "complete": lambda c, t: c.complete({"type": "ref/prompt", "name": "p"}, "a", "", timeout=t),
    "ping": lambda c, t: c.ping(timeout=t),
    "discover": lambda c, t: c.discover(timeout=t),
}


@pytest.mark.parametrize("call", list(TYPED_CALLS), ids=list(TYPED_CALLS))
async def test_typed_calls_reject_bad_timeouts_before_sending(call: str) -> None:
    server, seen = recording_server()
    async with Client(server) as client:
        await TYPED_CALLS[call](client, 5.0)  # a good timeout works
        for value in BAD_TIMEOUTS:
            before = len(seen)
            with pytest.raises(ValueError, match="timeout"):
                await TYPED_CALLS[call](client, value)
            await client.ping()  # ordered after anything the bad call might have sent
            ping = "server/discover" if client.era == "modern" else "ping"  # 2026-07-28 has no ping
            assert seen[before:] == [ping], f"timeout={value!r} still sent {seen[before:-1]}"


# --- deadlines -----------------------------------------------------------------------------


async def test_timeout_raises_request_timeout_and_cancels_on_the_server(client: Client) -> None:
    t = tag()
    started = time.monotonic()
    with pytest.raises(RequestTimeout) as info:
        await client.call_tool("sleep", {"seconds": 30, "tag": t}, timeout=0.5)
    elapsed = time.monotonic() - started
    assert 0.45 <= elapsed < 10, elapsed  # the deadline, not the handler's 30 s
    err = info.value
    assert isinstance(err, McpError)
    assert err.code == -32001
    assert err.message == "Request timed out"
    assert err.local is True
    assert isinstance(err.data, dict)
    assert set(err.data) == {"id"}
    # the request was written, so the server got notifications/cancelled and stopped it
    await wait_state(client, t, "cancelled")
    # data.id is the id of the request the server saw
    assert json.loads(text_of(await client.call_tool("request_id", {"tag": t}))) == err.data["id"]
    await echo_works(client)


@pytest.mark.parametrize("era", ["modern", "legacy"])
@pytest.mark.parametrize("transport", MEMORY_AND_STDIO)
async def test_client_wide_default_deadline_applies(transport: str, era: str) -> None:
    # The default deadline bounds the legacy handshake too: a spawned server gets 3 s to start.
    deadline = 0.5 if transport == "memory" else 3.0
    async with Client(target(transport), options(era, request_timeout=deadline)) as short:
        t = tag()
        with pytest.raises(RequestTimeout):
            await short.call_tool("sleep", {"seconds": 30, "tag": t})
        await wait_state(short, t, "cancelled")
        with pytest.raises(RequestTimeout):
            await short.send_request("tools/call", {"name": "sleep", "arguments": {"seconds": 30}})
        await echo_works(short)


async def test_send_request_timeout_via_request_options(client: Client) -> None:
    t = tag()
    with pytest.raises(RequestTimeout) as info:
        await client.send_request(
            "tools/call", {"name": "sleep", "arguments": {"seconds": 30, "tag": t}}, RequestOptions(timeout=0.3)
        )
    assert info.value.code == -32001
    assert info.value.local is True
    await wait_state(client, t, "cancelled")
    result = await client.send_request("tools/call", {"name": "echo", "arguments": {"text": "x"}}, RequestOptions(timeout=10))
    assert result["content"] == [{"type": "text", "text": "x"}]


# --- cancellation by the caller -------------------------------------------------------------


async def test_cancelling_the_awaiting_task_cancels_on_the_server(client: Client) -> None:
    t = tag()
    task = asyncio.ensure_future(client.call_tool("sleep", {"seconds": 30, "tag": t}))
    await wait_state(client, t, "started")
    assert not task.done()
    task.cancel()
    started = time.monotonic()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 10  # at once, not when the handler's 30 s are over
    assert task.cancelled()
    await wait_state(client, t, "cancelled")
    await echo_works(client)


async def test_cancelling_with_asyncio_timeout_propagates_as_timeout_error(client: Client) -> None:
    """An outer ``asyncio.timeout`` cancels the call: the server is told, and the
    caller's own timeout machinery sees what it expects."""
    t = tag()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.5):
            await client.call_tool("sleep", {"seconds": 30, "tag": t})
    await wait_state(client, t, "cancelled")
    await echo_works(client)


# --- errors and failed operations ----------------------------------------------------------


async def test_error_response_raises_mcp_error(client: Client) -> None:
    with pytest.raises(McpError) as info:
        await client.call_tool("no_such_tool", {})
    err = info.value
    assert type(err) is McpError
    assert err.local is False
    assert err.code == -32602
    assert err.message == "Unknown tool: no_such_tool"
    assert "-32602" in str(err)
    assert "Unknown tool: no_such_tool" in str(err)
    await echo_works(client)


async def test_deliberate_mcp_error_arrives_verbatim(client: Client) -> None:
    with pytest.raises(McpError) as info:
        await client.call_tool("mcp_error", {"code": 4242, "message": "chosen by the tool"})
    err = info.value
    assert (err.code, err.message, err.data) == (4242, "chosen by the tool", {"detail": "chosen on purpose"})
    assert err.local is False
    assert "4242" in str(err)
    assert "chosen by the tool" in str(err)


async def test_unknown_method_raises_method_not_found(client: Client) -> None:
    with pytest.raises(McpError) as info:
        await client.send_request("no/such/method", {})
    assert info.value.code == -32601
    assert info.value.local is False
    await echo_works(client)


async def test_is_error_result_is_returned_not_raised(client: Client) -> None:
    result = await client.call_tool("fail", {"message": "the operation failed\nbadly"})
    assert isinstance(result, CallToolResult)
    assert result.is_error is True
    assert text_of(result) == "the operation failed badly"
    await echo_works(client)


async def test_invalid_arguments_are_a_protocol_error(client: Client) -> None:
    with pytest.raises(McpError) as info:
        await client.call_tool("echo", {"text": 5})
    assert info.value.code == -32602
    assert info.value.message.startswith("Invalid arguments for tool echo: ")
    assert "\n" not in info.value.message


# --- a scripted raw server: what the client really writes ---------------------------------

SCRIPTED_SERVER = textwrap.dedent(
    """
    import json, sys, time
    seen = []
    def send(obj):
        sys.stdout.write(json.dumps(obj) + "\\n")
        sys.stdout.flush()
    for line in sys.stdin:
        msg = json.loads(line)
        seen.append(msg)
        if "id" not in msg or "method" not in msg:
            continue
        method, rid = msg["method"], msg["id"]
        name = (msg.get("params") or {}).get("name")
        if method == "server/discover":
            result = {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}
        elif name == "cancel_me":
            # the server gives up on the request (legacy servers may)
            send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid, "reason": "shutting down"}})
            continue
        elif name == "late":
            time.sleep(3)  # answers long after the client's deadline (0.3 s), and ignores its cancel
            result = {"resultType": "complete", "content": [{"type": "text", "text": "too late"}]}
        elif name == "bad_utf8":
            # a response that is not valid UTF-8 (so not valid JSON)
            text = '{"jsonrpc": "2.0", "id": %s, "result": {"content": [{"type": "text", "text": "X"}]}}'
            sys.stdout.buffer.write((text % json.dumps(rid)).encode().replace(b"X", b"\\xff\\xfe") + b"\\n")
            sys.stdout.flush()
            continue
        elif name == "seen":
            result = {"resultType": "complete", "content": [{"type": "text", "text": json.dumps(seen)}]}
        else:
            result = {"resultType": "complete"}
        send({"jsonrpc": "2.0", "id": rid, "result": result})
    """
)


class Watched(StdioTransport):
    """A :class:`StdioTransport` that keeps every message the client has written."""

    def __init__(self, command: list[str]) -> None:
        super().__init__(command)
        self.sent: list[dict[str, Any]] = []

    def send(self, data: bytes) -> None:
        self.sent.append(json.loads(data))
        super().send(data)


def scripted() -> Watched:
    return Watched([sys.executable, "-c", SCRIPTED_SERVER])


@pytest.mark.e2e  # a scripted server process
async def test_peer_cancelling_our_request_raises_32800() -> None:
    async with Client(scripted()) as client:
        assert client.era == "modern"
        with pytest.raises(McpError) as info:
            await client.call_tool("cancel_me", {}, timeout=10)
        assert type(info.value) is McpError
        assert info.value.code == -32800
        assert info.value.message == "Request cancelled"
        await client.ping(timeout=10)  # the connection is fine


@pytest.mark.e2e  # a scripted server process
async def test_timeout_writes_notifications_cancelled_and_ignores_the_late_response() -> None:
    async with Client(scripted()) as client:
        with pytest.raises(RequestTimeout) as info:
            await client.call_tool("late", {}, timeout=0.3)
        rid = info.value.data["id"]
        # the server answers "late" (ignored by the client) before it reads the next call
        result = await client.call_tool("seen", {}, timeout=10)
        seen = json.loads(text_of(result))
        calls = [m for m in seen if m.get("method") == "tools/call"]
        assert calls[0]["id"] == rid
        assert calls[0]["params"]["name"] == "late"
        cancels = [m for m in seen if m.get("method") == "notifications/cancelled"]
        assert len(cancels) == 1
        assert "id" not in cancels[0]
        assert cancels[0]["params"]["requestId"] == rid
        assert seen.index(cancels[0]) < seen.index(calls[1])  # written at the deadline, before the next call
        await client.ping(timeout=10)


@pytest.mark.e2e  # a scripted server process
async def test_cancelling_the_task_writes_notifications_cancelled() -> None:
    transport = scripted()
    async with Client(transport) as client:
        task = asyncio.ensure_future(client.call_tool("late", {}, timeout=10))
        # the request is written (the server holds it for 3 s)
        await until(lambda: any(m.get("params", {}).get("name") == "late" for m in transport.sent), what="the call written")
        assert not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        seen = json.loads(text_of(await client.call_tool("seen", {}, timeout=10)))
        late = next(m for m in seen if m.get("method") == "tools/call")
        cancels = [m for m in seen if m.get("method") == "notifications/cancelled"]
        assert [c["params"]["requestId"] for c in cancels] == [late["id"]]


@pytest.mark.e2e  # a scripted server process
async def test_a_response_that_is_not_utf8_is_an_mcp_error_not_a_crash() -> None:
    async with Client(scripted()) as client:
        with pytest.raises(McpError):  # a local error, or the deadline: never a UnicodeDecodeError
            await client.call_tool("bad_utf8", {}, timeout=2)
        await client.ping(timeout=10)


# --- progress ------------------------------------------------------------------------------


async def test_on_progress_receives_the_calls_progress(client: Client) -> None:
    got: list[tuple[float, float | None, str | None]] = []
    result = await client.call_tool("count", {"steps": 3}, on_progress=lambda p, t, m: got.append((p, t, m)))
    assert text_of(result) == "counted"
    assert got == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    # without a callback no progress is asked for, and nothing breaks
    assert text_of(await client.call_tool("count", {"steps": 2})) == "counted"


# --- connection loss -----------------------------------------------------------------------


@pytest.mark.e2e
async def test_sigkill_fails_all_pending_calls_with_connection_closed_without_waiting_for_their_deadlines() -> None:
    """The pipe closing ends every call in flight (docs/errors.md: within a second on a
    quiet machine); here: long before the 30 s default deadline that would end them too."""
    transport = stdio()
    client = Client(transport)
    await client.connect()
    try:
        tags = [tag() for _ in range(10)]
        tasks = [asyncio.ensure_future(client.call_tool("sleep", {"seconds": 60, "tag": t})) for t in tags]
        for t in tags:  # all ten are in progress on the server
            await wait_state(client, t, "started")
        assert not any(task.done() for task in tasks)
        pid = transport.pid
        assert pid is not None
        started = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        _, pending = await asyncio.wait(tasks, timeout=20)
        elapsed = time.monotonic() - started
        assert not pending, f"{len(pending)} calls still pending 20 s after the server died"
        assert elapsed < 10, f"took {elapsed:.2f} s"
        for task in tasks:
            exc = task.exception()
            assert isinstance(exc, ConnectionClosed), repr(exc)
            assert not isinstance(exc, BaseExceptionGroup)
            assert isinstance(exc, McpError)
            assert exc.local is True
        # a request after the connection closed fails at once
        started = time.monotonic()
        with pytest.raises(ConnectionClosed):
            await client.call_tool("echo", {"text": "x"})
        with pytest.raises(ConnectionClosed):
            await client.ping()
        with pytest.raises(ConnectionClosed):
            await client.send_notification("notifications/roots/list_changed")
        assert time.monotonic() - started < 10  # at once: not after the 30 s default deadline
    finally:
        await asyncio.wait_for(client.close(), 10)  # closes cleanly, no ExceptionGroup, no hang
    await client.close()  # idempotent
    assert transport.returncode == -signal.SIGKILL


async def test_requests_after_close_raise_connection_closed_immediately(client: Client) -> None:
    await echo_works(client)
    await client.close()
    started = time.monotonic()
    with pytest.raises(ConnectionClosed) as info:
        await client.call_tool("echo", {"text": "x"})
    assert info.value.local is True
    with pytest.raises(ConnectionClosed):
        await client.send_request("ping")
    with pytest.raises(ConnectionClosed):
        await client.list_tools(timeout=30)
    assert time.monotonic() - started < 10  # at once: not after a deadline


async def test_close_fails_pending_calls_with_connection_closed(client: Client) -> None:
    t = tag()
    task = asyncio.ensure_future(client.call_tool("sleep", {"seconds": 30, "tag": t}))
    await wait_state(client, t, "started")
    await asyncio.wait_for(client.close(), 10)
    with pytest.raises(ConnectionClosed):
        await asyncio.wait_for(task, 10)


@pytest.mark.e2e
async def test_server_exiting_on_its_own_fails_pending_calls() -> None:
    script = "import sys\nsys.stdin.readline()\nsys.exit(3)\n"  # reads the probe, exits without answering
    client = Client(StdioTransport([sys.executable, "-c", script]), ClientOptions(request_timeout=60, discover_timeout=60))
    started = time.monotonic()
    with pytest.raises(ConnectionClosed):
        await client.connect()
    assert time.monotonic() - started < 20  # when it exits, not at the 60 s deadline
    await asyncio.wait_for(client.close(), 10)


@pytest.mark.e2e
async def test_server_that_cannot_start_raises_os_error() -> None:
    client = Client(StdioTransport([str(Path(SERVER).parent / "does-not-exist")]))
    with pytest.raises(FileNotFoundError):
        await client.connect()


CLIENT_PROCESS = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from mcpkit import Client, ConnectionClosed, StdioTransport

    class Counting(StdioTransport):
        sleeps = 0

        def send(self, data):
            self.sleeps += b'"sleep"' in data
            super().send(data)

    async def main():
        transport = Counting([sys.executable, SERVER])
        async with Client(transport) as client:
            calls = [asyncio.ensure_future(client.call_tool("sleep", {"seconds": 60})) for _ in range(10)]
            async with asyncio.timeout(10):
                while transport.sleeps < 10:  # each call writes its request
                    await asyncio.sleep(0.01)
            await client.call_tool("echo", {"text": "x"})  # answered after the ten were read
            os.kill(transport.pid, signal.SIGKILL)
            results = await asyncio.gather(*calls, return_exceptions=True)
            assert all(isinstance(r, ConnectionClosed) for r in results), results
        print("ok", flush=True)

    asyncio.run(main())
    """
)


@pytest.mark.e2e
def test_client_process_exits_promptly_after_the_server_is_killed() -> None:
    """The whole client process — event loop shutdown, interpreter exit — does not hang."""
    code = f"SERVER = {SERVER!r}\n" + CLIENT_PROCESS
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=30, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
    assert "ExceptionGroup" not in proc.stderr
    assert time.monotonic() - started < 10


# --- era negotiation -----------------------------------------------------------------------


async def test_default_probes_server_discover_and_ends_up_modern_in_memory() -> None:
    server, seen = recording_server()
    async with Client(server) as client:
        assert seen[0] == "server/discover"
        assert client.era == "modern"
        assert client.protocol_version == MODERN
        assert text_of(await client.call_tool("whoami")) == f"modern {MODERN}"
        assert seen[1:] == ["tools/call"]


@pytest.mark.e2e
async def test_default_ends_up_modern_over_stdio() -> None:
    async with Client(stdio()) as client:
        assert client.era == "modern"
        assert client.protocol_version == MODERN
        assert text_of(await client.call_tool("whoami")) == f"modern {MODERN}"
        assert "tools" in client.server_capabilities


@pytest.mark.parametrize("transport", MEMORY_AND_STDIO)
async def test_pinned_legacy_version_does_initialize(transport: str) -> None:
    async with Client(target(transport), ClientOptions(protocol_version=LEGACY)) as client:
        assert client.era == "legacy"
        assert client.protocol_version == LEGACY
        assert client.server_info is not None
        assert client.server_info.name == "basic"
        assert text_of(await client.call_tool("whoami")) == f"legacy {LEGACY}"
        await echo_works(client)


async def test_pinned_legacy_does_not_probe() -> None:
    server, seen = recording_server()
    async with Client(server, ClientOptions(protocol_version=LEGACY)) as client:
        assert client.era == "legacy"
        await client.call_tool("echo", {"text": "x"})
        assert "server/discover" not in seen
        assert seen == ["tools/call"]
