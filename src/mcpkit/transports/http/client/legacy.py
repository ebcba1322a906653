"""The legacy era (2025-11-25 back to 2024-11-05) on the client side: the session.

After an ``initialize`` the session id the server gave and the version it negotiated
ride on every request; ``notifications/initialized`` is POSTed before any later request
and, once accepted, opens the GET stream of server-initiated messages. A 404 for the
session re-initialises once, transparently, with the remembered ``initialize`` params;
so does a 404 for the GET stream (bounded by the reconnect policy: ``streams.Listener``).
A dropped response stream is resumed. Cancelling a request POSTs
``notifications/cancelled``, then closes its stream. Closing the transport DELETEs the
session (docs/http.md). When the connection was lost and the transport starts again,
the session is forgotten (:meth:`LegacySession.forget`): the client's handshake opens a
new one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from ....protocol.engine import encode
from ....protocol.errors import flatten_text
from ....protocol.events import RequestId
from ....protocol.sse import SSEParser
from ...restart import RECONNECT, RestartPolicy
from .connection import Connection
from .exchange import HttpExchange
from .failures import ExchangeFailed
from .inbound import PrivateRequests
from .notifier import Notifier
from .runner import Route
from .settings import Settings
from .streams import Listener, Streams
from .wire import ACCEPT_BOTH, EXCERPT, SSE, decode_version

if TYPE_CHECKING:
    import httpx

__all__ = ["LegacySession", "LegacyMessage", "LegacyRequest", "LegacySettings", "OnSessionRenewed"]

logger = logging.getLogger("mcpkit.http")

_INITIALIZED = "notifications/initialized"

#: ``await on_session_renewed()``: the transport opened a new session by itself (after a
#: 404); the client re-opens its subscriptions in it.
OnSessionRenewed = Callable[[], Awaitable[None]]


class LegacySettings(Settings, Protocol):
    """The transport's settings, and the hook the client sets for renewed sessions."""

    @property
    def on_session_renewed(self) -> OnSessionRenewed | None: ...

    @property
    def reconnect_policy(self) -> RestartPolicy | None: ...


def _expired(why: str) -> ExchangeFailed:
    return ExchangeFailed(f"The session expired and a new one could not be opened: {why}", {"status": 404})


