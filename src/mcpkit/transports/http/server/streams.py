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
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from typing import Protocol

from ....protocol.sse import encode_event

__all__ = ["SendEvent", "EventStore", "InMemoryEventStore", "SseStream"]

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


class InMemoryEventStore:
    """The default :class:`EventStore`: bounded, in this process's memory.

    Keeps at most ``max_events_per_stream`` events per stream and ``max_streams``
    streams (least recently written dropped first).
    """

    def __init__(self, *, max_events_per_stream: int = 1000, max_streams: int = 10_000) -> None:
        self.max_events_per_stream = max_events_per_stream
        self.max_streams = max_streams
        self._streams: OrderedDict[str, deque[tuple[int, bytes]]] = OrderedDict()
        self._seq = itertools.count(1)

    async def store_event(self, stream_id: str, message: bytes) -> str:
        events = self._streams.get(stream_id)
        if events is None:
            events = self._streams[stream_id] = deque(maxlen=self.max_events_per_stream)
            while len(self._streams) > self.max_streams:
                self._streams.popitem(last=False)
        else:
            self._streams.move_to_end(stream_id)
        seq = next(self._seq)
        events.append((seq, message))
        return f"{stream_id}.{seq}"

    async def replay_events_after(self, last_event_id: str, send: SendEvent) -> str | None:
        stream_id, _, seq_text = last_event_id.rpartition(".")
        events = self._streams.get(stream_id)
        if events is None or not seq_text.isdigit():
            return None
        after = int(seq_text)
        snapshot = list(events)
        if not any(seq == after for seq, _ in snapshot):
            return None  # expired (or never issued): replaying would leave a silent gap
        for seq, message in snapshot:
            if seq > after:
                await send(f"{stream_id}.{seq}", message)
        return stream_id


class SseStream:
    """One legacy SSE stream: a POST's response stream or a session's GET stream.

    Messages are queued synchronously with :meth:`put`, persisted in order by a pump
    task, and forwarded to whichever HTTP connection is attached at the time.
    ``None`` ends the stream (after the final response).
    """

    def __init__(self, stream_id: str, store: EventStore) -> None:
        self.id = stream_id
        self._store = store
        self._pending: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.on_finish: Callable[[SseStream], None] | None = None
        self._sink: asyncio.Queue[bytes | None] | None = None
        self._lock = asyncio.Lock()
        self.finished = False
        self._pump = asyncio.get_running_loop().create_task(self._run())

    def put(self, message: bytes | None) -> None:
        if not self.finished:
            self._pending.put_nowait(message)

    async def _run(self) -> None:
        while True:
            message = await self._pending.get()
            async with self._lock:
                if message is None:
                    self.finished = True
                    if self._sink is not None:
                        self._sink.put_nowait(None)
                    if self.on_finish is not None:
                        self.on_finish(self)
                    return
                event_id = await self._store.store_event(self.id, message)
                if self._sink is not None:
                    self._sink.put_nowait(encode_event(message, event_id=event_id))

    async def prime(self) -> bytes:
        """An event with an id and empty data, so the client can resume from the start."""
        async with self._lock:
            event_id = await self._store.store_event(self.id, b"")
        return encode_event(b"", event_id=event_id)

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
        self.put(None)
