"""Reconnection over Streamable HTTP (issue 12, item 3), over real loopback HTTP: a real
server process killed and started again on the same port, a TCP proxy (tests/support/faults.py)
that cuts one kept-alive connection, and a server that never comes back. The servers'
own logs and counters prove what reached them."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpkit import (
    Client,
    ClientOptions,
    ConnectionClosed,
    Context,
    HttpTransport,
    RestartPolicy,
    RetriesExhausted,
    RetryPolicy,
    Server,
    SseTransport,
    ToolAnnotations,
)
from support.eras import ERAS, LEGACY, MODERN
from support.faults import FaultProxy
from support.ports import free_port
from support.processes import load_server
from support.resilient import Events, logged, resilient_server
from support.serving import serve_in_thread
from support.waiting import until

pytestmark = pytest.mark.timeout(90)


async def drain(changes: Any, quiet: float = 0.3) -> None:
    """Take the subscription's changes until none comes for ``quiet`` seconds."""
    while True:
        try:
            async with asyncio.timeout(quiet):
                await anext(changes)
        except TimeoutError:
            return


def text_of(result: Any) -> str:
    return str(result.content[0].text)


# --- a server killed mid-call and started again ------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_a_server_killed_mid_call_and_restarted(era: str, tmp_path: Path) -> None:
    """Idempotent calls in flight succeed once the client is back; a charge in flight
    fails with ConnectionClosed and is never sent again (the server's log proves it);
    legacy opens a new session and re-subscribes, modern just goes on."""
    log = tmp_path / "log"
    port = free_port()
    seen = Events()
    transport = HttpTransport(
        f"http://127.0.0.1:{port}/mcp", reconnect=RestartPolicy(max_restarts=30, initial_delay=0.05, max_delay=0.5)
    )
    options = ClientOptions(
        protocol_version=era, retry=RetryPolicy(6, initial_delay=0.1, jitter=0.0), request_timeout=20, on_event=seen
    )
    async with contextlib.AsyncExitStack() as servers:  # the servers outlive the client
        first = await servers.enter_async_context(resilient_server(log, port))
        client = Client(transport, options)
        async with client, client.listen(resource_uris=["data://x"]) as changes:
            await client.list_tools()  # learns that lookup is read-only, charge is not
            await client.call_tool("touch", {"name": "x"})
            async with asyncio.timeout(5):
                assert (await anext(changes)).uri == "data://x"
            old_session = transport.session_id
            assert (old_session is None) == (era == MODERN)

            progress = asyncio.Event()
            lookup = asyncio.create_task(client.call_tool("lookup", {"tag": "a"}))  # its response has not started
            charge = asyncio.create_task(  # its response is an SSE stream, started (legacy: resumable)
                client.call_tool("charge", {"tag": "b"}, on_progress=lambda *_: progress.set())
            )
            await until(lambda: logged(log, "lookup a") == 1 and progress.is_set())
            first.kill()
            await first.wait()
            started = time.monotonic()
            second = await servers.enter_async_context(resilient_server(log, port))
            with pytest.raises(ConnectionClosed):
                async with asyncio.timeout(15):
                    await charge
            async with asyncio.timeout(30):
                answer = await lookup
            back_after = time.monotonic() - started
            assert text_of(answer) == f"lookup a by {second.pid}"
            assert (await client.call_tool("pid")).structured_content == {"result": second.pid}

            if era == LEGACY:
                assert transport.session_id not in (None, old_session)  # a new session
            await until(lambda: bool(seen.of("reconnect")))
            await drain(changes)  # the catch-up changes of the reconnection
            for _ in range(40):  # the subscription is back: the new server's notices arrive
                await client.call_tool("touch", {"name": "x"})
                try:
                    async with asyncio.timeout(0.5):
                        change = await anext(changes)
                    break
                except TimeoutError:
                    continue  # a new legacy session's GET stream may not be open yet
            else:
                pytest.fail("no change notice from the restarted server")
            assert change.uri == "data://x"
            assert client.is_connected
    assert logged(log, "charge b") == 1  # the charge in flight was never sent again
    assert logged(log, "lookup a") == 2  # the read was, once the server was back
    assert sum(1 for line in log.read_text().splitlines() if line.startswith("start ")) == 2
    assert back_after < 20
    assert seen.of("reconnect_failed") == []
    assert [e.attempt for e in seen.of("reconnecting")][:1] == [1]  # counted per attempt
    assert seen.of("retry")  # the lookup was retried
    assert all(e.method == "tools/call" for e in seen.of("retry"))


