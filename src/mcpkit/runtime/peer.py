"""The asyncio driver of the sans-IO :class:`~mcpkit.protocol.engine.Engine` over a transport.

One :class:`Peer` per connection, on either side. It feeds inbound bytes to the
engine, runs each inbound request as its own task (a slow handler never blocks the
reader or other requests), resolves our requests' futures, and enforces deadlines with
one timer per request.

With ``max_in_flight``, at most that many inbound requests are worked on at once: a
request counts from the moment it is read until its response has been handed to the
transport and drained (or it ended without one). At the bound the peer pauses reading
from a transport that can (:class:`~mcpkit.runtime.channel.Pausable`) and resumes as
soon as one finishes, so a client that writes requests without reading the responses
stops itself instead of growing the server. While any request of ours to the peer
awaits its response (a handler asking the client), reading never pauses: that response
must be read for the handler to finish.

Our requests' deadlines: one timer each. With ``reset_on_progress`` a request's timer
starts again on each progress notification for it, but never runs past its
``max_total`` from the start. Over a transport that says when its writes are stalled
(:class:`~mcpkit.runtime.channel.WriteBlocking`) a request is handed over only once
nothing waits before it; until then it is held here, so that one whose deadline passes
meanwhile is dropped unsent instead of going out late.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
import sys
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, cast

import msgspec

from ..protocol.engine import Engine, encode
from ..protocol.errors import INVALID_REQUEST, ConnectionClosed, McpError, RequestTimeout
from ..protocol.events import (
    CancelReceived,
    NotificationReceived,
    Outgoing,
    ProgressReceived,
    Reply,
    RequestId,
    RequestReceived,
    ResponseReceived,
)
from ..protocol.framing import OVERSIZED
from .channel import Pausable, SendsInTurns, TakesMessages, Transport, WriteBlocking
from .outcome import deliver, fail_waiters, respond, respond_failure

__all__ = ["Peer", "ProgressCallback", "check_timeout"]

logger = logging.getLogger("mcpkit")

ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None] | None]
RequestHandler = Callable[[RequestReceived], Awaitable[Any]]
NotificationHandler = Callable[[str, msgspec.Raw], None]


def check_timeout(timeout: float) -> float:
    """Validate a timeout in seconds. Raises ``ValueError`` for a non-positive,
    non-finite or non-numeric value: there is no "no deadline"."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
    if not math.isfinite(timeout) or timeout <= 0:
        raise ValueError(f"timeout must be positive and finite, not {timeout!r}")
    return float(timeout)


