"""The deprecated HTTP+SSE transport (2024-11-05) on mcpkit's server, over raw HTTP.

tests/servers/sse_target.py runs under uvicorn on 127.0.0.1 with
``asgi_app(sse_transport=True)``; each test speaks to it with httpx: ``GET /sse`` for the
stream (its ``endpoint`` event, then ``message`` events), ``POST /messages?session_id=``
for each message. Covered: the endpoint event, initialize, tools/call, resources/read,
notifications (log messages, list changes), an elicitation round trip, cancellation, the
end of a session with its stream, and every refusal (400, 403, 404, 405, 406, 413, 415,
401 and insufficient scope, 503) — each leaving the process, the session and a request
in flight intact.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import subprocess
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from conftest import free_port, listening, serve_in_thread, server_command
from mcpkit import Server
from mcpkit.protocol.sse import SSEParser
from mcpkit.transports.http.server import sse_transport

pytestmark = pytest.mark.timeout(60)

OLD = "2024-11-05"
WAIT = 5.0  # seconds for any one expected event


@pytest.fixture(scope="module")
def target() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    with listening(server_command("sse_target", "--http", str(port)), port) as proc:
        yield f"http://127.0.0.1:{port}", proc


@pytest.fixture(scope="module")
def guarded() -> Iterator[str]:
    port = free_port()
    with listening(server_command("sse_target", "--http", str(port), "--auth"), port):
        yield f"http://127.0.0.1:{port}"


class SseSession:
    """One client of the HTTP+SSE transport: the open ``GET /sse`` stream, read on a task
    of its own, and POSTs to the endpoint it named."""

    def __init__(self, http: httpx.AsyncClient, base: str, headers: dict[str, str]) -> None:
        self.http = http
        self.base = base
        self.headers = headers
        self.endpoint = ""
        self.events: asyncio.Queue[tuple[str, str] | None] = asyncio.Queue()
        self.keepalives = 0
        self.notes: list[dict[str, Any]] = []
        self.status = 0

    async def read(self, started: asyncio.Future[None]) -> None:
        parser = SSEParser()
        headers = {"accept": "text/event-stream", **self.headers}
        try:
            async with self.http.stream("GET", f"{self.base}/sse", headers=headers) as resp:
                self.status = resp.status_code
                self.content_type = resp.headers.get("content-type", "")
                started.set_result(None)
                async for chunk in resp.aiter_raw():
                    self.keepalives += chunk.count(b": keep-alive")
                    for ev in parser.feed(chunk):
                        self.events.put_nowait((ev.event, ev.data))
        finally:
            if not started.done():
                started.set_result(None)
            self.events.put_nowait(None)

    async def next_event(self) -> tuple[str, str] | None:
        return await asyncio.wait_for(self.events.get(), WAIT)

    async def message(self) -> dict[str, Any]:
        """The next ``message`` event's JSON (the stream must not end first)."""
        event = await self.next_event()
        assert event is not None, "the stream ended"
        kind, data = event
        assert kind == "message", event
        decoded: dict[str, Any] = json.loads(data)
        return decoded

    async def post(self, message: Any, **kwargs: Any) -> httpx.Response:
        headers = {**self.headers, **kwargs.pop("headers", {})}
        if "content" not in kwargs:
            kwargs["json"] = message
        return await self.http.post(f"{self.base}{self.endpoint}", headers=headers, **kwargs)

    async def answer(self, rid: int) -> dict[str, Any]:
        """The response to request ``rid``; notifications before it are kept in ``notes``."""
        while True:
            message = await self.message()
            if message.get("id") == rid and "method" not in message:
                return message
            assert "id" not in message, f"unexpected message {message}"
            self.notes.append(message)

    async def request(self, rid: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            body["params"] = params
        resp = await self.post(body)
        assert resp.status_code == 202, resp.text
        assert resp.content == b""
        return await self.answer(rid)

    async def initialize(self, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
        params = {"protocolVersion": OLD, "capabilities": capabilities or {}, "clientInfo": {"name": "raw", "version": "1"}}
        result = (await self.request(0, "initialize", params))["result"]
        assert (await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})).status_code == 202
        return result  # type: ignore[no-any-return]

    async def call(self, rid: int, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        return await self.request(rid, "tools/call", {"name": tool, "arguments": arguments or {}})


@contextlib.asynccontextmanager
async def sse_session(base: str, *, headers: dict[str, str] | None = None) -> AsyncIterator[SseSession]:
    """Open ``GET /sse`` and wait for its endpoint event; closed (the stream too) at the end."""
    async with httpx.AsyncClient(timeout=10) as http:
        session = SseSession(http, base, headers or {})
        started: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        reader = asyncio.create_task(session.read(started))
        try:
            await asyncio.wait_for(started, WAIT)
            if session.status == 200:
                event = await session.next_event()
                assert event is not None
                assert event[0] == "endpoint"
                session.endpoint = event[1]
            yield session
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError):
                await reader


