"""The client's connection pool (transports/http/client/pool.py) against a server that
answers with what an attacker would: ambiguous framing (conflicting or malformed
``Content-Length``, transfer codings other than chunked, lenient chunk sizes), oversized
or malformed heads, protocol switches, and sockets that stop reading. Each test is a
real socket on 127.0.0.1; nothing here decides on wall-clock speed (a ``wait_for`` only
turns a hang into a failure)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from tests.support.waiting import until

from mcpkit.transports.http.client import pool as pool_module
from mcpkit.transports.http.client.exchange import HttpExchange
from mcpkit.transports.http.client.pool import ConnectionPool

#: Long enough that only a hang reaches it.
HANG = 10.0


class Hostile:
    """Answers every request (its head read up to the blank line, a ``Content-Length``
    body read too unless ``read_body`` is False) with ``answers[i]`` for the i-th
    request of the connection (the last one repeated); counts connections, and notes
    when a connection ends (``ended``)."""

    def __init__(self, *answers: bytes, read_body: bool = True, close: bool = False) -> None:
        self.answers = answers
        self.read_body = read_body
        self.close = close
        self.connections = 0
        self.heads: list[bytes] = []
        self.ended = asyncio.Event()
        self.writers: list[asyncio.StreamWriter] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        n = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                self.heads.append(head)
                if not self.read_body:
                    await asyncio.Event().wait()  # never reads on: the client's upload fills the socket
                lower = head.lower()
                if b"content-length:" in lower:
                    await reader.readexactly(int(lower.split(b"content-length:")[1].split(b"\r\n")[0]))
                writer.write(self.answers[min(n, len(self.answers) - 1)])
                n += 1
                await writer.drain()
                if self.close:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            self.ended.set()


@asynccontextmanager
async def hostile(server: Hostile, **pool: Any) -> AsyncIterator[tuple[ConnectionPool, httpx.AsyncClient, str]]:
    listening = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    transport = ConnectionPool(**pool)
    client = httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(HANG))
    try:
        yield transport, client, f"http://127.0.0.1:{port}/mcp"
    finally:
        await client.aclose()
        listening.close()
        for writer in server.writers:
            writer.close()


async def refused(answer: bytes, match: str | None = None) -> None:
    """A server answering ``answer`` to every request: the pool refuses it, raising
    ``RemoteProtocolError`` (whose message matches ``match``, if given)."""
    async with hostile(Hostile(answer)) as (_pool, client, url):
        with pytest.raises(httpx.RemoteProtocolError, match=match):
            await client.get(url)


# --- framing ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        b"Content-Length: 2\r\nContent-Length: 5\r\n",  # conflicting duplicates
        b"Content-Length: 2, 5\r\n",  # a conflicting list
        b"Content-Length: +2\r\n",  # int() takes a sign
        b"Content-Length: 0_2\r\n",  # ... and underscores
        b"Content-Length: -0\r\n",
        b"Transfer-Encoding: gzip, chunked\r\n",  # a coding httpx would not undo
        b"Transfer-Encoding: chunked, gzip\r\nContent-Length: 2\r\n",  # chunked not last: not the length either
        b"Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n",
        b"Transfer-Encoding: identity\r\n",
    ],
)
async def test_ambiguous_framing_is_refused(fields: bytes) -> None:
    answer = b"HTTP/1.1 200 OK\r\n%b\r\n2\r\nhi\r\n0\r\n\r\n" % fields
    await refused(answer)


async def test_identical_content_lengths_are_one() -> None:
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\ncontent-length: 2, 2\r\n\r\nhi"
    async with hostile(Hostile(answer)) as (_pool, client, url):
        assert (await client.get(url)).content == b"hi"


async def test_chunked_with_a_content_length_is_read_chunked_and_not_reused() -> None:
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n"
    server = Hostile(answer)
    async with hostile(server) as (_pool, client, url):
        assert (await client.get(url)).content == b"hi"
        assert (await client.get(url)).content == b"hi"
        assert server.connections == 2  # a smuggling attempt's connection is not trusted again


@pytest.mark.parametrize("size", [b"0x2", b"+2", b"0_2", b"2 2", b"1" * 17, b"-0"])
async def test_lenient_chunk_sizes_are_refused(size: bytes) -> None:
    answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%b\r\nhi\r\n0\r\n\r\n" % size
    await refused(answer)


async def test_a_chunk_size_with_extension_and_whitespace_before_it_is_read() -> None:
    answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2 ;a=b\r\nhi\r\n0\r\n\r\n"
    async with hostile(Hostile(answer)) as (_pool, client, url):
        assert (await client.get(url)).content == b"hi"


# --- heads ----------------------------------------------------------------------------------


async def test_a_head_over_the_limit_is_refused_even_when_it_arrives_whole(monkeypatch: Any) -> None:
    """The limit holds however the bytes were split by the socket (here, all at once:
    a limit of 1,000 bytes, and a head of 5,000 in one segment)."""
    monkeypatch.setattr(pool_module, "MAX_HEAD", 1000)
    answer = b"HTTP/1.1 200 OK\r\nX-Big: %b\r\nContent-Length: 0\r\n\r\n" % (b"a" * 5000)
    await refused(answer, match="too long")


@pytest.mark.parametrize(
    "field",
    [
        b"X-A: a\x00b",  # NUL in a value
        b"X-A: a\rb",  # a bare CR
        b"X-A: a\nContent-Length: 0",  # a bare LF: a header smuggled inside another
        b"X A: b",  # not a token
        b"X-A\x7f: b",
    ],
)
async def test_malformed_fields_are_refused(field: bytes) -> None:
    answer = b"HTTP/1.1 200 OK\r\n%b\r\nContent-Length: 2\r\n\r\nhi" % field
    await refused(answer)


async def test_a_protocol_switch_does_not_put_the_connection_back() -> None:
    """After 101 the connection speaks another protocol: never another request on it."""
    server = Hostile(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n")
    async with hostile(server) as (_pool, client, url):
        assert (await client.get(url)).status_code == 101
        assert (await client.get(url)).status_code == 101
        assert server.connections == 2


async def test_framing_errors_name_their_request() -> None:
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"
    async with hostile(Hostile(answer)) as (pool, _client, url):
        request = httpx.Request("GET", url)
        with pytest.raises(httpx.RemoteProtocolError) as caught:
            await pool.handle_async_request(request)
        assert caught.value.request is request


# --- connections ----------------------------------------------------------------------------


async def test_closing_the_pool_wakes_requests_waiting_for_a_connection() -> None:
    """No pool timeout (mcpkit's client has none): a request waiting for a connection
    when the pool closes fails then instead of waiting forever."""
    ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"
    async with hostile(Hostile(ok), max_connections=1) as (pool, client, url), client.stream("GET", url):
        # the stream holds the only connection
        waiting = asyncio.ensure_future(client.get(url, timeout=httpx.Timeout(HANG, pool=None)))
        await until(lambda: pool._waiters, what="the request waiting for a connection")
        await pool.aclose()
        with pytest.raises(httpx.ConnectError):
            await asyncio.wait_for(waiting, HANG)


async def test_a_request_woken_as_its_pool_timeout_fires_passes_the_turn_on() -> None:
    """The connection freed (read to its end, kept) in the very iteration a waiter's
    pool timeout fires: that waiter raises PoolTimeout, and the next waiter is woken
    for the connection instead of waiting on forever."""
    started = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"  # its body never comes
    server = Hostile(started, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi")
    async with hostile(server, max_connections=1) as (pool, client, url):
        resp = await client.send(client.build_request("GET", url), stream=True)  # holds the only connection
        loop = asyncio.get_running_loop()
        first = asyncio.ensure_future(client.get(url, timeout=httpx.Timeout(HANG, pool=0)))
        second = asyncio.ensure_future(client.get(url, timeout=httpx.Timeout(HANG, pool=None)))
        # runs after both wait, in the iteration before the first one's timeout is delivered:
        # what the end of the held response's body does (its connection kept)
        (conn,) = pool._open
        loop.call_soon(pool._release, conn, True)
        with pytest.raises(httpx.PoolTimeout):
            await first
        assert (await asyncio.wait_for(second, HANG)).content == b"hi"
        await resp.aclose()


async def _upload_stuck(server: Hostile, pool: ConnectionPool, client: httpx.AsyncClient, url: str) -> tuple[Any, Any]:
    """An upload the server does not read, once it fills the socket; and the client's socket."""
    upload = asyncio.ensure_future(client.post(url, content=b"x" * 50_000_000))
    await until(lambda: server.heads, what="the request's head")
    (conn,) = pool._open
    sock = conn.transport.get_extra_info("socket")
    await until(conn.transport.get_write_buffer_size, what="bytes waiting unsent")
    return upload, sock


async def _closed(sock: Any) -> None:
    await until(lambda: sock.fileno() == -1, what="the client's socket closed")


async def test_a_cancelled_upload_to_a_server_that_stopped_reading_closes_the_socket() -> None:
    """The interrupted connection is discarded with its unsent bytes: the socket closes
    at once (a graceful close would wait, forever, for the server to read them)."""
    server = Hostile(read_body=False)
    async with hostile(server) as (pool, client, url):
        upload, sock = await _upload_stuck(server, pool, client, url)
        upload.cancel()
        with pytest.raises(asyncio.CancelledError):
            await upload
        await _closed(sock)


async def test_closing_the_pool_ends_an_upload_in_flight() -> None:
    server = Hostile(read_body=False)
    async with hostile(server) as (pool, client, url):
        upload, sock = await _upload_stuck(server, pool, client, url)
        await pool.aclose()
        with pytest.raises(httpx.TransportError):
            await asyncio.wait_for(upload, HANG)
        await _closed(sock)


async def test_a_connection_left_with_reading_paused_still_learns_that_it_closed(monkeypatch: Any) -> None:
    """A response read to its end while reading was paused (more than the high-water
    mark had arrived unread; here 10 bytes): the connection goes idle reading again, so
    that the server's close is seen and the next request opens a new connection instead
    of failing on the dead one."""
    monkeypatch.setattr(pool_module, "_HIGH_WATER", 10)
    server = Hostile(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b"x" * 100, close=True)
    async with hostile(server) as (_pool, client, url):
        async with client.stream("GET", url) as resp:
            await asyncio.wait_for(server.ended.wait(), HANG)  # all sent, and the server closed
            await asyncio.sleep(0.05)  # ... and arrived (reading then paused)
            assert len(await resp.aread()) == 100
        await asyncio.sleep(0.05)
        assert len((await client.get(url)).content) == 100
        assert server.connections == 2


async def test_the_connection_goes_to_the_url_s_host_as_encoded_in_the_url(monkeypatch: Any) -> None:
    """An internationalized host is reached by its IDNA 2008 name (what the URL and the
    Host header say), not re-encoded by the socket layer's IDNA 2003 codec: ``faß.de``
    would be ``fass.de`` there, another host (and the name TLS would check)."""
    seen: list[tuple[object, ...]] = []

    async def create_connection(self: Any, factory: Any, host: str, port: int, **kw: Any) -> Any:
        seen.append((host, port, kw.get("server_hostname")))
        raise OSError("not connecting in this test")

    monkeypatch.setattr(asyncio.BaseEventLoop, "create_connection", create_connection)
    async with httpx.AsyncClient(transport=ConnectionPool()) as client:
        with pytest.raises(httpx.ConnectError):
            await client.get("https://faß.de/mcp")
        with pytest.raises(httpx.ConnectError):
            await client.get("http://[::1]:8000/mcp")
    assert seen == [("xn--fa-hia.de", 443, "xn--fa-hia.de"), ("::1", 8000, None)]


# --- the exchange's direct path -----------------------------------------------------------------


async def test_the_exchange_sends_a_url_s_credentials_as_httpx_s_client_does() -> None:
    ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"
    server = Hostile(ok)
    async with hostile(server) as (_pool, _client, url):
        settings = SimpleNamespace(url=url.replace("http://", "http://alice:s3cret@"), connect_timeout=5.0, auth=None)
        http = HttpExchange(settings, None)  # type: ignore[arg-type]
        http.open()
        try:
            resp = await http.send("POST", {"Accept": "application/json"}, b"{}")
            await resp.aclose()
        finally:
            await http.aclose()
    assert b"authorization: basic ywxpy2u6cznjcmv0" in server.heads[0].lower()
