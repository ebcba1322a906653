"""The Streamable HTTP client transport, for both protocol eras: the public facade,
:class:`HttpTransport`, composed of the parts in ``client/`` and, for servers that
speak only the deprecated HTTP+SSE transport, the switch to it in ``sse/fallback.py``.

Every outbound JSON-RPC message becomes its own HTTP POST; each response (one JSON
object, or an SSE stream of messages ending with the response) is handed back as whole
messages, exactly as a pipe transport would. What differs per era is decided from the
messages themselves, once per message, and handed to that era's part. A message the
client's driver built comes with its method, id and params as built
(:class:`~mcpkit.runtime.channel.TakesMessages`), which are read instead of decoding the
bytes again; any other (``send``) is decoded as far as the transport reads it:

* **modern** (2026-07-28, ``client/modern.py``): a message whose ``params._meta`` names a
  protocol version is stateless. Its POST carries ``MCP-Protocol-Version``,
  ``Mcp-Method``, ``Mcp-Name`` and the ``Mcp-Param-*`` headers that the tool's
  ``x-mcp-header`` annotations ask for (learned from the ``tools/list`` results that
  pass through). Cancelling a request closes its response stream;
  ``notifications/cancelled`` is never POSTed.
* **legacy** (2025-11-25 and earlier, ``client/legacy.py``): after an ``initialize``, the
  session id and the negotiated version ride on every request; a GET stream brings
  server-initiated messages; dropped SSE streams resume with ``Last-Event-ID``; a 404
  for the session re-initialises once, transparently; :meth:`HttpTransport.close`
  DELETEs the session.

The parts, in ``client/``: ``exchange.py`` (HTTP), ``runner.py`` (a request's exchange
and the era's steps of it), ``inbound.py`` (matching responses; the transport's own
requests), ``streams.py`` (SSE), ``notifier.py`` (messages without a response),
``failures.py`` (error responses), ``connection.py`` (callbacks and tasks),
``settings.py`` (what the parts read of this facade), ``wire.py`` (what it peeks at).
This module sits above ``client/`` and ``sse/`` because it uses both: the HTTP+SSE
client is built from the same parts, and they never import it. httpx is imported only when
the transport starts, so ``import mcpkit`` stays light.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET

from ...protocol import meta as meta_keys
from ...protocol.engine import is_request_id
from ...protocol.errors import ConnectionClosed
from ...protocol.events import RequestId
from ...protocol.headers import NAMED_METHODS
from ...runtime.channel import OnClose, OnMessage
from ..restart import CrashLog, RestartPolicy
from .client.connection import Connection
from .client.exchange import HttpExchange
from .client.failures import Failures, OnRequestLost
from .client.inbound import Inbound, PrivateRequests
from .client.legacy import LegacySession, OnSessionRenewed
from .client.modern import ModernEra
from .client.notifier import Notifier
from .client.runner import EraMessage, InFlight, RequestRunner
from .client.settings import check_count, check_seconds, reconnect_policy
from .client.streams import Streams
from .client.wire import decode_out
from .sse.fallback import SseFallback

if TYPE_CHECKING:
    import httpx

__all__ = ["HttpTransport"]

logger = logging.getLogger("mcpkit.http")


class HttpTransport:
    """A :class:`~mcpkit.Transport` over Streamable HTTP, for both protocol eras.

    ``HttpTransport(url, headers=None, http_client=None, ...)``: ``headers`` are sent on
    every request (authorisation, say); ``http_client`` is an ``httpx.AsyncClient`` to
    use (not closed by us), else one is created at :meth:`start` and closed by
    :meth:`close`. ``connect_timeout`` bounds connecting; responses have no read
    timeout (each request's deadline is the client's business). ``auth`` is an
    ``httpx.Auth`` applied to every request to the server (``mcpkit.OAuthClientAuth``
    for OAuth, docs/auth.md). ``max_message_size``
    bounds one inbound message. A dropped legacy SSE stream is resumed with
    ``Last-Event-ID`` up to ``max_reconnects`` times in a row without progress, waiting
    the server's ``retry`` or else ``reconnect_delay`` seconds, doubling. ``listen``
    opens the legacy GET stream for server-initiated messages. ``sse_fallback`` (on by
    default): if the server refuses the first POST with 400, 404 or 405 and a GET of the
    URL opens the deprecated HTTP+SSE transport of 2024-11-05, the connection continues
    over it (an :class:`~mcpkit.SseTransport`, legacy era), as the 2025-11-25 spec asks.

    ``reconnect`` (on by default: ``True`` is :data:`~mcpkit.transports.restart.RECONNECT`,
    or a :class:`~mcpkit.RestartPolicy`; ``False`` turns it off) lets the client get the
    connection back when the server cannot be reached: it starts the transport again
    after the policy's back-off, negotiates anew (legacy: a new session, its
    subscriptions re-opened) and gives up, with a ``ConnectionClosed`` that says so,
    after more failed attempts within the policy's window than it allows
    (docs/timeouts-and-retries.md, "Reconnection"). Any other value raises
    ``TypeError``; a timeout that is not a positive finite number of seconds
    (``reconnect_delay``: at least 0), or a size or count out of range, raises
    ``ValueError`` (``TypeError`` if it is not a number at all).

    Nothing here raises to the caller of :meth:`send`. Failures become messages:
    an HTTP error with a JSON-RPC error body is delivered as the response to that
    request; any other failed exchange (an error status, a non-JSON body, a stream that
    ends before the response) is delivered as a JSON-RPC error response (code -32603)
    whose message names the status and quotes at most 512 bytes of the body, with
    ``data={"status": ..., "body": ...}`` (and ``"retryAfter"`` when the server sent
    ``Retry-After``), so the awaiting caller gets an ``McpError``.
    A server that cannot be reached reports ``on_close`` (every pending request then
    fails with ``ConnectionClosed``). A request whose own connection breaks before its
    response (reset, a kept-alive connection that had died) fails alone: the transport
    calls ``on_request_lost(id, reason)``, which the client sets to fail that call with
    ``ConnectionClosed``. Failed notifications are logged.

    Cancellation: when the engine sends ``notifications/cancelled`` for a modern
    request, the request's response stream is closed (that is the cancellation on this
    transport) and nothing is POSTed; for a legacy request the notification is POSTed,
    then its stream is closed.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        auth: httpx.Auth | None = None,
        connect_timeout: float = 10.0,
        max_message_size: int = 64 * 1024 * 1024,
        max_reconnects: int = 5,
        reconnect_delay: float = 0.25,
        notification_timeout: float = 30.0,
        delete_timeout: float = 2.0,
        listen: bool = True,
        reconnect: bool | RestartPolicy = True,
        sse_fallback: bool = True,
    ) -> None:
        self.url = url
        self.headers = dict(headers or {})
        self.auth = auth
        self.connect_timeout = check_seconds("connect_timeout", connect_timeout)
        self.max_message_size = check_count("max_message_size", max_message_size, least=1)
        self.max_reconnects = check_count("max_reconnects", max_reconnects, least=0)
        self.reconnect_delay = check_seconds("reconnect_delay", reconnect_delay, zero=True)
        self.notification_timeout = check_seconds("notification_timeout", notification_timeout)
        self.delete_timeout = check_seconds("delete_timeout", delete_timeout)
        self.listen = listen
        self.sse_fallback = sse_fallback
        #: How the connection is got back once the server cannot be reached (None: it is not).
        self.reconnect_policy = reconnect_policy(reconnect)
        self._lost = CrashLog(self.reconnect_policy) if self.reconnect_policy is not None else None
        #: Set by the client: ``await on_session_renewed()`` after a new legacy session was opened by itself.
        self.on_session_renewed: OnSessionRenewed | None = None
        #: Set by the client: ``on_request_lost(id, reason)`` fails that request alone with ``ConnectionClosed``.
        self.on_request_lost: OnRequestLost | None = None
        self._conn = Connection()
        self._http = HttpExchange(self, http_client)
        self._pending: dict[RequestId, InFlight] = {}  # requests whose exchange is running
        inbound = Inbound(self._conn.emit, self._pending)
        failures = Failures(self._conn.emit, inbound.deliver, self)
        streams = Streams(self, self._http, inbound.deliver, failures)
        private = PrivateRequests(self, self._http, inbound, streams)
        notifier = Notifier(self, self._http, self._conn)
        self._modern = ModernEra(self, self._conn, notifier, private, failures)
        self._legacy = LegacySession(self, self._conn, self._http, notifier, private, streams)
        self._runner = RequestRunner(self, self._http, self._conn, inbound.deliver, failures, streams, self._pending)
        self._fallback = SseFallback(self, self._conn, http_client, self.send)  # the old transport, if it comes to that
        self._runner.divert = self._fallback.divert

    @property
    def session_id(self) -> str | None:
        """The legacy session id the server gave us, if any."""
        return self._legacy.session_id

    @property
    def rejected_tools(self) -> dict[str, str]:
        """Tools the server listed that this transport left out of ``tools/list`` results
        (2026-07-28: their ``x-mcp-header`` annotations are invalid, and the spec asks a
        client to reject them): tool name -> the reason. Each is also logged once, as a
        warning on the ``mcpkit.http`` logger (docs/http.md)."""
        return dict(self._modern.rejected)

    @property
    def protocol_version(self) -> str | None:
        """The legacy protocol version negotiated by ``initialize``, if any."""
        return self._legacy.version

    async def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        """Prepare the HTTP client. Connects lazily: an unreachable server shows up as
        ``on_close`` when the first message is sent. Started again (after the connection
        was lost), it first ends what is left of the old one: its exchanges, the legacy
        session (forgotten, not deleted) and the HTTP client's pool if we own it."""
        if self._conn.started:
            await self._conn.restart(self.delete_timeout)
            self._pending.clear()
            self._legacy.forget()
            await self._http.renew()
            await self._fallback.reset()
        self._http.open()
        self._conn.start(on_message, on_close)

    def restart_delay(self, reason: str) -> float | None:
        """The server could not be reached (``reason``): the seconds to wait before
        :meth:`start` may try again, or None without ``reconnect`` (or after
        :meth:`close`). Every failed attempt counts; raises :class:`~mcpkit.ConnectionClosed`
        once the policy gives up."""
        lost = self._lost
        if lost is None or self._conn.closed:
            return None
        delay = lost.crashed(asyncio.get_running_loop().time())
        if delay is None:
            raise ConnectionClosed(
                f"Could not reconnect to {self.url}: the connection failed {lost.recent} times within "
                f"{lost.policy.window:g} s; not trying again (last: {reason})"
            )
        return delay

    @property
    def supervises_start(self) -> bool:
        """Whether a server that cannot be reached while the client first connects is
        tried again like a lost connection: the ``reconnect`` policy's ``supervise_start``."""
        return self.reconnect_policy is not None and self.reconnect_policy.supervise_start

    def send(self, data: bytes) -> None:
        """POST one message (in a task; never blocks, never raises). Dropped after
        :meth:`close` or once the connection is lost."""
        if not self._conn.sending or self._fallback.takes(data):
            return
        try:
            msg = decode_out(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            logger.warning("dropping an outbound message that is not a JSON object")
            return
        method = msg.method
        if not isinstance(method, str):  # a response to a request the server sent us
            self._legacy.notify("response", data)
            return
        self._carry(data, method, msg.id, msg.params if isinstance(msg.params, dict) else None, None)

    def send_envelope(self, data: bytes, method: str, rid: RequestId | None, params: Any) -> None:
        """:meth:`send` for a message the client's driver built, with its method, id
        (None: a notification) and params as built (the ``TakesMessages`` protocol):
        what the transport reads of the params is read from them, unless they hold
        something the bytes say otherwise (then the bytes are decoded, as by ``send``).
        Never blocks, never raises."""
        if not _read_as_sent(method, params):
            self.send(data)
            return
        if not self._conn.sending or self._fallback.takes(data):
            return
        self._carry(data, method, UNSET if rid is None else rid, params, data)

    def _carry(self, data: bytes, method: str, rid: Any, params: dict[str, Any] | None, built: bytes | None) -> None:
        """POST request or notification ``data`` (``rid`` UNSET) in its era, in a task;
        ``built`` is ``data`` when ``params`` are the caller's, not decoded from it.
        Never blocks, never raises."""
        era: EraMessage = self._modern.claim(params, built) or self._legacy.claim(params)
        if rid is UNSET:
            if method == "notifications/cancelled":
                self._cancel(params, data)
            else:
                era.notify(method, data)
            return
        if not is_request_id(rid):
            logger.warning("dropping a request whose id is not a string or an integer")
            return
        route = era.route(method)
        self._pending[rid] = InFlight(route, self._conn.spawn(self._runner.run(rid, route, data)))

    def _cancel(self, params: dict[str, Any] | None, body: bytes) -> None:
        """The caller cancels a request: its era does what cancelling means there. For a
        request not in flight, a legacy session still hears of it."""
        rid = params.get("requestId") if params is not None else None
        entry = self._pending.get(rid) if isinstance(rid, (int, str)) else None
        if entry is not None:
            entry.route.cancel(entry.task, body)
        else:
            self._legacy.cancel(body, None)

    async def drain(self) -> None:
        """Nothing to wait for: each message is its own HTTP request (but the old
        transport's, after a fallback, may have some)."""
        await self._fallback.drain()

    async def close(self) -> None:
        """Cancel every exchange in flight, end the legacy session (DELETE, errors
        ignored, ``delete_timeout``), close the HTTP client if we created it, and report
        ``on_close``. Idempotent; never raises (except ``CancelledError``)."""
        if self._conn.closed:
            return
        self._conn.closed = True
        tasks = self._conn.cancel_others()
        try:
            if tasks:
                await asyncio.wait(tasks, timeout=self.delete_timeout)
            await self._fallback.close()
            await self._legacy.end()
        finally:
            await self._http.aclose()
            self._conn.report("closed")


def _read_as_sent(method: str, params: Any) -> bool:
    """Whether what the transport reads of a message's ``params`` as the caller built
    them is what its bytes say: they are a dict (or None) whose ``_meta`` (if any) is a
    dict naming its version (if it does) with a ``str``, and whose target (``name``,
    ``uri``, ``taskId``) is a ``str`` if given. Values of other types may encode as
    something else (an enum as its value, say). A cancellation's ``requestId``, and a
    tool's arguments where its ``x-mcp-header`` rules read them, are read from the bytes."""
    if method == "notifications/cancelled":
        return False
    if params is None:
        return True
    if type(params) is not dict:
        return False
    meta = params.get("_meta")
    if meta is not None:
        if type(meta) is not dict:
            return False
        version = meta.get(meta_keys.PROTOCOL_VERSION)
        if version is not None and type(version) is not str:
            return False
    key = NAMED_METHODS.get(method)
    target = params.get(key) if key is not None else None
    return target is None or type(target) is str