def text_of(response: dict[str, Any]) -> str:
    text: str = response["result"]["content"][0]["text"]
    return text


# --- the exchange ---------------------------------------------------------------------------------


async def test_endpoint_event_names_a_session_uri(target: tuple[str, Any]) -> None:
    base, _ = target
    async with sse_session(base) as one, sse_session(base) as two:
        assert one.status == 200
        assert one.content_type.startswith("text/event-stream")
        assert re.fullmatch(r"/messages\?session_id=[0-9a-f]{32}", one.endpoint), one.endpoint
        assert two.endpoint != one.endpoint


async def test_initialize_call_read_and_notifications(target: tuple[str, Any]) -> None:
    base, _ = target
    async with sse_session(base) as session:
        result = await session.initialize()
        assert result["protocolVersion"] == OLD
        assert result["serverInfo"]["name"] == "sse-target"
        tools = (await session.request(1, "tools/list"))["result"]["tools"]
        assert "echo" in {tool["name"] for tool in tools}
        assert text_of(await session.call(2, "echo", {"text": "over SSE"})) == "over SSE"
        assert text_of(await session.call(3, "chatty", {"steps": 2})) == "done"
        logged = [note["params"]["data"] for note in session.notes if note["method"] == "notifications/message"]
        assert logged == ["step 1", "step 2"]
        read = await session.request(4, "resources/read", {"uri": "note://hello"})
        assert read["result"]["contents"][0]["text"] == "Hello, SSE!"
        missing = await session.request(5, "tools/call", {"name": "nope", "arguments": {}})
        assert "error" in missing or missing["result"]["isError"] is True


async def test_list_changes_reach_other_sessions(target: tuple[str, Any]) -> None:
    base, _ = target
    async with sse_session(base) as listener, sse_session(base) as actor:
        await listener.initialize()
        await actor.initialize()
        assert text_of(await actor.call(1, "add_tool", {"name": "fresh_tool"})) == "added fresh_tool"
        note = await listener.message()
        assert note["method"] == "notifications/tools/list_changed"


async def test_elicitation_round_trip(target: tuple[str, Any]) -> None:
    """The server's question goes out on the stream; the client's answer comes back by POST."""
    base, _ = target
    async with sse_session(base) as session:
        await session.initialize({"elicitation": {}})
        assert (
            await session.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask_name"}})
        ).status_code == 202
        question = await session.message()
        assert question["method"] == "elicitation/create"
        assert question["params"]["message"] == "What is your name?"
        answer = {"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"name": "Ada"}}}
        assert (await session.post(answer)).status_code == 202
        assert text_of(await session.answer(1)) == "Hello, Ada!"


async def test_cancellation_stops_the_handler(target: tuple[str, Any]) -> None:
    base, _ = target
    async with sse_session(base) as session:
        await session.initialize()
        before = int(text_of(await session.call(1, "cancelled")))
        assert (
            await session.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "hang"}})
        ).status_code == 202
        await asyncio.sleep(0.2)
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
        assert (await session.post(cancel)).status_code == 202
        after = await _cancelled_reaches(session, before + 1, rid=3)
        assert after == before + 1
        assert session.events.empty()  # no response to the cancelled request


