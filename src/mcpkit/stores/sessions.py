"""The session store: the legacy era's sessions as records that every node of a
deployment can read (docs/deploy.md).

A legacy session is what ``initialize`` established — the protocol version, the
client's capabilities and info, the identity that opened it — plus what later requests
changed: the log level and the subscribed resource URIs. The HTTP app writes it here
when the session is minted and whenever it changes, and a node that meets a session it
has not seen loads it from here, so any node serves any request of any session. What
cannot be shared — running handlers, open sockets — stays on the node (the HTTP app's
*replica* of the session).

Nodes also talk through the store: a client's answer to a server→client request (an
elicitation, say) may be POSTed to any node, and must reach the node whose handler
waits for it (:meth:`SessionStore.send`); a cancellation, a changed or ended session
concern every node that holds a replica (:meth:`SessionStore.broadcast`).

The default, :class:`InMemorySessionStore`, serves one process: nothing is shared
(``shared`` is False), which is the single-process behaviour. ``mcpkit.stores.redis``
shares them through Redis.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from typing import Any, Literal, Protocol

import msgspec

from .errors import StoreUnavailable
from .listeners import Listeners

__all__ = [
    "SessionRecord",
    "NodeMessage",
    "MessageKind",
    "NodeListener",
    "SessionStore",
    "InMemorySessionStore",
    "StoreUnavailable",  # defined in .errors; still importable from here
]


class SessionRecord(msgspec.Struct, kw_only=True):
    """One legacy session as the store keeps it.

    ``client_info`` is the wire form of the client's ``Implementation`` (camelCase keys);
    ``principal`` the identity that opened the session (None without authorization): only
    it may use the session. ``expires_at`` (seconds since the epoch) is set by the store:
    the session ends when nothing touched it for its time to live.
    """

    session_id: str
    protocol_version: str
    client_capabilities: dict[str, Any] = {}
    client_info: dict[str, Any] | None = None
    principal: str | None = None
    log_level: str | None = None
    resource_uris: list[str] = []
    expires_at: float = 0.0


#: ``response``: a client's answer to a request a node sent (routed to that node);
#: ``cancel``: a client's ``notifications/cancelled`` (to every node: one runs the request);
#: ``changed``: the session's record changed (``body`` is the new record, JSON);
#: ``ended``: the session was deleted; ``stream``: the sender now holds the session's GET
#: stream, so it delivers the session's change notifications (the others stop).
MessageKind = Literal["response", "cancel", "changed", "ended", "stream"]


class NodeMessage(msgspec.Struct, frozen=True, kw_only=True):
    """What one node tells another (or all) about a session: ``body`` is the client's
    JSON-RPC message for ``response`` and ``cancel``, the record for ``changed``."""

    kind: MessageKind
    session_id: str
    sender: str
    body: bytes = b""


NodeListener = Callable[[NodeMessage], None]


class SessionStore(Protocol):
    """Where legacy sessions are kept, and how the nodes sharing them talk.

    ``node_id`` names this node (unique among the nodes of the store); ``shared`` says
    whether other processes share the records (then the HTTP app keeps replicas and routes
    messages between nodes). Every coroutine raises :class:`StoreUnavailable` when the
    store cannot be reached; none blocks the event loop. ``ttl`` is the session's idle
    timeout in seconds: a record not loaded, saved or created for that long is gone.
    """

    node_id: str
    shared: bool

    async def start(self) -> None:
        """Begin serving this node (background tasks: heartbeat, message listener); idempotent."""
        ...

    async def close(self) -> None:
        """This node leaves: its background tasks stop and the others see it gone."""
        ...

    async def check(self) -> None:
        """Return if the store can be reached now; raise :class:`StoreUnavailable` if not."""
        ...

    async def create(self, record: SessionRecord, ttl: float) -> None:
        """Store a new session (durably for the store: any node's ``load`` finds it)."""
        ...

    async def load(self, session_id: str, ttl: float) -> SessionRecord | None:
        """The session's record, its time to live restarted; None if unknown or expired."""
        ...

    async def save(self, record: SessionRecord, ttl: float) -> None:
        """Replace the session's record if it is still stored (an ended session stays ended)."""
        ...

    async def delete(self, session_id: str) -> None:
        """Forget the session (not an error if it is unknown)."""
        ...

    async def send(self, node_id: str, message: NodeMessage) -> None:
        """Hand ``message`` to node ``node_id``'s listeners (dropped if it is gone)."""
        ...

    async def broadcast(self, message: NodeMessage) -> None:
        """Hand ``message`` to every node's listeners, the sender's included."""
        ...

    def listen(self, listener: NodeListener) -> Callable[[], None]:
        """Call ``listener`` with each message for this node from now on (on the event
        loop; it must not block); returns the function that stops it."""
        ...

    async def node_alive(self, node_id: str) -> bool:
        """Whether node ``node_id`` is still serving (it has not left nor stopped
        beating within the store's liveness timeout)."""
        ...


class InMemorySessionStore:
    """The session store of a single process (the default): records in memory, expired
    after their time to live; messages go to this process's own listeners. ``clock``
    gives the time in seconds (for tests)."""

    shared = False

    def __init__(self, *, node_id: str = "local", clock: Callable[[], float] = time.time) -> None:
        self.node_id = node_id
        self._clock = clock
        self._records: dict[str, SessionRecord] = {}
        self._expiry: list[tuple[float, str]] = []  # a heap of (expires_at when pushed, session_id)
        self._listeners: Listeners[NodeMessage] = Listeners("a node listener")

    def __len__(self) -> int:
        return len(self._records)

    async def start(self) -> None:
        """Nothing to start: one process."""
        return None

    async def close(self) -> None:
        """Nothing to leave: one process."""
        return None

    async def check(self) -> None:
        """Always reachable: it is this process's memory."""
        return None

    async def create(self, record: SessionRecord, ttl: float) -> None:
        """Raises ``ValueError`` for a session id in use."""
        self._purge()
        if record.session_id in self._records:
            raise ValueError(f"session {record.session_id!r} exists")
        stored = msgspec.structs.replace(record, expires_at=self._clock() + ttl)
        self._records[record.session_id] = stored
        heapq.heappush(self._expiry, (stored.expires_at, stored.session_id))

    async def load(self, session_id: str, ttl: float) -> SessionRecord | None:
        """A copy of the session's record, its time to live restarted; None if unknown or expired."""
        record = self._records.get(session_id)
        if record is None:
            return None
        now = self._clock()
        if record.expires_at <= now:
            del self._records[session_id]
            return None
        record.expires_at = now + ttl
        return msgspec.structs.replace(record)

    async def save(self, record: SessionRecord, ttl: float) -> None:
        """Replace the session's record if it is still stored."""
        if record.session_id in self._records:
            self._records[record.session_id] = msgspec.structs.replace(record, expires_at=self._clock() + ttl)

    async def delete(self, session_id: str) -> None:
        """Forget the session (not an error if it is unknown)."""
        self._records.pop(session_id, None)

    async def send(self, node_id: str, message: NodeMessage) -> None:
        """Hand ``message`` to this process's listeners if ``node_id`` is this node."""
        if node_id == self.node_id:
            await self.broadcast(message)

    async def broadcast(self, message: NodeMessage) -> None:
        """Hand ``message`` to this process's listeners."""
        self._listeners.notify(message)

    def listen(self, listener: NodeListener) -> Callable[[], None]:
        """Call ``listener`` with each message from now on; returns what stops it."""
        return self._listeners.add(listener)

    async def node_alive(self, node_id: str) -> bool:
        """Whether ``node_id`` is this node (the only one there is)."""
        return node_id == self.node_id

    def _purge(self) -> None:
        """Forget expired records (on each ``create``, amortized: memory stays bounded by
        the live ones). A record touched since its heap entry was pushed goes back in."""
        now = self._clock()
        while self._expiry and self._expiry[0][0] <= now:
            _, sid = heapq.heappop(self._expiry)
            record = self._records.get(sid)
            if record is None:
                continue
            if record.expires_at <= now:
                del self._records[sid]
            else:
                heapq.heappush(self._expiry, (record.expires_at, sid))
