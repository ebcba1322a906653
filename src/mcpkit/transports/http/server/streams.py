"""Resumable SSE streams of the legacy era (2025-11-25 and earlier): :class:`SseStream`,
one POST's response stream or a session's GET stream.

A legacy SSE stream outlives the HTTP connection that opened it: events are stored
with ids as they are produced, and a client that lost the connection resumes with
``GET`` + ``Last-Event-ID``, receiving what it missed and then the rest live
(docs/http.md, "Legacy sessions and resumable streams").

How a stream works: :meth:`SseStream.put` queues a message at once (it never blocks);
a pump task of the stream's own stores each one in the
:class:`~mcpkit.stores.events.EventStore`, in order, and forwards it, with its event id,
to the connection attached at the time (a queue of SSE frames that the connection's
response writes). A connection attaches by opening the stream or by resuming it
(:meth:`SseStream.resume`: the store replays what came after the client's last event id,
under the same lock as the pump, so nothing is missed or sent twice). ``None`` ends the
stream after the messages before it; :meth:`SseStream.release` ends only the attached
connection, for the client to resume (SSE polling). In a store that several nodes share
(:class:`~mcpkit.stores.events.SharedEventStore`), the stream also notes which request it
answers and its end, so that a node that follows it knows both.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Final

from ....protocol.engine import encode
from ....protocol.events import RequestId
from ....protocol.sse import encode_event
from ....stores.events import EventStore, SharedEventStore

__all__ = ["SseStream"]

_log = logging.getLogger("mcpkit.http")


class _Release:
    """Queued on a stream: end the connection attached now (the stream goes on)."""


class _Announce:
    """Queued first on a shared stream: the JSON id of the request it answers."""

    def __init__(self, request_id: bytes) -> None:
        self.request_id = request_id


_RELEASE: Final = _Release()


class SseStream:
    """One legacy SSE stream: a POST's response stream or a session's GET stream.

    Messages are queued synchronously with :meth:`put`, persisted in order by a pump
    task, and forwarded to whichever HTTP connection is attached at the time.
    ``None`` ends the stream (after the final response).
    """

    def __init__(self, stream_id: str, store: EventStore) -> None:
        self.id = stream_id
        self._store = store
        self._pending: asyncio.Queue[bytes | _Release | _Announce | None] = asyncio.Queue()
        self.on_finish: Callable[[SseStream], None] | None = None
        #: The request whose response this stream is (None: a GET stream), for the
        #: answer a resumed stream gets when the server stops before the handler ends.
        self.request_id: RequestId | None = None
        self._sink: asyncio.Queue[bytes | None] | None = None
        self._lock = asyncio.Lock()
        self.finished = False
        self._pump = asyncio.get_running_loop().create_task(self._run())

    def put(self, message: bytes | None) -> None:
        if not self.finished:
            self._pending.put_nowait(message)

    @property
    def backlog(self) -> int:
        """Messages put and not yet written to the attached connection."""
        return self._pending.qsize() + (self._sink.qsize() if self._sink is not None else 0)

    async def drain(self, high_water: int = 256) -> None:
        """Wait while more than ``high_water`` messages are waiting to be written (a
        slow client); returns at once when none is attached (the store bounds that)."""
        while True:  # polled: the queues it watches are drained by other tasks' writes
            if self.backlog <= high_water or self.finished or self._sink is None:
                return
            await asyncio.sleep(0.01)

    def announce(self, request_id: object) -> None:
        """Note in a shared store which request this stream answers (before any event)."""
        self._pending.put_nowait(_Announce(encode(request_id)))

    async def _run(self) -> None:
        while True:
            message = await self._pending.get()
            async with self._lock:
                if isinstance(message, _Release):
                    if self._sink is not None:  # the connection ends here; the stream goes on
                        self._sink.put_nowait(None)
                        self._sink = None
                    continue
                if isinstance(message, _Announce):
                    if isinstance(self._store, SharedEventStore):
                        await self._quietly(self._store.open_stream(self.id, message.request_id))
                    continue
                if message is None:
                    self.finished = True
                    if self._sink is not None:
                        self._sink.put_nowait(None)
                    if self.on_finish is not None:
                        self.on_finish(self)
                    if isinstance(self._store, SharedEventStore):
                        await self._quietly(self._store.end_stream(self.id))
                    return
                await self._store_and_forward(message)

    async def _store_and_forward(self, message: bytes) -> None:
        """Store one message and hand it to the attached connection. If the store fails
        (a shared store that is down), the message still goes to the connection, without
        an event id: it cannot be resumed, but it is not lost for a connected client."""
        try:
            event_id: str | None = await self._store.store_event(self.id, message)
        except Exception as exc:
            _log.warning("stream %s: an event could not be stored (%s); sent without an id", self.id[-24:], exc)
            event_id = None
        if self._sink is not None:
            self._sink.put_nowait(encode_event(message, event_id=event_id))

    async def _quietly(self, work: Awaitable[object]) -> None:
        try:
            await work
        except Exception as exc:
            _log.warning("stream %s: the event store failed: %s", self.id[-24:], exc)

    async def prime(self, retry: int | None = None) -> bytes:
        """An event with an id and empty data, so the client can resume from the start;
        with ``retry`` (milliseconds), it also tells the client how long to wait before
        reconnecting when the connection ends before the stream does."""
        async with self._lock:
            try:
                event_id: str | None = await self._store.store_event(self.id, b"")
            except Exception as exc:  # a shared store that is down: the stream starts without one
                _log.warning("stream %s: the priming event could not be stored: %s", self.id[-24:], exc)
                event_id = None
        return encode_event(b"", event_id=event_id, retry=retry)

    def attach(self) -> asyncio.Queue[bytes | None]:
        """Attach a new connection; returns the queue of SSE frames it should write
        (``None`` = the stream is over). Replaces any previous connection."""
        if self._sink is not None:
            self._sink.put_nowait(None)
        sink: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._sink = sink
        if self.finished:
            sink.put_nowait(None)
        return sink

    def detach(self, sink: asyncio.Queue[bytes | None]) -> None:
        if self._sink is sink:
            self._sink = None

    def cut(self, sink: asyncio.Queue[bytes | None]) -> bytes:
        """Detach the connection ``sink`` belongs to at once (the server is stopping and
        cannot wait for the pump) and return what it has still to write, as SSE frames:
        those forwarded to it, then the messages put but not stored yet (without event
        ids; they stay queued for the store), up to the stream's end."""
        frames: list[bytes] = []
        while not sink.empty():
            frame = sink.get_nowait()
            if frame is None:
                self.detach(sink)
                return b"".join(frames)
            frames.append(frame)
        self.detach(sink)
        queued: list[bytes | _Release | _Announce | None] = []
        while not self._pending.empty():
            queued.append(self._pending.get_nowait())
        for item in queued:
            self._pending.put_nowait(item)
        for item in queued:
            if item is None:
                break
            if isinstance(item, bytes):
                frames.append(encode_event(item))
        return b"".join(frames)

    @property
    def attached(self) -> bool:
        return self._sink is not None

    async def resume(self, last_event_id: str, write: Callable[[bytes], Awaitable[None]]) -> asyncio.Queue[bytes | None] | None:
        """Replay the events after ``last_event_id`` through ``write`` and attach the
        caller for the rest, atomically with respect to new events. Returns None if the
        store no longer knows the id."""

        async def send(event_id: str, message: bytes) -> None:
            if message:
                await write(encode_event(message, event_id=event_id))

        async with self._lock:
            found = await self._store.replay_events_after(last_event_id, send)
            if found is None:
                return None
            return self.attach()

    def close(self) -> None:
        """End the stream after the messages already queued."""
        self.put(None)

    def release(self) -> None:
        """End the attached connection after the messages already queued, but not the
        stream: later messages are stored, for the client to resume with
        ``Last-Event-ID`` (SSE polling, as 2025-11-25 allows)."""
        if not self.finished:
            self._pending.put_nowait(_RELEASE)

    def abandon(self) -> None:
        """Stop here without ending the stream in the store (this node drops its replica
        of a shared session; other nodes go on with the stream)."""
        self.finished = True
        self._pump.cancel()
        if self._sink is not None:
            self._sink.put_nowait(None)
            self._sink = None

    def abort(self) -> None:
        """End the stream now: messages not yet stored are dropped, and nothing more is
        stored (its session has ended: no one can resume it)."""
        if not self.finished:
            while not self._pending.empty():
                self._pending.get_nowait()
            self._pending.put_nowait(None)
            self.finished = True
