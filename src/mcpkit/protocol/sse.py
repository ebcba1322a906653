"""Server-Sent Events framing (sans-IO): encode events, parse a byte stream of them.

Implements the event-stream format of the WHATWG HTML standard: ``field: value`` lines,
an empty line dispatches the event, lines starting with ``:`` are comments, ``data``
lines accumulate, ``id`` sets the last event id (ignored if it contains NUL), ``retry``
takes an integer number of milliseconds. CRLF, LF and CR line endings are accepted.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["SSEEvent", "SSEParser", "encode_event", "KEEPALIVE"]

#: A comment line: keeps idle connections open through proxies.
KEEPALIVE: Final = b": keep-alive\n\n"

#: A line ending: CRLF, LF or CR (a CR that ends a chunk may be the first half of a CRLF).
_EOL: Final = re.compile(rb"\r\n|\r|\n")
#: ``retry`` values with more digits than this are taken as the largest one (no giant ints).
_RETRY_DIGITS: Final = 12
_MAX_RETRY: Final = 10**_RETRY_DIGITS - 1


class SSEEvent:
    """One dispatched event. ``id`` is the stream's last event id after this event."""

    __slots__ = ("data", "event", "id", "retry")

    def __init__(self, event: str, data: str, id: str | None, retry: int | None) -> None:
        self.event = event
        self.data = data
        self.id = id
        self.retry = retry

    def __repr__(self) -> str:
        return f"SSEEvent(event={self.event!r}, data={self.data[:60]!r}, id={self.id!r}, retry={self.retry!r})"


def encode_event(data: bytes, *, event_id: str | None = None, event: str = "message", retry: int | None = None) -> bytes:
    """One SSE event carrying ``data`` (which must not contain line breaks — JSON
    encoded by mcpkit never does)."""
    out = b""
    if event_id is not None:
        out += b"id: " + event_id.encode() + b"\n"
    if retry is not None:
        out += b"retry: " + str(int(retry)).encode() + b"\n"
    if event != "message":
        out += b"event: " + event.encode() + b"\n"
    return out + b"data: " + data + b"\n\n"


class SSEParser:
    """Incremental parser: feed bytes, get complete events.

    Linear in its input: each byte is scanned once, and only the unterminated tail of
    the stream (the current line) is kept between calls. ``max_event_size`` bounds
    what one event may buffer — its ``data`` so far plus the line being read, in bytes —
    and is enforced as the bytes stream in: :meth:`feed` raises ``ValueError`` before
    buffering more than that (the stream is then unusable).
    """

    def __init__(self, max_event_size: int = 64 * 1024 * 1024) -> None:
        self.max_event_size = max_event_size
        self.last_event_id: str | None = None
        self.retry: int | None = None
        self._tail: list[bytes] = []  # the current, unterminated line, in pieces
        self._tail_size = 0
        self._data: list[str] = []
        self._size = 0  # bytes of this event's data so far, one per line break included
        self._event = ""
        self._pending_cr = False  # the last chunk ended with CR: a LF first in the next one is part of it

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """The events completed by ``chunk``. Raises ``ValueError`` when the event being
        read exceeds ``max_event_size``; nothing of ``chunk`` past the limit is kept."""
        if not chunk:
            return []
        start = 1 if self._pending_cr and chunk[:1] == b"\n" else 0
        self._pending_cr = chunk[-1:] == b"\r"
        events: list[SSEEvent] = []
        for match in _EOL.finditer(chunk, start):
            piece = chunk[start : match.start()]
            start = match.end()
            if self._tail:
                self._tail.append(piece)
                piece = b"".join(self._tail)
                self._tail.clear()
                self._tail_size = 0
            event = self._line(piece)
            if event is not None:
                events.append(event)
        if start < len(chunk):
            rest = chunk[start:]
            self._check(self._tail_size + len(rest))
            self._tail.append(rest)
            self._tail_size += len(rest)
        return events

    def _check(self, size: int) -> None:
        """Raise ``ValueError`` (dropping the tail) if ``size`` more bytes would put this
        event over the limit."""
        if self._size + size > self.max_event_size:
            self._tail.clear()
            self._tail_size = 0
            raise ValueError(f"SSE event exceeds {self.max_event_size} bytes")

    def _line(self, raw: bytes) -> SSEEvent | None:
        if not raw:
            if not self._data:
                self._event = ""
                return None
            ev = SSEEvent(self._event or "message", "\n".join(self._data), self.last_event_id, self.retry)
            self._data = []
            self._size = 0
            self._event = ""
            return ev
        if raw[:1] == b":":
            return None
        name, sep, value = raw.partition(b":")
        if sep and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            added = len(value) + (1 if self._data else 0)  # the line break that joins it to the data before
            self._check(added)
            self._size += added
            self._data.append(value.decode("utf-8", "replace"))
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"id":
            if b"\0" not in value:
                self.last_event_id = value.decode("utf-8", "replace")
        elif name == b"retry" and value.isdigit():
            self.retry = int(value) if len(value) <= _RETRY_DIGITS else _MAX_RETRY
        return None
