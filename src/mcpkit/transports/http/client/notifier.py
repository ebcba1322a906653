"""POSTing the messages that get no response: notifications, and our answers to the
server's requests. The server should answer 202; a refusal is logged, not reported,
since nobody awaits these messages.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from ....protocol.errors import flatten_text
from .connection import Connection
from .exchange import Dropped, HttpExchange, Lost
from .settings import Settings
from .wire import ERROR_BODY_LIMIT, EXCERPT

if TYPE_CHECKING:
    import httpx

__all__ = ["Notifier", "WITHDRAWAL_GRACE"]

#: Seconds a cancelled legacy request's SSE stream is still read after the cancellation
#: is POSTed, for the server's withdrawal of what it asked the client meanwhile.
WITHDRAWAL_GRACE = 2.0

logger = logging.getLogger("mcpkit.http")


class Notifier:
    """Posts one message that expects no response, within ``notification_timeout``."""

    def __init__(self, settings: Settings, http: HttpExchange, conn: Connection) -> None:
        self._settings = settings
        self._http = http
        self._conn = conn

    async def post(
        self,
        what: str,
        body: bytes,
        headers: Callable[[], dict[str, str]],
        *,
        then_cancel: asyncio.Task[None] | None = None,
        on_accepted: Callable[[], None] | None = None,
    ) -> None:
        """POST ``body`` (``what`` names it in logs) with the headers ``headers()`` gives
        when the POST starts; call ``on_accepted`` once the server took it; cancel
        ``then_cancel`` :data:`WITHDRAWAL_GRACE` seconds after it went (well or not: a
        cancelled request's stream is read on meanwhile). Never raises but ``CancelledError``:
        a server that cannot be reached is reported as the connection lost; a POST whose
        connection is reset (a kept-alive connection a load balancer dropped) is sent
        once more on a new one, and then logged; any other failure is logged."""
        try:
            resp = await self._send(what, body, headers)
            try:
                if not 200 <= resp.status_code < 300:
                    raw, _ = await self._http.read(resp, ERROR_BODY_LIMIT)
                    excerpt = flatten_text(raw[: EXCERPT * 4], EXCERPT).strip()
                    logger.warning("the server refused %s: HTTP %d %s", what, resp.status_code, excerpt)
                    return
            finally:
                await resp.aclose()
            if on_accepted is not None:
                on_accepted()
        except Dropped:
            logger.warning("could not send %s: the connection was reset twice", what)
        except Lost as exc:
            self._conn.lost(str(exc))
        except Exception:
            logger.warning("could not send %s", what, exc_info=True)
        finally:
            if then_cancel is not None:
                # Read on a little: the server may still withdraw, on this stream, the
                # requests it sent us for the cancelled one (its response is dropped).
                asyncio.get_running_loop().call_later(WITHDRAWAL_GRACE, then_cancel.cancel)

    async def _send(self, what: str, body: bytes, headers: Callable[[], dict[str, str]]) -> httpx.Response:
        """POST once; after a reset connection, once more (nobody awaits a notification,
        so a dead kept-alive connection must not lose it, nor end the connection).
        Raises :class:`Dropped` or :class:`Lost` as :meth:`HttpExchange.send` does."""
        try:
            return await self._http.send("POST", headers(), body, self._settings.notification_timeout)
        except Dropped:
            logger.info("sending %s again: its connection was reset", what)
            return await self._http.send("POST", headers(), body, self._settings.notification_timeout)
