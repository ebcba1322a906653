"""The client's connection to its server, and getting it back after it breaks.

:class:`Link` holds the current :class:`~mcpkit.runtime.peer.Peer`. When the connection
ends on its own after the handshake, over a transport that can restart
(:class:`~mcpkit.runtime.channel.Restartable`: a supervised server process, or HTTP
with ``reconnect``), it recovers: it waits the transport's back-off, starts it again,
negotiates anew (legacy: ``initialize`` again; modern HTTP: ``server/discover`` as a
probe), restores the log level and re-opens the subscriptions,
then lets the calls that waited go on. Calls made meanwhile wait for that, within their
own deadline; calls in flight at the crash failed with ``ConnectionClosed`` (a retry
policy sends the idempotent ones again). When the transport gives up, the client is
closed for good and every waiting call fails with the transport's reason.

Two hooks serve a transport that keeps going across failures. One that renews a
session by itself (:class:`SelfHealing`: legacy HTTP after a 404) awaits
``on_session_renewed()``, and the link re-opens the subscriptions of the new session.
One that lost a single request's exchange while the connection goes on
(:class:`LosesRequests`: both HTTP transports) calls ``on_request_lost(id, reason)``,
and the link fails just that call with ``ConnectionClosed`` (a retry policy sends it
again only if it is idempotent).

The link knows the client's session only as :class:`Linked`: the transport and the
peer's callbacks, and the two steps that are the session's own — the handshake
(negotiating, and after a restart restoring what the old connection had) and restoring a
renewed session. It marks the task that runs a handshake (:func:`~.core.handshaking`),
so that the handshake's requests go to the new connection at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from ..protocol.errors import ConnectionClosed, McpError, RequestTimeout
from ..protocol.events import RequestId
from ..runtime.channel import Restartable, SupervisesStart, Transport
from ..runtime.outcome import fail_waiters
from ..runtime.peer import Peer
from .core import handshaking
from .events import ConnectionLost, Events, Reconnected, ReconnectFailed, ReconnectScheduled, ServerRestarted
from .handlers import ServerMessages
from .options import ClientOptions

__all__ = ["Link", "Linked", "SelfHealing", "LosesRequests", "Supervisor"]

logger = logging.getLogger("mcpkit.client")


class Linked(Protocol):
    """What the link needs of the client's session."""

    @property
    def transport(self) -> Transport:
        """The transport the link starts, restarts and closes."""
        ...

    @property
    def options(self) -> ClientOptions:
        """The client's settings (the peer's ``max_error_text``)."""
        ...

    @property
    def events(self) -> Events:
        """Where losing and regaining the connection is reported."""
        ...

    @property
    def inbound(self) -> ServerMessages:
        """What serves the server's requests and notifications on each new peer."""
        ...

    async def handshake(self, *, restore: bool) -> None:
        """Negotiate on the new connection; with ``restore`` (after a restart) also restore
        what the old one had. Raises what negotiating raises."""
        ...

    async def restore(self, *, renewed: bool) -> None:
        """Restore the log level and the subscriptions on a ``renewed`` session."""
        ...


@runtime_checkable
class SelfHealing(Protocol):
    """A transport that renews its session by itself (``HttpTransport``): see the module's docstring."""

    on_session_renewed: Callable[[], Awaitable[None]] | None


@runtime_checkable
class LosesRequests(Protocol):
    """A transport that can lose one request's exchange while the connection goes on
    (``HttpTransport``, ``SseTransport``): see the module's docstring."""

    on_request_lost: Callable[[RequestId, str], None] | None


@runtime_checkable
class Supervisor(Protocol):
    """A transport that restarts a server process of its own (it counts the restarts)."""

    @property
    def restarts(self) -> int: ...


