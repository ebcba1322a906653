"""The outbound channel: how a handler talks back to the peer whose request it serves.

A handler sends notifications (log messages, progress) and, in the legacy era, requests
of its own (elicitation, sampling, roots). A :class:`~mcpkit.runtime.peer.Peer` is an
:class:`Outbound` (stdio, memory); the HTTP app hands each request one bound to that
request's response stream.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, Protocol

import msgspec

from ..protocol.errors import RequestTimeout

if TYPE_CHECKING:
    from ..protocol.engine import Engine
    from ..protocol.events import RequestId

__all__ = ["Outbound", "Notifier", "DROP", "ask_over"]

Ask = Callable[..., Awaitable[msgspec.Raw]]


class Outbound(Protocol):
    """Messages from a handler to its peer."""

    def notify(self, method: str, params: Any = None) -> None:
        """Send a notification; never blocks, never raises (dropped if it cannot go)."""
        ...

    async def request(self, method: str, params: Any, *, timeout: float) -> msgspec.Raw:
        """Send a request to the peer and wait for its result (raw JSON). Raises
        :class:`~mcpkit.McpError` for an error response, ``RequestTimeout`` after
        ``timeout`` seconds, ``ConnectionClosed`` if the connection ends first; on
        cancellation the request is cancelled on the wire."""
        ...


class Notifier:
    """An :class:`Outbound` whose notifications go to a callback, and whose requests
    go to ``ask`` (without one, a request raises ``RuntimeError``: there is no way
    back to the peer). ``close_stream`` ends the connection carrying the request's
    resumable stream (HTTP, legacy era), if there is one."""

    __slots__ = ("_ask", "_close_stream", "_drain", "_send")

    def __init__(
        self,
        send: Callable[[str, Any], None],
        ask: Ask | None = None,
        drain: Callable[[], Awaitable[None]] | None = None,
        close_stream: Callable[[], bool] | None = None,
    ) -> None:
        self._send = send
        self._ask = ask
        self._drain = drain
        self._close_stream = close_stream

    def close_stream(self) -> bool:
        """End the connection that carries this request's messages without ending its
        stream, so that the client reconnects and resumes it; False (and nothing done)
        where the transport has no such stream."""
        return self._close_stream() if self._close_stream is not None else False

    async def drain(self) -> None:
        """Wait until what was sent has been taken by the connection (flow control:
        a no-op without a ``drain`` function)."""
        if self._drain is not None:
            await self._drain()

    def notify(self, method: str, params: Any = None) -> None:
        self._send(method, params)

    async def request(self, method: str, params: Any, *, timeout: float) -> msgspec.Raw:
        if self._ask is None:
            raise RuntimeError(f"cannot send {method} to the client from here: nothing carries it")
        return await self._ask(method, params, timeout=timeout)


def _drop(method: str, params: Any) -> None:
    return None


#: An :class:`Outbound` that drops everything (a request that has nowhere to stream).
DROP: Final = Notifier(_drop)


async def ask_over(
    engine: Engine,
    send: Callable[[bytes], None],
    method: str,
    params: object,
    *,
    timeout: float,
    id_factory: Callable[[int], RequestId] | None = None,
) -> msgspec.Raw:
    """Send a request to the peer through ``send`` (a session's stream: HTTP, legacy
    era) and await its result, which the peer's answer, routed by ``engine``, sets.
    Raises :class:`~mcpkit.McpError` for an error response, ``RequestTimeout`` after
    ``timeout`` seconds (the request is then withdrawn on the wire), ``ConnectionClosed``
    if the engine's connection ends first. On cancellation the request is cancelled on
    the wire (``notifications/cancelled``) and ``CancelledError`` propagates."""
    loop = asyncio.get_running_loop()
    out = engine.start_request(method, params, deadline=loop.time() + timeout, id_factory=id_factory)
    fut: asyncio.Future[msgspec.Raw] = loop.create_future()
    out.waiter = fut

    def withdraw(reason: str) -> bool:
        pending, data = engine.cancel(out.id, reason)
        if data is not None:
            send(data)
        return pending is not None

    def expire() -> None:
        if withdraw("Request timed out") and not fut.done():
            fut.set_exception(RequestTimeout(out.id))

    timer = loop.call_at(out.deadline, expire)
    try:
        send(out.data)
        engine.mark_sent(out)
        return await fut
    except asyncio.CancelledError:
        withdraw("Cancelled by the server")
        raise
    finally:
        timer.cancel()
