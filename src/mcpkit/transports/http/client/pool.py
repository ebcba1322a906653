"""HTTP/1.1 connections for the transport's own ``httpx.AsyncClient``: :class:`ConnectionPool`,
an ``httpx.AsyncBaseTransport`` on asyncio's own sockets.

httpx's default transport (httpcore on anyio) costs the client more CPU per call than the
rest of mcpkit's client together: every request and every response walks the whole pool
(twice per connection for the keep-alive limit) and asks each idle connection's socket
whether it is readable (a ``poll`` and a ``getpeername``), each lock looks for ``sniffio``
(a scan of ``sys.path`` when it is missing), and each read and write goes through anyio's
cancel scopes (docs/performance.md, "What made each difference"). This pool keeps what that
transport offers the client (keep-alive connections per origin, at most ``max_connections``
open and ``max_keepalive`` idle, idle ones closed after ``keepalive_expiry`` seconds; the
request's connect, read, write and pool timeouts; TLS with httpx's default verification;
streamed bodies) and does it with an ``asyncio.Protocol`` per connection, which learns of a
closed socket when it closes, and a parser of HTTP/1.1 responses.

Everything above the connection stays httpx's: the client's headers, cookies, auth flows,
content decoding, and the proxies it mounts from the environment (a proxied URL never
reaches this pool). Failures are httpx's exceptions, as its own transport raises them:
``ConnectError``/``ConnectTimeout`` when the server cannot be reached,
``RemoteProtocolError`` when a connection closes before the response is complete (or the
response is not HTTP/1.x), ``ReadError``/``WriteError`` when the socket fails,
``ReadTimeout``/``WriteTimeout``/``PoolTimeout`` past the request's timeouts.
``UnsupportedProtocol`` for a URL that is not ``http`` or ``https``. Cancellation closes
the connection of an exchange it interrupts (never reused: its state is unknown).

Imported by :meth:`~.exchange.HttpExchange.open`, when the transport starts, as httpx is.
"""

from __future__ import annotations

import asyncio
import re
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator
from typing import cast

import httpx

__all__ = ["ConnectionPool"]

#: The most bytes of a response's status line and headers.
MAX_HEAD = 64 * 1024
#: Reading from the socket pauses while this many bytes wait in the buffer unread.
_HIGH_WATER = 1024 * 1024
#: A body shorter than this is sent in one write with the request's head.
_ONE_WRITE = 64 * 1024
_CRLF = b"\r\n"
_HEAD_END = b"\r\n\r\n"
#: A field name (RFC 9110, 5.6.2: a token).
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
#: What no field value or reason phrase holds: control characters but HTAB (a bare CR or
#: LF would be a line of its own to another parser).
_CONTROL = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
#: A chunk's size line: hex digits (at most 16: a size that fits in 64 bits), optional
#: whitespace, optional extensions (RFC 9112, 7.1).
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(?:;.*)?", re.DOTALL)

Origin = tuple[str, str, int]


def _timeouts(request: httpx.Request) -> dict[str, float | None]:
    timeout = request.extensions.get("timeout")
    return timeout if isinstance(timeout, dict) else {}