async def _cancelled_reaches(session: SseSession, count: int, *, rid: int) -> int:
    """Poll the ``cancelled`` tool (bounded) until it reports ``count``."""
    for attempt in range(50):
        seen = int(text_of(await session.call(rid + attempt, "cancelled")))
        if seen >= count:
            return seen
        await asyncio.sleep(0.05)
    return seen


async def test_closing_the_stream_ends_the_session(target: tuple[str, Any]) -> None:
    """Its handlers are cancelled and a later POST gets 404."""
    base, proc = target
    async with sse_session(base) as watcher:
        await watcher.initialize()
        before = int(text_of(await watcher.call(1, "cancelled")))
        async with sse_session(base) as doomed:
            await doomed.initialize()
            hang = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "hang"}}
            assert (await doomed.post(hang)).status_code == 202
            endpoint = doomed.endpoint
        assert await _cancelled_reaches(watcher, before + 1, rid=10) == before + 1
        async with httpx.AsyncClient(timeout=10) as http:
            late = await http.post(f"{base}{endpoint}", json={"jsonrpc": "2.0", "id": 2, "method": "ping"})
        assert late.status_code == 404
        assert text_of(await watcher.call(100, "echo", {"text": "still here"})) == "still here"
    assert proc.poll() is None


async def test_idle_stream_gets_keepalives(target: tuple[str, Any]) -> None:
    base, _ = target
    async with sse_session(base) as session:
        for _ in range(40):
            if session.keepalives:
                break
            await asyncio.sleep(0.05)
        assert session.keepalives >= 1


# --- refusals ---------------------------------------------------------------------------------------


