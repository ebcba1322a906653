"""The connection guard: what one client connection may cost the uvicorn that
:func:`~.uvicorn.run_uvicorn` runs, mixed into each of uvicorn's HTTP/1.1 protocols
(httptools, h11) alike (docs/http.md, "Limits and shutdown"; docs/limits.md).

uvicorn on its own waits forever for a request that has begun, or for a connection that
sends nothing; accepts connections until the process runs out of descriptors; and reads
a request's headers into memory up to whatever one read brings (httptools: without any
bound). The guard adds:

* **header caps**: a request head (request line, header lines, the blank line) of at
  most ``max_header_bytes`` bytes and ``max_headers`` header lines, counted as the bytes
  arrive, before the parser sees them — whatever the reads they come in — and answered
  with a raw 400 and the connection closed;
* **deadlines**: a connection owes its request's head within ``header_timeout`` seconds
  of being accepted (or, kept alive, of its previous response's end plus uvicorn's
  ``timeout_keep_alive``), then its body within ``body_timeout`` seconds; past either,
  a raw 408 (unless the response has started, or nothing was sent) and the connection
  closed. Dribbling bytes does not move a deadline;
* **connection slots**: at most ``max_connections`` open connections. When a new one
  arrives at the cap, the connection that has waited longest without a complete request
  — idle between requests, or still sending its head, then one still sending its body —
  is closed to make room (:class:`Slots`); only when every connection is busy with a
  request is the newcomer refused, with a raw 503 and ``Retry-After: 1``. So clients
  that hold connections open without finishing a request (slowloris) cannot keep others
  out: each newcomer takes the slot of the oldest of them.

The deadlines cost no timer per connection: the connections that owe something are kept
in the order they began to owe it, and one timer per server walks them.
"""

from __future__ import annotations

import asyncio
import functools
import heapq
import itertools
import re
import sys
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any, Final

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

try:
    import fcntl
    import termios
except ImportError:  # Windows: no way to ask how much a socket holds unread
    fcntl = termios = None  # type: ignore[assignment]

__all__ = ["Slots", "guarded_protocol", "DEFAULT_MAX_HEADER_BYTES", "DEFAULT_MAX_HEADERS"]

#: The default cap on a request head's bytes (h11's own default).
DEFAULT_MAX_HEADER_BYTES: Final = 16 * 1024
#: The default cap on a request's header lines.
DEFAULT_MAX_HEADERS: Final = 100

_BUSY: Final = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 38\r\nretry-after: 1\r\nconnection: close\r\n\r\n"
    b"Service Unavailable: too many clients\n"
)
_TIMEOUT: Final = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 52\r\nconnection: close\r\n\r\n"
    b"Request Timeout: the request did not arrive in time\n"
)

#: The end of a request head: an empty line (h11 also takes a bare LF; llhttp refuses one).
_BLANK_LINE: Final = re.compile(rb"\n\r?\n")

#: The largest write that a held response head is joined with (a larger one follows it).
_JOIN_MAX: Final = 64 * 1024

#: Candidates for eviction looked at, oldest first, for one that holds nothing unread.
_LOOK_AT: Final = 16

# What a connection owes, as Slots keeps it.
_NEW = "new"  # accepted; its first request's head (none of it, or part)
_IDLE = "idle"  # kept alive after a response; the next request's head
_BODY = "body"  # a request's body, after its head


def _bad_request(text: str) -> bytes:
    body = f"Bad Request: {text}\n".encode()
    return (
        b"HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: "
        + str(len(body)).encode()
        + b"\r\nconnection: close\r\n\r\n"
        + body
    )


