"""A connection's legacy-era state: what ``initialize`` established."""

from __future__ import annotations

import asyncio
from typing import Any

from ..protocol.types import Implementation

__all__ = ["Session"]


class Session:
    """Per-connection legacy-era state (a stdio process, an in-memory pair, an HTTP
    session). Modern requests get a fresh, never-initialized one."""

    __slots__ = ("client_capabilities", "client_info", "initialized", "log_level", "protocol_version", "resource_uris", "_ended")

    def __init__(self) -> None:
        self.initialized = False
        self.protocol_version = ""
        self.client_info: Implementation | None = None
        self.client_capabilities: dict[str, Any] = {}
        self.log_level: str | None = None
        #: The resources this connection subscribed to (``resources/subscribe``).
        self.resource_uris: set[str] = set()
        self._ended: asyncio.Future[None] | None = None

    def ended(self) -> asyncio.Future[None]:
        """A future done when the connection has ended (see :meth:`end`)."""
        if self._ended is None:
            self._ended = asyncio.get_running_loop().create_future()
        return self._ended

    def end(self) -> None:
        """The connection is gone: what waits on :meth:`ended` (open subscriptions) stops."""
        fut = self.ended()
        if not fut.done():
            fut.set_result(None)