@pytest.mark.parametrize("era", ERAS)
async def test_fifty_calls_in_flight_across_a_reconnect(era: str, tmp_path: Path) -> None:
    """50 calls in flight (25 reads, 25 charges) when the server is killed, 10 more made
    while it is away: none hangs; the reads succeed on the new server (retried), each
    charge fails with ConnectionClosed and reached the server once, and the calls made
    meanwhile succeed or fail with ConnectionClosed or RetriesExhausted, nothing else."""
    log = tmp_path / "log"
    port = free_port()
    transport = HttpTransport(
        f"http://127.0.0.1:{port}/mcp", reconnect=RestartPolicy(max_restarts=30, initial_delay=0.05, max_delay=0.5)
    )
    options = ClientOptions(protocol_version=era, retry=RetryPolicy(6, initial_delay=0.1, jitter=0.0), request_timeout=30)
    async with contextlib.AsyncExitStack() as servers:
        first = await servers.enter_async_context(resilient_server(log, port))
        async with Client(transport, options) as client:
            await client.list_tools()
            reads = [asyncio.create_task(client.call_tool("lookup", {"tag": f"r{i}"})) for i in range(25)]
            charges = [asyncio.create_task(client.call_tool("charge", {"tag": f"c{i}"})) for i in range(25)]
            await until(lambda: all(logged(log, f"lookup r{i}") == 1 and logged(log, f"charge c{i}") == 1 for i in range(25)))
            first.kill()
            await first.wait()
            meanwhile = [asyncio.create_task(client.call_tool("pid")) for _ in range(10)]
            second = await servers.enter_async_context(resilient_server(log, port))
            async with asyncio.timeout(40):  # none hangs
                outcomes = await asyncio.gather(*reads, *charges, *meanwhile, return_exceptions=True)
            assert [text_of(r) for r in outcomes[:25]] == [f"lookup r{i} by {second.pid}" for i in range(25)]
            for outcome in outcomes[25:50]:
                assert isinstance(outcome, ConnectionClosed), outcome
            for outcome in outcomes[50:]:
                if isinstance(outcome, BaseException):
                    assert isinstance(outcome, (ConnectionClosed, RetriesExhausted)), outcome
                else:
                    assert outcome.structured_content == {"result": second.pid}
            assert (await client.call_tool("pid")).structured_content == {"result": second.pid}
            assert client.is_connected
    assert all(logged(log, f"charge c{i}") == 1 for i in range(25))  # never sent again
    assert all(logged(log, f"lookup r{i}") == 2 for i in range(25))