class _Head:
    """One request head as its bytes arrive: its size and its lines so far, and whether
    its blank line has come. :meth:`take` counts a read's bytes up to the head's end."""

    __slots__ = ("size", "newlines", "tail", "ended", "_max_bytes", "_max_lines")

    def __init__(self, max_bytes: int, max_headers: int) -> None:
        self.size = 0
        self.newlines = 0
        self.tail = b""  # the last bytes counted: a blank line may straddle two reads
        self.ended = False
        self._max_bytes = max_bytes
        self._max_lines = max_headers + 2  # the request line's newline and the blank line's

    def take(self, data: bytes, start: int = 0) -> tuple[int | None, str | None]:
        """Count ``data[start:]`` into the head: (where the head ends in ``data``, or None
        if it goes on past it; why the head is refused, or None). Once it has ended,
        nothing more is counted."""
        if self.ended:
            return start, None
        end = None
        if self.tail:  # a blank line begun in the previous read
            joint = self.tail + data[start : start + 2]
            found = _BLANK_LINE.search(joint)
            if found is not None and found.end() > len(self.tail):
                end = start + found.end() - len(self.tail)
        if end is None:
            found = _BLANK_LINE.search(data, start)
            end = found.end() if found is not None else None
        stop = end if end is not None else len(data)
        if stop > start:
            self.size += stop - start
            self.newlines += data.count(b"\n", start, stop)
            self.tail = (self.tail + data[max(start, stop - 2) : stop])[-2:]
        self.ended = end is not None
        return end, self.verdict()

    def verdict(self) -> str | None:
        """Why the head counted so far is refused, or None."""
        if self.size > self._max_bytes:
            return f"the request's headers exceed {self._max_bytes} bytes"
        if self.newlines > self._max_lines:
            return f"more than {self._max_lines - 2} header fields"
        return None


