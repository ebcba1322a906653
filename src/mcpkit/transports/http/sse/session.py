"""A session of the deprecated HTTP+SSE transport (2024-11-05): :class:`SseSession`,
whose messages to the client wait, in order, in one queue that its ``GET`` stream
writes, with the bounds that keep a client that does not read from costing memory
(docs/limits.md, "The deprecated HTTP+SSE transport"); and :func:`ask`, the server's
request to the client over it. :mod:`.server` serves the endpoints.
"""

from __future__ import annotations

import asyncio
from typing import Final

import msgspec

from ....protocol.errors import McpError
from ....protocol.sse import encode_event
from ....runtime.outbound import ask_over
from ....stores.events import EventStore
from ..server.sessions import HttpSession

__all__ = ["SseSession", "ask", "HIGH_WATER", "HIGH_WATER_BYTES", "MAX_BACKLOG", "MAX_BACKLOG_BYTES", "WAKE"]

#: Frames waiting for a slow client past which a handler's or a subscriber's drain waits.
HIGH_WATER: Final = 256
#: Bytes waiting for a slow client past which a handler's or a subscriber's drain waits.
HIGH_WATER_BYTES: Final = 4 * 1024 * 1024
#: Frames waiting for the client past which its new requests are refused (429).
MAX_BACKLOG: Final = 4 * HIGH_WATER
#: Bytes waiting for the client past which its new requests are refused (429).
MAX_BACKLOG_BYTES: Final = 16 * 1024 * 1024
#: Put on a session's queue to make its stream look again (nothing is written).
WAKE: Final = b""


class SseSession(HttpSession):
    """A session of the HTTP+SSE transport: an :class:`HttpSession` whose messages to
    the client go, in order, to one queue of SSE frames that its GET stream writes.
    ``backlog`` counts the bytes queued and not yet taken by the stream."""

    def __init__(self, session_id: str, server_session: object, store: EventStore, max_error_text: int) -> None:
        super().__init__(session_id, server_session, store, max_error_text)
        self.frames: asyncio.Queue[bytes | None] = asyncio.Queue()
        #: Bytes of the frames in ``frames``.
        self.backlog = 0
        #: The server is shutting down: the stream ends once no request is in progress.
        self.draining = False

    def send(self, message: bytes) -> None:
        """Queue one JSON-RPC message as an ``event: message`` (dropped once ended)."""
        if not self.closed:
            frame = b"event: message\n" + encode_event(message)
            self.backlog += len(frame)
            self.frames.put_nowait(frame)

    async def next_frame(self) -> bytes | None:
        """The next queued frame (None: the session ended), taken off the backlog.
        Cancellation leaves the queue as it was."""
        frame = await self.frames.get()
        if frame:
            self.backlog -= len(frame)
        return frame

    def notify(self, method: str, params: object = None) -> None:
        """Queue a notification."""
        self.send(self.engine.notification(method, params))

    @property
    def congested(self) -> bool:
        """More than :data:`MAX_BACKLOG` frames or :data:`MAX_BACKLOG_BYTES` bytes wait
        for a client that does not read its stream: its new requests are refused."""
        return self.frames.qsize() > MAX_BACKLOG or self.backlog > MAX_BACKLOG_BYTES

    async def drain(self) -> None:
        """Wait while more than :data:`HIGH_WATER` frames or :data:`HIGH_WATER_BYTES`
        bytes wait for a slow client (flow control for handlers and change
        subscribers); returns once the session ends. Cancellation propagates."""
        while True:  # polled: the GET stream's writes drain the queue
            if (self.frames.qsize() <= HIGH_WATER and self.backlog <= HIGH_WATER_BYTES) or self.closed:
                return
            await asyncio.sleep(0.01)

    def close(self, *, ended: bool = True) -> None:
        """End the session (:meth:`HttpSession.close`) and its stream, once the stream
        has written what was queued before."""
        super().close(ended=ended)
        self.frames.put_nowait(None)

    def last_words(self, error: McpError) -> bytes:
        """The stream's last frames when it must end at once (the server's grace ran
        out): what is queued, then ``error`` as the answer of each request still in
        progress, whose handler is cancelled."""
        frames: list[bytes] = []
        while not self.frames.empty():
            frame = self.frames.get_nowait()
            if frame:
                frames.append(frame)
        self.backlog = 0
        for rid, handle in list(self.engine.incoming.items()):
            message = self.engine.respond_error(rid, error)
            if isinstance(handle, asyncio.Task):
                handle.cancel()
            if message is not None:
                frames.append(b"event: message\n" + encode_event(message))
        return b"".join(frames)

    def close_standalone(self) -> None:
        """The server is shutting down: end the stream (and with it the session) once
        the requests in progress have been answered."""
        self.draining = True
        self.frames.put_nowait(WAKE)


async def ask(session: SseSession, method: str, params: object, *, timeout: float) -> msgspec.Raw:
    """A request to the client on the session's stream; its response, POSTed back, is
    routed by the session's engine to the future awaited here. Raises
    :class:`~mcpkit.McpError` for an error response, ``RequestTimeout`` after
    ``timeout`` seconds, ``ConnectionClosed`` when the session ends first; on
    cancellation the request is cancelled on the wire (``notifications/cancelled``)."""
    return await ask_over(session.engine, session.send, method, params, timeout=timeout)