async def test_bad_inputs_leave_the_session_and_requests_intact(target: tuple[str, Any]) -> None:
    """Every refusal is answered alone: a question waiting for its answer, the session and
    the process go on."""
    base, proc = target
    async with sse_session(base) as session, httpx.AsyncClient(timeout=10) as http:
        await session.initialize({"elicitation": {}})
        assert (
            await session.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask_name"}})
        ).status_code == 202
        question = await session.message()
        assert question["method"] == "elicitation/create"

        no_session = await http.post(f"{base}/messages", json={"jsonrpc": "2.0", "id": 50, "method": "ping"})
        assert no_session.status_code == 400
        unknown = await http.post(f"{base}/messages?session_id={'0' * 32}", json={"jsonrpc": "2.0", "id": 50, "method": "ping"})
        assert unknown.status_code == 404
        big = await session.post(None, content=b'{"x":"' + b"a" * 70_000 + b'"}', headers={"content-type": "application/json"})
        assert big.status_code == 413
        wrong_type = await session.post(None, content=b"{}", headers={"content-type": "text/plain"})
        assert wrong_type.status_code == 415
        garbled = await session.post(None, content=b"{not json", headers={"content-type": "application/json"})
        assert garbled.status_code == 400
        assert garbled.json()["error"]["code"] == -32700
        assert garbled.json()["id"] is None
        invalid = await session.post({"jsonrpc": "2.0", "id": 51, "method": 5})
        assert invalid.status_code == 400
        assert invalid.json()["error"]["code"] == -32600
        assert (await session.message())["id"] == 51  # its client waits on the stream too
        modern = {
            "jsonrpc": "2.0",
            "id": 52,
            "method": "tools/list",
            "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}},
        }
        assert (await session.post(modern)).status_code == 202
        refused = await session.message()
        assert (refused["id"], refused["error"]["code"]) == (52, -32600)

        post_sse = await http.post(f"{base}/sse", json={})
        assert (post_sse.status_code, post_sse.headers["allow"]) == (405, "GET")
        assert (await http.delete(f"{base}/sse")).status_code == 405
        get_messages = await http.get(f"{base}{session.endpoint}")
        assert (get_messages.status_code, get_messages.headers["allow"]) == (405, "POST")
        json_only = await http.get(f"{base}/sse", headers={"accept": "application/json"})
        assert json_only.status_code == 406
        for headers in ({"host": "evil.example"}, {"origin": "http://evil.example"}):
            assert (await http.get(f"{base}/sse", headers={"accept": "text/event-stream", **headers})).status_code == 403
            assert (
                await session.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
            ).status_code == 403

        answer = {"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"name": "Grace"}}}
        assert (await session.post(answer)).status_code == 202
        assert text_of(await session.answer(1)) == "Hello, Grace!"
        assert text_of(await session.call(2, "echo", {"text": "fine"})) == "fine"
    assert proc.poll() is None


async def test_max_sessions_is_enforced() -> None:
    port = free_port()
    with listening(server_command("sse_target", "--http", str(port), "--max-sessions", "2"), port) as proc:
        base = f"http://127.0.0.1:{port}"
        async with sse_session(base) as one, sse_session(base) as two:
            assert one.endpoint
            assert two.endpoint
            async with httpx.AsyncClient(timeout=10) as http:
                full = await http.get(f"{base}/sse", headers={"accept": "text/event-stream"})
            assert full.status_code == 503
            assert full.headers["retry-after"]
            await one.initialize()  # the open sessions go on
        async with sse_session(base) as again:  # the closed ones made room
            assert again.status == 200
            await again.initialize()
        assert proc.poll() is None


async def test_authorization_protects_both_endpoints(guarded: str) -> None:
    base = guarded
    alice, bob = {"authorization": "Bearer alice-token"}, {"authorization": "Bearer bob-token"}
    async with httpx.AsyncClient(timeout=10) as http:
        anonymous = await http.get(f"{base}/sse", headers={"accept": "text/event-stream"})
        assert anonymous.status_code == 401
        assert "resource_metadata=" in anonymous.headers["www-authenticate"]
        weak = await http.get(f"{base}/sse", headers={"accept": "text/event-stream", "authorization": "Bearer weak-token"})
        assert weak.status_code == 403
        assert "insufficient_scope" in weak.headers["www-authenticate"]
        async with sse_session(base, headers=alice) as session:
            assert session.status == 200
            await session.initialize()
            url = f"{base}{session.endpoint}"
            body = {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}
            unsigned = await http.post(url, json=body)
            assert unsigned.status_code == 401
            assert "resource_metadata=" in unsigned.headers["www-authenticate"]
            assert (await http.post(url, json=body, headers=bob)).status_code == 403  # not bob's session
            secret = await session.post({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "secret"}})
            assert secret.status_code == 403
            assert "admin" in secret.headers["www-authenticate"]
            admin = {"authorization": "Bearer admin-token"}  # alice again, with the scope
            granted = await session.post(
                {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "secret"}}, headers=admin
            )
            assert granted.status_code == 202
            assert text_of(await session.answer(7)) == "the secret"
            assert text_of(await session.call(8, "echo", {"text": "ok"})) == "ok"


async def test_shutdown_ends_idle_streams_promptly() -> None:
    """SIGTERM: a stream with nothing in progress ends at once, and the process exits."""
    port = free_port()
    with listening(server_command("sse_target", "--http", str(port)), port) as proc:
        async with sse_session(f"http://127.0.0.1:{port}") as session:
            await session.initialize()
            proc.terminate()
            assert await session.next_event() is None  # the stream ended (within WAIT)
        await asyncio.to_thread(proc.wait, 5)
        assert proc.returncode is not None


def _limited_server() -> Server:
    server = Server("limits", "1.0.0")

    @server.tool
    def big(size: int) -> str:
        """A long answer."""
        return "x" * size

    @server.tool
    async def hang() -> str:
        """Wait until cancelled."""
        await asyncio.Event().wait()
        return "never"

    return server


