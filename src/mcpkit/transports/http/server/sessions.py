"""Legacy-era (2025-11-25 and earlier) sessions: :class:`HttpSession` (one client's
engine, request tasks and streams) and :class:`SessionManager` (the live ones, with an
idle timeout and a cap).

Sessions are kept in order of the client's last activity (a request, or opening a
stream), so reaping and admission look only at the oldest: constant time per session,
however many are live. What the server sends on a stream (events, keep-alive comments)
is not the client's activity: an idle session is ended even with a GET stream open.

With a shared session store (docs/deploy.md) the sessions here are this node's
*replicas*: loaded from the store when a request of a session this node has not seen
arrives (:meth:`SessionManager.find`), checked against it again at most once a second,
and dropped when idle here — the session itself lives on in the store until its own
idle timeout. A replica holds only what cannot be shared: handlers and streams.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, Final

from ....auth.identity import CURRENT
from ....protocol.engine import Engine
from ....protocol.errors import ConnectionClosed
from ....protocol.versions import supports
from ....runtime.outcome import fail_waiters
from ....stores.events import EventStore
from ....stores.sessions import SessionRecord
from .asgi import Reject
from .streams import SseStream

if TYPE_CHECKING:
    from ....stores.sessions import SessionStore

__all__ = ["HttpSession", "SessionManager"]


class HttpSession:
    """A legacy session: its JSON-RPC engine, request tasks and streams."""

    def __init__(
        self, session_id: str, server_session: Any, store: EventStore, max_error_text: int, *, node: str | None = None
    ) -> None:
        self.id = session_id
        #: This node's id when the session is shared by several nodes (a replica), else None.
        self.node = node
        #: When the replica was last checked against the session store (time.monotonic()).
        self.validated = time.monotonic()
        #: Stops this node's connections that follow shared streams of the session.
        self.followers: set[asyncio.Event] = set()
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

    def new_stream(self, request_id: object = None) -> SseStream:
        """A new stream for one POST's response (to request ``request_id``). A shared
        session's stream id names this node, and the store notes the request it answers."""
        n = next(self._stream_ids)
        stream = SseStream(f"{self.id}-{n}" if self.node is None else f"{self.id}-{self.node}~{n}", self.store)
        if self.node is not None and request_id is not None:
            stream.announce(request_id)
        stream.on_finish = self._forget_stream
        self.streams[stream.id] = stream
        return stream

    def ask_id(self, n: int) -> str | int:
        """The id of this node's ``n``-th request to the client: it names the node in a
        shared session, so that the client's answer, POSTed to any node, finds it."""
        return n if self.node is None else f"{self.node}/{n}"

    @property
    def idle(self) -> bool:
        """Nothing of it runs on this node: no request, no question, no open stream."""
        return not (self.busy or self.engine.incoming or self.engine.outgoing or self.followers)

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

    def close(self, *, ended: bool = True) -> None:
        """End the session: cancel its handlers, end its streams, and drop their stored
        events if the store can (they can no longer be resumed). ``ended=False`` drops
        only this node's replica of a shared session: what the store holds stays."""
        self.closed = True
        for stop in self.followers:
            stop.set()
        if self.disconnect is not None:
            disconnect, self.disconnect = self.disconnect, None
            _background(disconnect())
        for task in self.engine.abandon_all():
            if isinstance(task, asyncio.Task):
                task.cancel()
        fail_waiters(self.engine.fail_all(), lambda: ConnectionClosed("Session ended"))
        for stream in self.streams.values():
            if ended:
                stream.abort()
            else:
                stream.abandon()
        discard = getattr(self.store, "discard_session", None)
        if ended and callable(discard):
            discard(self.id)
        end = getattr(self.server_session, "end", None)
        if ended and callable(end):  # the server's state of the connection hears it is gone (a proxy's upstream session)
            end()

    def close_standalone(self) -> None:
        """End the session's GET stream, if it has one (the server is shutting down). A
        shared session's streams go on in the store: this node's connections to them end
        (the GET and resumed streams, and the POSTs still streaming, whose handlers go on
        here for the grace), and the clients resume them on another node."""
        if self.node is not None:
            for stop in self.followers:
                stop.set()
            for stream in self.streams.values():
                if stream is not self.standalone:
                    stream.release()
        elif self.standalone is not None:
            self.standalone.close()

    def stop_changes(self) -> None:
        """Stop delivering the server's change notifications to this session here."""
        if self.disconnect is not None:
            disconnect, self.disconnect = self.disconnect, None
            _background(disconnect())


