"""The event store: where the legacy era's SSE events are kept, so that a client whose
stream dropped can resume it with ``Last-Event-ID`` (docs/http.md, "Legacy sessions and
resumable streams").

The HTTP app's streams (``transports/http/server/streams.py``) write every event here
before sending it, and read back what came after an event id when a client resumes. A
store implements :class:`EventStore` (store, replay); one that several nodes share
implements :class:`SharedEventStore` too, so that a node can *follow* a stream that
others write, and end one. :class:`InMemoryEventStore`, the default, serves one process;
``stores.redis`` keeps the streams in Redis.

Streams are grouped by *owner*: the part of the stream id before its last ``-``
(:func:`stream_owner`), which for the streams the app creates is the legacy session, so
that a session's streams can be bounded together and dropped together when it ends.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

__all__ = ["SendEvent", "EventStore", "SharedEventStore", "InMemoryEventStore", "stream_owner"]

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
        owner = stream_owner(stream_id)
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
        streams = self._owners.get(stream_owner(stream_id))
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


def stream_owner(stream_id: str) -> str:
    """The owner of a stream: its id up to the last ``-`` (the whole id if it has none)."""
    return stream_id.rpartition("-")[0] or stream_id
