"""The deprecated HTTP+SSE transport (2024-11-05) on mcpkit's server, over raw HTTP.

tests/support/servers/sse_target.py runs under uvicorn on 127.0.0.1 with
``asgi_app(sse_transport=True)``; each test speaks to it with httpx: ``GET /sse`` for the
stream (its ``endpoint`` event, then ``message`` events), ``POST /messages?session_id=``
for each message. Covered: the endpoint event, initialize, tools/call, resources/read,
notifications (log messages, list changes), an elicitation round trip, cancellation, the
end of a session with its stream, and every refusal (400, 403, 404, 405, 406, 408, 413,
415, 401 and insufficient scope, 429, 503) — each leaving the process, the session and a
request in flight intact. Also: answers for a client that does not read its stream are
bounded in bytes, an id in use is refused on the POST only, batches are refused, two
streams are isolated, an expired token is refused mid-session, the Host/Origin checks
match the MCP endpoint's, and shutdown answers the requests in progress.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from mcpkit import Server
from mcpkit.protocol.sse import SSEParser
from mcpkit.transports.http.sse import session as sse_queue
from support.ports import free_port
from support.processes import listening, server_command
from support.serving import serve_in_thread
from support.waiting import until

pytestmark = pytest.mark.timeout(60)

OLD = "2024-11-05"
WAIT = 10.0  # seconds for any one expected event


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
        #: How the stream broke off, if it did (None: it ended properly, or goes on).
        self.broken: BaseException | None = None

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
        except httpx.HTTPError as exc:
            self.broken = exc
            raise
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
        started = int(text_of(await session.call(1000, "hanging")))
        assert (
            await session.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "hang"}})
        ).status_code == 202
        assert await _reaches(session, "hanging", started + 1, rid=1001) == started + 1  # the handler runs
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
        assert (await session.post(cancel)).status_code == 202
        after = await _cancelled_reaches(session, before + 1, rid=3)
        assert after == before + 1
        assert session.events.empty()  # no response to the cancelled request


async def _reaches(session: SseSession, tool: str, count: int, *, rid: int) -> int:
    """Poll ``tool`` (a counter of the server's) until it reports ``count``, for 10 s at
    most; what it reports then. Each poll is request ``rid``, ``rid + 1``, ..."""
    deadline = time.monotonic() + WAIT
    attempt = 0
    while True:
        seen = int(text_of(await session.call(rid + attempt, tool)))
        if seen >= count or time.monotonic() > deadline:
            return seen
        attempt += 1
        await asyncio.sleep(0.02)


async def _cancelled_reaches(session: SseSession, count: int, *, rid: int) -> int:
    """Poll the ``cancelled`` tool until it reports ``count`` (see :func:`_reaches`)."""
    return await _reaches(session, "cancelled", count, rid=rid)


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
        await until(lambda: session.keepalives >= 1, what="a keep-alive comment on the idle stream")


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
        await asyncio.to_thread(proc.wait, 15)
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
    monkeypatch.setattr(sse_queue, "MAX_BACKLOG", 4)
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
            deadline = time.monotonic() + 30
            rid = 1
            while rid < 200 and time.monotonic() < deadline:  # answers of 1 MB each, unread: the socket buffers fill
                body = {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "method": "tools/call",
                    "params": {"name": "big", "arguments": {"size": 1_000_000}},
                }
                resp = await http.post(url, json=body)
                statuses.append(resp.status_code)
                if resp.status_code == 429 and "the limit is 2" in resp.json()["error"]["message"]:
                    await asyncio.sleep(0.02)  # two calls still run (or the cancels are still on their way): again
                    continue
                if resp.status_code != 202:
                    refused = resp.json()
                    break
                rid += 1
            assert statuses[-1] == 429, statuses
            assert "read its stream" in refused["error"]["message"]
            received = 0
            async for chunk in chunks:  # reading the stream makes room again
                received += len(chunk)
                if received > 4 * 1_000_000:
                    break

            async def accepted() -> bool:
                ping = await http.post(url, json={"jsonrpc": "2.0", "id": f"late-{time.monotonic()}", "method": "ping"})
                assert ping.status_code in (202, 429), ping.text
                return ping.status_code == 202

            await until(accepted, what="a request is taken again once the client reads its stream")


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


# --- hardening (issue 16 review) ------------------------------------------------------------------


async def _open_unread(http: httpx.AsyncClient, base: str) -> tuple[Any, str]:
    """``GET /sse`` read only as far as its endpoint event: (the chunk iterator, POST URL)."""
    stream = await http.send(http.build_request("GET", f"{base}/sse", headers={"accept": "text/event-stream"}), stream=True)
    chunks = stream.aiter_raw()
    first = await anext(chunks)
    return chunks, base + first.decode().split("data: ")[1].split("\n")[0]


async def test_answers_waiting_for_an_unread_stream_are_bounded_in_bytes() -> None:
    """A client that never reads its stream cannot make the server hold more than about
    ``MAX_BACKLOG_BYTES`` of answers for it: past that, its requests get 429 (with 1 MB
    answers, long before the 1,024-message bound); reading the stream makes room."""
    app = _limited_server().asgi_app(sse_transport=True)
    with serve_in_thread(app) as port:
        base = f"http://127.0.0.1:{port}"
        async with httpx.AsyncClient(timeout=10) as http:
            chunks, url = await _open_unread(http, base)
            init = {"protocolVersion": OLD, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
            assert (
                await http.post(url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
            ).status_code == 202
            accepted, refused = 0, None
            for rid in range(1, 61):
                body = {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "method": "tools/call",
                    "params": {"name": "big", "arguments": {"size": 1 << 20}},
                }
                resp = await http.post(url, json=body)
                if resp.status_code != 202:
                    refused = resp
                    break
                accepted += 1
                await asyncio.sleep(0.02)  # the pace of the POSTs (the verdict is a count bound, not a time)
            assert refused is not None, f"{accepted} answers of 1 MiB queued for a client that does not read"
            assert refused.status_code == 429
            assert refused.headers["retry-after"]
            assert "read its stream" in refused.json()["error"]["message"]
            budget = sse_queue.MAX_BACKLOG_BYTES >> 20
            assert accepted <= budget + 12, accepted  # + what the socket buffers hold
            received = 0
            async for chunk in chunks:  # reading the stream makes room again
                received += len(chunk)
                if received > accepted << 20:
                    break
            ping = await http.post(url, json={"jsonrpc": "2.0", "id": "late", "method": "ping"})
            assert ping.status_code == 202


async def test_an_id_in_use_is_refused_on_the_post_only(target: tuple[str, Any]) -> None:
    """A request reusing the id of one in progress gets 400 -32600 on its POST, and
    nothing on the stream: there the error would be taken for the first request's
    answer, and that answer lost."""
    base, _ = target
    async with sse_session(base) as session:
        await session.initialize({"elicitation": {}})
        assert (
            await session.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask_name"}})
        ).status_code == 202
        question = await session.message()
        assert question["method"] == "elicitation/create"
        again = await session.post({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert again.status_code == 400
        assert (again.json()["id"], again.json()["error"]["code"]) == (1, -32600)
        assert "in use" in again.json()["error"]["message"]
        answer = {"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"name": "Ada"}}}
        assert (await session.post(answer)).status_code == 202
        assert text_of(await session.answer(1)) == "Hello, Ada!"


async def test_batches_and_non_objects_are_refused_alone(target: tuple[str, Any]) -> None:
    """A JSON-RPC batch (an array) is refused with 400 -32600, id null: 2024-11-05 defines
    no batches (2025-03-26 added them, 2025-06-18 removed them), and none of it runs.
    So are JSON values that are not objects, and bodies that are not UTF-8 (-32700).
    Nothing reaches the stream; the session goes on."""
    base, proc = target
    async with sse_session(base) as session:
        await session.initialize()
        batch = [{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "b"}}}]
        for body, code in (
            (json.dumps(batch).encode(), -32600),
            (b"42", -32600),
            (b'"text"', -32600),
            (b"null", -32600),
            (b'{"jsonrpc": "2.0", "id": 8, "method": "\xff"}', -32700),
        ):
            resp = await session.post(None, content=body, headers={"content-type": "application/json"})
            assert resp.status_code == 400, body
            assert resp.headers["content-type"] == "application/json"
            assert (resp.json()["id"], resp.json()["error"]["code"]) == (None, code), body
        assert text_of(await session.call(9, "echo", {"text": "after"})) == "after"
        assert session.notes == []  # nothing came on the stream for the refused bodies
    assert proc.poll() is None


async def test_two_streams_are_two_isolated_sessions(target: tuple[str, Any]) -> None:
    """The same request ids in two sessions at once: each answer and each log message
    reaches only its own stream."""
    base, _ = target
    async with sse_session(base) as one, sse_session(base) as two:
        await one.initialize()
        await two.initialize()
        for session, text in ((one, "one"), (two, "two")):
            call = {"name": "echo", "arguments": {"text": text}}
            assert (await session.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})).status_code == 202
        chatty = {"name": "chatty", "arguments": {"steps": 3}}
        assert (await one.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": chatty})).status_code == 202
        assert text_of(await one.answer(1)) == "one"
        assert text_of(await two.answer(1)) == "two"
        assert text_of(await one.answer(2)) == "done"
        assert len(one.notes) == 3
        assert text_of(await two.call(3, "echo", {"text": "still two"})) == "still two"
        assert two.notes == []


async def test_expired_token_is_refused_mid_session() -> None:
    """A token whose ``exp`` passes while its session is open is refused (401
    invalid_token) on both endpoints, even from a verifier that does not check ``exp``
    (past the 30 s leeway for clock skew); a fresh token of the same subject goes on in
    the same session."""
    from mcpkit.auth.server import ResourceServer
    from mcpkit.auth.verifiers import FunctionVerifier

    claims = {"active": True, "sub": "alice", "scope": "mcp", "exp": 4_000_000_000}
    tokens = {"short": claims, "fresh": {"active": True, "sub": "alice", "scope": "mcp"}}
    auth = ResourceServer("http://127.0.0.1/mcp", ["https://as.example"], FunctionVerifier(tokens.get), required_scopes=["mcp"])
    app = _limited_server().asgi_app(sse_transport=True, auth=auth)
    with serve_in_thread(app) as port:
        base = f"http://127.0.0.1:{port}"
        async with sse_session(base, headers={"authorization": "Bearer short"}) as session:
            assert session.status == 200
            await session.initialize()
            claims["exp"] = int(time.time()) - 5  # within the clock-skew leeway (30 s): still taken
            skewed = await session.post({"jsonrpc": "2.0", "id": 0, "method": "ping"})
            assert skewed.status_code == 202
            assert await session.answer(0) == {"jsonrpc": "2.0", "id": 0, "result": {}}
            claims["exp"] = 1_000_000_000  # it expired meanwhile
            expired = await session.post({"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert expired.status_code == 401
            assert 'error="invalid_token"' in expired.headers["www-authenticate"]
            async with httpx.AsyncClient(timeout=10) as http:
                stream = await http.get(f"{base}/sse", headers={"accept": "text/event-stream", "authorization": "Bearer short"})
                assert stream.status_code == 401
                init = {"protocolVersion": OLD, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
                mcp = await http.post(
                    f"{base}/mcp",
                    json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
                    headers={"accept": "application/json, text/event-stream", "authorization": "Bearer short"},
                )
                assert mcp.status_code == 401
            fresh = await session.post({"jsonrpc": "2.0", "id": 2, "method": "ping"}, headers={"authorization": "Bearer fresh"})
            assert fresh.status_code == 202
            assert await session.answer(2) == {"jsonrpc": "2.0", "id": 2, "result": {}}


async def test_unparseable_body_is_refused_for_missing_scopes_first(guarded: str) -> None:
    """As on the MCP endpoint, a token lacking the server's scopes gets 403 whatever it
    POSTs — also a body that does not parse (not a 400 that reads it)."""
    async with sse_session(guarded, headers={"authorization": "Bearer alice-token"}) as session:
        await session.initialize()
        weak = {"authorization": "Bearer alice-weak-token", "content-type": "application/json"}
        for body in (b"{not json", b"[]", b'{"jsonrpc": "2.0", "method": "notifications/initialized"}'):
            resp = await session.post(None, content=body, headers=weak)
            assert resp.status_code == 403, body
            assert "insufficient_scope" in resp.headers["www-authenticate"]
        assert text_of(await session.call(1, "echo", {"text": "ok"})) == "ok"


async def test_shutdown_with_a_request_in_progress_ends_within_the_grace() -> None:
    """SIGTERM while a handler runs: new streams are refused meanwhile; when uvicorn's
    5 s grace runs out the handler is cancelled, its request is answered with -32603 on
    the stream, the stream ends properly (not cut), and the process exits (no hang)."""
    port = free_port()
    with listening(server_command("sse_target", "--http", str(port)), port, stderr=subprocess.PIPE) as proc:
        base = f"http://127.0.0.1:{port}"
        async with sse_session(base) as session:
            await session.initialize()
            assert (
                await session.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "hang"}})
            ).status_code == 202
            assert await _reaches(session, "hanging", 1, rid=1000) == 1  # the handler runs
            loop = asyncio.get_running_loop()
            started = loop.time()
            proc.terminate()

            async def refused() -> bool:
                """Whether a new stream is refused (503) or the server is gone already."""
                try:
                    async with (
                        httpx.AsyncClient(timeout=5) as http,
                        http.stream("GET", f"{base}/sse", headers={"accept": "text/event-stream"}) as late,
                    ):
                        assert late.status_code in (200, 503), late.status_code
                        return late.status_code == 503  # 200: the signal is not handled yet
                except httpx.TransportError:
                    return True

            await until(refused, what="new streams are refused once the shutdown began")
            last: list[dict[str, Any]] = []
            while (event := await asyncio.wait_for(session.events.get(), 15)) is not None:
                assert event[0] == "message"
                last.append(json.loads(event[1]))
            assert loop.time() - started < 5 + 10  # the grace, and a margin for a loaded machine: no hang
            assert [(m["id"], m["error"]["code"]) for m in last] == [(1, -32603)], last
            assert "shutting down" in last[0]["error"]["message"]
            assert session.broken is None, session.broken
        await asyncio.to_thread(proc.wait, 15)
        assert loop.time() - started < 5 + 15
        assert proc.stderr is not None
        assert b"Exception in ASGI application" not in proc.stderr.read()


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({}, id="loopback-default"),
        pytest.param({"allowed_hosts": ["mcp.example.com"], "allowed_origins": ["https://app.example.com"]}, id="explicit"),
        pytest.param({"dns_rebinding_protection": False}, id="off"),
    ],
)
async def test_host_and_origin_checks_match_the_mcp_endpoint(options: dict[str, Any]) -> None:
    """DNS-rebinding protection: for each ``Host``/``Origin`` pair, ``GET /sse``,
    ``POST /messages`` and ``POST /mcp`` are refused (403) or let through alike."""
    app = _limited_server().asgi_app(sse_transport=True, **options)
    combos = [
        {},
        {"host": "evil.example"},
        {"host": "mcp.example.com"},
        {"host": "localhost"},
        {"origin": "http://evil.example"},
        {"origin": "https://app.example.com"},
        {"origin": "null"},
        {"host": "mcp.example.com", "origin": "https://app.example.com"},
        {"host": "127.0.0.1.evil.example", "origin": "http://127.0.0.1"},
    ]
    init = {"protocolVersion": OLD, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    with serve_in_thread(app) as port:
        base = f"http://127.0.0.1:{port}"
        trusted = {"host": "mcp.example.com"} if "allowed_hosts" in options else {}
        async with sse_session(base, headers=trusted) as session, httpx.AsyncClient(timeout=10) as http:
            assert session.status == 200
            outcomes = []
            for headers in combos:
                async with http.stream("GET", f"{base}/sse", headers={"accept": "text/event-stream", **headers}) as stream:
                    sse = stream.status_code
                note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                messages = (await http.post(f"{base}{session.endpoint}", json=note, headers=headers)).status_code
                mcp = await http.post(
                    f"{base}/mcp",
                    json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
                    headers={"accept": "application/json, text/event-stream", **headers},
                )
                assert (sse in (200, 403), messages in (202, 403), mcp.status_code in (200, 403)) == (True, True, True)
                outcomes.append((sse == 403, messages == 403, mcp.status_code == 403))
                assert outcomes[-1] in ((True, True, True), (False, False, False)), (headers, outcomes[-1])
            # a foreign Host is refused unless protection is off (then an Origin must match Host)
            assert outcomes[1][0] == options.get("dns_rebinding_protection", True)
            assert outcomes[4][0]


async def test_slow_and_chunked_oversized_bodies_are_refused_while_reading() -> None:
    """A body trickling in past ``body_timeout`` gets 408; a chunked body (no
    ``Content-Length``) gets 413 as soon as it passes ``max_body_size``, before the
    client has sent the rest. The session answers its next request."""
    app = _limited_server().asgi_app(sse_transport=True, body_timeout=0.5, max_body_size=64 * 1024)
    with serve_in_thread(app) as port:
        base = f"http://127.0.0.1:{port}"
        async with sse_session(base) as session:
            await session.initialize()
            path = session.endpoint

            async def raw(headers: bytes, parts: Iterator[bytes], pause: float) -> bytes:
                """POST the parts one by one until the server answers; its answer."""
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                answer = b""

                async def collect() -> None:
                    nonlocal answer
                    with contextlib.suppress(ConnectionError):
                        while b"\r\n\r\n" not in answer and (chunk := await reader.read(200)):
                            answer += chunk

                collector = asyncio.create_task(collect())
                head = f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n"
                writer.write(head.encode() + headers + b"\r\n")
                with contextlib.suppress(ConnectionError):
                    for part in parts:
                        if answer:
                            break
                        writer.write(part)
                        await writer.drain()
                        await asyncio.sleep(pause)
                await asyncio.wait_for(collector, WAIT)
                writer.close()
                return answer

            slow = await raw(b"content-length: 100\r\n", iter([b"{"] * 20), 0.1)
            assert slow.startswith(b"HTTP/1.1 408"), slow
            sent = 0

            def chunks() -> Iterator[bytes]:
                nonlocal sent
                for _ in range(64):
                    sent += 8192
                    yield b"2000\r\n" + b"a" * 8192 + b"\r\n"

            chunked = await raw(b"transfer-encoding: chunked\r\n", chunks(), 0.02)
            assert chunked.startswith(b"HTTP/1.1 413"), chunked
            assert sent < 64 * 8192
            assert (await session.request(1, "ping")) == {"jsonrpc": "2.0", "id": 1, "result": {}}


async def test_other_methods_media_types_and_foreign_session_ids(target: tuple[str, Any]) -> None:
    """405 with ``Allow`` for any other method on either path; 415 without JSON; a
    session id of the other transport is unknown (404) on each endpoint."""
    base, proc = target
    async with sse_session(base) as session, httpx.AsyncClient(timeout=10) as http:
        await session.initialize()
        for method in ("HEAD", "PUT", "DELETE", "PATCH", "OPTIONS"):
            on_sse = await http.request(method, f"{base}/sse")
            on_messages = await http.request(method, f"{base}{session.endpoint}")
            assert (on_sse.status_code, on_sse.headers["allow"]) == (405, "GET"), method
            assert (on_messages.status_code, on_messages.headers["allow"]) == (405, "POST"), method
        for headers in ({}, {"content-type": "text/plain"}, {"content-type": "application/jsonl"}):
            resp = await session.post(None, content=b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}', headers=headers)
            assert resp.status_code == 415, headers
        init = {"protocolVersion": OLD, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        accept = {"accept": "application/json, text/event-stream"}
        opened = await http.post(
            f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}, headers=accept
        )
        mcp_id = opened.headers["mcp-session-id"]
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        assert (await http.post(f"{base}/messages?session_id={mcp_id}", json=ping)).status_code == 404
        sse_id = session.endpoint.split("=")[1]
        assert (await http.post(f"{base}/mcp", json=ping, headers={**accept, "mcp-session-id": sse_id})).status_code == 404
        assert text_of(await session.call(3, "echo", {"text": "intact"})) == "intact"
    assert proc.poll() is None
