"""Reading SSE streams: pumping their events inbound, and following legacy streams.

A POST's response may be an SSE stream; :meth:`Streams.pump` delivers its events until
the response to the request arrives. In the legacy era a stream that drops before then
is resumed with a GET carrying ``Last-Event-ID``, after the server's ``retry`` (else a
doubling backoff), and the session's GET stream of server-initiated messages
(:class:`Listener`) is followed across reconnections the same way (docs/http.md). A GET
refused with 404 means the server forgot the session (it restarted, say, and came back
before any request noticed; a ``ping`` in the session makes sure): the listener opens a
new session, as a request would, so a client that only listens hears of changes again;
if the session answers, the server only forgot the event the stream resumed from, and the
stream is opened afresh. Bounded by the transport's reconnect policy, so a server that
forgets every new session is not hammered.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ....protocol.events import RequestId
from ....protocol.sse import SSEParser
from ...restart import CrashLog, RestartPolicy
from .connection import Connection
from .exchange import HttpExchange, Lost, content_type
from .failures import Deliver, Failures
from .settings import Settings
from .wire import ERROR_BODY_LIMIT, SSE

if TYPE_CHECKING:
    import httpx

__all__ = ["Streams", "Listener", "SessionGone", "Renew"]

logger = logging.getLogger("mcpkit.http")

Headers = Callable[[], dict[str, str]]
#: ``await renew(stale, resumed)``: the GET stream of session ``stale`` (resuming with
#: ``Last-Event-ID`` if ``resumed``) was refused with 404; open a new session if the server
#: forgot it. True if the session is alive and the stream is to be opened afresh.
Renew = Callable[[str, bool], Awaitable[bool]]


class SessionGone(Exception):
    """The GET stream of session ``session_id`` was refused with 404 (``resumed``: it
    carried a ``Last-Event-ID``): the server forgot the session, or the event."""

    def __init__(self, session_id: str, resumed: bool) -> None:
        super().__init__(f"GET refused with 404 in session {session_id}")
        self.session_id = session_id
        self.resumed = resumed


class Streams:
    """Reads SSE responses and follows legacy streams across reconnections."""

    def __init__(self, settings: Settings, http: HttpExchange, deliver: Deliver, failures: Failures) -> None:
        self._settings = settings
        self._http = http
        self._deliver = deliver
        self._failures = failures

    async def pump(self, resp: httpx.Response, parser: SSEParser, rid: RequestId | None) -> tuple[bool, int]:
        """Deliver the events of an SSE stream until it ends or carries the response to
        ``rid``. Returns (response seen, messages delivered); a broken connection just
        ends the stream. Raises ``ValueError`` for an event over the size limit."""
        import httpx

        count = 0
        try:
            async for chunk in resp.aiter_bytes():
                for event in parser.feed(chunk):
                    if not event.data:
                        continue  # a priming event: it only carries an id (and retry)
                    answered = self._deliver(event.data.encode(), rid)
                    if answered is None:
                        logger.warning("ignoring an SSE event that is not a JSON-RPC message")
                        continue
                    count += 1
                    if answered:
                        return True, count
        except httpx.HTTPError as exc:
            logger.debug("SSE stream ended: %r", exc)
        return False, count

    def delay(self, parser: SSEParser, attempt: int) -> float:
        """Seconds to wait before reconnection ``attempt`` (1-based): the server's
        ``retry``, else ``reconnect_delay`` doubling per attempt, at most 30."""
        if parser.retry is not None:
            return parser.retry / 1000
        return float(min(self._settings.reconnect_delay * 2 ** (attempt - 1), 30.0))

    async def follow(self, parser: SSEParser, rid: RequestId | None, headers: Headers) -> None:
        """Legacy: GET an SSE stream and follow it across reconnections — the session's
        stream of server-initiated messages (``rid`` None), or the rest of request
        ``rid``'s dropped response stream (with ``Last-Event-ID``, after waiting the
        server's ``retry``). ``headers`` gives the session's headers for each GET. Gives
        up after ``max_reconnects`` reconnections in a row that bring nothing; for
        ``rid`` an error response is then delivered. Raises :class:`~.exchange.Lost`, and
        (session's stream only) :class:`SessionGone` when a GET is refused with 404;
        cancellation closes the stream."""
        failures, wait = 0, rid is not None
        while True:
            last = parser.last_event_id
            if wait:
                if failures >= self._settings.max_reconnects or (rid is not None and not last):
                    break
                failures += 1
                await asyncio.sleep(self.delay(parser, failures))
            wait = True
            fresh = SSEParser(self._settings.max_message_size)
            fresh.last_event_id, fresh.retry, parser = last, parser.retry, fresh
            progress = await self._reconnect(parser, rid, headers())
            if progress is None:
                return
            if progress:
                failures = 0  # the server polls, it is not failing
        if rid is not None:
            what = "could not be resumed" if failures else "carried no event id to resume from"
            self._failures.fail(rid, f"The response stream ended before the response and {what}")
        else:
            logger.info("GET stream: giving up after %d reconnections without progress", self._settings.max_reconnects)

    async def _reconnect(self, parser: SSEParser, rid: RequestId | None, headers: dict[str, str]) -> bool | None:
        """One GET of the stream, resuming after ``parser``'s last event id, read to its
        end. Returns whether it made progress (delivered a message or moved the event
        id), or None when following is over (the response came, or the GET was refused,
        or the stream is invalid: delivered as ``rid``'s error). Raises :class:`~.exchange.Lost`,
        and :class:`SessionGone` for the session's stream refused with 404."""
        last = parser.last_event_id
        if last:
            headers["Last-Event-ID"] = last
        resp = await self._http.send("GET", headers)
        try:
            if not 200 <= resp.status_code < 300 or content_type(resp) != SSE:
                raw, _ = await self._http.read(resp, ERROR_BODY_LIMIT)
                session = headers.get("Mcp-Session-Id")
                if rid is not None:
                    self._failures.fail_http(rid, resp, raw, "Could not resume the response stream")
                elif resp.status_code == 404 and session is not None:
                    raise SessionGone(session, "Last-Event-ID" in headers)
                else:  # 405: the server offers no GET stream
                    level = logging.DEBUG if resp.status_code == 405 else logging.INFO
                    logger.log(level, "no GET stream: HTTP %d", resp.status_code)
                return None
            try:
                answered, count = await self.pump(resp, parser, rid)
            except ValueError as exc:
                if rid is not None:
                    self._failures.fail(rid, f"Invalid response stream: {exc}")
                logger.warning("SSE stream: %s", exc)
                return None
            if answered:
                return None
            return bool(count) or parser.last_event_id != last
        finally:
            await resp.aclose()


class Listener:
    """The legacy session's GET stream of server-initiated messages: at most one runs.

    A GET refused with 404 (:class:`SessionGone`) renews the session with ``renew``, as a
    request's 404 does (``LegacySession`` first checks that the server forgot it; the new
    session's ``notifications/initialized`` opens the next listener, and the client
    re-opens its subscriptions). Each renewal counts as a crash of ``policy`` (the
    transport's reconnect policy, else :data:`~mcpkit.transports.restart.RECONNECT`): it
    waits the policy's back-off, and once renewals come faster than the policy allows,
    the listener gives up with a warning (the next request's 404 renews the session,
    and listening starts again)."""

    def __init__(
        self, settings: Settings, conn: Connection, streams: Streams, headers: Headers, renew: Renew, policy: RestartPolicy
    ) -> None:
        self._settings = settings
        self._conn = conn
        self._streams = streams
        self._headers = headers
        self._renew = renew
        self._renewals = CrashLog(policy)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Open the stream, unless ``listen`` is off, it is open, or the transport is over."""
        if self._settings.listen and self._conn.live and self._task is None:
            self._task = self._conn.spawn(self._listen())

    def stop(self) -> None:
        """Close the stream (its session is over); :meth:`start` may open a new one."""
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _listen(self) -> None:
        try:
            await self._streams.follow(SSEParser(self._settings.max_message_size), None, self._headers)
        except Lost as exc:
            self._conn.lost(str(exc))
        except SessionGone as gone:
            await self._renew_session(gone.session_id, gone.resumed)

    async def _renew_session(self, stale: str, resumed: bool) -> None:
        """The GET stream of session ``stale`` was refused with 404: after the policy's
        back-off, open a new session if the server forgot it (unless a request did
        meanwhile), or, if it only forgot the event the stream was ``resumed`` from, open
        the stream afresh (events may have been missed). Gives up, with a warning, once
        the policy does, or when that takes over ``notification_timeout``. Never raises
        but ``CancelledError``; a server that cannot be reached ends the connection."""
        renewals = self._renewals
        delay = renewals.crashed(asyncio.get_running_loop().time())
        if self._task is asyncio.current_task():
            self._task = None  # the renewal's initialized POST opens the next listener
        if delay is None:
            logger.warning(
                "GET stream: refused with 404 %d times within %g s; not listening any more until a request opens a new session",
                renewals.recent,
                renewals.policy.window,
            )
            return
        logger.info("GET stream: HTTP 404 for session %s; renewing it in %.2f s", stale, delay)
        await asyncio.sleep(delay)
        limit = self._settings.notification_timeout
        try:
            async with asyncio.timeout(limit):  # nobody awaits this: it must end by itself
                afresh = await self._renew(stale, resumed)
        except Lost as exc:
            self._conn.lost(str(exc))
            return
        except TimeoutError:
            logger.warning("GET stream: the session could not be renewed within %g s", limit)
            return
        except Exception as exc:  # ExchangeFailed, an invalid stream, a server too slow to answer
            logger.warning("GET stream: could not renew the session: %s: %s", type(exc).__name__, exc)
            return
        if afresh:
            logger.warning("GET stream: the server could not resume it (HTTP 404); opening it afresh (events may be lost)")
            self.start()
