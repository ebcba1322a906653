"""One request's exchange, from its POST to the response delivered in its place: the
era's steps of a request (:class:`Route`) and the runner that drives them.

The transport decides each outbound message's era once, when it is sent, and from then
on asks the message's era part (:class:`EraMessage`) and, for a request, the
:class:`Route` that part made: what to wait for before POSTing, which headers to send,
whether a refused POST is worth one more try, what a response stream that ends early
means, what to learn from the result, and how to cancel. The two eras implement these
in ``modern.py`` and ``legacy.py``; :class:`RequestRunner` does the rest the same way in
both eras, one task per request (the transport keeps it :class:`InFlight`). Whatever
happens, the awaiting caller gets a response: the server's, or an error made up in
its place (docs/http.md, "The client side"). A server that cannot be reached ends the
connection; a request whose own connection breaks before its response (reset, or a
kept-alive connection that had died) is lost alone — its caller gets ``ConnectionClosed``
(:meth:`~.failures.Failures.lost`) and the other requests go on. A legacy stream that
broke is resumed first; if that fails too, the request is lost.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, NamedTuple, Protocol

import msgspec

from ....protocol.errors import flatten_text
from ....protocol.events import RequestId
from ....protocol.sse import SSEParser
from .connection import Connection
from .exchange import Dropped, HttpExchange, Lost, broke, content_type
from .failures import Deliver, ExchangeFailed, Failures
from .settings import Settings
from .streams import Streams
from .wire import ERROR_BODY_LIMIT, EXCERPT, SSE

if TYPE_CHECKING:
    import httpx

__all__ = ["EraMessage", "Route", "InFlight", "RequestRunner"]

logger = logging.getLogger("mcpkit.http")


class Route(ABC):
    """One request as its era handles it. Made when the request is sent; used by the
    task that runs its exchange, by the inbound side and by cancellation."""

    def __init__(self, method: str) -> None:
        self.method = method

    async def ready(self) -> None:
        """Wait until the request may be POSTed. Cancellation propagates."""
        return None

    @abstractmethod
    def headers(self) -> dict[str, str]:
        """The headers of the request's next POST (a fresh dict each time)."""

    def accepted(self, resp: httpx.Response) -> None:
        """The POST got a 2xx: note what it says before its body is read."""
        return None

    async def should_retry(self, status: int, raw: bytes) -> bool:
        """The first POST was refused with ``status`` and error body ``raw`` (the
        response still open): whether to POST once more. May raise :class:`~.exchange.Lost`."""
        return False

    async def before_retry(self) -> None:
        """Run between a refused POST (closed by now) and its retry. May raise
        :class:`~.exchange.Lost` or :class:`~.failures.ExchangeFailed`."""
        return None

    @abstractmethod
    async def stream_ended(self, resp: httpx.Response, parser: SSEParser, rid: RequestId) -> None:
        """The response stream ``resp`` of request ``rid`` ended without the response;
        ``parser`` holds its last event id and retry. Delivers the response or an error
        in its place. May raise :class:`~.exchange.Lost`."""

    def learn(self, result: msgspec.Raw, data: bytes) -> bytes:
        """The request's result arrived (``data`` is the whole message): learn from it,
        and return the message to deliver (``data`` itself unless rewritten)."""
        return data

    @abstractmethod
    def cancel(self, task: asyncio.Task[None], body: bytes) -> None:
        """The caller sent ``notifications/cancelled`` (``body``) for this request,
        whose exchange runs in ``task``. Never blocks."""


class InFlight(NamedTuple):
    """A request whose exchange is running: its route and the task running it."""

    route: Route
    task: asyncio.Task[None]


class EraMessage(Protocol):
    """One outbound message's era part: how its era sends a notification or starts a
    request. Never blocks, never raises."""

    def notify(self, method: str, body: bytes) -> None: ...

    def route(self, method: str) -> Route: ...


