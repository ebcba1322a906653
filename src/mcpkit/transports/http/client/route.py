"""The era-specific steps of one request, and what the transport keeps of it in flight.

The transport decides each outbound message's era once, when it is sent, and from then
on asks the message's era part (:class:`EraMessage`) and, for a request, the
:class:`Route` that part made: what to wait for before POSTing, which headers to send,
whether a refused POST is worth one more try, what a response stream that ends early
means, what to learn from the result, and how to cancel. The two eras implement these
in ``modern.py`` and ``legacy.py``.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, NamedTuple, Protocol

import msgspec

from ....protocol.events import RequestId
from ....protocol.sse import SSEParser

if TYPE_CHECKING:
    import httpx

__all__ = ["EraMessage", "Route", "InFlight"]


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
