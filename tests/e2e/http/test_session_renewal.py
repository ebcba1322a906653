"""The legacy GET stream renews a forgotten session (issue 12, item 3), over real
loopback HTTP: a real server process restarted on the same port before the client sends
anything, so the only one to notice is the GET stream, refused with 404; and a server
that forgets every new session, which must not be hammered."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpkit import Client, ClientOptions, HttpTransport, RestartPolicy, Server
from support.eras import LEGACY
from support.ports import free_port
from support.resilient import Events, accepting, resilient_server
from support.serving import serve_in_thread
from support.waiting import until

pytestmark = pytest.mark.timeout(90)


async def drain(changes: Any, quiet: float = 0.5) -> int:
    """Take the subscription's changes until none comes for ``quiet`` seconds; how many."""
    taken = 0
    while True:
        try:
            async with asyncio.timeout(quiet):
                await anext(changes)
        except TimeoutError:
            return taken
        taken += 1


async def test_a_listening_client_renews_the_session_its_get_stream_lost(tmp_path: Path) -> None:
    """The server restarts between two of the GET stream's connections; the client sends
    nothing. The GET stream's 404 opens a new session, the subscription is re-opened in
    it, and a change the new server publishes (another client touches the resource)
    reaches the listener."""
    log, port = tmp_path / "log", free_port()
    seen = Events()
    # The client waits 3 s before it opens the GET stream again (the server's retry too):
    # time for the new process, already started, to take the port.
    transport = HttpTransport(f"http://127.0.0.1:{port}/mcp", reconnect_delay=3.0)
    options = ClientOptions(protocol_version=LEGACY, on_event=seen, request_timeout=10)
    async with contextlib.AsyncExitStack() as stack:
        first = await stack.enter_async_context(resilient_server(log, port, go=tmp_path / "go1", retry_interval=3.0))
        (tmp_path / "go1").touch()
        await accepting(first, port)
        # the second imports meanwhile, and listens once told
        second = await stack.enter_async_context(resilient_server(log, port, go=tmp_path / "go2", retry_interval=3.0))
        publisher_transport = HttpTransport(f"http://127.0.0.1:{port}/mcp", reconnect=False)
        async with Client(transport, options) as client, client.listen(resource_uris=["data://x"]) as changes:
            old_session = transport.session_id
            assert old_session is not None
            async with Client(HttpTransport(f"http://127.0.0.1:{port}/mcp"), options) as publisher:
                await publisher.call_tool("touch", {"name": "x"})
            async with asyncio.timeout(5):
                assert (await anext(changes)).uri == "data://x"  # the GET stream carries changes

            first.kill()
            await first.wait()
            (tmp_path / "go2").touch()
            await accepting(second, port)  # well before the GET stream tries again
            await until(lambda: "reconnect" in seen.kinds, timeout=15, what="the GET stream's 404 renewed the session")
            assert transport.session_id not in (None, old_session)
            await drain(changes)  # the catch-up change of the re-opened subscription
            async with Client(publisher_transport, options) as publisher:
                await publisher.call_tool("touch", {"name": "x"})
            async with asyncio.timeout(5):
                change = await anext(changes)
            assert change.uri == "data://x"
            assert client.is_connected
    starts = [line for line in log.read_text().splitlines() if line.startswith("start ")]
    assert [line.split()[1] for line in starts] == [str(first.pid), str(second.pid)]
    assert "disconnect" not in seen.kinds  # the client never noticed the connection lost: only the session
    assert seen.kinds.count("reconnect") == 1


async def _not_found(send: Any) -> None:
    await send({"type": "http.response.start", "status": 404, "headers": [(b"content-length", b"9")]})
    await send({"type": "http.response.body", "body": b"Not Found"})


def watched_server() -> Server:
    """A server with resources ``data://<name>`` and a tool ``touch(name)`` that reports
    one changed."""
    server = Server("forgetful")

    @server.resource("data://{name}")
    def data(name: str) -> str:
        return f"data {name}"

    @server.tool
    async def touch(name: str) -> str:
        await server.notify_resource_updated(f"data://{name}")
        return "touched"

    return server


