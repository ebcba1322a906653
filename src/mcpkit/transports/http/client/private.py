"""The transport's own requests: a modern ``tools/list`` to relearn header rules, a
legacy ``initialize`` to re-open an expired session. Their ids start with ``mcpkit-``
and their replies are kept for the transport, never delivered to the client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from ....protocol.engine import encode
from ....protocol.sse import SSEParser
from .exchange import HttpExchange, content_type
from .inbound import Inbound
from .settings import Settings
from .streams import Streams
from .wire import SSE, In

if TYPE_CHECKING:
    import httpx

__all__ = ["PrivateRequests"]

_PRIVATE: Final = "mcpkit-"  # ids of the transport's own requests


class PrivateRequests:
    """Sends requests of the transport's own and collects their replies."""

    def __init__(self, settings: Settings, http: HttpExchange, inbound: Inbound, streams: Streams) -> None:
        self._settings = settings
        self._http = http
        self._inbound = inbound
        self._streams = streams
        self._ids = 0

    async def post(self, kind: str, method: str, params: Any, headers: dict[str, str]) -> tuple[In | None, httpx.Response]:
        """POST request ``method`` (its id names ``kind``) and read its reply; whatever
        else the server sends meanwhile is delivered as usual. Returns the reply (None
        if none came) and the (closed) HTTP response. Raises :class:`~.exchange.Lost`,
        and ``ValueError`` for an SSE event over the size limit."""
        self._ids += 1
        rid = f"{_PRIVATE}{kind}-{self._ids}"
        self._inbound.expect(rid)
        try:
            body = encode({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
            resp = await self._http.send("POST", headers, body)
            try:
                limit = self._settings.max_message_size
                if resp.status_code == 200 and content_type(resp) == SSE:
                    await self._streams.pump(resp, SSEParser(limit), rid)
                elif resp.status_code == 200:
                    self._inbound.deliver((await self._http.read(resp, limit))[0], rid)
            finally:
                await resp.aclose()
            return self._inbound.reply(rid), resp
        finally:
            self._inbound.forget(rid)
