"""What transports share: the transport interface (defined in
:mod:`mcpkit.runtime.channel`, below the transports, and re-exported here as their
base), :class:`Servable` (what an in-memory connection serves) and
:class:`RequestHandler` (what the HTTP app asks of the server behind it)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, runtime_checkable

from ..protocol.events import RequestReceived
from ..protocol.headers import HeaderRules
from ..protocol.versions import Era
from ..runtime.channel import OnClose, OnMessage, Transport
from ..runtime.outbound import Outbound

__all__ = ["Transport", "OnMessage", "OnClose", "Servable", "SessionState", "RequestHandler"]


@runtime_checkable
class Servable(Protocol):
    """Something that serves one connection over a transport until it closes (a
    ``Server``). ``Client(server)`` connects to one in memory through this, without
    the client knowing the server's type."""

    async def serve(self, transport: Any) -> None: ...


class SessionState(Protocol):
    """A connection's protocol state as the server keeps it (legacy era): what a
    transport may read of it."""

    @property
    def protocol_version(self) -> str: ...


class RequestHandler(Protocol):
    """What a transport that dispatches requests itself (Streamable HTTP, HTTP+SSE)
    needs from the server behind it. ``Server`` implements it; transports never import it.

    A request reaches the server as the engine's event, with the head the transport has
    read already to route it (:attr:`~mcpkit.protocol.events.RequestReceived.head`), so
    that its params are not decoded again: the two members that take one,
    ``request_scopes`` and ``serve_request``, are what :meth:`Server.scopes_for` and
    :meth:`Server.handle` are for a caller that has raw params instead.
    """

    @property
    def max_error_text(self) -> int: ...

    def speaks(self, era: Era) -> bool:
        """Whether requests of ``era`` are served at all."""
        ...

    def new_session(self) -> SessionState:
        """Fresh per-connection state (one per legacy session, or per modern request)."""
        ...

    def connect(self, session: Any, outbound: Outbound) -> Callable[[], Awaitable[None]]:
        """``session``'s connection carries server-initiated messages (list changes,
        resource updates) through ``outbound`` from now on; returns what stops it."""
        ...

    def notified(self, session: Any, method: str) -> None:
        """The client of the legacy connection ``session`` sent the notification
        ``method`` (any but a cancellation, which the transport acts on itself). Never
        raises."""
        ...

    def request_scopes(self, request: RequestReceived) -> tuple[str, ...]:
        """The scopes the tool, prompt or resource the request names requires (empty for
        other requests, unknown names and params that cannot be decoded). Never raises."""
        ...

    def all_scopes(self) -> set[str]:
        """Every scope some feature requires (for the authorization metadata)."""
        ...

    def running(self) -> AbstractAsyncContextManager[Any]:
        """Hold the server's lifespan up for the duration (the ASGI lifespan)."""
        ...

    def shutdown(self) -> None:
        """The server is stopping: end open subscriptions gracefully."""
        ...

    def header_rules(self, tool: str) -> HeaderRules:
        """The ``x-mcp-header`` annotations of tool ``tool`` (empty if unknown)."""
        ...

    async def serve_request(self, request: RequestReceived, *, session: Any, outbound: Outbound) -> Any:
        """Serve one request: the result, or :class:`~mcpkit.McpError`. What the
        handler sends its peer goes through ``outbound``. Cancellation cancels the
        handler."""
        ...