_pending: set[asyncio.Future[None]] = set()


def _background(work: Awaitable[None]) -> None:
    """Run ``work`` to its end without waiting (kept referenced until it finishes)."""
    task = asyncio.ensure_future(work)
    _pending.add(task)
    task.add_done_callback(_pending.discard)


class SessionManager:
    """Live legacy sessions, least recently active first: minted ids, an idle timeout,
    and a cap."""

    def __init__(self, *, idle_timeout: float, max_sessions: int, store: SessionStore | None = None) -> None:
        self.idle_timeout = idle_timeout
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[str, HttpSession] = OrderedDict()
        self._last_reap = time.monotonic()
        #: The session store; only a shared one is consulted (a replica per session here).
        self.store = store
        self.shared = store is not None and store.shared
        #: Builds this node's replica of a stored session (set by the legacy endpoint).
        self.replica: Callable[[SessionRecord], HttpSession] | None = None
        #: Applies a stored record to a replica (set by the legacy endpoint).
        self.refresh: Callable[[HttpSession, SessionRecord], None] | None = None

    def __len__(self) -> int:
        return len(self._sessions)

    @staticmethod
    def new_id() -> str:
        """An unguessable id of visible ASCII (URL-safe base64 of 32 random bytes)."""
        import secrets  # not at import time: it pulls in hashlib and random

        return secrets.token_urlsafe(32)

    def add(self, session: HttpSession) -> bool:
        """Register a session; False if the cap is reached even after reaping (with a
        shared store, after dropping this node's least recently used idle replica)."""
        self.reap(force=True)
        if len(self._sessions) >= self.max_sessions and self.shared:
            oldest = next((s for s in self._sessions.values() if s.idle), None)
            if oldest is not None:
                self.remove(oldest.id, ended=False)
        if len(self._sessions) >= self.max_sessions:
            return False
        self._sessions[session.id] = session
        return True

    def local(self, session_id: str) -> HttpSession | None:
        """This node's session (or replica) ``session_id``, without noting activity."""
        return self._sessions.get(session_id)

    async def find(self, session_id: str) -> HttpSession | None:
        """The live session ``session_id`` (its client is active now), or None. With a
        shared store, a session this node has not seen is loaded from the store, and a
        replica not checked for a second is checked again (its expiry restarts there).
        Raises :class:`~mcpkit.StoreUnavailable` when the store must be asked and cannot
        be reached, and ``Reject`` (503) when this node holds ``max_sessions`` busy ones."""
        session = self.get(session_id)
        if not self.shared or (session is not None and time.monotonic() - session.validated < _REVALIDATE):
            return session
        assert self.store is not None
        assert self.replica is not None
        assert self.refresh is not None
        record = await self.store.load(session_id, self.idle_timeout)
        session = self._sessions.get(session_id)  # the await let others in
        if record is None:
            if session is not None:
                self.remove(session_id, ended=False)
            return None
        if session is None:
            session = self.replica(record)
            if not self.add(session):
                session.close(ended=False)
                raise _full()
        else:
            self.refresh(session, record)
        session.validated = time.monotonic()
        return session

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

    def remove(self, session_id: str, *, ended: bool = True) -> HttpSession | None:
        """Forget the session here and close it (``ended=False``: only this node's replica)."""
        session = self._sessions.pop(session_id, None)
        if session is not None:
            session.close(ended=ended)
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
            if self.shared and session.idle:
                self.remove(sid, ended=False)  # the session lives on in the store: its own timeout
            elif session.busy or self.shared:
                self.touch(session)
            else:
                self.remove(sid)

    def close_streams(self) -> None:
        """End every session's GET stream (the server is shutting down)."""
        for session in self._sessions.values():
            session.close_standalone()

    def close_all(self) -> None:
        """End every session here (a shared store's sessions go on: only the replicas end)."""
        for sid in list(self._sessions):
            self.remove(sid, ended=not self.shared)

    def __iter__(self) -> Iterator[HttpSession]:
        return iter(tuple(self._sessions.values()))


#: Seconds a replica is trusted without asking the session store again.
_REVALIDATE: Final = 1.0


def _full() -> Reject:
    return Reject(503, "Service Unavailable: too many sessions on this node", [(b"retry-after", b"1")])