class _Connection(asyncio.Protocol):
    """One TCP (or TLS) connection: bytes received are buffered until read; a closed socket
    is known at once (``closed``)."""

    def __init__(self, origin: Origin) -> None:
        self.origin = origin
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.closed = False
        self.error: BaseException | None = None  # why the socket closed, if it failed
        self.idle_since = 0.0
        self._waiter: asyncio.Future[None] | None = None
        self._writable: asyncio.Future[None] | None = None
        self._paused = False  # reading paused: the buffer is over _HIGH_WATER

    # asyncio's callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a stream transport, though not always an asyncio.Transport: uvloop's are its own classes
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) > _HIGH_WATER and not self._paused and self.transport is not None:
            self._paused = True  # until the reader has taken what is here (receive)
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.closed = True
        self._wake()
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.error = exc
        self._wake()
        writable, self._writable = self._writable, None
        if writable is not None and not writable.done():
            writable.set_result(None)

    def pause_writing(self) -> None:
        self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        writable, self._writable = self._writable, None
        if writable is not None and not writable.done():
            writable.set_result(None)

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # what the exchange uses

    async def receive(self, timeout: float | None) -> None:
        """Wait until more bytes arrive or the socket closes. Raises ``TimeoutError``
        after ``timeout`` seconds (None: no limit); cancellation propagates."""
        self.resume()
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        if timeout is None:
            await waiter
            return
        async with asyncio.timeout(timeout):
            await waiter

    async def write(self, data: bytes, timeout: float | None) -> None:
        """Send ``data``, waiting (at most ``timeout`` seconds: ``TimeoutError``) while the
        socket's buffer is full. Raises ``OSError`` if the socket closed."""
        if self.closed or self.transport is None or self.transport.is_closing():
            raise OSError("the connection is closed")
        self.transport.write(data)
        writable = self._writable
        if writable is not None:
            async with asyncio.timeout(timeout):
                await asyncio.shield(writable)
            if self.closed:
                raise OSError("the connection closed while sending") from self.error

    def close(self) -> None:
        """Close the socket now: aborted if bytes wait unsent (a graceful close would
        wait for a peer that may never read them); a read or write waiting on it wakes."""
        self.closed = True
        transport = self.transport
        if transport is not None:
            if transport.get_write_buffer_size():
                transport.abort()
            else:
                transport.close()
        self._wake()
        writable, self._writable = self._writable, None
        if writable is not None and not writable.done():
            writable.set_result(None)

    def resume(self) -> None:
        """Read again if reading was paused (an idle connection must see its close)."""
        if self._paused:
            self._paused = False
            if self.transport is not None:
                self.transport.resume_reading()

    def reusable(self, now: float, expiry: float | None) -> bool:
        """An idle connection that may carry another request: open, with nothing unread
        (a server that sent something unasked is about to close it), not expired."""
        return not self.closed and not self.buffer and (expiry is None or now - self.idle_since <= expiry)


class _Body(httpx.AsyncByteStream):
    """A response's body, read from its connection as the caller iterates; closing it
    gives a connection read to the end back to the pool, and closes any other."""

    def __init__(
        self, pool: ConnectionPool, conn: _Connection, framing: str, length: int, keep: bool, read: float | None
    ) -> None:
        self._pool = pool
        self._conn = conn
        self._framing = framing  # "none", "length", "chunked" or "close"
        self._left = length  # bytes of the body (or of the current chunk) still to come
        self._keep = keep
        self._read = read
        self._done = framing == "none"
        self._released = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            if self._framing == "length":
                async for part in self._fixed():
                    yield part
            elif self._framing == "chunked":
                async for part in self._chunked():
                    yield part
            elif self._framing == "close":
                async for part in self._until_close():
                    yield part
        except BaseException:
            # a read that failed or was cancelled (or a caller that stopped iterating)
            # closes the connection at once, as httpcore does: the server sees the client
            # gone even when nobody closes the response (a modern request is cancelled so)
            self._give_back()
            raise
        self._done = True
        self._give_back()

    async def _more(self) -> None:
        conn = self._conn
        if conn.closed:
            if conn.error is not None:
                raise httpx.ReadError(f"the connection failed: {conn.error}") from None
            raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")
        try:
            await conn.receive(self._read)
        except TimeoutError:
            raise httpx.ReadTimeout("timed out reading the response") from None

    async def _fixed(self) -> AsyncIterator[bytes]:
        buf = self._conn.buffer
        while self._left:
            if not buf:
                await self._more()
                continue
            take = min(len(buf), self._left)
            part = bytes(buf[:take])
            del buf[:take]
            self._left -= take
            yield part

    async def _line(self) -> bytes:
        buf = self._conn.buffer
        while True:
            end = buf.find(_CRLF)
            if end >= 0:
                line = bytes(buf[:end])
                del buf[: end + 2]
                return line
            if len(buf) > MAX_HEAD:
                raise httpx.RemoteProtocolError("a chunk size line is too long")
            await self._more()

    async def _chunked(self) -> AsyncIterator[bytes]:
        buf = self._conn.buffer
        while True:
            size_line = await self._line()
            match = _CHUNK_SIZE.fullmatch(size_line)
            if match is None:
                raise httpx.RemoteProtocolError(f"invalid chunk size {size_line[:32]!r}")
            size = int(match[1], 16)
            if size == 0:
                while await self._line():  # trailers, up to the empty line
                    pass
                return
            self._left = size
            async for part in self._fixed():
                yield part
            while len(buf) < 2:
                await self._more()
            if buf[:2] != _CRLF:
                raise httpx.RemoteProtocolError("a chunk does not end with CRLF")
            del buf[:2]

    async def _until_close(self) -> AsyncIterator[bytes]:
        conn = self._conn
        while True:
            if conn.buffer:
                part = bytes(conn.buffer)
                conn.buffer.clear()
                yield part
                continue
            if conn.closed:
                if conn.error is not None:
                    raise httpx.ReadError(f"the connection failed: {conn.error}")
                return
            try:
                await conn.receive(self._read)
            except TimeoutError:
                raise httpx.ReadTimeout("timed out reading the response") from None

    def _give_back(self) -> None:
        if not self._released:
            self._released = True
            self._pool._release(self._conn, self._keep and self._done)

    async def aclose(self) -> None:
        self._give_back()


