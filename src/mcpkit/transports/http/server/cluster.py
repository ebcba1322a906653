"""Several nodes, one deployment: what this node does for the legacy sessions it shares
with other nodes through a shared session store and event store (docs/deploy.md).

A session's record lives in the :class:`~mcpkit.stores.sessions.SessionStore`; each node
that serves a request of it keeps a *replica* (:class:`~.sessions.HttpSession`) holding
only what cannot be shared: its running handlers, its questions to the client, its open
streams. This module keeps the replicas and the record in step — the record is saved
when a request changed the session (log level, subscriptions) and every replica is told
— and carries what crosses nodes:

- a client's answer to a question (POSTed to any node) goes to the node that asked,
  which its request id names (``{node}/{n}``); a ``notifications/cancelled`` goes to
  every node, since any may run the request;
- SSE streams are stored in the shared event store as they are written; a connection on
  any node *follows* a stream from there — the session's GET stream (every node writes
  to it) and a response stream resumed on another node with ``Last-Event-ID``. A
  followed response stream whose node has died is ended with an error for its request;
- the session's change notifications are delivered by the node that last opened its GET
  stream (it tells the others, which stop).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from msgspec import UNSET

from ....protocol.errors import INTERNAL_ERROR, McpError
from ....protocol.events import CancelReceived, ResponseReceived
from ....protocol.sse import KEEPALIVE, encode_event
from ....protocol.types import Implementation
from ....runtime.outcome import deliver
from ....stores.events import EventStore, SharedEventStore
from ....stores.sessions import MessageKind, NodeMessage, SessionRecord, SessionStore, StoreUnavailable
from ...base import RequestHandler
from .asgi import Receive, Reject, Send, end_body, json_error, send_frame, start_sse, wait_disconnect, withheld
from .session_changes import connect_changes, resync
from .sessions import HttpSession, SessionManager

__all__ = ["Cluster", "connect_changes", "unavailable"]

_log = logging.getLogger("mcpkit.http")


class _Peek(msgspec.Struct):
    id: Any = UNSET
    method: Any = UNSET


_peek = msgspec.json.Decoder(_Peek).decode
_decode_record = msgspec.json.Decoder(SessionRecord).decode
_Snapshot = tuple[str | None, frozenset[str]]


def unavailable(exc: BaseException) -> Reject:
    """The 503 for a request that needs the shared store while it cannot be reached: the
    store's error (its address, say) is logged under the reference id the body gives."""
    return withheld(503, "the shared store cannot be reached", exc, [(b"retry-after", b"1")])