async def test_calls_across_a_reconnect_over_the_sse_fallback(tmp_path: Path) -> None:
    """Over the fallback to HTTP+SSE (``POST /sse`` is refused 405): the server is killed
    with 20 calls in flight and 10 more are made while it is away, some of them while
    the client tries the old transport again. The calls in flight fail with
    ConnectionClosed within a second of the kill; the others wait and succeed on the
    new server, reached by the fallback again; none hangs."""
    log = tmp_path / "log"
    port = free_port()
    seen = Events()
    transport = HttpTransport(
        f"http://127.0.0.1:{port}/sse", reconnect=RestartPolicy(max_restarts=30, initial_delay=0.05, max_delay=0.5)
    )
    options = ClientOptions(on_event=seen, request_timeout=30)
    async with contextlib.AsyncExitStack() as servers:
        first = await servers.enter_async_context(resilient_server(log, port, sse=True))
        async with Client(transport, options) as client:
            assert client.era == "legacy"
            assert (await client.call_tool("pid")).structured_content == {"result": first.pid}
            charges = [asyncio.create_task(client.call_tool("charge", {"tag": f"c{i}"})) for i in range(20)]
            await until(lambda: all(logged(log, f"charge c{i}") == 1 for i in range(20)))
            first.kill()
            await first.wait()
            killed = time.monotonic()
            async with asyncio.timeout(10):
                lost = await asyncio.gather(*charges, return_exceptions=True)
            assert time.monotonic() - killed < 10  # at once: not at their 30 s deadline
            assert all(isinstance(outcome, ConnectionClosed) for outcome in lost), lost
            meanwhile = [asyncio.create_task(client.call_tool("pid")) for _ in range(5)]  # they wait for the client
            second = await servers.enter_async_context(resilient_server(log, port, sse=True))
            meanwhile += [asyncio.create_task(client.call_tool("pid")) for _ in range(5)]
            async with asyncio.timeout(30):
                answers = await asyncio.gather(*meanwhile)
            assert [a.structured_content for a in answers] == [{"result": second.pid}] * 10
            assert client.is_connected
    assert all(logged(log, f"charge c{i}") == 1 for i in range(20))
    assert len(seen.of("reconnect")) == 1
    assert seen.of("reconnect_failed") == []


# --- one kept-alive connection cut by a proxy -----------------------------------------------------


class _Tap:
    """A stream reader that shows each chunk it reads to ``seen``."""

    def __init__(self, reader: asyncio.StreamReader, seen: Callable[[bytes], None]) -> None:
        self._reader = reader
        self._seen = seen

    async def read(self, n: int = -1) -> bytes:
        chunk = await self._reader.read(n)
        self._seen(chunk)
        return chunk


class CuttingProxy(FaultProxy):
    """A :class:`FaultProxy` that can cut the one connection that carried a marker."""

    def __init__(self, upstream_port: int, *markers: bytes) -> None:
        super().__init__(upstream_port)
        self._markers = markers
        self._carrying: dict[bytes, asyncio.StreamWriter] = {}

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, silent: asyncio.Event, *, outbound: bool
    ) -> None:
        if outbound:

            def seen(chunk: bytes) -> None:
                for marker in self._markers:
                    if marker in chunk:
                        self._carrying[marker] = writer

            reader = _Tap(reader, seen)  # type: ignore[assignment]
        await super()._pump(reader, writer, silent, outbound=outbound)

    def cut_the_one_with(self, marker: bytes) -> None:
        """Reset the connection that last carried ``marker`` (upstream side: the proxy
        then closes its client side at once)."""
        self._carrying.pop(marker).transport.abort()