class Peer:
    """Drive one connection: requests both ways, notifications, cancellation."""

    def __init__(
        self,
        transport: Transport,
        *,
        on_request: RequestHandler,
        on_notification: NotificationHandler | None = None,
        max_error_text: int = 1024,
        max_message_size: int | None = None,
        max_in_flight: int | None = None,
        on_close: Callable[[str], None] | None = None,
    ) -> None:
        """``max_in_flight`` bounds the inbound requests worked on at once (None: no
        bound); it takes effect only if the transport is :class:`Pausable`. ``on_close``
        is told the reason once the connection ends, before waiting callers wake up.
        Raises ``ValueError`` for a bound below 1."""
        if max_in_flight is not None and max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        self.transport = transport
        self.engine = Engine(max_error_text=max_error_text)
        self._on_request = on_request
        self._on_notification = on_notification
        self._max_message_size = max_message_size
        self._loop = asyncio.get_running_loop()
        self._progress: dict[RequestId, ProgressCallback] = {}
        self._tasks: set[asyncio.Future[Any]] = set()
        self.closed: asyncio.Future[str] = self._loop.create_future()
        pausable = max_in_flight is not None and isinstance(transport, Pausable)
        #: Inbound requests read and not yet finished; reading pauses at the bound.
        self._in_flight = 0
        self._max_in_flight = max_in_flight if pausable and max_in_flight is not None else sys.maxsize
        self._paused = False
        self._asking = 0  # our requests awaiting the peer's response: reading must go on
        self._reading = cast(Pausable, transport)  # used only when the bound is finite, hence Pausable
        self._closing_hook = on_close
        #: Our requests whose deadline moves with progress: id -> (timeout, latest deadline, timer).
        self._extendable: dict[RequestId, _Extendable] = {}
        self._writes = transport if isinstance(transport, WriteBlocking) else None
        #: A transport that reads what it carries is handed our messages with what they say.
        self._messages = transport if isinstance(transport, TakesMessages) else None
        #: A transport that joins a turn's messages: answers given to it while others are in flight.
        self._turns = transport if isinstance(transport, SendsInTurns) else None
        self._held: deque[Outgoing] = deque()  # our requests not handed over yet: writes are stalled
        self._pump: asyncio.Task[None] | None = None
        #: What a cancelled inbound request is answered with (None: nothing, it is abandoned).
        self._cancelled_answer: McpError | None = None

    @property
    def in_flight(self) -> int:
        """Inbound requests read and not yet finished (answered and drained, or ended)."""
        return self._in_flight

    async def start(self) -> None:
        """Start the transport. Raises whatever the transport raises (``OSError``)."""
        await self.transport.start(self._on_message, self._on_close)

    @property
    def is_closed(self) -> bool:
        return self.closed.done()

    # --- inbound -------------------------------------------------------------------------

    def _on_message(self, data: bytes) -> None:
        if data is OVERSIZED or not data:
            limit = f" of {self._max_message_size} bytes" if self._max_message_size else ""
            err = {"code": INVALID_REQUEST, "message": f"Invalid Request: message exceeds the size limit{limit}"}
            self.transport.send(encode({"jsonrpc": "2.0", "id": None, "error": err}))
            return
        try:
            ev = self.engine.receive(data)
        except Exception:  # never let one message break the reader
            logger.exception("could not process an incoming message")
            return
        kind = type(ev)
        if kind is RequestReceived:
            assert isinstance(ev, RequestReceived)
            # no done callback: _serve does the bookkeeping as it ends (a callback would cost
            # the loop one more turn per request), and _cancel_request adds one where needed
            task = self._loop.create_task(self._serve(ev))
            self.engine.attach(ev.id, task)
            self._tasks.add(task)
            self._in_flight += 1
            self._pause_if_full()
        elif kind is ResponseReceived:
            assert isinstance(ev, ResponseReceived)
            self._progress.pop(ev.request.id, None)
            deliver(ev)
        elif kind is NotificationReceived:
            assert isinstance(ev, NotificationReceived)
            if self._on_notification is not None:
                try:
                    self._on_notification(ev.method, ev.params)
                except Exception:
                    logger.exception("notification handler for %s failed", ev.method)
        elif kind is ProgressReceived:
            assert isinstance(ev, ProgressReceived)
            ext = self._extendable.get(ev.request.id)
            if ext is not None:
                ext.extend(self._loop, self._expire, ev.request)
            cb = self._progress.get(ev.request.id)
            if cb is not None:
                self._call_progress(cb, ev)
        elif kind is CancelReceived:
            assert isinstance(ev, CancelReceived)
            if ev.handle is not None:
                self._cancel_request(ev.handle)
        elif kind is Reply:
            assert isinstance(ev, Reply)
            self.transport.send(ev.data)

    def _pause_if_full(self) -> None:
        if self._in_flight >= self._max_in_flight and not self._paused and not self._asking:
            self._paused = True
            self._reading.pause_reading()

    def _request_done(self, task: asyncio.Future[Any] | None) -> None:
        """An inbound request is finished: it no longer counts, and reading resumes
        below the bound. Once per request: called again (or for a task not ours), it
        does nothing."""
        if task is None or task not in self._tasks:
            return
        self._tasks.remove(task)
        self._in_flight -= 1
        if self._paused and self._in_flight < self._max_in_flight:
            self._paused = False  # before resuming: the transport may deliver at once
            self._reading.resume_reading()

    def _call_progress(self, cb: ProgressCallback, ev: ProgressReceived) -> None:
        try:
            res = cb(ev.progress, ev.total, ev.message)
            if inspect.isawaitable(res):
                task = asyncio.ensure_future(res)
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        except Exception:
            logger.exception("progress callback failed")

    def _cancel_request(self, task: asyncio.Future[Any]) -> None:
        """Cancel an inbound request's task. A task cancelled before its first step never
        runs :meth:`_serve`, whose end does the request's bookkeeping: its done callback
        does it then (and nothing when :meth:`_serve` did)."""
        task.cancel()
        task.add_done_callback(self._request_done)

    async def _serve(self, ev: RequestReceived) -> None:
        # run_request's steps, inlined: this is every request's path on stdio.
        engine, rid = self.engine, ev.id
        try:
            try:
                result = await self._on_request(ev)
            except asyncio.CancelledError:
                answer = self._cancelled_answer
                if answer is None:
                    engine.abandon(rid)  # cancelled by the peer or by shutdown: no response
                    raise
                data = engine.respond_error(rid, answer)  # a shutdown the peer is told of
            except BaseException as exc:  # of any type: only this request fails
                data, _ = respond_failure(engine, rid, ev.method, exc)
            else:
                try:
                    data = engine.respond(rid, result)
                except (TypeError, ValueError, msgspec.EncodeError):
                    data, _ = respond(engine, rid, ev.method, result)  # logs it, answers -32603
            if data is not None:  # the transport drops it if it can no longer write
                if self._in_flight > 1 and self._turns is not None:  # more answers are likely in this turn
                    self._turns.send_in_turn(data)
                else:
                    self.transport.send(data)
                await self.transport.drain()
        finally:
            self._request_done(asyncio.current_task(self._loop))

    def _on_close(self, reason: str | None) -> None:
        if self.closed.done():
            return
        self.closed.set_result(reason or "closed")
        if self._closing_hook is not None:
            try:
                self._closing_hook(reason or "closed")
            except Exception:
                logger.exception("connection close hook failed")
        message = f"Connection closed: {reason}" if reason else "Connection closed"
        fail_waiters(self.engine.fail_all(), lambda: ConnectionClosed(message))
        self._progress.clear()
        self._held.clear()
        if self._pump is not None:
            self._pump.cancel()

    # --- outbound ------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: Any,
        *,
        timeout: float,
        on_progress: ProgressCallback | None = None,
        on_start: Callable[[RequestId], None] | None = None,
        reset_on_progress: bool = False,
        max_total: float | None = None,
    ) -> msgspec.Raw:
        """Send a request and wait for its result (raw JSON). ``on_start`` is told the
        request's id before it is sent. With ``reset_on_progress`` each progress
        notification for the request restarts its ``timeout``, but the request never
        lasts more than ``max_total`` seconds (default: ten times ``timeout``).

        Raises :class:`McpError` for an error response, :class:`RequestTimeout` when
        the deadline passes first (the request is cancelled on the wire if it was
        written, and dropped unsent if it was still held behind stalled writes),
        :class:`ConnectionClosed` if the connection ends first. If the awaiting task
        is cancelled, ``notifications/cancelled`` is sent (if the request was written)
        and ``CancelledError`` propagates.
        """
        if self.closed.done():
            raise ConnectionClosed(f"Connection closed: {self.closed.result()}")
        loop = self._loop
        now = loop.time()
        watch = on_progress is not None or reset_on_progress
        out = self.engine.start_request(method, params, deadline=now + timeout, progress=watch)
        fut: asyncio.Future[msgspec.Raw] = loop.create_future()
        out.waiter = fut
        if on_start is not None:
            on_start(out.id)
        if on_progress is not None:
            self._progress[out.id] = on_progress
        ext: _Extendable | None = None
        if reset_on_progress:
            limit = now + (max_total if max_total is not None else 10 * timeout)
            out.deadline = min(out.deadline, limit)
            ext = self._extendable[out.id] = _Extendable(timeout, limit)
        timer = loop.call_at(out.deadline, self._expire, out)
        if ext is not None:
            ext.timer = timer
        self._asking += 1
        if self._paused:
            self._paused = False
            self._reading.resume_reading()
        try:
            if self._writes is None:
                self._hand_over(out)
                self.engine.mark_sent(out)
                await self.transport.drain()
            elif self._held or self._writes.write_blocked:
                self._hold(out)
            else:
                self._hand_over(out)
                self.engine.mark_sent(out)
            return await fut
        except asyncio.CancelledError:
            self._withdraw(out, "Cancelled by the caller")
            raise
        finally:
            if ext is not None:
                self._extendable.pop(out.id, None)
                timer = ext.timer or timer
            timer.cancel()
            self._progress.pop(out.id, None)
            self._asking -= 1
            self._pause_if_full()

    def _hand_over(self, out: Outgoing) -> None:
        """Give ``out`` to the transport: with its method, id and params if the
        transport takes them (:class:`~.channel.TakesMessages`), else its bytes."""
        if self._messages is not None:
            self._messages.send_envelope(out.data, out.method, out.id, out.params)
        else:
            self.transport.send(out.data)

    def _hold(self, out: Outgoing) -> None:
        """Keep ``out`` until the stalled writes before it are done (in order)."""
        self._held.append(out)
        if self._pump is None:
            self._pump = self._loop.create_task(self._release_held())

    async def _release_held(self) -> None:
        """Hand held requests over as writes get through; skip those that ended
        meanwhile (their deadline passed, their caller gave up): they are never sent."""
        writes, held, engine = self._writes, self._held, self.engine
        assert writes is not None
        try:
            while held and not self.closed.done():
                await self.transport.drain()
                await asyncio.sleep(0)  # a transport whose drain returns while still blocked must not spin the loop
                while held and not writes.write_blocked and not self.closed.done():
                    out = held.popleft()
                    if engine.outgoing.get(out.id) is out:
                        self._hand_over(out)
                        engine.mark_sent(out)
        finally:
            self._pump = None

    def _withdraw(self, out: Outgoing, reason: str) -> bool:
        pending, data = self.engine.cancel(out.id, reason)
        if data is not None and not self.closed.done():
            self.transport.send(data)
        return pending is not None

    def _expire(self, out: Outgoing) -> None:
        if self._withdraw(out, "Request timed out"):
            fut = out.waiter
            if fut is not None and not fut.done():
                fut.set_exception(RequestTimeout(out.id))

    async def drain(self) -> None:
        """Wait until the transport has taken what was sent (flow control)."""
        await self.transport.drain()

    def notify(self, method: str, params: Any = None) -> None:
        """Send a notification (fire and forget; dropped if the transport can no
        longer write)."""
        data = self.engine.notification(method, params)
        if self._messages is not None:
            self._messages.send_envelope(data, method, None, params)
        else:
            self.transport.send(data)

    # --- shutdown ------------------------------------------------------------------------

    def answer_cancelled(self, error: McpError) -> None:
        """From now on, an inbound request whose handler is cancelled is answered with
        ``error`` instead of left unanswered: for a shutdown, after which the peer can
        no longer cancel anything itself. Never raises."""
        self._cancelled_answer = error

    async def wait_handlers(self, grace: float) -> None:
        """Wait up to ``grace`` seconds for inbound handlers to finish, then cancel the
        rest and wait for them to unwind."""
        tasks = [t for t in self._tasks if not t.done()]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=grace)
            # a progress callback's task, also in the set, leaves it by its own done callback,
            # which runs before the one added here: that one then does nothing for it
            for t in pending:
                self._cancel_request(t)
            if pending:
                await asyncio.wait(pending)

    async def close(self) -> None:
        """Cancel our pending requests on the wire (so the peer stops working on
        them), fail them with :class:`ConnectionClosed`, then close the transport.
        Requests still held behind stalled writes are dropped unsent."""
        if not self.closed.done():
            pending = list(self.engine.outgoing.values())
            for out in pending:
                self._withdraw(out, "Client closed")
            fail_waiters(pending, lambda: ConnectionClosed("Connection closed by the client"))
        self._on_close("closed")
        await self.transport.close()


class _Extendable:
    """The deadline of a request whose timeout restarts on progress."""

    __slots__ = ("limit", "timeout", "timer")

    def __init__(self, timeout: float, limit: float) -> None:
        self.timeout = timeout
        self.limit = limit  # never past this (the request's max_total)
        self.timer: asyncio.TimerHandle | None = None

    def extend(self, loop: asyncio.AbstractEventLoop, expire: Callable[[Outgoing], None], out: Outgoing) -> None:
        """Progress arrived for ``out``: its deadline moves to ``timeout`` from now, at most to ``limit``."""
        deadline = min(loop.time() + self.timeout, self.limit)
        if deadline > out.deadline:
            out.deadline = deadline
            if self.timer is not None:
                self.timer.cancel()
            self.timer = loop.call_at(deadline, expire, out)