class Cluster:
    """This node's part in sharing sessions: replicas, routing, following streams.

    With a session store that is not shared (the default) it only starts and closes the
    store; nothing else here is used. A shared session store needs a shared event store
    (``ValueError`` otherwise)."""

    def __init__(
        self, handler: RequestHandler, sessions: SessionManager, store: SessionStore, events: EventStore, *, keepalive: float
    ) -> None:
        self.shared = store.shared
        if self.shared and not isinstance(events, SharedEventStore):
            raise ValueError("a shared session store needs an event store every node shares (RedisStore.events)")
        self._handler = handler
        self._sessions = sessions
        self.store = store
        self._events = events
        self._keepalive = keepalive
        self.node = store.node_id
        self._stop_listening: Callable[[], None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        sessions.replica = self._replica
        sessions.refresh = self._refresh

    async def start(self) -> None:
        """Start the store's background work and listen to the other nodes."""
        await self.store.start()
        if self._stop_listening is None:
            self._stop_listening = self.store.listen(self._received)

    async def close(self) -> None:
        """Stop listening; the store's node leaves (the others see it gone)."""
        if self._stop_listening is not None:
            self._stop_listening()
            self._stop_listening = None
        await self.store.close()

    def _spawn(self, work: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _message(self, kind: MessageKind, session_id: str, body: bytes = b"") -> NodeMessage:
        return NodeMessage(kind=kind, session_id=session_id, sender=self.node, body=body)

    # --- records ------------------------------------------------------------------------------

    def record_of(self, session: HttpSession) -> SessionRecord:
        """The session as the store keeps it."""
        state = session.server_session
        info = getattr(state, "client_info", None)
        return SessionRecord(
            session_id=session.id,
            protocol_version=state.protocol_version,
            client_capabilities=dict(getattr(state, "client_capabilities", {}) or {}),
            client_info=msgspec.to_builtins(info) if info is not None else None,
            principal=session.subject,
            log_level=getattr(state, "log_level", None),
            resource_uris=sorted(getattr(state, "resource_uris", ())),
        )

    @staticmethod
    def snapshot(session: HttpSession) -> _Snapshot:
        """What requests may change of a session: its log level and subscriptions."""
        state = session.server_session
        return getattr(state, "log_level", None), frozenset(getattr(state, "resource_uris", ()))

    def _replica(self, record: SessionRecord) -> HttpSession:
        session = HttpSession(
            record.session_id, self._handler.new_session(), self._events, self._handler.max_error_text, node=self.node
        )
        self._refresh(session, record)
        return session

    @staticmethod
    def _refresh(session: HttpSession, record: SessionRecord) -> None:
        """Make ``session``'s protocol state say what ``record`` says (the subscribed URIs
        are changed in place: the change subscriber holds that set)."""
        state: Any = session.server_session
        state.initialized = True
        state.protocol_version = record.protocol_version
        state.client_capabilities = record.client_capabilities
        try:
            state.client_info = msgspec.convert(record.client_info, Implementation) if record.client_info else None
        except msgspec.ValidationError:
            state.client_info = None
        state.log_level = record.log_level
        uris = state.resource_uris
        if set(uris) != set(record.resource_uris):
            uris.clear()
            uris.update(record.resource_uris)
        session.subject = record.principal

    async def created(self, session: HttpSession) -> None:
        """Store a session ``initialize`` just minted. Raises :class:`StoreUnavailable`."""
        if self.shared:
            await self.store.create(self.record_of(session), self._sessions.idle_timeout)

    async def sync(self, session: HttpSession, before: _Snapshot) -> None:
        """After a request of ``session``: if it changed the session, save the record and
        tell the other nodes (before the response goes out, so the change is in effect
        everywhere when the client learns of it). A store that cannot be reached leaves
        the change on this node only (logged)."""
        if not self.shared or self.snapshot(session) == before or session.closed:
            return
        record = self.record_of(session)
        try:
            await self.store.save(record, self._sessions.idle_timeout)
            await self.store.broadcast(self._message("changed", session.id, msgspec.json.encode(record)))
        except StoreUnavailable as exc:
            _log.warning("session %s: its change could not be shared: %s", session.id[:8], exc)

    async def ended(self, session_id: str) -> None:
        """The session was deleted here: forget it in the store and on every node."""
        if self.shared:
            try:
                await self.store.delete(session_id)
                await self.store.broadcast(self._message("ended", session_id))
            except StoreUnavailable as exc:
                _log.warning("session %s: its end could not be shared (it expires): %s", session_id[:8], exc)

    # --- messages between nodes -----------------------------------------------------------------

    async def route(self, session: HttpSession, body: bytes) -> None:
        """A client's message this node's engine had no use for: a response to another
        node's question goes to that node; a cancellation to every node. Raises
        ``Reject`` (503) when the store cannot carry it."""
        try:
            env = _peek(body)
        except (msgspec.DecodeError, RecursionError):
            return
        try:
            if env.method == "notifications/cancelled":
                await self.store.broadcast(self._message("cancel", session.id, body))
            elif env.method is UNSET and isinstance(env.id, str):
                node, sep, _ = env.id.partition("/")
                if sep and node != self.node and node.isascii() and node.isalnum():
                    await self.store.send(node, self._message("response", session.id, body))
        except StoreUnavailable as exc:
            raise unavailable(exc) from None

    def _received(self, message: NodeMessage) -> None:
        if message.sender == self.node:
            return
        session = self._sessions.local(message.session_id)
        if session is None or session.closed:
            return
        kind = message.kind
        if kind in ("response", "cancel"):
            ev = session.engine.receive(message.body)
            if isinstance(ev, ResponseReceived):
                deliver(ev)
            elif isinstance(ev, CancelReceived) and isinstance(ev.handle, asyncio.Task):
                ev.handle.cancel()
        elif kind == "changed":
            try:
                self._refresh(session, _decode_record(message.body))
                session.validated = time.monotonic()
            except msgspec.DecodeError:
                session.validated = 0.0  # check the store at the next request
        elif kind == "ended":
            self._sessions.remove(message.session_id, ended=False)
        elif kind == "stream":
            session.stop_changes()

    def _claim_changes(self, session: HttpSession) -> None:
        """This node now holds the session's GET stream: deliver its change notifications
        here, and tell the other nodes to stop."""
        if session.disconnect is None:
            session.disconnect = connect_changes(self._handler, session)

        async def tell() -> None:
            try:
                await self.store.broadcast(self._message("stream", session.id))
            except StoreUnavailable:
                pass

        self._spawn(tell())

    # --- following shared streams -----------------------------------------------------------

    @property
    def _shared_events(self) -> SharedEventStore:
        assert isinstance(self._events, SharedEventStore)
        return self._events

    async def open_get(self, receive: Receive, send: Send, session: HttpSession, retry_ms: int | None) -> None:
        """Serve a GET without ``Last-Event-ID``: what any node writes to the session's
        stream from now on. Raises ``Reject`` (503) when the store cannot be reached."""
        events = self._shared_events
        stream_id = f"{session.id}-get"
        try:
            if session.primes_streams:
                event_id = await events.store_event(stream_id, b"")
                cursor = events.entry_of(event_id) or "0-0"
                first = encode_event(b"", event_id=event_id, retry=retry_ms)
            else:
                cursor, first = await events.cursor(stream_id), b": stream open\n\n"
        except StoreUnavailable as exc:
            raise unavailable(exc) from None
        self._claim_changes(session)
        await self._follow(receive, send, session, stream_id, cursor, first)

    async def resume(self, receive: Receive, send: Send, session: HttpSession, last_event_id: str) -> None:
        """Serve a GET with ``Last-Event-ID``: the events after it, then the rest as they
        are written, on whichever node. Raises ``Reject``: 404 for an id that is not this
        session's or that the store no longer has, 503 when the store cannot be reached."""
        events = self._shared_events
        stream_id = last_event_id.rpartition(".")[0]
        cursor = events.entry_of(last_event_id)
        if cursor is None or stream_id.rpartition("-")[0] != session.id:
            raise Reject(404, "Not Found: unknown Last-Event-ID")
        frames: list[bytes] = []

        async def collect(event_id: str, message: bytes) -> None:
            nonlocal cursor
            frames.append(encode_event(message, event_id=event_id))
            cursor = events.entry_of(event_id) or cursor

        try:
            found = await events.replay_events_after(last_event_id, collect)
        except StoreUnavailable as exc:
            raise unavailable(exc) from None
        if found is None:
            raise Reject(404, "Not Found: unknown Last-Event-ID")
        suffix = stream_id.rpartition("-")[2]
        owner = suffix.partition("~")[0] if "~" in suffix else None
        if suffix == "get":
            if session.disconnect is None:  # the node that delivered its changes may be gone
                resync(session)
            self._claim_changes(session)
        await self._follow(receive, send, session, stream_id, cursor, b"".join(frames), owner=owner)

    async def _follow(
        self,
        receive: Receive,
        send: Send,
        session: HttpSession,
        stream_id: str,
        cursor: str,
        first: bytes,
        owner: str | None = None,
    ) -> None:
        """Answer with the shared stream ``stream_id`` from ``cursor`` on (after ``first``)
        until it ends, the client goes, or this node stops following (the session ended
        here, or the node drains). While idle: a keep-alive comment every keepalive
        interval; the session is checked against the store (it may have ended elsewhere);
        and the stream of a dead ``owner`` node is ended with an error for its request."""
        loop = asyncio.get_running_loop()
        events = self._shared_events
        stop = asyncio.Event()
        session.followers.add(stop)
        watcher = loop.create_task(wait_disconnect(receive))
        stopper = loop.create_task(stop.wait())
        quiet_since = loop.time()
        try:
            await start_sse(send)
            if first:
                await send_frame(send, first)
            while True:
                read = loop.create_task(events.follow(stream_id, cursor))
                done, _ = await asyncio.wait({read, watcher, stopper}, return_when=asyncio.FIRST_COMPLETED)
                if read not in done:
                    read.cancel()
                    await asyncio.gather(read, return_exceptions=True)
                    break
                try:
                    items, cursor, ended = read.result()
                except StoreUnavailable:
                    items, ended = [], False
                    await asyncio.sleep(0.5)  # keep the client; the store may be back soon
                for event_id, message in items:
                    await send_frame(send, encode_event(message, event_id=event_id))
                if ended:
                    break
                if items:
                    quiet_since = loop.time()
                    continue
                if owner is not None and owner != self.node and not await self.store.node_alive(owner):
                    await self._end_orphan(stream_id)
                if loop.time() - quiet_since >= self._keepalive:
                    quiet_since = loop.time()
                    await send_frame(send, KEEPALIVE)
                    if not await self._still_live(session, stream_id):
                        break
            await end_body(send)
        finally:
            session.followers.discard(stop)
            watcher.cancel()
            stopper.cancel()

    async def _still_live(self, session: HttpSession, stream_id: str) -> bool:
        """Whether the session still exists (asked of the store when due); keeps the
        stream from expiring meanwhile. True when the store cannot say."""
        try:
            await self._shared_events.touch_stream(stream_id)
            return await self._sessions.find(session.id) is not None
        except (StoreUnavailable, Reject):
            return True

    async def _end_orphan(self, stream_id: str) -> None:
        """The node that ran the request of ``stream_id`` is gone: end the stream with an
        error response for that request (once, whichever node gets here first)."""
        events = self._shared_events
        try:
            raw = await events.request_of(stream_id)
            final = None
            if raw is not None:
                rid = msgspec.json.decode(raw)
                error = McpError(INTERNAL_ERROR, "Internal error: the server node running this request stopped before answering")
                final = json_error(rid, error)
            if await events.end_stream(stream_id, final):
                _log.info("stream %s: its node is gone; the request failed", stream_id[-24:])
        except (StoreUnavailable, msgspec.DecodeError) as exc:
            _log.debug("could not end the stream of a dead node: %s", exc)
