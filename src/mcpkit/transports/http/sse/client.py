"""The deprecated HTTP+SSE client transport (2024-11-05), for servers that speak only it.

One ``GET`` stream brings every message from the server; its first event names the
endpoint that each message to the server is POSTed to (:mod:`.stream`). POSTs go one
at a time, in the order the messages were sent, as the old transport's servers expect
(``notifications/initialized`` before the next request); each should be answered 202.
This transport carries the legacy era only: it answers a ``server/discover`` probe
itself with -32601, so a client that negotiates falls back to ``initialize``.
``HttpTransport`` switches to it on its own when a server refuses its first POST and
speaks this transport instead (:mod:`.fallback`). It is built from the Streamable HTTP
client's parts (``transports/http/client/``: the connection, the HTTP exchanges, the
error responses, the settings' checks), which never import it.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

import msgspec
from msgspec import UNSET

from ....protocol.engine import encode, is_request_id
from ....protocol.errors import METHOD_NOT_FOUND, ConnectionClosed
from ....protocol.events import RequestId
from ....runtime.channel import OnClose, OnMessage
from ..client.connection import Connection
from ..client.exchange import Dropped, HttpExchange, Lost
from ..client.failures import Failures, OnRequestLost
from ..client.inbound import Inbound
from ..client.settings import check_count, check_seconds
from ..client.wire import ERROR_BODY_LIMIT, decode_out
from .stream import EventStream

if TYPE_CHECKING:
    import httpx

__all__ = ["SseTransport"]

logger = logging.getLogger("mcpkit.http")

#: ``drain()`` waits while more messages than this wait to be POSTed.
_QUEUE_HIGH: Final = 32


class _Target:
    """What an :class:`~mcpkit.transports.http.client.exchange.HttpExchange` reads of the transport, for one URL
    (the stream's, or the endpoint once known); the rest is read from the transport
    each time, so changed headers apply to the next request."""

    max_reconnects: Final = 0
    reconnect_delay: Final = 0.0
    delete_timeout: Final = 0.0
    listen: Final = False

    def __init__(self, transport: SseTransport, url: str) -> None:
        self._transport = transport
        self.url = url

    @property
    def headers(self) -> dict[str, str]:
        return self._transport.headers

    @property
    def auth(self) -> httpx.Auth | None:
        return self._transport.auth

    @property
    def connect_timeout(self) -> float:
        return self._transport.connect_timeout

    @property
    def max_message_size(self) -> int:
        return self._transport.max_message_size

    @property
    def notification_timeout(self) -> float:
        return self._transport.post_timeout


class SseTransport:
    """A :class:`~mcpkit.Transport` over the deprecated HTTP+SSE transport of 2024-11-05
    (legacy era only), for servers that do not speak Streamable HTTP.

    ``SseTransport(url, headers=None, http_client=None, auth=None, ...)``: ``url`` is the
    server's SSE endpoint (``http://host:port/sse``, typically). :meth:`start` opens
    ``GET url``; the first event, ``endpoint``, names where to POST messages: resolved
    against ``url``, and refused (the connection ends) if it is on another origin. Every
    message is then POSTed there, one at a time and in order; the server's messages
    arrive on the stream. ``headers`` and ``auth`` (an ``httpx.Auth``) apply to the GET and
    every POST; ``http_client`` is an ``httpx.AsyncClient`` to use (not closed by us),
    else clients are created at :meth:`start` and closed by :meth:`close`.
    ``connect_timeout`` bounds connecting and the wait for the ``endpoint`` event;
    ``post_timeout`` bounds each POST's answer; ``max_message_size`` bounds one inbound
    message (a value out of range raises ``ValueError``, one of the wrong type
    ``TypeError``). httpx is imported only when the transport starts.

    Nothing raises to the caller of :meth:`send`. A POST refused with an error status
    delivers an error response to that request: the server's JSON-RPC error body, else
    code -32603 naming the status with ``data={"status": ..., "body": ...}`` (as
    ``HttpTransport`` does); a POST not answered within ``post_timeout`` fails its
    request the same way. The stream ending, breaking, or not naming its endpoint in
    time ends the connection: ``on_close(reason)``, and every pending request fails with
    ``ConnectionClosed``; a POST whose connection breaks fails its request alone with
    ``ConnectionClosed`` (``on_request_lost``, as for ``HttpTransport``). A
    ``server/discover`` request is answered here with -32601: this transport carries the
    legacy era only.

    Cancellation (the client sends ``notifications/cancelled`` when a call is cancelled
    or times out; the call itself fails at once): a request still queued is dropped and
    nothing is sent; for one already POSTed, the notification is POSTed at once, ahead
    of the queue, whose head may be a POST the server is slow to answer.
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
        post_timeout: float = 30.0,
    ) -> None:
        self.url = url
        self.headers = dict(headers or {})
        self.auth = auth
        self.connect_timeout = check_seconds("connect_timeout", connect_timeout)
        self.max_message_size = check_count("max_message_size", max_message_size, least=1)
        self.post_timeout = check_seconds("post_timeout", post_timeout)
        #: Set by the client: ``on_request_lost(id, reason)`` fails that request alone with ``ConnectionClosed``.
        self.on_request_lost: OnRequestLost | None = None
        self._conn = Connection()
        stream = _Target(self, url)
        self._get = HttpExchange(stream, http_client)
        self._target = _Target(self, url)  # its url becomes the endpoint's
        self._post = HttpExchange(self._target, http_client)
        self._failures = Failures(self._conn.emit, Inbound(self._conn.emit, {}).deliver, self)
        self._stream = EventStream(stream, self._get, self._conn, self._found)
        self._endpoint: str | None = None
        self._queue: deque[tuple[bytes, RequestId | None]] = deque()  # to POST: a message, its request id
        self._wake = asyncio.Event()  # a message was queued, or the endpoint came
        self._room = asyncio.Event()  # the queue is at most _QUEUE_HIGH long
        self._room.set()
        self._settled = asyncio.Event()  # the endpoint came, or the connection ended
        self._reason: str | None = None  # why the connection ended

    @property
    def endpoint(self) -> str | None:
        """The URL messages are POSTed to, once the server named it."""
        return self._endpoint

    async def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        """Open the GET stream (in a task) and the POSTing of messages: returns at once.
        Messages sent before the ``endpoint`` event wait for it; a server that cannot be
        reached, or does not name its endpoint in time, is reported by ``on_close``."""
        self._get.open()
        self._post.open()
        self._conn.start(on_message, self._ended(on_close))
        self._conn.spawn(self._stream.run())
        self._conn.spawn(self._poster())

    def _ended(self, on_close: OnClose) -> OnClose:
        def ended(reason: str | None) -> None:
            self._reason = reason
            self._settled.set()
            self._wake.set()
            self._room.set()
            on_close(reason)

        return ended

    def _found(self, endpoint: str) -> None:
        """The stream named its endpoint: POSTing starts."""
        self._endpoint = self._target.url = endpoint
        logger.debug("HTTP+SSE endpoint: %s", endpoint)
        self._settled.set()
        self._wake.set()

    async def connected(self) -> str:
        """Wait until the server has named its endpoint; return its URL. Raises
        :class:`~mcpkit.ConnectionClosed` (naming the reason) if the connection ended
        first, or was never started. Cancellation leaves the transport as it is."""
        if self._conn.sending or self._reason is not None:
            await self._settled.wait()
        if self._endpoint is None or not self._conn.live:
            raise ConnectionClosed(f"Connection closed: {self._reason or 'not started'}")
        return self._endpoint

    def send(self, data: bytes) -> None:
        """Queue one message to be POSTed (never blocks, never raises). Dropped after
        :meth:`close` or once the connection is lost."""
        if not self._conn.sending:
            return
        try:
            msg = decode_out(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            logger.warning("dropping an outbound message that is not a JSON object")
            return
        rid = msg.id if isinstance(msg.method, str) and is_request_id(msg.id) else None
        if rid is not None and msg.method == "server/discover":
            self._refuse_discover(rid)
            return
        if msg.method == "notifications/cancelled" and msg.id is UNSET:
            self._cancel(data, msg.params.get("requestId") if isinstance(msg.params, dict) else None)
            return
        self._queue.append((data, rid))
        if len(self._queue) > _QUEUE_HIGH:
            self._room.clear()
        self._wake.set()

    def _cancel(self, data: bytes, target: object) -> None:
        """The caller cancelled request ``target`` (``data`` says so). Still queued, the
        request is dropped and nothing is sent; else the cancellation is POSTed at once,
        ahead of the queue (whose head may be a POST the server does not answer)."""
        for item in self._queue:
            if item[1] is not None and item[1] == target and type(item[1]) is type(target):
                self._queue.remove(item)
                if len(self._queue) <= _QUEUE_HIGH:
                    self._room.set()
                return
        if self._endpoint is not None:
            self._conn.spawn(self._post_one(data, None))

    def _refuse_discover(self, rid: RequestId) -> None:
        """Answer the ``server/discover`` request ``rid`` with -32601 (legacy era only)."""
        message = "Method not found: server/discover (the HTTP+SSE transport carries the legacy era only)"
        error = {"code": METHOD_NOT_FOUND, "message": message}
        self._conn.emit(encode({"jsonrpc": "2.0", "id": rid, "error": error}))

    async def drain(self) -> None:
        """Wait while more than 32 messages wait to be POSTed."""
        await self._room.wait()

    async def _poster(self) -> None:
        """POST the queued messages one at a time, in order, once the endpoint is known.
        Ends when the connection does."""
        while self._conn.live:
            if self._endpoint is None or not self._queue:
                self._wake.clear()
                await self._wake.wait()
                continue
            data, rid = self._queue.popleft()
            if len(self._queue) <= _QUEUE_HIGH:
                self._room.set()
            await self._post_one(data, rid)

    async def _post_one(self, data: bytes, rid: RequestId | None) -> None:
        """POST one message (request ``rid``, or None for anything else). An error status
        or no answer in time fails the request (a notification's failure is logged); a
        server that cannot be reached ends the connection."""
        import httpx

        timeout = httpx.Timeout(self.connect_timeout, read=self.post_timeout, write=self.post_timeout, pool=None)
        try:
            resp = await self._post.send("POST", {**self.headers}, data, timeout=timeout)
            try:
                raw, _ = await self._post.read(resp, ERROR_BODY_LIMIT)
                if 200 <= resp.status_code < 300:
                    return
                if rid is not None:
                    self._failures.refused(rid, resp, raw)
                else:
                    logger.warning("HTTP+SSE: a notification was refused with HTTP %d", resp.status_code)
            finally:
                await resp.aclose()
        except Dropped as exc:  # the message may or may not have arrived
            if rid is not None:
                self._failures.lost(rid, str(exc))
            else:
                logger.warning("HTTP+SSE: the POST of a notification broke: %s", exc)
        except Lost as exc:
            self._conn.lost(str(exc))
        except httpx.TimeoutException:
            if rid is not None:
                self._failures.fail(rid, f"No answer to the POST within {self.post_timeout:g} s")
            else:
                logger.warning("HTTP+SSE: the POST of a notification was not answered within %g s", self.post_timeout)

    async def close(self) -> None:
        """Close the stream, stop POSTing (queued messages are dropped), close the HTTP
        clients we created, and report ``on_close("closed")``. Idempotent; never raises
        (except ``CancelledError``)."""
        if self._conn.closed:
            return
        self._conn.closed = True
        tasks = self._conn.cancel_others()
        try:
            if tasks:
                await asyncio.wait(tasks, timeout=self.connect_timeout)
        finally:
            self._queue.clear()
            await self._get.aclose()
            await self._post.aclose()
            self._conn.report("closed")
