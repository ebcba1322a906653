"""Server-Sent Events framing (sans-IO): encode events, parse a byte stream of them.

Implements the event-stream format of the WHATWG HTML standard: ``field: value`` lines,
an empty line dispatches the event, lines starting with ``:`` are comments, ``data``
lines accumulate, ``id`` sets the last event id (ignored if it contains NUL), ``retry``
takes an integer number of milliseconds. CRLF, LF and CR line endings are accepted.
"""

from __future__ import annotations

from typing import Final

__all__ = ["SSEEvent", "SSEParser", "encode_event", "KEEPALIVE"]

#: A comment line: keeps idle connections open through proxies.
KEEPALIVE: Final = b": keep-alive\n\n"


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

    ``max_event_size`` bounds the data buffered for one event; a larger event raises
    ``ValueError`` (the stream is then unusable).
    """

    def __init__(self, max_event_size: int = 64 * 1024 * 1024) -> None:
        self.max_event_size = max_event_size
        self.last_event_id: str | None = None
        self.retry: int | None = None
        self._buf = b""
        self._data: list[str] = []
        self._size = 0
        self._event = ""
        self._pending_cr = False

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        if self._pending_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._pending_cr = False
        buf = self._buf + chunk
        events: list[SSEEvent] = []
        start = 0
        n = len(buf)
        while start < n:
            lf = buf.find(b"\n", start)
            cr = buf.find(b"\r", start)
            if lf < 0 and cr < 0:
                break
            if cr >= 0 and (lf < 0 or cr < lf):
                end, nxt = cr, cr + 1
                if nxt < n and buf[nxt : nxt + 1] == b"\n":
                    nxt += 1
                elif nxt == n:
                    self._pending_cr = True
            else:
                end, nxt = lf, lf + 1
            line = buf[start:end]
            start = nxt
            ev = self._line(line)
            if ev is not None:
                events.append(ev)
        self._buf = buf[start:]
        if len(self._buf) + self._size > self.max_event_size:
            raise ValueError(f"SSE event exceeds {self.max_event_size} bytes")
        return events

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
        line = raw.decode("utf-8", "replace")
        if line.startswith(":"):
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._size += len(value)
            if self._size > self.max_event_size:
                raise ValueError(f"SSE event exceeds {self.max_event_size} bytes")
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self.last_event_id = value
        elif name == "retry" and value.isdigit():
            self.retry = int(value)
        return None
