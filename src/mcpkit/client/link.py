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
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..protocol.errors import ConnectionClosed, McpError, RequestTimeout
from ..protocol.events import RequestId
from ..runtime.channel import Restartable
from ..runtime.outcome import fail_waiters
from ..runtime.peer import Peer
from .events import ConnectionLost, Reconnected, ReconnectFailed, ReconnectScheduled, ServerRestarted
from .negotiation import negotiate

if TYPE_CHECKING:
    from .client import Client

__all__ = ["Link", "SelfHealing", "LosesRequests", "in_handshake"]

logger = logging.getLogger("mcpkit.client")

#: Set while this task (re)negotiates: its requests go to the new peer at once, never retried.
_HANDSHAKE: contextvars.ContextVar[bool] = contextvars.ContextVar("mcpkit_client_handshake", default=False)


def in_handshake() -> bool:
    """Whether the current task is negotiating (its requests are part of the handshake)."""
    return _HANDSHAKE.get()


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
class _Supervisor(Protocol):
    """A transport that restarts a server process of its own (it counts the restarts)."""

    @property
    def restarts(self) -> int: ...


class Link:
    """The client's current peer, and its recovery when the connection breaks."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self.peer: Peer | None = None
        #: Resolved (always with None) when a recovery under way ends, either way.
        self.recovery: asyncio.Future[None] | None = None
        self.failed: ConnectionClosed | None = None  # the recovery gave up
        self.closing = False
        self._established = False
        self._task: asyncio.Task[None] | None = None
        self._lost_at = 0.0

    def _new_peer(self) -> Peer:
        client = self._client
        self.peer = Peer(
            client.transport,
            on_request=client._inbound.on_request,
            on_notification=client._inbound.on_notification,
            max_error_text=client.options.max_error_text,
            on_close=self._on_close,
        )
        return self.peer

    async def open(self) -> None:
        """Start the transport and negotiate. Raises what they raise (the caller closes)."""
        transport = self._client.transport
        if isinstance(transport, SelfHealing):
            transport.on_session_renewed = self.session_renewed
        if isinstance(transport, LosesRequests):
            transport.on_request_lost = self.request_lost
        peer = self._new_peer()
        await peer.start()
        await self._handshake(restore=False)
        self._established = True

    async def _handshake(self, *, restore: bool) -> None:
        """Negotiate (and, after a restart, restore what the old connection had) with
        this task marked as handshaking."""
        token = _HANDSHAKE.set(True)
        try:
            await negotiate(self._client)
            if restore:
                await self._probe()
                await self._restore(renewed=False)
        finally:
            _HANDSHAKE.reset(token)

    async def _probe(self) -> None:
        """After reconnecting to a server that is not ours to start (HTTP) in a pinned
        modern revision, negotiating sent nothing: ask ``server/discover``, so that a
        server still unreachable fails this attempt (and the back-off goes on) instead
        of the next call. Any answer will do, an error too. Raises
        :class:`ConnectionClosed` or :class:`RequestTimeout`."""
        client = self._client
        options = client.options
        if isinstance(client.transport, _Supervisor) or client.era != "modern" or options.protocol_version is None:
            return
        try:
            await client.discover(timeout=options.discover_timeout)
        except McpError as exc:
            if exc.local:
                raise

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
        client = self._client
        client._events.emit(ConnectionLost(reason))
        transport = client.transport
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
        client = self._client
        transport = client.transport
        assert isinstance(transport, Restartable)
        supervised = isinstance(transport, _Supervisor)  # else HTTP: nothing is restarted, it is reached again
        attempts = 0
        why = reason  # of the next attempt: the loss, then the last attempt's failure
        while True:
            attempts += 1
            if isinstance(transport, _Supervisor):
                client._events.emit(ServerRestarted(transport.restarts, delay, reason))
            else:
                client._events.emit(ReconnectScheduled(attempts, delay, why))
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
        client._events.emit(Reconnected("server restarted" if supervised else "reconnected", downtime))
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
        return delay, ConnectionClosed(f"Connection closed: {reason}")

    async def _restore(self, *, renewed: bool) -> None:
        """After a new handshake (or a ``renewed`` session): the log level chosen, then
        every open subscription. A refusal is logged and the rest goes on; a connection
        that fails meanwhile is noticed once the recovery ends."""
        client = self._client
        level = client._log_level
        if renewed and level is None:
            level = client.options.log_level  # the handshake that set it was the transport's own
        elif level == client.options.log_level:
            level = None  # negotiating set it already
        try:
            if level is not None and (client.era == "modern" or "logging" in client.server_capabilities):
                await client.set_logging_level(level)
        except McpError as exc:
            logger.warning("could not set the log level again: %s", exc)
        for subscription in list(client._subscriptions):
            try:
                await subscription._restore()
            except McpError as exc:
                logger.warning("could not re-open a subscription: %s", exc)

    def _finish(self) -> None:
        recovery, self.recovery, self._task = self.recovery, None, None
        if recovery is not None and not recovery.done():
            recovery.set_result(None)

    def _give_up(self, error: ConnectionClosed) -> None:
        self.failed = error
        logger.debug("reconnection given up", exc_info=error)
        self._client._events.emit(ReconnectFailed(error))
        self._finish()

    async def session_renewed(self) -> None:
        """The transport opened a new session by itself: restore the log level and
        re-open the subscriptions (the transport runs this in a task of its own, which
        closing it cancels). Nothing to do while closing or recovering (the recovery
        restores them)."""
        if self.closing or self.recovery is not None or not self._established:
            return
        await self._restore(renewed=True)
        self._client._events.emit(Reconnected("session renewed", 0.0))

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
            await self._client.transport.close()
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)
