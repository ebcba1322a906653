"""Resumable SSE streams of the legacy era (2025-11-25 and earlier): :class:`SseStream`
and the :class:`EventStore` its events are persisted in.

A legacy SSE stream outlives the HTTP connection that opened it: events are stored
with ids as they are produced, and a client that lost the connection resumes with
``GET`` + ``Last-Event-ID``, receiving what it missed and then the rest live
(docs/http.md, "Legacy sessions and resumable streams").
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from typing import Final, Protocol, runtime_checkable

from ....protocol.engine import encode
from ....protocol.events import RequestId
from ....protocol.sse import encode_event

__all__ = ["SendEvent", "EventStore", "SharedEventStore", "InMemoryEventStore", "SseStream"]

_log = logging.getLogger("mcpkit.http")

SendEvent = Callable[[str, bytes], Awaitable[None]]


class EventStore(Protocol):
    """Where legacy SSE events are kept so that a dropped stream can be resumed.

    Implementations must be safe to call concurrently from one event loop. Event ids
    must be unique across all streams of the store.
    """

    async def store_event(self, stream_id: str, message: bytes) -> str:
        """Persist one message of ``stream_id``; return its event id."""
        ...

    async def replay_events_after(self, last_event_id: str, send: SendEvent) -> str | None:
        """Call ``send(event_id, message)`` for each event of the same stream stored
        after ``last_event_id``, in order; return that stream's id, or None if the id
        is unknown (expired or never issued)."""
        ...


@runtime_checkable
class SharedEventStore(EventStore, Protocol):
    """An event store that several nodes share (``RedisStore.events``): besides storing
    and replaying, a node can *follow* a stream other nodes write and end one. Every
    coroutine raises :class:`~mcpkit.StoreUnavailable` when the store cannot be reached."""

    async def cursor(self, stream_id: str) -> str:
        """A position after the stream's newest event, to follow only what comes next."""
        ...

    def entry_of(self, event_id: str) -> str | None:
        """The position of event ``event_id`` in its stream (None for a malformed id)."""
        ...

    async def follow(self, stream_id: str, cursor: str) -> tuple[list[tuple[str, bytes]], str, bool]:
        """Wait a little (about a second) for events after ``cursor``: (event id, message)
        pairs, the new cursor, and whether the stream has ended."""
        ...

    async def open_stream(self, stream_id: str, request_id: bytes) -> None:
        """Note the JSON id of the request whose response ``stream_id`` carries."""
        ...

    async def request_of(self, stream_id: str) -> bytes | None:
        """The JSON id noted by :meth:`open_stream`, if any."""
        ...

    async def end_stream(self, stream_id: str, final: bytes | None = None) -> bool:
        """End the stream (after ``final``), unless it has ended; whether this call did."""
        ...

    async def touch_stream(self, stream_id: str) -> None:
        """Restart the stream's time to live."""
        ...


class InMemoryEventStore:
    """The default :class:`EventStore`: bounded, in this process's memory.

    Streams are grouped by owner: the part of the stream id before its last ``-`` (the
    legacy session, for the streams the app creates). Keeps at most
    ``max_events_per_stream`` events per stream (oldest dropped first) and
    ``max_streams_per_session`` streams per owner: a new stream past that quota drops the
    same owner's least recently written stream, so one session's traffic never evicts
    another's. ``max_streams`` bounds all streams together: past it the least recently
    written owner loses its oldest stream. :meth:`discard_session` drops an owner's
    streams (the app calls it when a session ends).
    """

    def __init__(
        self, *, max_events_per_stream: int = 1000, max_streams: int = 10_000, max_streams_per_session: int = 16
    ) -> None:
        self.max_events_per_stream = max_events_per_stream
        self.max_streams = max_streams
        self.max_streams_per_session = max_streams_per_session
        self._owners: OrderedDict[str, OrderedDict[str, deque[tuple[int, bytes]]]] = OrderedDict()
        self._count = 0
        self._seq = itertools.count(1)

    async def store_event(self, stream_id: str, message: bytes) -> str:
        """Keep one message of ``stream_id`` and return its event id. Past
        ``max_events_per_stream`` the stream's oldest event is dropped; past the stream
        bounds, the least recently written stream (of the same session first) is."""
        owner = _owner(stream_id)
        streams = self._owners.get(owner)
        if streams is None:
            streams = self._owners[owner] = OrderedDict()
        else:
            self._owners.move_to_end(owner)
        events = streams.get(stream_id)
        if events is None:
            events = streams[stream_id] = deque(maxlen=self.max_events_per_stream)
            self._count += 1
            if len(streams) > self.max_streams_per_session:
                streams.popitem(last=False)
                self._count -= 1
            while self._count > self.max_streams:
                self._evict_oldest()
        else:
            streams.move_to_end(stream_id)
        seq = next(self._seq)
        events.append((seq, message))
        return f"{stream_id}.{seq}"

    def _evict_oldest(self) -> None:
        """Drop the oldest stream of the least recently written owner."""
        owner, streams = next(iter(self._owners.items()))
        streams.popitem(last=False)
        self._count -= 1
        if not streams:
            del self._owners[owner]

    def discard_session(self, session_id: str) -> None:
        """Forget every stream of owner ``session_id`` (its session has ended)."""
        streams = self._owners.pop(session_id, None)
        if streams is not None:
            self._count -= len(streams)

    async def replay_events_after(self, last_event_id: str, send: SendEvent) -> str | None:
        """``await send(event_id, message)`` for each event of the same stream after
        ``last_event_id``, in order; return the stream id, or None when the id is unknown
        or older than what is kept (the app then answers 404 rather than replay a gap)."""
        stream_id, _, seq_text = last_event_id.rpartition(".")
        streams = self._owners.get(_owner(stream_id))
        events = streams.get(stream_id) if streams is not None else None
        # ASCII digits only, and few enough for int(): never a ValueError for a hostile id.
        if events is None or not (seq_text.isascii() and seq_text.isdigit() and len(seq_text) <= 19):
            return None
        after = int(seq_text)
        snapshot = list(events)
        if not any(seq == after for seq, _ in snapshot):
            return None  # expired (or never issued): replaying would leave a silent gap
        for seq, message in snapshot:
            if seq > after:
                await send(f"{stream_id}.{seq}", message)
        return stream_id


class _Release:
    """Queued on a stream: end the connection attached now (the stream goes on)."""


class _Announce:
    """Queued first on a shared stream: the JSON id of the request it answers."""

    def __init__(self, request_id: bytes) -> None:
        self.request_id = request_id


_RELEASE: Final = _Release()


def _owner(stream_id: str) -> str:
    """The owner of a stream: its id up to the last ``-`` (the whole id if it has none)."""
    return stream_id.rpartition("-")[0] or stream_id


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
