"""Legacy-era (2025-11-25 and earlier) sessions: :class:`HttpSession` (one client's
engine, request tasks and streams) and :class:`SessionManager` (the live ones, with an
idle timeout and a cap).

Sessions are kept in order of the client's last activity (a request, or opening a
stream), so reaping and admission look only at the oldest: constant time per session,
however many are live. What the server sends on a stream (events, keep-alive comments)
is not the client's activity: an idle session is ended even with a GET stream open.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from ....auth.identity import CURRENT
from ....protocol.engine import Engine
from ....protocol.errors import ConnectionClosed
from ....protocol.versions import supports
from ....runtime.outcome import fail_waiters
from .streams import EventStore, SseStream

__all__ = ["HttpSession", "SessionManager"]


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
        identity = CURRENT.get()
        #: Who opened the session (with authorization): only they may use it.
        self.subject: str | None = identity.principal if identity is not None else None
        #: Stops the server's delivery of list changes and updates to this session.
        self.disconnect: Callable[[], Awaitable[None]] | None = None

    def touch(self) -> None:
        """Note activity now (the idle timeout counts from the last)."""
        self.last_active = time.monotonic()

    @property
    def primes_streams(self) -> bool:
        """Whether this session's SSE streams open with a priming event (an id and no
        data, to resume from), which its protocol revision decides."""
        return supports(self.server_session.protocol_version, "sse-priming")

    def new_stream(self) -> SseStream:
        """A new stream for one POST's response."""
        stream = SseStream(f"{self.id}-{next(self._stream_ids)}", self.store)
        stream.on_finish = self._forget_stream
        self.streams[stream.id] = stream
        return stream

    def _forget_stream(self, stream: SseStream) -> None:
        # A finished stream can still be resumed: its events stay in the store.
        self.streams.pop(stream.id, None)

    def standalone_stream(self) -> SseStream:
        """The stream of the session's ``GET`` (server-initiated messages), created once."""
        if self.standalone is None:
            self.standalone = SseStream(f"{self.id}-get", self.store)
            self.streams[self.standalone.id] = self.standalone
        return self.standalone

    def stream_for_event(self, event_id: str) -> SseStream | None:
        """The live stream of this session that event ``event_id`` belongs to, if any."""
        stream_id = event_id.rpartition(".")[0]
        return self.streams.get(stream_id)

    def close(self) -> None:
        """End the session: cancel its handlers, end its streams, and drop their stored
        events if the store can (they can no longer be resumed)."""
        self.closed = True
        if self.disconnect is not None:
            disconnect, self.disconnect = self.disconnect, None
            _background(disconnect())
        for task in self.engine.abandon_all():
            if isinstance(task, asyncio.Task):
                task.cancel()
        fail_waiters(self.engine.fail_all(), lambda: ConnectionClosed("Session ended"))
        for stream in self.streams.values():
            stream.abort()
        discard = getattr(self.store, "discard_session", None)
        if callable(discard):
            discard(self.id)

    def close_standalone(self) -> None:
        """End the session's GET stream, if it has one (the server is shutting down)."""
        if self.standalone is not None:
            self.standalone.close()


_pending: set[asyncio.Future[None]] = set()


def _background(work: Awaitable[None]) -> None:
    """Run ``work`` to its end without waiting (kept referenced until it finishes)."""
    task = asyncio.ensure_future(work)
    _pending.add(task)
    task.add_done_callback(_pending.discard)


class SessionManager:
    """Live legacy sessions, least recently active first: minted ids, an idle timeout,
    and a cap."""

    def __init__(self, *, idle_timeout: float, max_sessions: int) -> None:
        self.idle_timeout = idle_timeout
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[str, HttpSession] = OrderedDict()
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
        """The live session ``session_id`` (its client is active now), or None."""
        self.reap()
        session = self._sessions.get(session_id)
        if session is not None:
            self.touch(session)
        return session

    def touch(self, session: HttpSession) -> None:
        """Note the client's activity in ``session`` now."""
        session.touch()
        if session.id in self._sessions:
            self._sessions.move_to_end(session.id)

    def remove(self, session_id: str) -> HttpSession | None:
        session = self._sessions.pop(session_id, None)
        if session is not None:
            session.close()
        return session

    def reap(self, *, force: bool = False) -> None:
        """End sessions idle for longer than ``idle_timeout`` (checked at most once a
        second unless forced). Only the oldest are examined: each is ended, or, if a
        request of it is in progress (it is not idle), moved to the back."""
        now = time.monotonic()
        if not force and now - self._last_reap < 1.0:
            return
        self._last_reap = now
        cutoff = now - self.idle_timeout
        for _ in range(len(self._sessions)):
            sid, session = next(iter(self._sessions.items()))
            if session.last_active >= cutoff:
                return
            if session.busy:
                self.touch(session)
            else:
                self.remove(sid)

    def close_streams(self) -> None:
        """End every session's GET stream (the server is shutting down)."""
        for session in self._sessions.values():
            session.close_standalone()

    def close_all(self) -> None:
        for sid in list(self._sessions):
            self.remove(sid)
