"""Legacy-era (2025-11-25 and earlier) Streamable HTTP state: sessions, resumable SSE
streams, and the :class:`EventStore` they are persisted in.

A legacy SSE stream outlives the HTTP connection that opened it: events are stored
with ids as they are produced, and a client that lost the connection resumes with
``GET`` + ``Last-Event-ID``, receiving what it missed and then the rest live.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from ....protocol.engine import Engine
from ....protocol.errors import ConnectionClosed
from ....protocol.sse import encode_event
from ....runtime.outcome import fail_waiters

__all__ = ["EventStore", "InMemoryEventStore", "SseStream", "HttpSession", "SessionManager"]

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


class HttpSession:
    """A legacy session: its JSON-RPC engine, request tasks and streams."""

    def __init__(self, session_id: str, server_session: Any, store: EventStore, max_error_text: int) -> None:
        self.id = session_id
        self.server_session = server_session
        self.engine = Engine(max_error_text=max_error_text)
        self.store = store
        self.streams: dict[str, SseStream] = {}
        self.standalone: SseStream | None = None
        self.busy = 0
        self.last_active = time.monotonic()
        self.closed = False
        self._stream_ids = itertools.count(1)

    def touch(self) -> None:
        self.last_active = time.monotonic()

    def new_stream(self) -> SseStream:
        stream = SseStream(f"{self.id}-{next(self._stream_ids)}", self.store)
        stream.on_finish = self._forget_stream
        self.streams[stream.id] = stream
        return stream

    def _forget_stream(self, stream: SseStream) -> None:
        # A finished stream can still be resumed: its events stay in the store.
        self.streams.pop(stream.id, None)

    def standalone_stream(self) -> SseStream:
        if self.standalone is None:
            self.standalone = SseStream(f"{self.id}-get", self.store)
            self.streams[self.standalone.id] = self.standalone
        return self.standalone

    def stream_for_event(self, event_id: str) -> SseStream | None:
        stream_id = event_id.rpartition(".")[0]
        return self.streams.get(stream_id)

    def close(self) -> None:
        """End the session: cancel its handlers, end its streams."""
        self.closed = True
        for task in self.engine.abandon_all():
            if isinstance(task, asyncio.Task):
                task.cancel()
        fail_waiters(self.engine.fail_all(), lambda: ConnectionClosed("Session ended"))
        for stream in self.streams.values():
            stream.close()


class SessionManager:
    """Live legacy sessions: minted ids, an idle timeout, and a cap."""

    def __init__(self, *, idle_timeout: float, max_sessions: int) -> None:
        self.idle_timeout = idle_timeout
        self.max_sessions = max_sessions
        self._sessions: dict[str, HttpSession] = {}
        self._last_reap = time.monotonic()

    def __len__(self) -> int:
        return len(self._sessions)

    @staticmethod
    def new_id() -> str:
        """An unguessable id of visible ASCII (URL-safe base64 of 32 random bytes)."""
        import secrets  # not at import time: it pulls in hashlib and random

        return secrets.token_urlsafe(32)

    def add(self, session: HttpSession) -> bool:
        """Register a session; False if the cap is reached even after reaping."""
        self.reap(force=True)
        if len(self._sessions) >= self.max_sessions:
            return False
        self._sessions[session.id] = session
        return True

    def get(self, session_id: str) -> HttpSession | None:
        self.reap()
        session = self._sessions.get(session_id)
        if session is not None:
            session.touch()
        return session

    def remove(self, session_id: str) -> HttpSession | None:
        session = self._sessions.pop(session_id, None)
        if session is not None:
            session.close()
        return session

    def reap(self, *, force: bool = False) -> None:
        """End sessions idle for longer than ``idle_timeout`` (checked at most once a
        second unless forced). A session with a request in progress or an attached
        stream is not idle."""
        now = time.monotonic()
        if not force and now - self._last_reap < 1.0:
            return
        self._last_reap = now
        for sid, session in list(self._sessions.items()):
            active = session.busy or any(s.attached for s in session.streams.values())
            if not active and now - session.last_active > self.idle_timeout:
                self.remove(sid)

    def close_all(self) -> None:
        for sid in list(self._sessions):
            self.remove(sid)
