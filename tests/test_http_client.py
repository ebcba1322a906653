"""The Streamable HTTP client transport against real servers on 127.0.0.1.

Servers run as subprocesses on free ports: one built with the official SDK (``mcp``) in
each of its modes (tests/servers/http_official.py) and a scripted raw-ASGI server for the
error paths, stream resumption and session expiry (tests/servers/http_fake.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from conftest import SERVERS, free_port
from mcpkit import Client, ClientOptions, ConnectionClosed, HttpTransport, McpError, RequestTimeout
from mcpkit.protocol.headers import decode_header_value, encode_header_value, x_mcp_header_map

LEGACY = ClientOptions(protocol_version="2025-11-25")
MODERN = ClientOptions(protocol_version="2026-07-28")
OFFICIAL_MODES = {
    "stateless-json": [],
    "stateless-sse": ["--sse"],
    "stateful-json": ["--stateful"],
    "stateful-sse": ["--stateful", "--sse", "--event-store"],
}


@contextlib.contextmanager
def _servers(commands: dict[str, list[str]]) -> Iterator[dict[str, str]]:
    """Start every server at once; yield name -> base URL once all listen (30 s at most)."""
    procs: dict[str, tuple[subprocess.Popen[bytes], int]] = {}
    try:
        for name, args in commands.items():
            port = free_port()
            cmd = [sys.executable, str(SERVERS / args[0]), str(port), *args[1:]]
            procs[name] = (subprocess.Popen(cmd, stdout=subprocess.DEVNULL), port)
        deadline = time.monotonic() + 30
        for name, (proc, port) in procs.items():
            while True:
                assert proc.poll() is None, f"server {name} exited with {proc.returncode}"
                assert time.monotonic() < deadline, f"server {name} did not start listening"
                try:
                    socket.create_connection(("127.0.0.1", port), 0.2).close()
                    break
                except OSError:
                    time.sleep(0.05)
        yield {name: f"http://127.0.0.1:{port}" for name, (_, port) in procs.items()}
    finally:
        for proc, _ in procs.values():
            proc.terminate()
        for proc, _ in procs.values():
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture(scope="module")
def official() -> Iterator[dict[str, str]]:
    with _servers({mode: ["http_official.py", *flags] for mode, flags in OFFICIAL_MODES.items()}) as urls:
        yield {mode: url + "/mcp" for mode, url in urls.items()}


@pytest.fixture(scope="module")
def fake() -> Iterator[str]:
    with _servers({"fake": ["http_fake.py"]}) as urls:
        yield urls["fake"]


async def _log(base: str) -> list[dict[str, Any]]:
    async with httpx.AsyncClient() as http:
        entries: list[dict[str, Any]] = (await http.get(base + "/_log")).json()
        return entries


def _text(result: Any) -> str:
    text: str = result.content[0].text
    return text


# --- the official SDK's server, every mode, both eras -----------------------------------------


@pytest.mark.parametrize("mode", list(OFFICIAL_MODES))
@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_official_server_end_to_end(official: dict[str, str], mode: str, era: str) -> None:
    transport = HttpTransport(official[mode])
    async with Client(transport, ClientOptions() if era == "modern" else LEGACY) as client:
        assert client.era == era
        assert (transport.session_id is not None) == (era == "legacy" and mode.startswith("stateful"))
        tools = await client.list_tools()
        assert {"echo", "count", "block", "region"} <= {t.name for t in tools.tools}
        assert _text(await client.call_tool("echo", {"text": "héllo"})) == "héllo"
        contents = (await client.read_resource("data://hello")).contents
        assert contents[0].text == "hello world"
        progress: list[tuple[float, float | None, str | None]] = []
        result = await client.call_tool("count", {"steps": 3}, on_progress=lambda p, t, m: progress.append((p, t, m)))
        assert _text(result) == "counted"
        if mode.endswith("sse"):  # JSON responses have nowhere to put notifications
            assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_official_server_checks_mirrored_param_headers(official: dict[str, str]) -> None:
    async with Client(HttpTransport(official["stateless-json"])) as client:
        assert client.era == "modern"
        # Not listed yet: the server answers HeaderMismatch, the transport lists the tools and retries.
        assert _text(await client.call_tool("region", {"region": "us-west1", "query": "q"})) == "us-west1|q"
        for value in ("Hello, 世界", " padded ", "=?base64?literal?=", "line1\nline2"):
            assert _text(await client.call_tool("region", {"region": value, "query": "q"})) == f"{value}|q"


@pytest.mark.parametrize(("mode", "options"), [("stateless-sse", None), ("stateful-sse", LEGACY), ("stateful-json", LEGACY)])
async def test_official_server_sees_deadline_as_cancellation(
    official: dict[str, str], mode: str, options: ClientOptions | None
) -> None:
    tag = f"deadline-{mode}-{options is not None}"
    async with Client(HttpTransport(official[mode]), options) as client:
        started = time.monotonic()
        with pytest.raises(RequestTimeout) as info:
            await client.call_tool("block", {"seconds": 10, "tag": tag}, timeout=0.5)
        assert info.value.local
        assert time.monotonic() - started < 2
        for _ in range(50):
            state = _text(await client.call_tool("state", {"tag": tag}))
            if state != "started":
                break
            await asyncio.sleep(0.05)
        assert state == "cancelled"


async def test_official_server_stream_resumed_with_last_event_id(official: dict[str, str]) -> None:
    transport = HttpTransport(official["stateful-sse"])
    async with Client(transport, LEGACY) as client:
        progress: list[float] = []
        result = await client.call_tool("polled", {"steps": 6}, on_progress=lambda p, t, m: progress.append(p))
        assert _text(result) == "polled"
        assert progress == [1, 2, 3, 4, 5, 6]


async def test_official_server_session_deleted_behind_the_clients_back(official: dict[str, str]) -> None:
    transport = HttpTransport(official["stateful-json"])
    async with Client(transport, LEGACY) as client:
        old = transport.session_id
        assert old is not None
        async with httpx.AsyncClient() as http:
            gone = await http.delete(
                official["stateful-json"], headers={"Mcp-Session-Id": old, "MCP-Protocol-Version": "2025-11-25"}
            )
            assert gone.status_code == 200
            assert (await http.post(official["stateful-json"], headers={"Mcp-Session-Id": old}, json={})).status_code == 404
        assert _text(await client.call_tool("echo", {"text": "again"})) == "again"
        assert transport.session_id not in (None, old)


# --- mcpkit's own HTTP server, both eras ---------------------------------------------------------

MCPKIT_MODES = {"auto": [], "json": ["--json"], "sse": ["--sse"]}


@pytest.fixture(scope="module")
def mcpkit_server() -> Iterator[dict[str, str]]:
    with _servers({mode: ["http_mcpkit.py", *flags] for mode, flags in MCPKIT_MODES.items()}) as urls:
        yield {mode: url + "/mcp" for mode, url in urls.items()}


@pytest.mark.parametrize("mode", list(MCPKIT_MODES))
@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_mcpkit_server_end_to_end(mcpkit_server: dict[str, str], mode: str, era: str) -> None:
    transport = HttpTransport(mcpkit_server[mode])
    async with Client(transport, ClientOptions() if era == "modern" else LEGACY) as client:
        assert client.era == era
        assert (transport.session_id is not None) == (era == "legacy")
        # region before tools/list: a HeaderMismatch makes the transport list the tools and retry
        assert _text(await client.call_tool("region", {"region": "Hello, 世界", "query": "q"})) == "Hello, 世界|q"
        assert {"echo", "count", "block", "region"} <= {t.name for t in (await client.list_tools()).tools}
        assert _text(await client.call_tool("echo", {"text": "héllo"})) == "héllo"
        assert (await client.read_resource("data://hello")).contents[0].text == "hello world"
        progress: list[float] = []
        assert _text(await client.call_tool("count", {"steps": 3}, on_progress=lambda p, t, m: progress.append(p))) == "counted"
        assert progress == ([] if mode == "json" else [1, 2, 3])
        tag = f"mcpkit-{mode}-{era}"
        with pytest.raises(RequestTimeout):
            await client.call_tool("block", {"seconds": 10, "tag": tag}, timeout=0.3)
        for _ in range(50):
            state = _text(await client.call_tool("state", {"tag": tag}))
            if state != "started":
                break
            await asyncio.sleep(0.05)
        assert state == "cancelled"


async def test_mcpkit_server_session_deleted_behind_the_clients_back(mcpkit_server: dict[str, str]) -> None:
    url = mcpkit_server["auto"]
    transport = HttpTransport(url)
    async with Client(transport, LEGACY) as client:
        old = transport.session_id
        assert old is not None
        async with httpx.AsyncClient() as http:
            gone = await http.delete(url, headers={"Mcp-Session-Id": old, "MCP-Protocol-Version": "2025-11-25"})
            assert gone.status_code in (200, 204)
        assert _text(await client.call_tool("echo", {"text": "again"})) == "again"
        assert transport.session_id not in (None, old)


# --- connection failures ----------------------------------------------------------------------


@pytest.mark.parametrize("options", [None, LEGACY, MODERN])
async def test_connection_refused_is_connection_closed_quickly(options: ClientOptions | None) -> None:
    started = time.monotonic()
    with pytest.raises(ConnectionClosed) as info:
        async with Client(HttpTransport(f"http://127.0.0.1:{free_port()}/mcp"), options) as client:
            await client.list_tools()  # a pinned modern client sends nothing before this
    assert info.value.local
    assert time.monotonic() - started < 2


async def test_server_going_away_fails_pending_and_later_requests() -> None:
    with _servers({"doomed": ["http_fake.py"]}) as urls:
        client = Client(HttpTransport(urls["doomed"] + "/modern"))
        await client.connect()
    try:
        # The server is gone now: the next request fails at once, and so does everything after.
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(client.list_tools(), 2)
        with pytest.raises(ConnectionClosed):
            await client.list_tools()
    finally:
        await client.close()


# --- HTTP errors become McpError with the status and an excerpt -----------------------------------


@pytest.mark.parametrize(("path", "status"), [("/status/500", 500), ("/status/502", 502), ("/status/403", 403)])
@pytest.mark.parametrize("options", [None, MODERN, LEGACY])
async def test_error_status_with_text_body(fake: str, path: str, status: int, options: ClientOptions | None) -> None:
    started = time.monotonic()
    with pytest.raises(McpError) as info:
        async with Client(HttpTransport(fake + path), options) as client:
            await client.list_tools()
    err = info.value
    assert time.monotonic() - started < 2
    assert not isinstance(err, ConnectionClosed)
    assert f"HTTP {status}" in err.message
    assert "upstream exploded" in err.message
    assert err.data["status"] == status
    assert err.data["retryAfter"] == "7"
    body = err.data["body"]
    assert body.startswith("upstream exploded")
    assert len(body.encode()) <= 512
    assert "\x07" not in body
    assert "\x1b" not in body
    assert "\x07" not in err.message


async def test_garbled_json_body(fake: str) -> None:
    with pytest.raises(McpError) as info:
        async with Client(HttpTransport(fake + "/garbled"), MODERN) as client:
            await client.list_tools()
    assert "Invalid JSON-RPC response" in info.value.message
    assert "HTTP 200" in info.value.message
    assert info.value.data["status"] == 200
    assert info.value.data["body"].startswith("<html>oops")


async def test_json_rpc_error_body_is_the_response(fake: str) -> None:
    with pytest.raises(McpError) as info:
        async with Client(HttpTransport(fake + "/rpcerror"), MODERN) as client:
            await client.list_tools()
    assert (info.value.code, info.value.message) == (-32602, "bad thing")


# --- modern era details -----------------------------------------------------------------------


async def test_modern_headers_and_invalid_tools_left_out(fake: str) -> None:
    async with Client(HttpTransport(fake + "/modern")) as client:
        assert client.era == "modern"
        names = [t.name for t in (await client.list_tools()).tools]
        assert names == ["headers", "drop"]  # "bad" puts x-mcp-header under "items"
        seen = json.loads(_text(await client.call_tool("headers", {"region": "us-west1", "opts": {"flag": True}, "n": 42})))
        assert seen == {
            "mcp-method": "tools/call",
            "mcp-name": "headers",
            "mcp-param-flag": "true",
            "mcp-param-n": "42",
            "mcp-param-region": "us-west1",
            "mcp-protocol-version": "2026-07-28",
        }
        seen = json.loads(_text(await client.call_tool("headers", {"region": "Hello, 世界", "opts": {}})))
        assert seen["mcp-param-region"] == "=?base64?SGVsbG8sIOS4lueVjA==?="
        assert "mcp-param-flag" not in seen
        assert "mcp-param-n" not in seen


async def test_modern_stream_ending_early_is_an_error(fake: str) -> None:
    async with Client(HttpTransport(fake + "/modern")) as client:
        progress: list[float] = []
        with pytest.raises(McpError) as info:
            await client.call_tool("drop", {}, on_progress=lambda p, t, m: progress.append(p), timeout=5)
        assert not info.value.local
        assert "closed the response stream before sending the response" in info.value.message
        assert progress == [1]


async def test_modern_deadline_closes_the_stream_and_posts_no_cancel(fake: str) -> None:
    async with Client(HttpTransport(fake + "/modern")) as client:
        with pytest.raises(RequestTimeout):
            await client.call_tool("hang", {}, timeout=0.3)
        for _ in range(40):
            log = await _log(fake)
            if any(e["method"] == "DISCONNECT" for e in log):
                break
            await asyncio.sleep(0.05)
        assert any(e["method"] == "DISCONNECT" for e in log)
        assert not any("notifications/cancelled" in e.get("body", "") for e in log)


async def test_modern_task_cancellation_closes_the_stream(fake: str) -> None:
    async with Client(HttpTransport(fake + "/modern")) as client:
        before = sum(e["method"] == "DISCONNECT" for e in await _log(fake))
        task = asyncio.create_task(client.call_tool("hang", {}))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(40):
            if sum(e["method"] == "DISCONNECT" for e in await _log(fake)) > before:
                break
            await asyncio.sleep(0.05)
        else:
            pytest.fail("the server never saw the disconnect")


# --- legacy era details -----------------------------------------------------------------------


async def test_legacy_stream_resumed_losing_no_event(fake: str) -> None:
    transport = HttpTransport(fake + "/legacy")
    async with Client(transport, LEGACY) as client:
        progress: list[float] = []
        result = await client.call_tool("stream", {}, on_progress=lambda p, t, m: progress.append(p))
        assert _text(result) == "streamed"
        assert progress == [1, 2, 3, 4, 5]
        log = await _log(fake)
        post = next(e for e in reversed(log) if e["method"] == "POST" and '"stream"' in e["body"])
        resume = next(e for e in reversed(log) if e["method"] == "GET" and e["headers"].get("last-event-id"))
        assert resume["headers"]["last-event-id"].endswith("-3")
        assert resume["headers"]["mcp-session-id"] == transport.session_id
        assert resume["headers"]["mcp-protocol-version"] == "2025-11-25"
        assert resume["time"] - post["time"] >= 0.14  # the server asked for retry: 150


async def test_legacy_session_headers_get_stream_and_delete(fake: str) -> None:
    transport = HttpTransport(fake + "/legacy")
    async with Client(transport, LEGACY) as client:
        session = transport.session_id
        assert session is not None
        assert _text(await client.call_tool("echo", {"text": "x"})) == "echo x"
        for _ in range(40):  # the GET stream brings a ping; the answer is POSTed back
            log = await _log(fake)
            answers = [e for e in log if e["method"] == "POST" and '"srv-1"' in e["body"]]
            if answers:
                break
            await asyncio.sleep(0.05)
        assert json.loads(answers[-1]["body"]) == {"jsonrpc": "2.0", "id": "srv-1", "result": {}}
        assert answers[-1]["headers"]["mcp-session-id"] == session
        posts = [e for e in log if e["method"] == "POST" and e["headers"].get("mcp-session-id") == session]
        assert all(e["headers"]["mcp-protocol-version"] == "2025-11-25" for e in posts)
        assert all(e["headers"]["accept"] == "application/json, text/event-stream" for e in posts)
        assert all(e["headers"]["content-type"] == "application/json" for e in posts)
    log = await _log(fake)
    assert any(e["method"] == "DELETE" and e["headers"].get("mcp-session-id") == session for e in log)


async def test_legacy_404_reinitializes_and_retries_once(fake: str) -> None:
    transport = HttpTransport(fake + "/legacy")
    async with Client(transport, LEGACY) as client:
        first = transport.session_id
        assert _text(await client.call_tool("forget", {})) == "forgotten"
        assert _text(await client.call_tool("echo", {"text": "after"})) == "echo after"
        assert transport.session_id not in (None, first)
        log = await _log(fake)
        reinit = [json.loads(e["body"]) for e in log if e["method"] == "POST" and "mcpkit-reinit-" in e["body"]]
        assert len(reinit) == 1
        assert reinit[0]["method"] == "initialize"
        assert any(
            e.get("headers", {}).get("mcp-session-id") == transport.session_id and "notifications/initialized" in e["body"]
            for e in log
        )


async def test_legacy_second_404_is_an_error(fake: str) -> None:
    async with Client(HttpTransport(fake + "/legacy404"), LEGACY) as client:
        before = sum("mcpkit-reinit-" in e.get("body", "") for e in await _log(fake))
        with pytest.raises(McpError) as info:
            await client.call_tool("echo", {"text": "x"})
        assert (info.value.code, info.value.message) == (-32600, "Session not found")
        assert sum("mcpkit-reinit-" in e.get("body", "") for e in await _log(fake)) == before + 1


async def test_legacy_deadline_posts_cancelled(fake: str) -> None:
    async with Client(HttpTransport(fake + "/legacy"), LEGACY) as client:
        with pytest.raises(RequestTimeout):
            await client.call_tool("stream", {}, timeout=0.1)  # the stream waits 150 ms to resume
        for _ in range(40):
            log = await _log(fake)
            if any("notifications/cancelled" in e.get("body", "") for e in log):
                break
            await asyncio.sleep(0.05)
        note = next(e for e in log if "notifications/cancelled" in e.get("body", ""))
        assert note["headers"]["mcp-session-id"]


# --- pieces -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        ("us-west1", "us-west1"),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
        ("a b", "a b"),
        ("tab\there", "=?base64?dGFiCWhlcmU=?="),
    ],
)
def test_header_value_encoding(value: str, encoded: str) -> None:
    assert encode_header_value(value) == encoded
    assert decode_header_value(encoded) == value


def test_malformed_sentinel_decodes_to_none() -> None:
    assert decode_header_value("=?base64?not base64!?=") is None
    assert decode_header_value("=?base64?//8=?=") is None  # not UTF-8
    assert decode_header_value("=?base64?SGk?=") is None  # not canonical (padding)


def test_x_mcp_header_map() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "x-mcp-header": "A"},
            "o": {"type": "object", "properties": {"b": {"type": "integer", "x-mcp-header": "B-2"}}},
            "c": {"type": "number"},
        },
    }
    assert x_mcp_header_map(schema) == {("a",): "A", ("o", "b"): "B-2"}
    assert x_mcp_header_map(None) == {}
    bad = [
        {"properties": {"a": {"type": "number", "x-mcp-header": "A"}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": "has space"}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": ""}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": "X"}, "b": {"type": "string", "x-mcp-header": "x"}}},
        {"properties": {"a": {"anyOf": [{"type": "string", "x-mcp-header": "A"}]}}},
        {"$defs": {"d": {"type": "string", "x-mcp-header": "A"}}},
        {"type": "string", "x-mcp-header": "Root"},
    ]
    for schema in bad:
        with pytest.raises(ValueError, match="x-mcp-header"):
            x_mcp_header_map(schema)


async def test_close_is_idempotent_and_send_after_close_is_dropped() -> None:
    transport = HttpTransport("http://127.0.0.1:9/mcp")
    closed: list[str | None] = []
    await transport.start(lambda data: None, closed.append)
    await transport.close()
    await transport.close()
    transport.send(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    assert closed == ["closed"]