class Link:
    """The client's current peer, and its recovery when the connection breaks."""

    def __init__(self, session: Linked) -> None:
        self._session = session
        self.peer: Peer | None = None
        #: Resolved (always with None) when a recovery under way ends, either way.
        self.recovery: asyncio.Future[None] | None = None
        self.failed: ConnectionClosed | None = None  # the recovery gave up
        self.closing = False
        self._established = False
        self._task: asyncio.Task[None] | None = None
        self._lost_at = 0.0

    def _new_peer(self) -> Peer:
        session = self._session
        self.peer = Peer(
            session.transport,
            on_request=session.inbound.on_request,
            on_notification=session.inbound.on_notification,
            max_error_text=session.options.max_error_text,
            on_close=self._on_close,
        )
        return self.peer

    async def open(self) -> None:
        """Start the transport and negotiate. Raises what they raise (the caller closes).

        Over a transport that supervises its first start (:class:`SupervisesStart`), a
        start that fails with ``ConnectionClosed`` (the process exited, the server could
        not be reached) is tried again after the transport's back-off, reported as a
        restart (or a reconnection attempt) would be, until it succeeds or the transport
        gives up (its ``ConnectionClosed`` is raised then)."""
        transport = self._session.transport
        if isinstance(transport, SelfHealing):
            transport.on_session_renewed = self.session_renewed
        if isinstance(transport, LosesRequests):
            transport.on_request_lost = self.request_lost
        attempts = 0
        while True:
            peer = self._new_peer()
            try:
                await peer.start()
                await self._handshake(restore=False)
            except ConnectionClosed as exc:
                if not (isinstance(transport, SupervisesStart) and transport.supervises_start):
                    raise
                assert isinstance(transport, Restartable)  # a transport that supervises its start restarts
                delay = transport.restart_delay(exc.message)  # raises ConnectionClosed when it gives up
                if delay is None:
                    raise
                attempts += 1
                if isinstance(transport, Supervisor):
                    self._session.events.emit(ServerRestarted(transport.restarts, delay, exc.message))
                else:
                    self._session.events.emit(ReconnectScheduled(attempts, delay, exc.message))
                await asyncio.sleep(delay)  # the next start() ends what is left of this one
                continue
            break
        self._established = True

    async def _handshake(self, *, restore: bool) -> None:
        """The session's handshake (and, after a restart, its restoring) with this task
        marked as handshaking."""
        with handshaking():
            await self._session.handshake(restore=restore)

    @property
    def connected(self) -> bool:
        """Whether the current connection is open."""
        return self.peer is not None and not self.peer.is_closed

    def recoverable(self) -> bool:
        """Whether a lost connection is coming back (or already has)."""
        if self.closing or self.failed is not None:
            return False
        return self.recovery is not None or self.connected

    async def ready(self, timeout: float) -> tuple[Peer, float]:
        """Wait (at most ``timeout`` seconds) for the recovery under way; returns the new
        peer and the time left. Raises :class:`RequestTimeout` if it takes longer (the
        request is never sent), :class:`ConnectionClosed` if it fails."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        recovery = self.recovery
        if recovery is not None:
            try:
                async with asyncio.timeout(timeout):
                    await asyncio.shield(recovery)
            except TimeoutError:
                raise RequestTimeout(None) from None
        if self.failed is not None:
            raise ConnectionClosed(self.failed.message)
        left = timeout - (loop.time() - started)
        if left <= 0:
            raise RequestTimeout(None)
        assert self.peer is not None
        return self.peer, left

    async def settled(self) -> bool:
        """Wait for a recovery under way; whether the client is connected after it."""
        if self.recovery is not None:
            await asyncio.shield(self.recovery)
        return self.connected and not self.closing

    # --- losing the connection -----------------------------------------------------------------

    def _on_close(self, reason: str) -> None:
        """The current peer's connection ended (called before its callers wake up)."""
        if self.closing or self.failed is not None or not self._established or self.recovery is not None or self.connected:
            return  # closing, given up, still connecting, a recovery that handles it already, or an old peer
        session = self._session
        session.events.emit(ConnectionLost(reason))
        transport = session.transport
        try:
            delay = transport.restart_delay(reason) if isinstance(transport, Restartable) else None
        except ConnectionClosed as exc:
            self._give_up(exc)
            return
        if delay is None:
            return
        loop = asyncio.get_running_loop()
        self._lost_at = loop.time()
        self.recovery = loop.create_future()
        self._task = loop.create_task(self._recover(reason, delay))

    async def _recover(self, reason: str, delay: float) -> None:
        """Restart the transport until a handshake succeeds or the transport gives up."""
        session = self._session
        transport = session.transport
        assert isinstance(transport, Restartable)
        supervised = isinstance(transport, Supervisor)  # else HTTP: nothing is restarted, it is reached again
        attempts = 0
        why = reason  # of the next attempt: the loss, then the last attempt's failure
        while True:
            attempts += 1
            if isinstance(transport, Supervisor):
                session.events.emit(ServerRestarted(transport.restarts, delay, reason))
            else:
                session.events.emit(ReconnectScheduled(attempts, delay, why))
            await asyncio.sleep(delay)
            peer = self._new_peer()
            try:
                await peer.start()
                await self._handshake(restore=True)
            except Exception as exc:
                next_delay, error = self._after_failed_handshake(transport, exc)
                if next_delay is None:
                    await peer.close()  # a server that started but did not answer goes too
                    self._give_up(error)
                    return
                delay, why = next_delay, error.message
                continue
            break
        downtime = asyncio.get_running_loop().time() - self._lost_at
        self._finish()
        session.events.emit(Reconnected("server restarted" if supervised else "reconnected", downtime))
        if peer.is_closed:  # it broke again while we restored: start over
            self._on_close(peer.closed.result())

    @staticmethod
    def _after_failed_handshake(transport: Restartable, exc: Exception) -> tuple[float | None, ConnectionClosed]:
        """The delay before the next restart, or None and the error to give up with."""
        if not isinstance(exc, (OSError, McpError)):  # a bug, not a crash: restarting will not help
            logger.error("reconnecting failed", exc_info=exc)
            return None, ConnectionClosed(f"Reconnecting failed: {type(exc).__name__}: {exc}")
        reason = f"{type(exc).__name__}: {exc}" if isinstance(exc, OSError) else exc.message
        try:
            delay = transport.restart_delay(reason)
        except ConnectionClosed as gave_up:
            return None, gave_up
        return delay, ConnectionClosed(reason if isinstance(exc, ConnectionClosed) else f"Connection closed: {reason}")

    def _finish(self) -> None:
        recovery, self.recovery, self._task = self.recovery, None, None
        if recovery is not None and not recovery.done():
            recovery.set_result(None)

    def _give_up(self, error: ConnectionClosed) -> None:
        self.failed = error
        logger.debug("reconnection given up", exc_info=error)
        self._session.events.emit(ReconnectFailed(error))
        self._finish()

    async def session_renewed(self) -> None:
        """The transport opened a new session by itself: restore the log level and
        re-open the subscriptions (the transport runs this in a task of its own, which
        closing it cancels). Nothing to do while closing or recovering (the recovery
        restores them)."""
        if self.closing or self.recovery is not None or not self._established:
            return
        await self._session.restore(renewed=True)
        self._session.events.emit(Reconnected("session renewed", 0.0))

    def request_lost(self, rid: RequestId, reason: str) -> None:
        """The transport lost the exchange of request ``rid`` alone (``reason``): its
        caller gets ``ConnectionClosed`` now, and the connection goes on. Nothing
        happens if the request is no longer awaited."""
        peer = self.peer
        if peer is None or peer.is_closed:
            return
        out, _ = peer.engine.cancel(rid)  # forgotten; nothing is sent: its connection is gone
        if out is not None:
            logger.info("request %r lost: %s", rid, reason)
            fail_waiters([out], lambda: ConnectionClosed(f"Connection closed: {reason}"))

    # --- closing -------------------------------------------------------------------------------

    async def close(self) -> None:
        """Stop recovering, close the connection and the transport. Idempotent."""
        self.closing = True
        task = self._task
        if task is not None:
            task.cancel()
        if self.recovery is not None:
            self.failed = ConnectionClosed("Connection closed by the client")
            self._finish()
        if self.peer is not None:
            await self.peer.close()
        else:
            await self._session.transport.close()
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)
