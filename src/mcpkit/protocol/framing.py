"""Newline-delimited message framing (sans-IO), as stdio carries JSON-RPC.

:class:`LineFramer` splits a byte stream into messages without ever buffering one
larger than its limit; :func:`frame` delimits one outbound message.
"""

from __future__ import annotations

from typing import Final

__all__ = ["LineFramer", "OVERSIZED", "frame"]

NEWLINE: Final = b"\n"


def frame(message: bytes) -> bytes:
    """``message`` delimited for a newline-framed stream."""
    return message + NEWLINE


#: Yielded by :class:`LineFramer` in place of a message that exceeded the size limit.
OVERSIZED = b""


class LineFramer:
    """Split a byte stream into newline-delimited messages (sans-IO).

    Messages longer than ``max_size`` bytes are discarded as they stream in (never
    buffered whole) and reported once as :data:`OVERSIZED`. Blank lines are skipped.
    """

    def __init__(self, max_size: int) -> None:
        self.max_size = max_size
        self._parts: list[bytes] = []
        self._size = 0
        self._discarding = False

    def feed(self, data: bytes) -> list[bytes]:
        out: list[bytes] = []
        start = 0
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                break
            chunk = data[start:nl]
            start = nl + 1
            if self._discarding:
                self._discarding = False
                continue
            if self._parts:
                self._parts.append(chunk)
                line = b"".join(self._parts)
                self._parts.clear()
                self._size = 0
            else:
                line = chunk
            if len(line) > self.max_size:
                out.append(OVERSIZED)
            elif line.strip():
                out.append(line)
        rest = data[start:]
        if rest and not self._discarding:
            self._size += len(rest)
            if self._size > self.max_size:
                self._parts.clear()
                self._size = 0
                self._discarding = True
                out.append(OVERSIZED)
            else:
                self._parts.append(rest)
        return out

    def eof(self) -> list[bytes]:
        """The stream ended: a final unterminated line still counts as a message."""
        if self._parts and not self._discarding:
            line = b"".join(self._parts)
            self._parts.clear()
            self._size = 0
            if line.strip():
                return [line]
        return []