class LegacySession:
    """The legacy era's part of the transport: the session and everything tied to it."""

    def __init__(
        self,
        settings: LegacySettings,
        conn: Connection,
        http: HttpExchange,
        notifier: Notifier,
        private: PrivateRequests,
        streams: Streams,
    ) -> None:
        self._settings = settings
        self._conn = conn
        self._http = http
        self._notifier = notifier
        self._private = private
        self._streams = streams
        self.session_id: str | None = None
        self.version: str | None = None  # negotiated by initialize
        self._init_params: Any = None  # of the last initialize, to repeat after a 404
        self._barrier: asyncio.Task[None] | None = None  # the POST of notifications/initialized
        policy = settings.reconnect_policy or RECONNECT  # bounds the GET stream's renewals of the session
        self._listener = Listener(settings, conn, streams, self._stream_headers, self._stream_refused, policy)
        self._reinit_lock = asyncio.Lock()

    def claim(self, params: dict[str, Any] | None) -> LegacyMessage:
        """The era part of a message that is not modern."""
        return LegacyMessage(self, params)

    def forget(self) -> None:
        """The connection was lost and starts again: close the GET stream and forget the
        session (the server may be a new one), so that the next ``initialize`` opens a
        new one. Nothing is sent."""
        self._listener.stop()
        self.session_id = self.version = None
        self._init_params = None
        self._barrier = None

    def headers(self, accept: str | None = ACCEPT_BOTH) -> dict[str, str]:
        """The headers of a request in the session: the session id and the negotiated
        version once known, and ``Accept`` unless None."""
        headers = {**self._settings.headers}
        if accept is not None:
            headers["Accept"] = accept
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.version is not None:
            headers["MCP-Protocol-Version"] = self.version
        return headers

    def _stream_headers(self) -> dict[str, str]:
        return self.headers(SSE)

    def notify(self, what: str, body: bytes) -> None:
        """POST a notification (or a response to the server), in a task. The POST of
        ``notifications/initialized`` is the barrier later requests wait for."""
        task = self._conn.spawn(self._post(what, body))
        if what == _INITIALIZED:
            self._barrier = task

    def route(self, method: str, params: dict[str, Any] | None) -> LegacyRequest:
        """The route of a request; ``initialize``'s params are kept for re-initialising."""
        if method == "initialize":
            self._init_params = params
        return LegacyRequest(self, method)

    def cancel(self, body: bytes, task: asyncio.Task[None] | None) -> None:
        """POST ``notifications/cancelled`` (``body``), then cancel the request's
        ``task``. Without a task (the request is not in flight) it is POSTed only if a
        session was ever initialised."""
        if task is not None or self._init_params is not None:
            self._conn.spawn(self._post("notifications/cancelled", body, then_cancel=task))

    def _post(self, what: str, body: bytes, then_cancel: asyncio.Task[None] | None = None) -> Coroutine[Any, Any, None]:
        opened = self._open_listener if what == _INITIALIZED else None
        return self._notifier.post(what, body, self.headers, then_cancel=then_cancel, on_accepted=opened)

    def _open_listener(self) -> None:
        if self.session_id is not None:
            self._listener.start()

    async def ready(self) -> None:
        """Wait for the POST of ``notifications/initialized``, if one is under way: it
        goes first. Cancellation propagates (the POST goes on)."""
        barrier = self._barrier
        if barrier is not None and not barrier.done():
            await asyncio.wait([barrier])

    def opened(self, resp: httpx.Response) -> None:
        """``initialize`` succeeded: the session id is the one ``resp`` names, if any."""
        self.session_id = resp.headers.get("mcp-session-id") or None

    def learn_version(self, result: msgspec.Raw) -> None:
        """Adopt the ``protocolVersion`` of an ``initialize`` result, if it is usable."""
        version = decode_version(result)
        if version is not None:
            self.version = version

    async def follow(self, parser: SSEParser, rid: RequestId) -> None:
        """Resume request ``rid``'s dropped response stream. Raises :class:`~.exchange.Lost`."""
        await self._streams.follow(parser, rid, self._stream_headers)

    async def reinitialize(self, stale: str | None) -> None:
        """The server forgot session ``stale`` (a request, or the GET stream, got a
        404). Open a new one with the remembered ``initialize`` params (once, however
        many requests noticed), then POST
        ``notifications/initialized`` (which reopens the GET stream), then run the
        transport's ``on_session_renewed()``, if the client set one, in a task of its own
        (its requests must not wait for this lock). Raises
        :class:`~.failures.ExchangeFailed` or :class:`~.exchange.Lost`."""
        async with self._reinit_lock:
            if self.session_id != stale:
                return  # another request already opened a new session
            if self._init_params is None:
                raise _expired("no initialize to repeat")
            self._listener.stop()
            headers = {**self._settings.headers, "Accept": ACCEPT_BOTH}
            reply, resp = await self._private.post("reinit", "initialize", self._init_params, headers)
            if reply is None or not reply.result:
                error = reply.error if reply is not None else None
                message = error.get("message") if isinstance(error, dict) else f"HTTP {resp.status_code}"
                raise _expired(flatten_text(str(message), EXCERPT))
            self.learn_version(reply.result)
            self.opened(resp)
            logger.info("legacy session expired; opened a new one")
            note = encode({"jsonrpc": "2.0", "method": _INITIALIZED})
            await self._post(_INITIALIZED, note)  # starts the GET stream
            renewed = self._settings.on_session_renewed
            if renewed is not None:
                self._conn.spawn(_run(renewed))

    async def _stream_refused(self, stale: str, resumed: bool) -> bool:
        """The GET stream of session ``stale`` was refused with 404. A ``ping`` in the
        session tells why: refused 404 too, the server forgot the session, and a new one
        is opened (:meth:`reinitialize`); answered, the server forgot the event a
        ``resumed`` stream asked for (True: open it afresh), or it offers no GET stream
        at all (it should say 405; nothing more is done). Raises what
        :meth:`reinitialize` raises."""
        if self.session_id != stale:
            return False  # a request opened a new session already
        _, resp = await self._private.post("check", "ping", None, self.headers())
        if resp.status_code != 404:
            if not resumed:
                logger.info("no GET stream: HTTP 404, though session %s answers (HTTP %d)", stale, resp.status_code)
            return resumed
        await self.reinitialize(stale)
        return False

    async def end(self) -> None:
        """DELETE the session, if there is one and the server is reachable (errors
        ignored, within ``delete_timeout``)."""
        if self.session_id is not None and not self._conn.dead:
            await self._http.delete(self.headers(None), self._settings.delete_timeout)


async def _run(hook: OnSessionRenewed) -> None:
    """Await ``hook()``; what it raises is logged (nobody awaits this task)."""
    try:
        await hook()
    except Exception:
        logger.exception("on_session_renewed failed")


class LegacyMessage:
    """One message of the legacy era."""

    def __init__(self, session: LegacySession, params: dict[str, Any] | None) -> None:
        self._session = session
        self._params = params

    def notify(self, method: str, body: bytes) -> None:
        """POST the notification with the session's headers, in a task."""
        self._session.notify(method, body)

    def route(self, method: str) -> LegacyRequest:
        """The route of the request."""
        return self._session.route(method, self._params)


class LegacyRequest(Route):
    """A request in the session: it waits for the handshake to finish, carries the
    session's headers, retries once in a new session after a 404, and resumes its
    dropped response stream."""

    def __init__(self, session: LegacySession, method: str) -> None:
        super().__init__(method)
        self._session = session
        self._sent_in: str | None = None  # the session of the last POST

    async def ready(self) -> None:
        await self._session.ready()

    def headers(self) -> dict[str, str]:
        self._sent_in = self._session.session_id
        return self._session.headers()

    def accepted(self, resp: httpx.Response) -> None:
        if self.method == "initialize":
            self._session.opened(resp)

    async def should_retry(self, status: int, raw: bytes) -> bool:
        """A 404 means the session is gone (unless there was none yet): retry in a new one."""
        return status == 404 and self._sent_in is not None and self.method != "initialize"

    async def before_retry(self) -> None:
        await self._session.reinitialize(self._sent_in)

    async def stream_ended(self, resp: httpx.Response, parser: SSEParser, rid: RequestId) -> None:
        """Resume the stream with ``Last-Event-ID``."""
        await resp.aclose()
        await self._session.follow(parser, rid)

    def learn(self, result: msgspec.Raw, data: bytes) -> bytes:
        if self.method == "initialize":
            self._session.learn_version(result)
        return data

    def cancel(self, task: asyncio.Task[None], body: bytes) -> None:
        """POST ``notifications/cancelled``, then close the response stream."""
        self._session.cancel(body, task)