class ConnectionPool(httpx.AsyncBaseTransport):
    """An ``httpx.AsyncBaseTransport`` of HTTP/1.1 keep-alive connections, at most
    ``max_connections`` open (a request beyond waits for one, up to its ``pool``
    timeout) and ``max_keepalive`` idle, closed after ``keepalive_expiry`` seconds idle
    (httpx's defaults). ``verify`` is the TLS verification of ``https`` URLs (True:
    httpx's default context, made at the first such connection; an ``ssl.SSLContext``;
    False: none). What it raises: the module's docstring."""

    def __init__(
        self,
        *,
        verify: ssl.SSLContext | bool = True,
        max_connections: int = 100,
        max_keepalive: int = 20,
        keepalive_expiry: float | None = 5.0,
    ) -> None:
        self._verify = verify
        self._ssl: ssl.SSLContext | None = None
        if isinstance(verify, ssl.SSLContext):
            verify.set_alpn_protocols(["http/1.1"])  # as httpcore does with a context it is given
            self._ssl = verify
        self._max_connections = max_connections
        self._max_keepalive = max_keepalive
        self._expiry = keepalive_expiry
        self._idle: dict[Origin, deque[_Connection]] = {}
        self._idle_count = 0
        self._open: set[_Connection] = set()
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        scheme = url.scheme
        if scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"Request URL has an unsupported protocol '{scheme}://'.", request=request)
        if not url.raw_host:
            raise httpx.UnsupportedProtocol("Request URL is missing a host.", request=request)
        # the host as the URL encodes it (IDNA 2008, as the Host header says it): the socket
        # layer would encode a name given as text with IDNA 2003 (faß.de: fass.de, another host)
        host = url.raw_host.decode("ascii")
        origin = (scheme, host, url.port or (443 if scheme == "https" else 80))
        timeouts = _timeouts(request)
        head = _head(request)
        body = request.content if _read(request) else None
        conn = await self._acquire(origin, timeouts, request)
        try:
            return await self._exchange(conn, request, head, body, timeouts)
        except BaseException:
            self._release(conn, False)
            raise

    async def _exchange(
        self, conn: _Connection, request: httpx.Request, head: bytes, body: bytes | None, timeouts: dict[str, float | None]
    ) -> httpx.Response:
        write = timeouts.get("write")
        try:
            if body is not None and len(body) < _ONE_WRITE:
                await conn.write(head + body, write)  # one send
            elif body is not None:
                await conn.write(head, write)
                await conn.write(body, write)
            else:
                await conn.write(head, write)
                await self._stream_body(conn, request, write)
        except TimeoutError:
            raise httpx.WriteTimeout("timed out sending the request", request=request) from None
        except OSError as exc:
            if conn.closed and conn.error is None:
                raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request) from None
            raise httpx.WriteError(f"sending the request failed: {exc}", request=request) from None
        read = timeouts.get("read")
        while True:
            status, reason, version, headers = await self._read_head(conn, request, read)
            if 100 <= status < 200 and status != 101:
                continue  # informational: the response follows
            break
        framing, length, keep = _framing(request, status, version, headers)
        stream = _Body(self, conn, framing, length, keep, read)
        if framing == "none":
            stream._give_back()
        return httpx.Response(
            status, headers=headers, stream=stream, extensions={"http_version": version, "reason_phrase": reason}
        )

    async def _stream_body(self, conn: _Connection, request: httpx.Request, write: float | None) -> None:
        """Send a body that was not read into memory: as it is with a ``Content-Length``,
        else chunked (``_head`` said which)."""
        chunked = "content-length" not in request.headers
        stream = request.stream
        assert isinstance(stream, httpx.AsyncByteStream)
        async for part in stream:
            if part:
                await conn.write(b"%x\r\n%b\r\n" % (len(part), part) if chunked else part, write)
        if chunked:
            await conn.write(b"0\r\n\r\n", write)

    async def _read_head(
        self, conn: _Connection, request: httpx.Request, read: float | None
    ) -> tuple[int, bytes, bytes, list[tuple[bytes, bytes]]]:
        buf = conn.buffer
        start = 0
        while True:
            end = buf.find(_HEAD_END, max(0, start - 3))
            if end >= 0:
                break
            if len(buf) > MAX_HEAD:
                raise httpx.RemoteProtocolError("the response's headers are too long", request=request)
            if conn.closed:
                if conn.error is not None:
                    raise httpx.ReadError(f"the connection failed: {conn.error}", request=request)
                raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)
            start = len(buf)
            try:
                await conn.receive(read)
            except TimeoutError:
                raise httpx.ReadTimeout("timed out waiting for the response", request=request) from None
        if end > MAX_HEAD:  # it all arrived at once: the limit holds all the same
            raise httpx.RemoteProtocolError("the response's headers are too long", request=request)
        lines = bytes(buf[:end]).split(_CRLF)
        del buf[: end + 4]
        version, _, rest = lines[0].partition(b" ")
        code, _, reason = rest.partition(b" ")
        if (
            version not in (b"HTTP/1.1", b"HTTP/1.0")
            or len(code) != 3
            or not code.isdigit()
            or _CONTROL.search(reason) is not None
        ):
            raise httpx.RemoteProtocolError(f"not an HTTP/1.x response: {lines[0][:64]!r}", request=request)
        headers: list[tuple[bytes, bytes]] = []
        for line in lines[1:]:
            name, colon, value = line.partition(b":")
            if not colon or _TOKEN.fullmatch(name) is None or _CONTROL.search(value) is not None:
                raise httpx.RemoteProtocolError(f"invalid response header {line[:64]!r}", request=request)
            headers.append((name, value.strip(b" \t")))
        return int(code), reason, version, headers

    async def _acquire(self, origin: Origin, timeouts: dict[str, float | None], request: httpx.Request) -> _Connection:
        """An idle connection to ``origin`` that may be reused, else a new one (waiting, at
        most the ``pool`` timeout, while ``max_connections`` are open)."""
        if self._closed:
            raise httpx.ConnectError("the HTTP client is closed", request=request)
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            conn = idle.pop()
            self._idle_count -= 1
            if conn.reusable(now, self._expiry):
                return conn
            self._discard(conn)
        while len(self._open) >= self._max_connections:
            if self._idle_count:
                self._close_oldest_idle()
                continue
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                async with asyncio.timeout(timeouts.get("pool")):
                    await waiter
            except BaseException as exc:
                if waiter.done() and not waiter.cancelled():
                    self._wake_one()  # woken, then cancelled or timed out: the turn passes on
                if isinstance(exc, TimeoutError):
                    raise httpx.PoolTimeout("timed out waiting for a connection", request=request) from None
                raise
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
            if self._closed:
                raise httpx.ConnectError("the HTTP client is closed", request=request)
            idle = self._idle.get(origin)
            while idle:
                conn = idle.pop()
                self._idle_count -= 1
                if conn.reusable(time.monotonic(), self._expiry):
                    self._wake_one()  # the slot is used by a reused connection: pass the turn on
                    return conn
                self._discard(conn)
        return await self._connect(origin, timeouts, request)

    async def _connect(self, origin: Origin, timeouts: dict[str, float | None], request: httpx.Request) -> _Connection:
        scheme, host, port = origin
        conn = _Connection(origin)
        self._open.add(conn)
        context = self._context() if scheme == "https" else None
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeouts.get("connect")):
                await loop.create_connection(lambda: conn, host, port, ssl=context, server_hostname=host if context else None)
        except TimeoutError:
            self._discard(conn)
            raise httpx.ConnectTimeout(f"timed out connecting to {host}:{port}", request=request) from None
        except (OSError, ssl.SSLError) as exc:
            self._discard(conn)
            raise httpx.ConnectError(str(exc) or type(exc).__name__, request=request) from None
        except BaseException:
            self._discard(conn)
            raise
        return conn

    def _context(self) -> ssl.SSLContext | None:
        if self._ssl is None:
            self._ssl = httpx.create_ssl_context(verify=False) if self._verify is False else httpx.create_ssl_context()
            self._ssl.set_alpn_protocols(["http/1.1"])  # HTTP/1.1 offered by ALPN, as httpcore does
        return self._ssl

    def _release(self, conn: _Connection, keep: bool) -> None:
        """A response is over: keep its connection idle if it may carry another request."""
        if conn not in self._open:
            return
        if keep and not self._closed and conn.reusable(0.0, None) and self._idle_count < self._max_keepalive:
            conn.resume()  # reading paused while its response arrived: it must see a close
            conn.idle_since = time.monotonic()
            self._idle.setdefault(conn.origin, deque()).append(conn)
            self._idle_count += 1
        else:
            self._discard(conn)
        self._wake_one()

    def _discard(self, conn: _Connection) -> None:
        conn.close()
        if conn in self._open:
            self._open.discard(conn)
            self._wake_one()

    def _close_oldest_idle(self) -> None:
        oldest: deque[_Connection] | None = None
        for idle in self._idle.values():
            if idle and (oldest is None or idle[0].idle_since < oldest[0].idle_since):
                oldest = idle
        if oldest is not None:
            self._idle_count -= 1
            self._discard(oldest.popleft())

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    async def aclose(self) -> None:
        """Close every connection, idle or in use (a request reading or sending on one
        raises ``RemoteProtocolError``); requests waiting for a connection, and later
        ones, raise ``ConnectError``."""
        self._closed = True
        for conn in list(self._open):
            conn.close()
        self._open.clear()
        self._idle.clear()
        self._idle_count = 0
        waiters, self._waiters = self._waiters, deque()
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)