class Forgetful:
    """A real mcpkit server, but: ``forgets`` — every GET and every ``ping`` answer 404,
    as if each session were forgotten as soon as it started; ``no_get`` — every GET
    answers 404 (a server that wrongly says 404 for "no GET stream"); ``mute`` — every
    GET answers 404 and a ``ping`` is never answered; ``events`` — the
    first GET is a stream of one priming event (id ``gone-1``) that ends at once, and a
    GET resuming with ``Last-Event-ID`` answers 404 (the server forgot the event).
    Counts requests, and the GET streams the real server has begun to send on (``streams``)."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.initializes = self.gets = self.pings = self.streams = 0
        self._app = watched_server().asgi_app(path="/mcp")

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            self.gets += 1
            resumed = any(name == b"last-event-id" for name, _ in scope["headers"])
            if self.mode in ("forgets", "no_get", "mute") or resumed:
                await _not_found(send)
            elif self.gets == 1:
                headers = [(b"content-type", b"text/event-stream")]
                await send({"type": "http.response.start", "status": 200, "headers": headers})
                await send({"type": "http.response.body", "body": b"id: gone-1\nretry: 100\ndata:\n\n"})
            else:
                await self._app(scope, receive, self._counting(send))
            return
        if scope["type"] == "http" and scope["method"] == "POST":
            body = b""
            more = True
            while more:
                message = await receive()
                body += message.get("body", b"")
                more = message.get("more_body", False)
            self.initializes += b'"initialize"' in body
            self.pings += b'"ping"' in body
            if self.mode == "forgets" and b'"ping"' in body:
                await _not_found(send)
                return
            if self.mode == "mute" and b'"ping"' in body:
                while (await receive())["type"] != "http.disconnect":
                    pass
                return
            replay = [{"type": "http.request", "body": body, "more_body": False}]

            async def receive_again() -> Any:
                return replay.pop() if replay else await receive()

            await self._app(scope, receive_again, send)
            return
        await self._app(scope, receive, send)

    def _counting(self, send: Any) -> Any:
        """``send``, counting a stream in ``streams`` once its first bytes go out (the
        server is then sending the session's changes on it)."""
        status = 0
        counted = False

        async def counting_send(message: dict[str, Any]) -> None:
            nonlocal status, counted
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body" and status == 200 and not counted:
                counted = True
                self.streams += 1
            await send(message)

        return counting_send


@pytest.fixture
def forgetful() -> Iterator[tuple[Forgetful, int]]:
    app = Forgetful("forgets")
    with serve_in_thread(app) as port:
        yield app, port


@pytest.fixture
def forgets_events() -> Iterator[tuple[Forgetful, int]]:
    app = Forgetful("events")
    with serve_in_thread(app) as port:
        yield app, port


@pytest.fixture
def no_get_stream() -> Iterator[tuple[Forgetful, int]]:
    app = Forgetful("no_get")
    with serve_in_thread(app) as port:
        yield app, port


async def test_a_server_that_forgets_every_new_session_is_not_hammered(
    forgetful: tuple[Forgetful, int], caplog: pytest.LogCaptureFixture
) -> None:
    """Every GET answers 404, and so does the ping that checks the session: the listener
    renews the session as often as the reconnect policy allows, with its back-off, then
    gives up with one warning; other requests still work."""
    app, port = forgetful
    policy = RestartPolicy(max_restarts=3, window=60.0, initial_delay=0.1, multiplier=2.0, max_delay=1.0)
    transport = HttpTransport(f"http://127.0.0.1:{port}/mcp", reconnect=policy)
    caplog.set_level(logging.INFO, logger="mcpkit.http")
    started = time.monotonic()
    async with Client(transport, ClientOptions(protocol_version=LEGACY, request_timeout=10)) as client:
        async with asyncio.timeout(10):
            while "not listening any more" not in caplog.text:  # noqa: ASYNC110 - a log record cannot notify
                await asyncio.sleep(0.05)
        took = time.monotonic() - started
        assert app.initializes == 1 + 3  # the first session, then the policy's three renewals
        await asyncio.sleep(1.0)  # a pause for a wrong renewal to happen (the back-off is at most 1 s); nothing to wait for
        assert app.initializes == 4  # and no more
        assert (app.gets, app.pings) == (4, 3)  # each renewal checked the session first
        await client.list_tools()  # the session the last renewal opened still serves requests
        assert client.is_connected
    assert took >= 0.1 + 0.2 + 0.4  # the back-off between the renewals
    warnings = [r for r in caplog.records if "not listening any more" in r.getMessage()]
    assert len(warnings) == 1
    assert warnings[0].levelno == logging.WARNING


async def test_a_get_refused_404_in_a_live_session_opens_no_new_one(
    no_get_stream: tuple[Forgetful, int], caplog: pytest.LogCaptureFixture
) -> None:
    """A server that says 404 (not 405) for "no GET stream": the ping in the session is
    answered, so the session is kept, and no new one is opened."""
    app, port = no_get_stream
    caplog.set_level(logging.INFO, logger="mcpkit.http")
    async with Client(HttpTransport(f"http://127.0.0.1:{port}/mcp"), ClientOptions(protocol_version=LEGACY)) as client:
        session = client.transport.session_id  # type: ignore[attr-defined]
        async with asyncio.timeout(10):
            while "though session" not in caplog.text:  # noqa: ASYNC110 - a log record cannot notify
                await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # a pause for a wrong new session to be opened; the right outcome is that nothing happens
        assert (app.initializes, app.gets, app.pings) == (1, 1, 1)
        await client.list_tools()
        assert client.transport.session_id == session  # type: ignore[attr-defined]


async def test_a_stream_the_server_cannot_resume_is_opened_afresh(
    forgets_events: tuple[Forgetful, int], caplog: pytest.LogCaptureFixture
) -> None:
    """The GET stream ends, and its resumption with ``Last-Event-ID`` is refused with 404
    while the session is alive (the server dropped the event): the stream is opened
    afresh in the same session, with a warning, and a change published then reaches the
    listener, the client sending nothing."""
    app, port = forgets_events
    url = f"http://127.0.0.1:{port}/mcp"
    options = ClientOptions(protocol_version=LEGACY, request_timeout=10)
    caplog.set_level(logging.INFO, logger="mcpkit.http")
    async with Client(HttpTransport(url), options) as client, client.listen(resource_uris=["data://x"]) as changes:
        session = client.transport.session_id  # type: ignore[attr-defined]
        await until(lambda: app.gets >= 3 and app.streams >= 1, what="the stream was opened afresh")
        async with Client(HttpTransport(url), options) as publisher:
            await publisher.call_tool("touch", {"name": "x"})
        async with asyncio.timeout(5):
            assert (await anext(changes)).uri == "data://x"
        assert client.transport.session_id == session  # type: ignore[attr-defined]
    assert app.initializes == 2  # the listener's client, and the publisher: no new session
    assert "opening it afresh (events may be lost)" in caplog.text


async def test_a_renewal_the_server_never_answers_ends_by_itself(caplog: pytest.LogCaptureFixture) -> None:
    """The GET stream is refused 404 and the ping that checks the session is never
    answered: the renewal gives up after ``notification_timeout`` with a warning (it
    does not hang for ever), and the client's requests go on."""
    app = Forgetful("mute")
    caplog.set_level(logging.INFO, logger="mcpkit.http")
    with serve_in_thread(app) as port:
        transport = HttpTransport(f"http://127.0.0.1:{port}/mcp", notification_timeout=0.5)
        async with Client(transport, ClientOptions(protocol_version=LEGACY, request_timeout=10)) as client:
            async with asyncio.timeout(10):
                while "could not be renewed within 0.5 s" not in caplog.text:  # noqa: ASYNC110 - a log record cannot notify
                    await asyncio.sleep(0.05)
            await client.list_tools()
            assert client.is_connected
    assert (app.initializes, app.gets, app.pings) == (1, 1, 1)
