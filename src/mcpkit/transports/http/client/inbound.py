"""Inbound messages: matched to their request, learned from, and handed on — or kept,
when they answer one of the transport's own requests.

Every message that arrives (a JSON body, or one SSE event) goes through
:meth:`Inbound.deliver`: requests and notifications from the server are handed on as
they are; a response is matched to the request it answers, its route learns from its
result (the legacy ``initialize`` version, the modern tools' header rules), and replies
to the transport's own requests are kept here instead of being delivered.

The transport's own requests (:class:`PrivateRequests`) are a modern ``tools/list`` to
relearn header rules and, in the legacy era, an ``initialize`` to re-open an expired
session and a ``ping`` to tell whether the server forgot the session. Their ids start
with ``mcpkit-``; :class:`Inbound` keeps their replies for the transport, and the client
never sees them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

import msgspec
from msgspec import UNSET

from ....protocol.engine import encode, is_request_id
from ....protocol.events import RequestId
from ....protocol.sse import SSEParser
from .exchange import HttpExchange, content_type
from .runner import InFlight
from .settings import Settings
from .streams import Streams
from .wire import SSE, In, decode_in

if TYPE_CHECKING:
    import httpx

__all__ = ["Inbound", "PrivateRequests"]

_PRIVATE: Final = "mcpkit-"  # ids of the transport's own requests


class Inbound:
    """Delivers inbound messages through ``emit``; looks requests up in ``pending``."""

    def __init__(self, emit: Callable[[bytes], None], pending: Mapping[RequestId, InFlight]) -> None:
        self._emit = emit
        self._pending = pending
        self._replies: dict[str, In | None] = {}  # our own requests' replies, by id

    def expect(self, rid: str) -> None:
        """The transport sent a request of its own, ``rid``: keep its reply."""
        self._replies[rid] = None

    def reply(self, rid: str) -> In | None:
        """The reply kept for our own request ``rid``, if it came."""
        return self._replies[rid]

    def forget(self, rid: str) -> None:
        """Stop waiting for a reply to our own request ``rid``."""
        del self._replies[rid]

    def deliver(self, data: bytes, rid: RequestId | None) -> bool | None:
        """Hand one inbound message on. Returns whether it was the response to ``rid``,
        or None if it is not a JSON-RPC message at all (then it is not delivered). An
        error without an id, read while awaiting ``rid``, is taken as ``rid``'s."""
        try:
            env = decode_in(data)
        except (msgspec.DecodeError, RecursionError):  # ValidationError included
            return None
        mid = env.id
        if env.method is not UNSET:
            self._emit(data)
            return False
        if env.error is not UNSET and (mid is None or mid is UNSET) and rid is not None:
            mid = rid
            data = encode({"jsonrpc": "2.0", "id": rid, "error": env.error})
        if isinstance(mid, str) and mid in self._replies:
            self._replies[mid] = env  # the reply to one of our own requests
            return mid == rid
        entry = self._pending.get(mid) if is_request_id(mid) else None
        if entry is not None and env.result:
            data = entry.route.learn(env.result, data)
        self._emit(data)
        return rid is not None and is_request_id(mid) and type(mid) is type(rid) and mid == rid


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