class RequestRunner:
    """Runs the exchange of each request the transport sends (one task per request)."""

    def __init__(
        self,
        settings: Settings,
        http: HttpExchange,
        conn: Connection,
        deliver: Deliver,
        failures: Failures,
        streams: Streams,
        pending: dict[RequestId, InFlight],
    ) -> None:
        self._settings = settings
        self._http = http
        self._conn = conn
        self._deliver = deliver
        self._failures = failures
        self._streams = streams
        self._pending = pending
        #: Asked first when a request's first POST is refused: (id, method, status, body) ->
        #: whether the request went another way (HttpTransport's fallback, transports/http/sse/fallback.py).
        self.divert: Callable[[RequestId, str, int, bytes], Awaitable[bool]] | None = None

    async def run(self, rid: RequestId, route: Route, body: bytes) -> None:
        """POST request ``rid`` and deliver its response, or an error response in its
        place; never raises but ``CancelledError``. Cancellation closes the response
        stream (that is how a modern request is cancelled). The request leaves
        ``pending`` when done."""
        try:
            await self._exchange(rid, route, body)
        except Dropped as exc:
            logger.info("HTTP exchange for %s lost: %s", route.method, exc)
            self._failures.lost(rid, str(exc))
        except Lost as exc:
            self._conn.lost(str(exc))
        except ExchangeFailed as exc:
            self._failures.fail(rid, exc.message, exc.data)
        except Exception as exc:
            # Delivered to the caller as this request's error (an OAuth login that
            # failed, say), so one line here; the traceback only when debugging.
            text = flatten_text(f"{type(exc).__name__}: {exc}", EXCERPT)
            logger.warning("HTTP exchange for %s failed: %s", route.method, text, exc_info=logger.isEnabledFor(logging.DEBUG))
            self._failures.fail(rid, f"HTTP transport error: {text}")
        finally:
            self._failures.forget(rid)
            entry = self._pending.get(rid)
            if entry is not None and entry.task is asyncio.current_task():
                del self._pending[rid]

    async def _exchange(self, rid: RequestId, route: Route, body: bytes) -> None:
        """POST, and once more if the route asks after a refusal. Raises
        :class:`~.exchange.Lost` (:class:`~.exchange.Dropped` for this request alone),
        :class:`~.failures.ExchangeFailed`, and whatever httpx raises for a server too
        slow to answer."""
        await route.ready()
        for attempt in (1, 2):
            resp = await self._http.send("POST", route.headers(), body)
            try:
                if 200 <= resp.status_code < 300:
                    route.accepted(resp)
                    await self._consume(resp, rid, route)
                    return
                raw, _ = await self._http.read(resp, ERROR_BODY_LIMIT)
                if attempt == 1 and self.divert is not None and await self.divert(rid, route.method, resp.status_code, body):
                    return
                if attempt == 2 or not await route.should_retry(resp.status_code, raw):
                    self._failures.refused(rid, resp, raw)
                    return
            finally:
                await resp.aclose()
            await route.before_retry()

    async def _consume(self, resp: httpx.Response, rid: RequestId, route: Route) -> None:
        """Deliver the response to request ``rid`` from a 2xx (or an error standing in).
        Raises :class:`~.exchange.Dropped` if the connection breaks while reading it."""
        status = resp.status_code
        if content_type(resp) == SSE:
            await self._read_stream(resp, rid, route)
            return
        if status in (202, 204):
            self._failures.fail(rid, f"HTTP {status}: the server sent no response to the request", {"status": status, "body": ""})
            return
        limit = self._settings.max_message_size
        raw, complete = await self._http.read(resp, limit)
        if not complete:
            if len(raw) < limit:
                raise Dropped(f"the connection broke while reading the response to {route.method} (HTTP {status})")
            self._failures.fail(rid, f"The response exceeds the size limit of {limit} bytes", {"status": status})
            return
        answered = self._deliver(raw, rid)
        if answered is None:
            self._failures.fail_http(rid, resp, raw, "Invalid JSON-RPC response")
        elif not answered:
            self._failures.fail_http(rid, resp, raw, "The response body is not the response to the request")

    async def _read_stream(self, resp: httpx.Response, rid: RequestId, route: Route) -> None:
        """Deliver an SSE response's events; if it ends before the response, the route
        decides what that means. A stream broken by a transport error with nothing to
        resume from raises :class:`~.exchange.Dropped`; one that can be resumed is, and
        if that fails the request is lost all the same."""
        parser = SSEParser(self._settings.max_message_size)
        try:
            answered, _ = await self._streams.pump(resp, parser, rid)
        except ValueError as exc:
            self._failures.fail(rid, f"Invalid response stream: {exc}")
            return
        if answered:
            return
        if broke(resp):
            if not parser.last_event_id:
                raise Dropped(f"the connection broke before the response to {route.method} arrived")
            self._failures.broke(rid)
        await route.stream_ended(resp, parser, rid)