class Desk:
    """An in-process server whose tools wait until the test lets them go, and count."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.started: Counter[str] = Counter()
        self.release = threading.Event()
        self.server = server = Server("desk")

        async def wait_for_release() -> None:
            assert await asyncio.to_thread(self.release.wait, 30)

        @server.tool
        async def pay(tag: str) -> str:
            """Not idempotent: waits for the test."""
            self.started[f"pay {tag}"] += 1
            await wait_for_release()
            self.calls[f"pay {tag}"] += 1
            return f"paid {tag}"

        @server.tool(annotations=ToolAnnotations(read_only_hint=True))
        async def peek(tag: str) -> str:
            """Read-only: waits for the test."""
            self.started[f"peek {tag}"] += 1
            await wait_for_release()
            self.calls[f"peek {tag}"] += 1
            return f"peeked {tag}"

        @server.tool
        async def pay_in_steps(tag: str, ctx: Context) -> str:
            """Not idempotent: reports progress (its response is an SSE stream), then waits."""
            self.started[f"pay_in_steps {tag}"] += 1
            await ctx.report_progress(1, None, "started")
            await wait_for_release()
            self.calls[f"pay_in_steps {tag}"] += 1
            return f"paid {tag} in steps"

        @server.tool
        def ping_me() -> str:
            self.calls["ping_me"] += 1
            return "pong"


@pytest.fixture
def desk() -> Iterator[tuple[Desk, int]]:
    desk = Desk()
    with serve_in_thread(desk.server.asgi_app(path="/mcp")) as port:
        yield desk, port


@pytest.mark.parametrize("era", ERAS)
async def test_a_cut_kept_alive_connection_fails_only_the_request_on_it(era: str, desk: tuple[Desk, int]) -> None:
    """Three calls in flight, each on its own kept-alive connection; the proxy resets the
    charge's: that call alone fails with ConnectionClosed, and is not sent again; the
    others get their answers; the client stays connected and the next calls go through."""
    counts, port = desk
    seen = Events()
    async with CuttingProxy(port, b'"cut-me"') as proxy:
        options = ClientOptions(protocol_version=era, retry=RetryPolicy(3, initial_delay=0.05), on_event=seen, request_timeout=20)
        async with Client(HttpTransport(f"http://127.0.0.1:{proxy.port}/mcp"), options) as client:
            await client.list_tools()
            doomed = asyncio.create_task(client.call_tool("pay", {"tag": "cut-me"}))
            paid = asyncio.create_task(client.call_tool("pay", {"tag": "kept"}))
            peeked = asyncio.create_task(client.call_tool("peek", {"tag": "kept"}))
            await until(lambda: sum(counts.started.values()) == 3)
            started = time.monotonic()
            proxy.cut_the_one_with(b'"cut-me"')
            with pytest.raises(ConnectionClosed):
                async with asyncio.timeout(15):
                    await doomed
            assert time.monotonic() - started < 10  # at once: not at its deadline
            assert not paid.done()  # the other connections go on
            assert not peeked.done()
            counts.release.set()
            async with asyncio.timeout(10):
                assert text_of(await paid) == "paid kept"
                assert text_of(await peeked) == "peeked kept"
            assert client.is_connected
            for _ in range(3):  # the pool's connections (a dead one among them) still serve
                assert text_of(await client.call_tool("ping_me")) == "pong"
            if era == LEGACY:  # a legacy handler outlives its connection (a modern one may not)
                await until(lambda: counts.calls["pay cut-me"] == 1)
    assert counts.started["pay cut-me"] == 1  # never sent again
    del counts.calls["pay cut-me"]
    assert counts.calls == {"pay kept": 1, "peek kept": 1, "ping_me": 3}
    assert seen.of("disconnect") == []
    assert seen.of("reconnect") == []
    assert seen.of("retry") == []


async def test_a_cut_read_is_retried_and_succeeds(desk: tuple[Desk, int]) -> None:
    """A read-only call whose connection is reset is sent again (the retry policy's
    ConnectionClosed), on a new connection, while the client stays connected."""
    counts, port = desk
    seen = Events()
    async with CuttingProxy(port, b'"cut-me"') as proxy:
        options = ClientOptions(
            protocol_version=MODERN, retry=RetryPolicy(3, initial_delay=0.05), on_event=seen, request_timeout=20
        )
        async with Client(HttpTransport(f"http://127.0.0.1:{proxy.port}/mcp"), options) as client:
            await client.list_tools()  # peek is read-only
            peeked = asyncio.create_task(client.call_tool("peek", {"tag": "cut-me"}))
            await until(lambda: counts.started["peek cut-me"] == 1)
            proxy.cut_the_one_with(b'"cut-me"')
            await until(lambda: counts.started["peek cut-me"] == 2)  # sent again
            counts.release.set()
            async with asyncio.timeout(10):
                assert text_of(await peeked) == "peeked cut-me"
            assert client.is_connected
    assert [(e.method, e.attempt) for e in seen.of("retry")] == [("tools/call", 1)]
    assert isinstance(seen.of("retry")[0].error, ConnectionClosed)
    assert seen.of("disconnect") == []


@pytest.mark.parametrize("era", ERAS)
async def test_a_cut_response_stream_is_resumed_in_legacy_and_lost_in_modern(era: str, desk: tuple[Desk, int]) -> None:
    """A call whose SSE response stream was cut: a legacy stream is resumed with
    Last-Event-ID and the call gets its answer; a modern one cannot be resumed, so the
    call (not idempotent) fails with ConnectionClosed. Either way it is sent only once."""
    counts, port = desk
    seen = Events()
    progressed = asyncio.Event()
    async with CuttingProxy(port, b'"in-steps"') as proxy:
        options = ClientOptions(protocol_version=era, retry=RetryPolicy(3, initial_delay=0.05), on_event=seen)
        async with Client(HttpTransport(f"http://127.0.0.1:{proxy.port}/mcp"), options) as client:
            call = asyncio.create_task(
                client.call_tool("pay_in_steps", {"tag": "in-steps"}, on_progress=lambda *_: progressed.set())
            )
            async with asyncio.timeout(5):
                await progressed.wait()  # the stream is open, its first event read
            for header in (b"last-event-id", b"Last-Event-ID"):
                proxy.watch(header)
            proxy.cut_the_one_with(b'"in-steps"')
            if era == LEGACY:
                resumed = lambda: proxy.forwarded[b"last-event-id"] + proxy.forwarded[b"Last-Event-ID"] > 0  # noqa: E731
                await until(resumed, what="the client resumes the stream with Last-Event-ID")
                counts.release.set()
                async with asyncio.timeout(10):
                    assert text_of(await call) == "paid in-steps in steps"
            else:
                with pytest.raises(ConnectionClosed):
                    async with asyncio.timeout(5):
                        await call
                counts.release.set()
            assert text_of(await client.call_tool("ping_me")) == "pong"
            assert client.is_connected
    assert counts.started["pay_in_steps in-steps"] == 1
    assert seen.of("disconnect") == []


async def test_a_cut_post_over_sse_transport_fails_only_that_call() -> None:
    """``SseTransport`` (used directly, not by the fallback): the connection of one POST
    is reset before its answer; that call alone fails with ConnectionClosed (its outcome
    is unknown), at once, and the client goes on."""
    app = load_server("sse_fake").SseFake()
    with serve_in_thread(app) as port:
        async with CuttingProxy(port, b'"cut-me"') as proxy:
            transport = SseTransport(f"http://127.0.0.1:{proxy.port}/sse")
            async with Client(transport, ClientOptions(request_timeout=30)) as client:
                doomed = asyncio.create_task(client.call_tool("hang", {"tag": "cut-me"}))
                await until(lambda: any(m.get("params", {}).get("name") == "hang" for m in app.posted))
                started = time.monotonic()
                proxy.cut_the_one_with(b'"cut-me"')
                with pytest.raises(ConnectionClosed, match=r"Connection closed: POST .* failed"):
                    async with asyncio.timeout(15):
                        await doomed
                assert time.monotonic() - started < 10  # at once: not at the 30 s deadline
                echoed = await client.call_tool("echo", {"text": "still here"})
                assert text_of(echoed) == "still here"
                assert client.is_connected


# --- a server that never comes back ---------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_a_server_that_never_comes_back_is_given_up_on(era: str, tmp_path: Path) -> None:
    """Refused on every attempt: the client tries the policy's number of times with
    back-off, then gives up with an error that says so; every waiting call fails with it."""
    port = free_port()
    seen = Events()
    policy = RestartPolicy(max_restarts=4, window=60.0, initial_delay=0.1, multiplier=2.0, max_delay=0.4)
    transport = HttpTransport(f"http://127.0.0.1:{port}/mcp", reconnect=policy)
    options = ClientOptions(protocol_version=era, retry=RetryPolicy(3, initial_delay=0.05), on_event=seen, request_timeout=10)
    async with resilient_server(tmp_path / "log", port) as server:
        client = Client(transport, options)
        async with client:
            await client.list_tools()
            server.kill()
            await server.wait()
            started = time.monotonic()
            with pytest.raises(ConnectionClosed) as caught:
                await client.read_resource("data://x")
            took = time.monotonic() - started
            assert not client.is_connected
            with pytest.raises(ConnectionClosed) as again:
                await client.call_tool("pid")
    assert 0.1 + 0.2 + 0.4 + 0.4 <= took < 5.0  # the back-off of four attempts, bounded
    message = caught.value.message
    assert f"Could not reconnect to http://127.0.0.1:{port}/mcp" in message
    assert "failed 5 times within 60 s" in message
    assert "ConnectError" in message
    assert again.value.message == message
    assert len(seen.of("disconnect")) == 1
    assert seen.of("reconnect") == []
    assert [e.error.message for e in seen.of("reconnect_failed")] == [message]
    attempts = seen.of("reconnecting")  # one event per attempt, numbered, with its back-off
    assert [(e.attempt, e.delay) for e in attempts] == [(1, 0.1), (2, 0.2), (3, 0.4), (4, 0.4)]
    assert "ConnectError" in attempts[-1].reason
    for said in [message, *(e.reason for e in attempts)]:  # issue 25: no "Connection closed: Connection closed: POST"
        assert said.count("Connection closed: ") <= 1, said


@pytest.mark.parametrize("era", [pytest.param(None, id="auto"), pytest.param(LEGACY, id="legacy")])
async def test_supervise_start_waits_for_a_server_that_is_not_listening_yet(era: str | None, tmp_path: Path) -> None:
    """``RestartPolicy(supervise_start=True)``: a server that cannot be reached while the
    client first connects is tried again with back-off, not given up on at once. (A
    pinned modern revision has no handshake: its connect sends nothing.)"""
    port = free_port()
    go = tmp_path / "go"
    seen = Events()
    policy = RestartPolicy(max_restarts=30, initial_delay=0.05, max_delay=0.3, supervise_start=True)
    transport = HttpTransport(f"http://127.0.0.1:{port}/mcp", reconnect=policy)
    async with resilient_server(tmp_path / "log", port, go=go):
        client = Client(transport, ClientOptions(protocol_version=era, on_event=seen))
        connecting = asyncio.create_task(client.connect())
        await until(lambda: len(seen.of("reconnecting")) >= 2, what="two attempts to reach the server")
        assert not connecting.done()
        go.touch()  # now it listens
        try:
            async with asyncio.timeout(30):
                await connecting
            assert (await client.call_tool("pid")).structured_content is not None
        finally:
            await client.close()
    assert "ConnectError" in seen.of("reconnecting")[0].reason
    assert seen.of("reconnect_failed") == []


async def test_without_supervise_start_an_unreachable_server_fails_connect_at_once(tmp_path: Path) -> None:
    transport = HttpTransport(f"http://127.0.0.1:{free_port()}/mcp", reconnect=RestartPolicy(initial_delay=0.05))
    with pytest.raises(ConnectionClosed, match="ConnectError"):
        async with Client(transport):
            pass


async def test_without_reconnect_a_lost_server_ends_the_client(tmp_path: Path) -> None:
    """``reconnect=False``: the first refused connection closes the client for good."""
    port = free_port()
    seen = Events()
    transport = HttpTransport(f"http://127.0.0.1:{port}/mcp", reconnect=False)
    options = ClientOptions(protocol_version=MODERN, retry=RetryPolicy(3, initial_delay=0.05), on_event=seen)
    async with resilient_server(tmp_path / "log", port) as server, Client(transport, options) as client:
        await client.call_tool("pid")
        server.kill()
        await server.wait()
        started = time.monotonic()
        with pytest.raises(ConnectionClosed):
            await client.call_tool("pid")
        assert time.monotonic() - started < 10  # at once: not at the 30 s deadline
        assert not client.is_connected
    assert len(seen.of("disconnect")) == 1
    assert seen.of("reconnect") == []
    assert seen.of("reconnecting") == []
    assert seen.of("retry") == []
