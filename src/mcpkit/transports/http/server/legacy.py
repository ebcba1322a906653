"""The legacy era (2025-11-25 back to 2024-11-05) over Streamable HTTP: sessions.

``initialize`` mints an ``Mcp-Session-Id`` that later requests must carry; a request
runs in its session and is answered on its POST's response, which as an SSE stream is
stored so that the client can resume it; ``GET`` opens the session's stream for
server-initiated messages or, with ``Last-Event-ID``, resumes a stream; ``DELETE`` ends
the session (docs/http.md, "Legacy sessions and resumable streams"). Notifications and
responses POSTed outside any session are answered here too. With a shared session
store, sessions are replicas and streams are followed in the shared event store
(:mod:`.cluster`, docs/deploy.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from ....protocol import meta as meta_keys
from ....protocol.engine import Engine
from ....protocol.eras import LEGACY
from ....protocol.errors import INTERNAL_ERROR, INVALID_PARAMS, McpError
from ....protocol.events import CancelReceived, Event, NotificationReceived, RequestReceived, ResponseReceived
from ....protocol.sse import KEEPALIVE, encode_event
from ....protocol.versions import supports
from ....runtime.outbound import DROP
from ....runtime.outcome import deliver, run_request
from ....stores.events import EventStore
from ....stores.sessions import StoreUnavailable
from ...base import RequestHandler
from .asgi import (
    Headers,
    Receive,
    Reject,
    Send,
    accepts,
    end_body,
    json_error,
    send_empty,
    send_frame,
    send_json,
    start_sse,
    wait_disconnect,
)
from .cluster import Cluster, connect_changes, unavailable
from .exchange import Exchange, LateWatches
from .sessions import HttpSession, SessionManager
from .shutdown import answer_in, last_words
from .streams import SseStream

__all__ = ["LegacyEndpoint"]


def _refuse_modern_version_header(headers: Headers, request: RequestReceived) -> None:
    """Raises :class:`Reject` (400, -32602) for a request whose ``MCP-Protocol-Version``
    names a revision whose requests carry their version in ``_meta``, when this one's
    ``_meta`` did not (``initialize`` excepted)."""
    version = headers.get("mcp-protocol-version")
    if version is not None and supports(version, "request-meta") and request.method != "initialize":
        err = McpError(
            INVALID_PARAMS, f"Invalid params: _meta is missing required field {meta_keys.PROTOCOL_VERSION}", status=400
        )
        raise Reject(400, str(err), body=json_error(request.id, err))


def _check_session_version_header(headers: Headers) -> None:
    """Raises :class:`Reject` (400) if ``MCP-Protocol-Version`` is sent and names no
    revision that has sessions."""
    version = headers.get("mcp-protocol-version")
    if version is not None and not supports(version, "sessions"):
        raise Reject(400, f"Bad Request: unsupported MCP-Protocol-Version {version[:64]!r}")


class LegacyEndpoint:
    """Serves the legacy era: POSTs in (or creating) a session, GET streams, DELETE."""

    def __init__(
        self,
        handler: RequestHandler,
        sessions: SessionManager,
        store: EventStore,
        *,
        json_response: bool | None,
        keepalive_interval: float,
        max_session_requests: int,
        retry_ms: int | None = None,
        cluster: Cluster | None = None,
    ) -> None:
        self._handler = handler
        self._cluster = cluster
        self._sessions = sessions
        self._store = store
        self._json_response = json_response
        self._keepalive_interval = keepalive_interval
        self._max_session_requests = max_session_requests
        #: The ``retry`` (ms) of the priming events: how long a client waits to reconnect.
        self._retry_ms = retry_ms
        #: Set by the app when its shutdown begins: requests cut then are answered (-32603).
        self.draining = False
        #: When the exchanges of slow handlers begin to watch for their client's disconnect.
        self._late = LateWatches()

    async def _live(self, session_id: str) -> HttpSession:
        """The live session ``session_id``; raises :class:`Reject`: 404 if there is none,
        503 if a shared store must be asked and cannot be reached."""
        try:
            session = await self._sessions.find(session_id)
        except StoreUnavailable as exc:
            raise unavailable(exc) from None
        if session is None:
            raise Reject(404, "Not Found: unknown or ended session")
        return session

    @property
    def _shared(self) -> Cluster | None:
        """The cluster, when sessions are shared with other nodes."""
        return self._cluster if self._cluster is not None and self._cluster.shared else None

    # --- POST -------------------------------------------------------------------------------

    def post(
        self,
        receive: Receive,
        send: Send,
        headers: Headers,
        session_id: str | None,
        session: HttpSession | None,
        engine: Engine,
        ev: Event | None,
    ) -> Awaitable[None]:
        """Serve a POSTed message that is not a modern request (what to await: the
        coroutine of the case's own method). ``session`` is the live session
        ``session_id`` names (None if it names none), ``engine`` the one that parsed
        ``ev`` (the session's, or a fresh one); ``ev`` None is a message to ignore.

        Raises :class:`Reject`: 404 for an unknown session; 400 for a missing session or
        an unsupported ``MCP-Protocol-Version``; 429 past ``max_session_requests``; 503
        when ``initialize`` finds the sessions full. A refused request leaves nothing in
        the session's engine.
        """
        if not isinstance(ev, RequestReceived):
            return self._message(send, session_id, session, ev)
        if session is not None:
            return self._request(receive, send, headers, session, engine, ev)
        if ev.method == "initialize":
            return self._initialize(send, engine, ev)
        if session_id:
            raise Reject(404, "Not Found: unknown or ended session")
        _refuse_modern_version_header(headers, ev)
        raise Reject(400, "Bad Request: missing Mcp-Session-Id header")

    async def _initialize(self, send: Send, engine: Engine, request: RequestReceived) -> None:
        """Run ``initialize`` and, if it succeeds, mint the session its response names
        in ``Mcp-Session-Id``. Raises :class:`Reject` (503, ``Retry-After``) when
        ``max_sessions`` sessions are live. On cancellation the request is abandoned."""
        server_session = self._handler.new_session()
        message, error = await run_request(
            engine,
            request.id,
            request.method,
            self._handler.serve_request(request, session=server_session, outbound=DROP),
        )
        if error is not None:
            await send_json(send, LEGACY.error_status(error), message or b"")
            return
        shared = self._shared
        node = shared.node if shared is not None else None
        session = HttpSession(SessionManager.new_id(), server_session, self._store, self._handler.max_error_text, node=node)
        if not self._sessions.add(session):
            raise Reject(503, "Service Unavailable: too many sessions", [(b"retry-after", b"5")])
        if shared is not None:  # its change notifications start where its GET stream opens
            try:
                await shared.created(session)
            except StoreUnavailable as exc:
                self._sessions.remove(session.id)
                raise unavailable(exc) from None
        else:
            session.disconnect = connect_changes(self._handler, session)
        await send_json(send, 200, message or b"", [(b"mcp-session-id", session.id.encode())])

    async def _request(
        self, receive: Receive, send: Send, headers: Headers, session: HttpSession, engine: Engine, request: RequestReceived
    ) -> None:
        """Run ``request`` in ``session``; the session is busy (never reaped) meanwhile.
        The handler runs on if the client disconnects. Raises :class:`Reject` (400, 429)
        after forgetting the request, so that its id is free again."""
        try:
            _refuse_modern_version_header(headers, request)
            _check_session_version_header(headers)
            self._check_in_flight(engine, request)
        except Reject:
            engine.abandon(request.id)
            raise
        exchange = Exchange(
            self._handler,
            engine,
            request,
            policy=LEGACY,
            server_session=session.server_session,
            json_response=self._json_response,
            session=session,
            retry_ms=self._retry_ms,
            after=self._sync_after(session),
            stopping=lambda: self.draining,
            late=self._late,
        )
        session.busy += 1
        try:
            await exchange.run(receive, send)
        finally:
            session.busy -= 1
            self._sessions.touch(session)

    def _sync_after(self, session: HttpSession) -> Callable[[], Awaitable[None]] | None:
        """With shared sessions: what saves a change the request makes to the session."""
        shared = self._shared
        if shared is None:
            return None
        before = shared.snapshot(session)
        return lambda: shared.sync(session, before)

    def _check_in_flight(self, engine: Engine, request: RequestReceived) -> None:
        """Raises :class:`Reject` (429, ``Retry-After``, -32603) if the session already
        has ``max_session_requests`` requests unanswered (their handlers running, whether
        or not their clients still wait)."""
        limit = self._max_session_requests
        if len(engine.incoming) > limit:
            err = McpError(INTERNAL_ERROR, f"Too many requests in progress: the limit is {limit} per session", status=429)
            raise Reject(429, str(err), [(b"retry-after", b"1")], body=json_error(request.id, err))

    async def _message(self, send: Send, session_id: str | None, session: HttpSession | None, ev: Event | None) -> None:
        """A notification or a response: 202 Accepted. In a session, a cancellation
        cancels the request's handler and a response wakes whoever awaits it. Raises
        :class:`Reject`: 404 for an unknown session; 400 for a response outside any."""
        if session is not None:
            if isinstance(ev, CancelReceived):
                if isinstance(ev.handle, asyncio.Task):
                    ev.handle.cancel()
            elif isinstance(ev, ResponseReceived):
                deliver(ev)
            elif isinstance(ev, NotificationReceived):
                self._handler.notified(session.server_session, ev.method)
        elif session_id:
            raise Reject(404, "Not Found: unknown or ended session")
        elif not (isinstance(ev, NotificationReceived) or ev is None):
            raise Reject(400, "Bad Request: missing Mcp-Session-Id header")
        await send_empty(send, 202)

    # --- GET and DELETE -----------------------------------------------------------------------

    async def get(self, receive: Receive, send: Send, headers: Headers) -> None:
        """Open the session's stream for server-initiated messages (one at a time), or
        resume a stream after ``Last-Event-ID``; either lasts until the client goes.

        Raises :class:`Reject`: 406 if ``Accept`` excludes SSE; 405 without a session;
        404 for an unknown session or event id; 400 for an unsupported
        ``MCP-Protocol-Version``; 409 if the session's stream is already open.
        """
        accept = headers.get("accept")
        if accept is not None and not accepts(accept, "text/event-stream"):
            raise Reject(406, "Not Acceptable: Accept must allow text/event-stream")
        session_id = headers.get("mcp-session-id")
        if not session_id:
            raise Reject(405, "Method Not Allowed: GET needs a legacy session", [(b"allow", b"POST")])
        session = await self._live(session_id)
        _check_session_version_header(headers)
        last_event_id = headers.get("last-event-id")
        shared = self._shared
        if shared is not None:
            if last_event_id:
                await shared.resume(receive, send, session, last_event_id)
            else:
                await shared.open_get(receive, send, session, self._retry_ms)
            return
        if last_event_id:
            await self._resume(receive, send, session, last_event_id)
            return
        stream = session.standalone_stream()
        if stream.attached:
            raise Reject(409, "Conflict: this session already has a GET stream open")
        sink = stream.attach()
        # Flush the headers at once; with an id to resume from where the revision primes streams.
        first = await stream.prime(self._retry_ms) if session.primes_streams else b": stream open\n\n"
        await self._pipe(receive, send, stream, sink, first, session.engine)

    async def _resume(self, receive: Receive, send: Send, session: HttpSession, last_event_id: str) -> None:
        """Replay the events after ``last_event_id``, then go on live if its stream is
        still open. Raises :class:`Reject` (404) if the store no longer knows the id or
        it is not this session's."""
        frames: list[bytes] = []

        async def collect(frame: bytes) -> None:
            frames.append(frame)

        stream = session.stream_for_event(last_event_id)
        if stream is not None:
            sink = await stream.resume(last_event_id, collect)
            if sink is None:
                raise Reject(404, "Not Found: unknown Last-Event-ID")
            await self._pipe(receive, send, stream, sink, b"".join(frames), session.engine)
            return

        async def replay(event_id: str, message: bytes) -> None:
            if message:
                frames.append(encode_event(message, event_id=event_id))

        if await self._store.replay_events_after(last_event_id, replay) is None or not last_event_id.startswith(session.id):
            raise Reject(404, "Not Found: unknown Last-Event-ID")
        await start_sse(send)
        await end_body(send, b"".join(frames))

    async def _pipe(
        self,
        receive: Receive,
        send: Send,
        stream: SseStream,
        sink: asyncio.Queue[bytes | None],
        first: bytes,
        engine: Engine,
    ) -> None:
        """Answer with ``stream``: ``first``, then its frames from ``sink``, until the stream
        ends or the client goes away; while idle, every ``keepalive_interval`` seconds a
        keep-alive comment and a reaping of idle sessions (this stream's own ends it). The
        connection is detached from the stream on return.

        Cancelled once draining (the ASGI server cuts what still runs at the end of its
        grace), it writes what the stream still has for this connection — and, for a
        request's stream whose handler still runs in ``engine``, the -32603 shutdown
        answer, the handler being cancelled — ends the response and returns, as a POST's
        exchange does. Cancelled otherwise, ``CancelledError`` propagates."""
        watcher = asyncio.get_running_loop().create_task(wait_disconnect(receive))
        try:
            await start_sse(send)
            try:
                await _write_stream(send, sink, first, self._keepalive_interval, self._sessions.reap, watcher)
            except asyncio.CancelledError:
                if not self.draining:
                    raise
                answer = answer_in(engine, stream.request_id)
                await last_words(end_body(send, stream.cut(sink) + (encode_event(answer) if answer is not None else b"")))
        finally:
            watcher.cancel()
            stream.detach(sink)

    async def delete(self, send: Send, headers: Headers) -> None:
        """End the session. Raises :class:`Reject`: 405 without a session, 404 for an
        unknown one."""
        session_id = headers.get("mcp-session-id")
        if not session_id:
            raise Reject(405, "Method Not Allowed: DELETE ends a legacy session", [(b"allow", b"POST")])
        shared = self._shared
        if shared is not None:
            await self._live(session_id)  # a session this node has not seen is loaded first
        if self._sessions.remove(session_id) is None:
            raise Reject(404, "Not Found: unknown or ended session")
        if shared is not None:
            await shared.ended(session_id)
        await send_empty(send, 200)


async def _write_stream(
    send: Send,
    sink: asyncio.Queue[bytes | None],
    first: bytes,
    keepalive_interval: float,
    on_idle: Callable[[], None],
    watcher: asyncio.Task[None],
) -> None:
    """The loop of :func:`_pipe`, once the response has started. Cancellation propagates."""
    getter: asyncio.Future[bytes | None] | None = None
    try:
        if first:
            await send_frame(send, first)
        while not watcher.done():
            getter = asyncio.ensure_future(sink.get())
            done, _ = await asyncio.wait({getter, watcher}, timeout=keepalive_interval, return_when=asyncio.FIRST_COMPLETED)
            if getter not in done:
                getter.cancel()
                if not watcher.done():
                    await send_frame(send, KEEPALIVE)
                    on_idle()
                continue
            frame = getter.result()
            if frame is None:
                break
            await send_frame(send, frame)
        await end_body(send)
    finally:
        if getter is not None and not getter.done():
            getter.cancel()