async def test_requests_past_the_limits_get_429(monkeypatch: pytest.MonkeyPatch) -> None:
    """``max_session_requests`` in progress, and answers piling up for a client that does
    not read its stream: further requests are refused, the session goes on."""
    monkeypatch.setattr(sse_transport, "_MAX_BACKLOG", 4)
    app = _limited_server().asgi_app(sse_transport=True, max_session_requests=2)
    with serve_in_thread(app) as port:
        base = f"http://127.0.0.1:{port}"
        async with (
            httpx.AsyncClient(timeout=10) as http,
            http.stream("GET", f"{base}/sse", headers={"accept": "text/event-stream"}) as stream,
        ):
            chunks = stream.aiter_raw()
            first = await anext(chunks)
            endpoint = first.decode().split("data: ")[1].split("\n")[0]
            url = f"{base}{endpoint}"
            init = {"protocolVersion": OLD, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
            assert (
                await http.post(url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
            ).status_code == 202
            hangs = [{"jsonrpc": "2.0", "id": f"h{i}", "method": "tools/call", "params": {"name": "hang"}} for i in range(3)]
            assert [(await http.post(url, json=body)).status_code for body in hangs] == [202, 202, 429]
            for i in range(2):  # cancelling them makes room
                cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": f"h{i}"}}
                assert (await http.post(url, json=cancel)).status_code == 202
            statuses: list[int] = []
            refused: dict[str, Any] = {}
            for rid in range(1, 200):  # answers of 1 MB each, unread: the socket buffers fill
                body = {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "method": "tools/call",
                    "params": {"name": "big", "arguments": {"size": 1_000_000}},
                }
                resp = await http.post(url, json=body)
                statuses.append(resp.status_code)
                if resp.status_code != 202:
                    refused = resp.json()
                    break
                await asyncio.sleep(0.01)
            assert statuses[-1] == 429, statuses
            assert "read its stream" in refused["error"]["message"]
            received = 0
            async for chunk in chunks:  # reading the stream makes room again
                received += len(chunk)
                if received > 4 * 1_000_000:
                    break
            await asyncio.sleep(0.2)
            ping = await http.post(url, json={"jsonrpc": "2.0", "id": "late", "method": "ping"})
            assert ping.status_code == 202


async def test_custom_paths_under_a_mount() -> None:
    """Mounted at ``/api`` with its own paths: the endpoint event names the mounted URI."""
    from starlette.applications import Starlette
    from starlette.routing import Mount

    app = _limited_server().asgi_app(sse_transport=True, sse_path="/events", messages_path="/post")
    host = Starlette(routes=[Mount("/api", app=app)], lifespan=app.lifespan)
    with serve_in_thread(host) as port:
        base = f"http://127.0.0.1:{port}"
        async with httpx.AsyncClient(timeout=10) as http:
            assert (await http.get(f"{base}/api/sse", headers={"accept": "text/event-stream"})).status_code == 404
            async with http.stream("GET", f"{base}/api/events", headers={"accept": "text/event-stream"}) as stream:
                parser, lines = SSEParser(), stream.aiter_raw()
                events = parser.feed(await anext(lines))
                assert events[0].event == "endpoint"
                assert re.fullmatch(r"/api/post\?session_id=[0-9a-f]{32}", events[0].data), events[0].data
                ping = await http.post(f"{base}{events[0].data}", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
                assert ping.status_code == 202
                while not (events := parser.feed(await anext(lines))):
                    pass
                assert json.loads(events[0].data) == {"jsonrpc": "2.0", "id": 1, "result": {}}


def test_paths_must_not_collide() -> None:
    server = _limited_server()
    for options in ({"sse_path": "/mcp"}, {"messages_path": "/sse"}, {"sse_path": "events"}):
        with pytest.raises(ValueError, match="path"):
            server.asgi_app(sse_transport=True, **options)