def _read(request: httpx.Request) -> bool:
    """Whether the request's body is in memory (``request.content``)."""
    try:
        request.content  # noqa: B018 - raises RequestNotRead for a streamed body
    except httpx.RequestNotRead:
        return False
    return True


def _head(request: httpx.Request) -> bytes:
    """The request line and headers (httpx made them: ``Host``, ``Content-Length``, …);
    ``Transfer-Encoding: chunked`` added for a streamed body of unknown length."""
    url = request.url
    target = url.raw_path or b"/"
    lines = [b"%b %b HTTP/1.1" % (request.method.encode("ascii"), target)]
    headers = request.headers
    for name, value in headers.raw:
        lines.append(b"%b: %b" % (name, value))
    if not _read(request) and "content-length" not in headers and "transfer-encoding" not in headers:
        lines.append(b"Transfer-Encoding: chunked")
    lines.append(b"")
    lines.append(b"")
    return _CRLF.join(lines)


def _framing(request: httpx.Request, status: int, version: bytes, headers: list[tuple[bytes, bytes]]) -> tuple[str, int, bool]:
    """How the response's body ends (RFC 9112, 6.3): ``(framing, length, keep_alive)``.
    Framing that parsers could read two ways is refused (``RemoteProtocolError``), as
    h11 refuses it: a ``Content-Length`` that is not digits, or several that differ; a
    transfer coding other than a lone ``chunked``. Chunked with a ``Content-Length`` is
    read chunked, and its connection not used again."""
    length: int | None = None
    chunked = False
    close = version == b"HTTP/1.0"
    for name, value in headers:
        lower = name.lower()
        if lower == b"content-length":
            for item in value.split(b","):
                item = item.strip(b" \t")
                if not item.isdigit() or len(item) > 18:  # ASCII digits (no sign, no "_"), under 10**18
                    raise httpx.RemoteProtocolError(f"invalid Content-Length {value[:32]!r}", request=request)
                if length is not None and int(item) != length:
                    raise httpx.RemoteProtocolError("conflicting Content-Length headers", request=request)
                length = int(item)
        elif lower == b"transfer-encoding":
            if chunked or value.lower() != b"chunked":
                raise httpx.RemoteProtocolError(f"unsupported Transfer-Encoding {value[:32]!r}", request=request)
            chunked = True
        elif lower == b"connection":
            tokens = {t.strip() for t in value.lower().split(b",")}
            if b"close" in tokens:
                close = True
            elif b"keep-alive" in tokens and version == b"HTTP/1.0":
                close = False
    if status == 101:  # the connection speaks another protocol from here on
        return "none", 0, False
    if request.method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        return "none", 0, not close
    if chunked:
        return "chunked", 0, not close and length is None
    if length is not None:
        return ("length", length, not close) if length else ("none", 0, not close)
    return "close", 0, False
