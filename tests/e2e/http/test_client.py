"""The Streamable HTTP client transport against real servers on 127.0.0.1.

Servers run as subprocesses on free ports: mcpkit's own in each response mode
(tests/support/servers/http_mcpkit.py) and a scripted raw-ASGI server for the error paths,
stream resumption and session expiry (tests/support/servers/http_fake.py). Against the
official SDK's server: tests/interop/test_http_client_official_server.py.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpkit import Client, ClientOptions, ConnectionClosed, HttpTransport, McpError, RequestTimeout, Server
from support.eras import MODERN as MODERN_VERSION
from support.ports import free_port
from support.processes import load_server, servers
from support.serving import serve_in_thread

LEGACY = ClientOptions(protocol_version="2025-11-25")
MODERN = ClientOptions(protocol_version="2026-07-28")


@pytest.fixture(scope="module")
def fake() -> Iterator[str]:
    with servers({"fake": ["http_fake.py"]}) as urls:
        yield urls["fake"]


async def _log(base: str) -> list[dict[str, Any]]:
    async with httpx.AsyncClient() as http:
        entries: list[dict[str, Any]] = (await http.get(base + "/_log")).json()
        return entries


async def _log_when(
    base: str, *, method: str = "", contains: str = "", session: str = "", count: int = 1
) -> list[dict[str, Any]]:
    """The fake server's log once ``count`` entries have ``method``, ``contains`` in their
    body and session id ``session`` (each: any if empty), or as it is after 10 s (the
    caller asserts on it)."""
    query = {"method": method, "contains": contains, "session": session, "count": str(count), "timeout": "10"}
    async with httpx.AsyncClient(timeout=20) as http:
        entries: list[dict[str, Any]] = (await http.get(base + "/_wait", params=query)).json()
        return entries


def _count(log: list[dict[str, Any]], method: str = "", contains: str = "") -> int:
    return sum(1 for e in log if method in ("", e["method"]) and contains in e.get("body", ""))


def patient(options: ClientOptions | None) -> ClientOptions:
    """``options`` (or the defaults) with 30 s deadlines: what "at once" is told apart from."""
    return dataclasses.replace(options or ClientOptions(), discover_timeout=30, request_timeout=30)


def _text(result: Any) -> str:
    text: str = result.content[0].text
    return text


# --- mcpkit's own HTTP server, both eras ---------------------------------------------------------

MCPKIT_MODES = {"auto": [], "json": ["--json"], "sse": ["--sse"]}


@pytest.fixture(scope="module")
def mcpkit_server() -> Iterator[dict[str, str]]:
    with servers({mode: ["http_mcpkit.py", *flags] for mode, flags in MCPKIT_MODES.items()}) as urls:
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
            await client.call_tool("block", {"seconds": 10, "tag": tag}, timeout=1.0)
        assert _text(await client.call_tool("settled", {"tag": tag})) == "cancelled"


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
        async with Client(HttpTransport(f"http://127.0.0.1:{free_port()}/mcp"), patient(options)) as client:
            await client.list_tools()  # a pinned modern client sends nothing before this
    assert info.value.local
    assert time.monotonic() - started < 10  # at once: not at a 30 s deadline


async def test_server_going_away_fails_pending_and_later_requests() -> None:
    with servers({"doomed": ["http_fake.py"]}) as urls:
        client = Client(HttpTransport(urls["doomed"] + "/modern"))
        await client.connect()
    try:
        # The server is gone now: the next request fails at once, and so does everything after.
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(client.list_tools(), 10)
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
        async with Client(HttpTransport(fake + path), patient(options)) as client:
            await client.list_tools()
    err = info.value
    assert time.monotonic() - started < 10  # at once: not at a 30 s deadline
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


async def test_modern_headers_and_invalid_tools_left_out(fake: str, caplog: pytest.LogCaptureFixture) -> None:
    transport = HttpTransport(fake + "/modern")
    async with Client(transport) as client:
        assert client.era == "modern"
        with caplog.at_level(logging.WARNING, logger="mcpkit.http"):
            names = [t.name for t in (await client.list_tools()).tools]
            assert [t.name for t in (await client.list_tools()).tools] == names
        assert names == ["headers", "drop"]  # "bad" puts x-mcp-header under "items"
        # issue 25: left out, but not silently: said once, and kept where a host can show it
        warned = [r.getMessage() for r in caplog.records if r.name == "mcpkit.http"]
        assert len(warned) == 1, warned
        assert "'bad'" in warned[0]
        assert "x-mcp-header" in warned[0]
        assert list(transport.rejected_tools) == ["bad"]
        assert "properties" in transport.rejected_tools["bad"]
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
    earlier = await _log(fake)
    start, before = len(earlier), _count(earlier, "DISCONNECT")
    async with Client(HttpTransport(fake + "/modern")) as client:
        progress: list[float] = []
        with pytest.raises(RequestTimeout):
            await client.call_tool("hang", {}, timeout=1.0, on_progress=lambda p, t, m: progress.append(p))
        assert progress == [1]  # the stream was open when the deadline came
        log = (await _log_when(fake, method="DISCONNECT", count=before + 1))[start:]  # what this test caused
        assert _count(log, "DISCONNECT") == 1, "the server never saw the disconnect"
        assert not any("notifications/cancelled" in e.get("body", "") for e in log)


async def test_modern_task_cancellation_closes_the_stream(fake: str) -> None:
    async with Client(HttpTransport(fake + "/modern")) as client:
        before = _count(await _log(fake), "DISCONNECT")
        opened = asyncio.Event()
        task = asyncio.create_task(client.call_tool("hang", {}, on_progress=lambda p, t, m: opened.set()))
        await asyncio.wait_for(opened.wait(), 10)  # the response stream is open
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        log = await _log_when(fake, method="DISCONNECT", count=before + 1)
        assert _count(log, "DISCONNECT") == before + 1, "the server never saw the disconnect"


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
        # the GET stream brings a ping; the answer is POSTed back
        log = await _log_when(fake, method="POST", contains='"srv-1"', session=session)
        answers = [
            e for e in log if e["method"] == "POST" and '"srv-1"' in e["body"] and e["headers"].get("mcp-session-id") == session
        ]
        assert answers, "the ping on the GET stream was never answered in the session"
        assert json.loads(answers[-1]["body"]) == {"jsonrpc": "2.0", "id": "srv-1", "result": {}}
        posts = [e for e in log if e["method"] == "POST" and e["headers"].get("mcp-session-id") == session]
        assert all(e["headers"]["mcp-protocol-version"] == "2025-11-25" for e in posts)
        assert all(e["headers"]["accept"] == "application/json, text/event-stream" for e in posts)
        assert all(e["headers"]["content-type"] == "application/json" for e in posts)
    log = await _log(fake)
    assert any(e["method"] == "DELETE" and e["headers"].get("mcp-session-id") == session for e in log)


async def test_legacy_404_reinitializes_and_retries_once(fake: str) -> None:
    transport = HttpTransport(fake + "/legacy")
    before = _count(await _log(fake), "POST", "mcpkit-reinit-")
    async with Client(transport, LEGACY) as client:
        first = transport.session_id
        assert _text(await client.call_tool("forget", {})) == "forgotten"
        assert _text(await client.call_tool("echo", {"text": "after"})) == "echo after"
        assert transport.session_id not in (None, first)
        log = await _log(fake)
        reinit = [json.loads(e["body"]) for e in log if e["method"] == "POST" and "mcpkit-reinit-" in e["body"]][before:]
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
    transport = HttpTransport(fake + "/legacy")
    async with Client(transport, LEGACY) as client:
        with pytest.raises(RequestTimeout):
            await client.call_tool("stream", {}, timeout=0.1)  # the stream waits 150 ms to resume
        session = transport.session_id
        assert session is not None
        log = await _log_when(fake, method="POST", contains="notifications/cancelled", session=session)
        notes = [e for e in log if "notifications/cancelled" in e.get("body", "")]
        assert any(e["headers"].get("mcp-session-id") == session for e in notes), "no notifications/cancelled in the session"


# --- pieces -----------------------------------------------------------------------------------


async def test_close_is_idempotent_and_send_after_close_is_dropped() -> None:
    transport = HttpTransport("http://127.0.0.1:9/mcp")
    closed: list[str | None] = []
    await transport.start(lambda data: None, closed.append)
    await transport.close()
    await transport.close()
    transport.send(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    assert closed == ["closed"]


# --- a client's modern revision refused with -32022 mid-session ---------------------------------------

POLLING: Server = load_server("polling_http").server


class _Refusing:
    """An ASGI wrapper: the first ``refusals`` modern requests get -32022 (HTTP 400) with
    ``data.supported`` = ``offered``; the rest reach the app. Records each request's
    method and protocol version header."""

    def __init__(self, app: Any, offered: list[str], refusals: int) -> None:
        self.app, self.offered, self.refusals = app, offered, refusals
        self.seen: list[tuple[str, str | None]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = json.loads(b"".join(chunks))
        version = dict(scope["headers"]).get(b"mcp-protocol-version", b"").decode() or None
        self.seen.append((body.get("method"), version))
        if "id" in body and self.refusals > 0:
            self.refusals -= 1
            error = {"code": -32022, "message": "Unsupported protocol version", "data": {"supported": self.offered}}
            raw = json.dumps({"jsonrpc": "2.0", "id": body["id"], "error": error}).encode()
            await send({"type": "http.response.start", "status": 400, "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": raw})
            return
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            message: dict[str, Any] = await receive()
            return message

        await self.app(scope, replay, send)


async def test_a_32022_mid_session_is_retried_once_with_an_offered_version() -> None:
    app = _Refusing(POLLING.asgi_app(), [MODERN_VERSION, "2025-11-25"], refusals=1)
    with serve_in_thread(app) as port:
        options = ClientOptions(protocol_version=MODERN_VERSION, request_timeout=5)
        async with Client(HttpTransport(f"http://127.0.0.1:{port}/mcp"), options) as client:
            result = await client.call_tool("echo", {"text": "retried"})
            assert result.content[0].text == "retried"  # type: ignore[union-attr]
            assert client.protocol_version == MODERN_VERSION
            await client.list_tools()
    assert app.seen == [("tools/call", MODERN_VERSION), ("tools/call", MODERN_VERSION), ("tools/list", MODERN_VERSION)]


async def test_a_32022_offering_nothing_we_speak_is_raised() -> None:
    app = _Refusing(POLLING.asgi_app(), ["2099-01-01", "2025-11-25"], refusals=99)
    with serve_in_thread(app) as port:
        options = ClientOptions(protocol_version=MODERN_VERSION, request_timeout=5)
        async with Client(HttpTransport(f"http://127.0.0.1:{port}/mcp"), options) as client:
            with pytest.raises(McpError) as caught:
                await client.call_tool("echo", {"text": "x"})
    assert caught.value.code == -32022
    assert not caught.value.local
    assert app.seen == [("tools/call", MODERN_VERSION)]


async def test_a_32022_for_the_retry_too_is_raised_after_one_retry() -> None:
    app = _Refusing(POLLING.asgi_app(), [MODERN_VERSION], refusals=99)
    with serve_in_thread(app) as port:
        options = ClientOptions(protocol_version=MODERN_VERSION, request_timeout=5)
        async with Client(HttpTransport(f"http://127.0.0.1:{port}/mcp"), options) as client:
            with pytest.raises(McpError) as caught:
                await client.list_tools()
    assert caught.value.code == -32022
    assert app.seen == [("tools/list", MODERN_VERSION), ("tools/list", MODERN_VERSION)]
