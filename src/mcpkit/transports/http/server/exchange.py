"""One request's exchange: running its handler and delivering what it sends — its
notifications and, last, its response — on the HTTP response of its POST.

Until the first message is ready the choice between JSON and SSE is open: a response
alone goes out as JSON (unless ``json_response=False``), a notification first starts an
SSE stream (unless ``json_response=True``, which drops notifications); see docs/http.md,
"JSON or SSE responses". What differs between the eras is asked of the request's
:class:`~mcpkit.protocol.eras.EraPolicy`: the HTTP status of an error response, whether
a client disconnect cancels the handler, and whether the SSE stream is stored on a
session stream so that the client can resume it with ``Last-Event-ID`` — and then the
handler may end the connection early for the client to poll (``ctx.close_sse_stream()``).
A request whose handler is cancelled is answered -32800 "Request cancelled": an HTTP
response to a request must be JSON or SSE, even when the client no longer waits for it.
When the exchange itself is cancelled while the server stops, the request is answered
as :mod:`.shutdown` says: -32603, as JSON or as the last event of its SSE stream.
The client's disconnect is watched (a task waiting on the ASGI ``receive``) only once the
handler has run 50 ms, or as soon as the response is a stream (:class:`LateWatches`, one
timer for all the exchanges of an endpoint): most requests are answered sooner, and a
disconnect is noticed at most that late.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final, Literal

import msgspec

from ....protocol.engine import Engine
from ....protocol.eras import EraPolicy
from ....protocol.errors import REQUEST_CANCELLED, McpError
from ....protocol.events import RequestReceived
from ....protocol.sse import encode_event
from ....runtime.outbound import Notifier, ask_over
from ....runtime.outcome import run_request
from ...base import RequestHandler
from .asgi import Receive, Send, end_body, json_error, send_frame, send_json, start_sse, wait_disconnect
from .sessions import HttpSession
from .shutdown import last_words, shutdown_error, write_answer
from .streams import SseStream

__all__ = ["Exchange", "LateWatches"]


# --- what the handler and the connection report, in order -------------------------------------


@dataclass(frozen=True, slots=True)
class _Note:
    """A notification the handler sent (one SSE event; more follow)."""

    message: bytes


@dataclass(frozen=True, slots=True)
class _Answer:
    """The request's response (None if the request was withdrawn meanwhile), the
    HTTP status of a JSON reply carrying it and, for a 429 or 503, its ``Retry-After``
    (the error's own ``data.retryAfter`` when it gives one). Nothing follows."""

    message: bytes | None
    status: int
    retry_after: bytes = b"1"


@dataclass(frozen=True, slots=True)
class _Cancelled:
    """The handler was cancelled: the request gets ``message`` (-32800), with ``status``
    when it goes out as JSON. Nothing follows."""

    message: bytes
    status: int


class _ClientGone:
    """The client disconnected."""


class _Release:
    """The handler asked to end the connection, not the stream (SSE polling)."""


#: Messages of one response waiting for a slow client before a subscription waits.
_HIGH_WATER: Final = 256
#: A JSON error answer with one of these statuses says when to try again (``Retry-After``).
_RETRY_LATER: Final = frozenset({429, 503})
#: The longest ``Retry-After`` an error's ``data.retryAfter`` can ask for: a day, in seconds.
_MAX_RETRY_AFTER: Final = 86_400
#: Seconds a handler may take before its client's disconnect is watched (a task waiting on
#: the ASGI ``receive``): most requests are answered sooner, and then no such task is
#: made. A disconnect is noticed at most this late (the modern era's handler cancelled).
_WATCH_AFTER: Final = 0.05
_CLIENT_GONE: Final = _ClientGone()
_RELEASE: Final = _Release()

_Item = _Note | _Answer | _Cancelled | _ClientGone | _Release


def _retry_after(error: McpError | None) -> bytes:
    """The ``Retry-After`` of a 429 or 503 answering ``error``: its ``data.retryAfter``
    (seconds, rounded up, at most a day) when that is a non-negative number, else 1."""
    data = error.data if error is not None else None
    wait = data.get("retryAfter") if isinstance(data, dict) else None
    if isinstance(wait, bool) or not isinstance(wait, (int, float)) or not 0 <= wait < float("inf"):
        return b"1"
    return str(min(math.ceil(wait), _MAX_RETRY_AFTER)).encode()


async def _never_received() -> dict[str, object]:
    """The ASGI ``receive`` of an exchange not run yet: there is nothing to receive."""
    raise RuntimeError("the exchange is not running")


def _message_of(item: _Item) -> bytes | None:
    return item.message if isinstance(item, (_Note, _Answer, _Cancelled)) else None


class _Items:
    """What the handler and the connection report, in order, for their one reader (the
    connection's side): an ``asyncio.Queue`` without what one reader does not need (a
    queue is made per request). :meth:`get` waits for an item; cancelling it loses none."""

    __slots__ = ("_items", "_waiter")

    def __init__(self) -> None:
        self._items: deque[_Item] = deque()
        self._waiter: asyncio.Future[None] | None = None

    def put_nowait(self, item: _Item) -> None:
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def get(self) -> _Item:
        items = self._items
        while not items:
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                self._waiter = None
        return items.popleft()

    def get_nowait(self) -> _Item:
        """The first item; raises ``IndexError`` when there is none."""
        return self._items.popleft()

    def empty(self) -> bool:
        return not self._items

    def qsize(self) -> int:
        return len(self._items)


class LateWatches:
    """Starts the disconnect watch of the exchanges still running :data:`_WATCH_AFTER`
    seconds after they began, with one timer for all of them: watching a client's
    disconnect takes a task waiting on the ASGI ``receive``, which most requests, answered
    sooner, never need. One per endpoint; it keeps to the event loop it first served
    (an exchange on another loop while that one runs gets a timer of its own). An entry
    holds its exchange only until the exchange ends (:meth:`Exchange.run` clears it)."""

    __slots__ = ("_due", "_loop", "_timer")

    def __init__(self) -> None:
        self._due: deque[tuple[float, list[Exchange]]] = deque()  # an entry is emptied when its exchange ends
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None

    def add(self, exchange: Exchange, loop: asyncio.AbstractEventLoop) -> Callable[[], None]:
        """Watch ``exchange`` from :data:`_WATCH_AFTER` seconds on (if it still runs then);
        returns what forgets it. Never raises."""
        if loop is not self._loop:
            if self._loop is not None and self._loop.is_running():  # another loop's: a timer of its own
                return loop.call_later(_WATCH_AFTER, exchange.watch).cancel
            self._loop, self._timer = loop, None  # a new run of the server: nothing of the last one holds
            self._due.clear()
        entry = [exchange]
        due = loop.time() + _WATCH_AFTER
        self._due.append((due, entry))
        if self._timer is None:
            self._timer = loop.call_at(due, self._sweep)
        return entry.clear

    def _sweep(self) -> None:
        """Start watching every exchange due and still running; then wait for the next."""
        self._timer = None
        loop = self._loop
        if loop is None:
            return
        now, due = loop.time(), self._due
        while due:
            when, entry = due[0]
            if when > now:
                self._timer = loop.call_at(when, self._sweep)
                return
            due.popleft()
            if entry:
                entry[0].watch()


# --- the exchange ---------------------------------------------------------------------------------


class Exchange:
    """One request: its handler task, and the delivery of its messages as JSON or SSE.

    ``server_session`` is the per-connection state the handler is given. ``session`` is
    the legacy session the request runs in, if any: when ``policy.resumable_streams`` an
    SSE response is stored on a new stream of that session, so it is then required
    (``ValueError`` without one); otherwise SSE events are written straight to the
    connection. ``error_status`` gives the HTTP status of a JSON error response (the
    policy's by default); ``retry_ms`` is the ``retry`` a stored stream's priming event
    carries (None: none). ``after`` (if given) is awaited when the handler has its
    outcome, before the response goes out (a shared session saves its changes then).
    ``stopping`` says whether the server's shutdown has begun.
    """

    def __init__(
        self,
        handler: RequestHandler,
        engine: Engine,
        request: RequestReceived,
        *,
        policy: EraPolicy,
        server_session: object,
        json_response: bool | None,
        session: HttpSession | None = None,
        error_status: Callable[[McpError], int] | None = None,
        retry_ms: int | None = None,
        after: Callable[[], Awaitable[None]] | None = None,
        stopping: Callable[[], bool] = lambda: False,
        late: LateWatches | None = None,
    ) -> None:
        self._after = after
        self._late = late
        self._stopping = stopping
        self._stored_in = session if policy.resumable_streams else None
        if policy.resumable_streams and self._stored_in is None:
            raise ValueError("resumable SSE streams need the legacy session to store them on")
        self._handler = handler
        self._engine = engine
        self._request = request
        self._policy = policy
        self._status = error_status if error_status is not None else policy.error_status
        self._retry_ms = retry_ms
        self._server_session = server_session
        # a subscription is a stream whatever the setting: it has nothing to say as JSON
        self._json_response = False if request.method == "subscriptions/listen" else json_response
        self._gone = False
        self._items = _Items()
        self._session = session
        self._stream: SseStream | None = None  # once set, the handler's messages go there
        self._started: Literal["no", "json", "sse"] = "no"  # how far the response is
        self._stored: tuple[SseStream, asyncio.Queue[bytes | None]] | None = None
        self._held: _Item | None = None  # taken from the queue, not yet written or moved on
        self._final = False  # answered at shutdown: nothing more is reported
        self._receive: Receive = _never_received
        self._watcher: asyncio.Task[None] | None = None  # the client's disconnect, once watched

    async def run(self, receive: Receive, send: Send) -> None:
        """Run the handler and answer this POST on ``send``.

        Returns when the response is complete or the client has gone (its disconnect is
        watched once the handler has run :data:`_WATCH_AFTER` seconds, through ``late``
        when given, or as soon as the response is a stream). Then a handler
        still running is cancelled if the policy says a disconnect cancels it; otherwise
        it runs on, and its messages keep going to the stored stream (if the response
        became one) for the client to resume.

        Cancelled while ``stopping()`` (the ASGI server cuts what still runs at the end
        of its grace), the handler is cancelled in both eras, the request is answered
        -32603 (:mod:`.shutdown`) and it returns. Else ``CancelledError`` propagates.
        """
        loop = asyncio.get_running_loop()
        task = loop.create_task(self._handle())
        self._engine.attach(self._request.id, task)
        self._receive = receive
        late = self._late
        unwatch = late.add(self, loop) if late is not None else loop.call_later(_WATCH_AFTER, self.watch).cancel
        try:
            await self._deliver(send)
        except asyncio.CancelledError:
            if not self._stopping():
                raise
            self._final = True  # the handler's own -32800 (or late answer) is not reported
            messages, status = self._last_messages()  # before the handler can abandon the request
            task.cancel()  # and a stored stream's frames for this connection go at once, not pumped
            pending = self._stored[0].cut(self._stored[1]) if self._stored is not None else b""
            if self._started != "json":  # else it was being sent: nothing can be added
                json = self._json_response is not False or status != 200
                await last_words(write_answer(send, messages, status, started=self._started == "sse", json=json, pending=pending))
        finally:
            unwatch()
            if self._watcher is not None:
                self._watcher.cancel()
            if self._policy.cancel_on_disconnect and not task.done():
                task.cancel()

    def watch(self) -> asyncio.Task[None]:
        """The task that reports the client's disconnect (:class:`_ClientGone`), started
        now if it has not been: when the handler has not answered within
        :data:`_WATCH_AFTER` seconds (:class:`LateWatches`), or when the response becomes
        an SSE stream. Only while :meth:`run` runs; never raises."""
        watcher = self._watcher
        if watcher is None:
            watcher = self._watcher = asyncio.get_running_loop().create_task(wait_disconnect(self._receive))
            watcher.add_done_callback(self._client_gone)
        return watcher

    def _client_gone(self, _: object) -> None:
        self._gone = True
        self._items.put_nowait(_CLIENT_GONE)

    # --- the handler's side ---------------------------------------------------------------------

    async def _handle(self) -> None:
        """Run the handler and report its outcome. On cancellation the request is
        abandoned (the engine sends nothing more for it), a -32800 error is reported as
        the POST's last message and ``CancelledError`` propagates."""
        request = self._request
        ask = self._ask if self._session is not None else None
        outbound = Notifier(self._notify, ask, self._drain, self._close_stream)
        try:
            message, error = await run_request(
                self._engine,
                request.id,
                request.method,
                self._handler.serve_request(request, session=self._server_session, outbound=outbound),
            )
        except asyncio.CancelledError:
            err = McpError(REQUEST_CANCELLED, "Request cancelled")
            self._emit(_Cancelled(json_error(request.id, err), self._status(err)))
            raise
        if self._after is not None:
            await self._after()
        self._emit(_Answer(message, 200 if error is None else self._status(error), _retry_after(error)))

    async def _drain(self) -> None:
        """Wait while the client is slow to take this response's messages (more than
        a few hundred waiting): a subscription's notifications then queue upstream,
        where they are bounded."""
        while True:
            stream = self._stream
            backlog = stream.backlog if stream is not None else self._items.qsize()
            if backlog <= _HIGH_WATER or self._gone:
                return
            await asyncio.sleep(0.01)

    def _close_stream(self) -> bool:
        """End the connection of this request's stored SSE stream, not the stream (a
        stream starts now if none has): the client resumes it with ``Last-Event-ID``.
        False where that cannot be: no stored stream (modern era), no priming event to
        resume from (before 2025-11-25), or JSON forced."""
        session = self._stored_in
        if session is None or not session.primes_streams or self._json_response is True:
            return False
        self._emit(_RELEASE)
        return True

    def _notify(self, method: str, params: object) -> None:
        if self._json_response is not True:
            self._emit(_Note(self._engine.notification(method, params)))

    def _to_client(self, message: bytes) -> None:
        """A request to the client (or its cancellation): on this POST's SSE stream,
        or on the session's GET stream when this POST answers with plain JSON."""
        if self._json_response is True:
            assert self._session is not None
            self._session.standalone_stream().put(message)
        else:
            self._emit(_Note(message))

    async def _ask(self, method: str, params: object, *, timeout: float) -> msgspec.Raw:
        """A request to the client, in the legacy session; its response is POSTed back
        and routed by the session's engine to the future awaited here. Raises as
        :meth:`~mcpkit.runtime.outbound.Outbound.request` says."""
        ids = self._session.ask_id if self._session is not None else None
        return await ask_over(self._engine, self._to_client, method, params, timeout=timeout, id_factory=ids)

    def _emit(self, item: _Item) -> None:
        """Report ``item``: queued for the connection until the response is routed to a
        stored stream, then put on that stream (anything but a note ends it). Nothing
        once the request was answered at shutdown."""
        if self._final:
            return
        stream = self._stream
        if stream is None:
            self._items.put_nowait(item)
            return
        if isinstance(item, _Release):
            stream.release()
            return
        message = _message_of(item)
        if message is not None:
            stream.put(message)
        if not isinstance(item, _Note):
            stream.put(None)

    # --- the connection's side ------------------------------------------------------------------

    async def _deliver(self, send: Send) -> None:
        """Answer according to the first item: nothing if the client has gone, JSON for
        a lone response (or the -32800 of a cancelled handler; a 429 or 503 with
        ``Retry-After``), else an SSE stream (also when the handler ends its connection
        before anything else). Nothing written is held longer than its writing (a
        subscription's acknowledgement is not kept for the subscription's life)."""
        first = await self._items.get()
        if isinstance(first, _ClientGone):
            return
        self._held = first
        # A lone error with an HTTP status of its own (modern era) is JSON even when SSE
        # is forced: a stream could only say 200.
        if isinstance(first, (_Answer, _Cancelled)) and (self._json_response is not False or first.status != 200):
            self._started = "json"
            retry = first.status in _RETRY_LATER
            headers = [(b"retry-after", first.retry_after if isinstance(first, _Answer) else b"1")] if retry else []
            await send_json(send, first.status, first.message or b"", headers)
            return
        del first  # self._held has it until it is written
        self._started = "sse"
        watcher = self.watch()  # a stream may last: its client's disconnect is watched from now on
        await start_sse(send)
        if self._stored_in is None:
            await self._stream_direct(send)
        else:
            await self._stream_stored(send, self._stored_in, watcher)

    async def _stream_direct(self, send: Send) -> None:
        """SSE written straight to the connection, from the held item on: each message as
        it comes, until the response (or the cancellation) ends the stream or the client goes."""
        item: _Item | None = self._held
        while item is not None and not isinstance(item, _ClientGone):
            if isinstance(item, _Release):  # not resumable: the connection is the stream
                item = await self._items.get()
                continue
            self._held = item
            message = _message_of(item)
            if message:
                await send_frame(send, encode_event(message))
            self._held = message = None
            if not isinstance(item, _Note):
                await end_body(send)
                return
            item = None
            item = await self._items.get()

    async def _stream_stored(self, send: Send, session: HttpSession, watcher: asyncio.Task[None]) -> None:
        """SSE through a new stored stream of ``session``, from the held item on: every
        message is stored with an event id, and forwarded to this connection while it
        lasts (or until the handler releases it)."""
        first = self._held
        assert first is not None
        stream = session.new_stream(self._request.id)
        stream.request_id = self._request.id
        sink = stream.attach()
        self._stored = (stream, sink)
        if session.primes_streams:
            await send_frame(send, await stream.prime(self._retry_ms))
        backlog: list[_Item] = [first]
        while not self._items.empty():
            item = self._items.get_nowait()
            if not isinstance(item, _ClientGone):
                backlog.append(item)
        self._stream = stream  # from here on every message goes to the stored stream, in order
        self._held = first = None
        for item in backlog:
            self._emit(item)
        backlog.clear()
        del item
        try:
            await _forward(sink, send, watcher)
        finally:
            stream.detach(sink)

    # --- shutdown ---------------------------------------------------------------------------------

    def _last_messages(self) -> tuple[list[bytes], int]:
        """What the request still gets at shutdown, and the HTTP status of a JSON reply:
        the notes still queued, then the handler's answer if queued just before, else the
        -32603 shutdown error (answered in the engine: call it before cancelling the handler)."""
        messages: list[bytes] = []
        status: int | None = None
        held, self._held = self._held, None
        items = [held] if held is not None else []
        while not self._items.empty():
            items.append(self._items.get_nowait())
        for item in items:
            message = _message_of(item)
            if message is not None and status is None:
                messages.append(message)
                if isinstance(item, (_Answer, _Cancelled)):
                    status = item.status
        if status is None:
            err = shutdown_error()
            status = self._status(err)
            error = self._engine.respond_error(self._request.id, err)
            if error is not None:
                messages.append(error)
        return messages, status


async def _forward(sink: asyncio.Queue[bytes | None], send: Send, watcher: asyncio.Task[None]) -> None:
    """Write a stored stream's frames from ``sink`` to this connection until the stream
    ends (``None``: the body is ended) or ``watcher`` (the client's disconnect) finishes."""
    while True:
        getter = asyncio.ensure_future(sink.get())
        try:
            done, _ = await asyncio.wait({getter, watcher}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not getter.done():
                getter.cancel()
        if getter not in done:
            return
        frame = getter.result()
        if frame is None:
            await end_body(send)
            return
        await send_frame(send, frame)