class Slots:
    """The connections of one server: how many are open (at most ``limit``), and the ones
    that owe something — a request's head or its body — in the order they began to owe it,
    so that the deadlines are kept by one timer and, when the server is full, the one that
    has waited longest is the one closed to make room."""

    def __init__(self, limit: int, header_timeout: float, body_timeout: float, keep_alive: float) -> None:
        self.limit = limit
        self._timeouts = {_NEW: header_timeout, _IDLE: keep_alive + header_timeout, _BODY: body_timeout}
        self._owing: dict[str, OrderedDict[_Guard, float]] = {kind: OrderedDict() for kind in self._timeouts}
        self._open: set[_Guard] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._due = 0.0

    @property
    def open(self) -> int:
        """The connections counted against ``limit``."""
        return len(self._open)

    def admit(self, conn: _Guard) -> bool:
        """Count ``conn`` in, closing the longest-waiting connection first if the server is
        full; False (``conn`` not counted) if every connection is busy with a request."""
        if self._loop is not conn.loop:  # a new run of the server: nothing of the last one holds
            self._reset(conn.loop)
        if len(self._open) >= self.limit:
            victim = self._victim()
            if victim is None:
                return False
            victim.expire()
        self._open.add(conn)
        return True

    def owe(self, conn: _Guard, kind: str | None) -> None:
        """``conn`` now owes ``kind`` (``_NEW``, ``_IDLE``, ``_BODY``), from now on; None:
        nothing (busy with a request, or closed)."""
        current = conn.owing
        if current == kind:
            return
        if current is not None:
            self._owing[current].pop(conn, None)
        if conn not in self._open:
            kind = None  # refused, or already let go
        conn.owing = kind
        if kind is not None:
            assert self._loop is not None
            due = self._loop.time() + self._timeouts[kind]
            self._owing[kind][conn] = due
            if self._timer is None or due < self._due:
                self._arm(due)

    def leave(self, conn: _Guard) -> None:
        """``conn`` is closed (or closing): it no longer counts."""
        self.owe(conn, None)
        self._open.discard(conn)

    def _victim(self) -> _Guard | None:
        """The connection to close for a newcomer: the one waiting longest for a request's
        head (new or kept alive) — skipping, among the oldest few, those whose bytes wait
        in the socket unread (a request that has arrived but not been read yet: under a
        flood of new connections, every one is young) — else the one waiting longest for
        a body."""
        waiting = heapq.merge(self._by_start(_NEW), self._by_start(_IDLE), key=lambda entry: entry[0])
        oldest = None
        for _, conn in itertools.islice(waiting, _LOOK_AT):
            if not conn.has_unread():
                return conn
            oldest = oldest or conn
        return oldest or next(iter(self._owing[_BODY]), None)

    def _by_start(self, kind: str) -> Iterator[tuple[float, _Guard]]:
        timeout = self._timeouts[kind]
        return ((due - timeout, conn) for conn, due in self._owing[kind].items())

    def _arm(self, due: float) -> None:
        assert self._loop is not None
        if self._timer is not None:
            self._timer.cancel()
        self._due = due
        self._timer = self._loop.call_at(due, self._sweep)

    def _sweep(self) -> None:
        """Close every connection past its deadline; then wait for the next deadline."""
        assert self._loop is not None
        self._timer = None
        now = self._loop.time()
        nearest: float | None = None
        for owing in self._owing.values():
            while owing:
                conn, due = next(iter(owing.items()))
                if due > now:
                    nearest = due if nearest is None else min(nearest, due)
                    break
                conn.expire()  # which lets it go
        if nearest is not None:
            self._arm(nearest)

    def _reset(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._loop = loop
        self._open.clear()
        for owing in self._owing.values():
            owing.clear()


class _Corked:
    """A guarded connection's transport, which sends a response's head with what follows
    it: uvicorn writes the status line and headers, then the body, in two writes — two
    system calls and, for the client, two segments to read. A write that is a response
    head (it begins ``HTTP/1.1``) is held until the next write, which takes it along (a
    body over 64 KiB goes out after it, not copied into one buffer), or until the end of
    the event loop's current iteration, or until the transport closes; nothing is
    reordered. Everything else is the transport's own."""

    __slots__ = ("_transport", "_loop", "_held")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        held = self._held
        if held is not None:
            self._held = None
            if len(data) <= _JOIN_MAX:
                self._transport.write(b"".join((held, data)))  # any bytes-like body
                return
            self._transport.write(held)
        elif isinstance(data, bytes) and data.startswith(b"HTTP/1.1 "):
            self._held = data
            self._loop.call_soon(self.flush)
            return
        self._transport.write(data)

    def flush(self) -> None:
        """Write the held head, if any (dropped if the connection is gone meanwhile, as
        uvicorn drops what a disconnected client is sent). Never raises."""
        held = self._held
        if held is not None:
            self._held = None
            if not self._transport.is_closing():
                self._transport.write(held)

    def writelines(self, lines: Any) -> None:
        self.flush()
        self._transport.writelines(lines)

    def close(self) -> None:
        self.flush()  # what was written goes out before the close
        self._transport.close()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def abort(self) -> None:
        self._held = None
        self._transport.abort()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + len(self._held or b"")

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class _Guard(asyncio.Protocol):
    """The caps, deadlines and slots, mixed in before one of uvicorn's HTTP/1.1 protocols.
    The subclass for each parser says what the connection owes (:meth:`_owes`) and counts
    the request heads before its parser sees them."""

    _slots: Slots
    _max_header_bytes: int
    _max_headers: int
    # kept for whoever reads the settings of a guarded class
    _header_timeout: float
    _body_timeout: float
    _max_connections: int
    owing: str | None = None
    _served = False  # a response has completed on this connection
    _head: _Head | None = None
    _refused: str | None = None  # why a head was refused (answered once the request before it is)
    _fd = -1  # the socket's descriptor, to ask how much it holds unread
    # set by the uvicorn protocol this is mixed into
    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop
    cycle: Any
    flow: Any

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        transport = _Corked(transport, asyncio.get_running_loop())  # type: ignore[assignment]
        super().connection_made(transport)
        sock = transport.get_extra_info("socket")
        self._fd = sock.fileno() if sock is not None else -1
        if not self._slots.admit(self):
            transport.write(_BUSY)
            transport.close()
            return
        self._slots.owe(self, _NEW)

    def connection_lost(self, exc: Exception | None) -> None:
        self._slots.leave(self)
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        self._served = True
        super().on_response_complete()  # type: ignore[misc]
        if self._refused is not None:  # a pipelined head was refused: its answer is due now
            self._send_refusal()
            return
        self._sync()

    def _owes(self) -> str | None:
        """What the client owes now, in :class:`Slots`' terms (None: nothing)."""
        raise NotImplementedError

    def has_unread(self) -> bool:
        """Whether bytes from the client wait in the socket, not read yet (False where
        that cannot be asked)."""
        if self._fd < 0 or fcntl is None or self.transport.is_closing():
            return False
        try:
            held = fcntl.ioctl(self._fd, termios.FIONREAD, b"\0\0\0\0")
        except OSError:
            return False
        return int.from_bytes(held, sys.byteorder) > 0

    def _head_begun(self) -> bool:
        """Whether some of the head owed has arrived."""
        raise NotImplementedError

    def _sync(self) -> None:
        """Tell the slots what is owed now (after the parser has seen what came)."""
        if self.transport.is_closing():
            self._slots.leave(self)
        else:
            self._slots.owe(self, self._owes())

    def _new_head(self) -> _Head:
        return _Head(self._max_header_bytes, self._max_headers)

    def _done(self) -> bool:
        """Whether nothing more is read from this connection (a head was refused, or it is closing)."""
        return self._refused is not None or self.transport.is_closing()

    def refuse_head(self, why: str) -> None:
        """A head over a cap: a raw 400 saying which, and the connection closed — once
        the response to a request before it (pipelined) is complete; meanwhile nothing
        more is read."""
        if self._refused is not None:
            return
        self._refused = why
        if self.cycle is not None and not self.cycle.response_complete and not self.transport.is_closing():
            self.flow.pause_reading()
            self._slots.owe(self, None)  # busy until that response is written
            return
        self._send_refusal()

    def _send_refusal(self) -> None:
        if not self.transport.is_closing():
            self.transport.write(_bad_request(self._refused or "the request's headers are too large"))
            self.transport.close()
        self._slots.leave(self)

    def expire(self) -> None:
        """Close the connection: its deadline has passed, or its slot is needed. A raw 408
        if it was sending a request whose response has not started; nothing if it had
        sent nothing of its next request."""
        kind = self.owing
        self._slots.leave(self)
        if self.transport.is_closing():
            return
        started = self.cycle is not None and not self.cycle.response_complete and self.cycle.response_started
        if (kind == _BODY or self._head_begun()) and not started:
            self.transport.write(_TIMEOUT)
        self.transport.close()


class _GuardedH11(_Guard, H11Protocol):
    """The guard over uvicorn's h11 protocol: h11's state says what is owed, and its
    buffer holds the head in progress (a pipelined one included) until h11 parses it."""

    def _owes(self) -> str | None:
        state = self.conn.their_state
        if state is h11.IDLE:
            return _IDLE if self._served else _NEW
        return _BODY if state is h11.SEND_BODY else None

    def _head_begun(self) -> bool:
        return self.conn.their_state is h11.IDLE and bool(self.conn.trailing_data[0])

    def _count_head(self, data: bytes) -> str | None:
        """Count ``data`` into the head owed; why it is refused, or None."""
        head = self._head
        if head is None:  # a new head: what h11 holds already is its start (pipelined)
            head = self._head = self._new_head()
            _, refused = head.take(self.conn.trailing_data[0])
            if refused is not None:
                return refused
        return head.take(data)[1] if data else None

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE:
            refused = self._count_head(data)
            if refused is not None:
                self.refuse_head(refused)
                return
        super().data_received(data)
        self._sync()

    def handle_events(self) -> None:
        # Also called when a response is complete, to parse what was pipelined meanwhile.
        if self.conn.their_state is h11.IDLE and self._head is None:
            refused = self._count_head(b"")
            if refused is not None:
                self.refuse_head(refused)
                return
        super().handle_events()
        if self.conn.their_state is not h11.IDLE:
            self._head = None


@functools.cache
def _guarded_httptools() -> type[_Guard] | None:
    """The guard over uvicorn's httptools protocol, or None without httptools. The parser
    consumes what it is fed and keeps no state to ask, so the guard feeds it a head at a
    time, having counted it, and its callbacks record what is owed."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return None

    class _GuardedHttpTools(_Guard, HttpToolsProtocol):
        _owed: str | None = None  # _NEW (a head), _BODY, or None: what the parser waits for
        _body_left: int | None = None  # of a body with a Content-Length
        _blind = False  # feeding bytes whose extent is unknown (a chunked body, to its end)
        _blind_head: _Head | None = None  # a head that began in such bytes, counted as parsed

        def _owes(self) -> str | None:
            if self._owed is _BODY:
                return _BODY
            if self.cycle is not None and not self.cycle.response_complete:
                return None  # a request is being answered (another may be pipelined behind it)
            return _IDLE if self._served else _NEW

        def _head_begun(self) -> bool:
            return self._owed is _NEW

        def _feed(self, data: bytes, start: int, stop: int) -> None:
            super().data_received(data if start == 0 and stop == len(data) else data[start:stop])

        def data_received(self, data: bytes) -> None:
            pos, size = 0, len(data)
            while pos < size and not self._done():
                if self._owed is _BODY:
                    left = self._body_left
                    if left is None or left >= size - pos:  # the rest is body, or a chunked body's
                        self._blind = left is None
                        try:
                            self._feed(data, pos, size)
                        finally:
                            self._blind = False
                        break
                    self._feed(data, pos, pos + left)
                    pos += left
                    continue
                head = self._head
                if head is None:
                    head = self._head = self._new_head()
                end, refused = head.take(data, pos)
                if refused is not None:
                    self.refuse_head(refused)
                    return
                if end is None:
                    self._feed(data, pos, size)
                    break
                self._feed(data, pos, end)
                pos, self._head = end, None
                if self.parser.should_upgrade():  # uvicorn hands the connection over: as it would
                    if pos < size and not self._done():
                        self._feed(data, pos, size)
                    break
            if not self._done():
                self._sync()

        def on_message_begin(self) -> None:
            self._owed = _NEW
            if self._blind:  # pipelined behind a chunked body in one read: count it as parsed
                self._blind_head = self._new_head()
            super().on_message_begin()

        def on_url(self, url: bytes) -> None:
            if self._blind_head is not None:
                self._blind_head.size += len(url) + 16  # the method, the version, the separators
            super().on_url(url)

        def on_header(self, name: bytes, value: bytes) -> None:
            blind = self._blind_head
            if blind is not None:
                blind.size += len(name) + len(value) + 4
                blind.newlines += 1
            super().on_header(name, value)

        def on_headers_complete(self) -> None:
            blind, self._blind_head = self._blind_head, None
            if self._done():
                return  # refused meanwhile: no request is started
            if blind is not None and (blind.size > self._max_header_bytes or blind.newlines > self._max_headers):
                self.refuse_head("the request's headers are too large")
                return  # no cycle: the parser's later callbacks find the connection closing
            self._owed = _BODY
            self._body_left = None
            for name, value in self.headers:
                if name == b"transfer-encoding":
                    self._body_left = None
                    break
                if name == b"content-length" and value.isdigit():
                    self._body_left = int(value)
            super().on_headers_complete()

        def on_body(self, body: bytes) -> None:
            if self._body_left is not None:
                self._body_left -= len(body)
            if not self._done():
                super().on_body(body)

        def on_message_complete(self) -> None:
            self._owed = None
            self._body_left = None
            if not self._done():
                super().on_message_complete()

    return _GuardedHttpTools


def guarded_protocol(
    header_timeout: float,
    body_timeout: float,
    max_connections: int,
    http: str = "auto",
    *,
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
    max_headers: int = DEFAULT_MAX_HEADERS,
    keep_alive: float = 5.0,
) -> type[asyncio.Protocol]:
    """One of uvicorn's HTTP/1.1 protocols with the guard of the module docs.

    ``http`` chooses the parser: ``"httptools"`` (uvicorn's C parser; raises
    ``ModuleNotFoundError`` without the ``httptools`` package), ``"h11"`` (pure
    Python), or ``"auto"``: httptools when it is installed, else h11. ``keep_alive`` is
    uvicorn's ``timeout_keep_alive``, which the deadline of a kept-alive connection's next
    head adds to ``header_timeout``. Raises ``ValueError`` for another ``http``, or for a
    limit below 1.
    """
    if http not in ("auto", "httptools", "h11"):
        raise ValueError(f"http must be 'auto', 'httptools' or 'h11', not {http!r}")
    if min(max_connections, max_header_bytes, max_headers) < 1:
        raise ValueError("max_connections, max_header_bytes and max_headers must be at least 1")
    base = _guarded_httptools() if http != "h11" else _GuardedH11
    if base is None and http == "httptools":
        raise ModuleNotFoundError("http='httptools' needs the httptools package", name="httptools")
    base = base or _GuardedH11
    settings: dict[str, Any] = {
        "_slots": Slots(max_connections, header_timeout, body_timeout, keep_alive),
        "_header_timeout": header_timeout,
        "_body_timeout": body_timeout,
        "_max_connections": max_connections,
        "_max_header_bytes": max_header_bytes,
        "_max_headers": max_headers,
    }
    return type(f"Guarded{base.__name__}", (base,), settings)
