"""A connection's legacy-era state: what ``initialize`` established, and the way to its
client outside any request (once a transport has connected it: :meth:`Server.connect`)."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from ..protocol.types import Implementation
from ..protocol.wire import LOG_RANK
from ..runtime.outbound import Outbound

__all__ = ["Session"]


class Session:
    """Per-connection legacy-era state (a stdio process, an in-memory pair, an HTTP
    session). Modern requests get a fresh, never-initialized one."""

    __slots__ = (
        "client_capabilities",
        "client_info",
        "id",
        "initialized",
        "log_level",
        "outbound",
        "protocol_version",
        "resource_uris",
        "_ended",
    )

    def __init__(self) -> None:
        #: An opaque id of this connection's state, random, this process's own.
        self.id = os.urandom(16).hex()  # secrets.token_hex(16), without importing secrets (hashlib, random)
        self.initialized = False
        self.protocol_version = ""
        self.client_info: Implementation | None = None
        self.client_capabilities: dict[str, Any] = {}
        self.log_level: str | None = None
        #: The resources this connection subscribed to (``resources/subscribe``).
        self.resource_uris: set[str] = set()
        #: The connection's way to its client outside any request, while connected.
        self.outbound: Outbound | None = None
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

    def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """A ``notifications/message`` to this connection's client outside any request
        (another server's message, relayed by a proxy), if its level lets it through —
        everything until the client sets one with ``logging/setLevel``. Dropped before the
        session is initialized, for a level that is not one, and with no connection; never
        raises."""
        outbound = self.outbound
        if outbound is None or not self.initialized or level not in LOG_RANK:
            return
        if self.log_level is not None and LOG_RANK[level] < LOG_RANK.get(self.log_level, 0):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        outbound.notify("notifications/message", params)
