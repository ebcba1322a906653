"""``HttpTransport``'s fallback to the deprecated HTTP+SSE transport (2024-11-05).

As the 2025-11-25 transports page asks of clients that support older servers: when the
server refuses the first POST (the ``initialize``, or the ``server/discover`` probe of a
client that negotiates) with 400, 404 or 405, ``GET`` the same URL expecting an SSE
stream whose first event is ``endpoint``. If that works, an :class:`SseTransport` on the
URL becomes the transport's delegate for the rest of the connection: the refused
request is sent again through it (a probe is refused there, so the client negotiates
the legacy era), and so is everything sent while the attempt ran. If it does not, the
refusal stands (the client sees it as if nothing had been tried) and the messages held
meanwhile go the Streamable HTTP way. The attempt is made once per transport.

It lives with the transport it switches to: ``HttpTransport`` (``transports/http/
transport.py``) holds one, and nothing here knows the facade but the narrow settings
protocol it reads (:class:`~mcpkit.transports.http.client.settings.Settings`, plus
``sse_fallback`` and ``on_request_lost``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, Protocol

from ....protocol.errors import ConnectionClosed
from ....protocol.events import RequestId
from ..client.connection import Connection
from ..client.failures import OnRequestLost
from ..client.settings import Settings
from .client import SseTransport

if TYPE_CHECKING:
    import httpx

__all__ = ["SseFallback"]

logger = logging.getLogger("mcpkit.http")

#: The refusals of the first POST that call for the attempt (the spec's list).
_STATUSES: Final = frozenset({400, 404, 405})
#: The requests a client starts a connection with.
_FIRST: Final = frozenset({"initialize", "server/discover"})


class _Options(Settings, Protocol):
    @property
    def sse_fallback(self) -> bool: ...

    @property
    def on_request_lost(self) -> OnRequestLost | None: ...


class SseFallback:
    """Tries the old transport once, and then holds it as the delegate: see the module."""

    def __init__(
        self, settings: _Options, conn: Connection, http_client: httpx.AsyncClient | None, resend: Callable[[bytes], None]
    ) -> None:
        self._settings = settings
        self._conn = conn
        self._http_client = http_client
        self._resend = resend  # the transport's own send, for what was held when the attempt fails
        self.delegate: SseTransport | None = None
        self._tried = False
        self._held: list[bytes] | None = None  # sent while the attempt runs

    def takes(self, data: bytes) -> bool:
        """Whether the message is the fallback's: sent through the delegate, or held
        while the attempt runs. Never blocks, never raises."""
        if self.delegate is not None:
            self.delegate.send(data)
            return True
        if self._held is not None:
            self._held.append(data)
            return True
        return False

    async def divert(self, rid: RequestId, method: str, status: int, body: bytes) -> bool:
        """The first POST of request ``rid`` (``body``) was refused with ``status``: try
        the old transport if this calls for it. True if the request went to the delegate
        (nothing more is to be delivered for this POST); False if the refusal stands.
        Cancellation (the transport closing) abandons the attempt."""
        if self._tried or not self._settings.sse_fallback or method not in _FIRST or status not in _STATUSES:
            return False
        self._tried = True
        self._held = []
        settings = self._settings
        candidate = SseTransport(
            settings.url,
            headers=settings.headers,
            http_client=self._http_client,
            auth=settings.auth,
            connect_timeout=settings.connect_timeout,
            max_message_size=settings.max_message_size,
        )
        switched = False
        try:
            await candidate.start(self._conn.emit, self._delegate_closed)
            await candidate.connected()
            switched = True
        except (ConnectionClosed, OSError) as exc:
            logger.info("POST %s: HTTP %d, and no HTTP+SSE transport there either: %s", settings.url, status, exc)
        finally:
            held, self._held = self._held, None
            if not switched:
                await candidate.close()
        if not switched:
            for data in held:
                self._resend(data)
            return False
        logger.info("POST %s: HTTP %d; using the deprecated HTTP+SSE transport", settings.url, status)
        candidate.on_request_lost = settings.on_request_lost  # the client set it before connecting
        self.delegate = candidate
        for data in (body, *held):
            self.takes(data)
        return True

    def _delegate_closed(self, reason: str | None) -> None:
        """The old transport's connection ended: once it is the delegate, so does ours."""
        if self.delegate is not None:
            self._conn.lost(reason or "closed")

    async def drain(self) -> None:
        """The delegate's ``drain``, if there is one."""
        if self.delegate is not None:
            await self.delegate.drain()

    async def close(self) -> None:
        """Close the delegate, if there is one."""
        if self.delegate is not None:
            await self.delegate.close()

    async def reset(self) -> None:
        """Before the transport starts again: close and forget the delegate; the next
        connection's first POST may try again."""
        delegate, self.delegate = self.delegate, None
        self._tried = False
        self._held = None
        if delegate is not None:
            await delegate.close()
