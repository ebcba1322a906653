"""Inbound messages: matched to their request, learned from, and handed on.

Every message that arrives (a JSON body, or one SSE event) goes through
:meth:`Inbound.deliver`: requests and notifications from the server are handed on as
they are; a response is matched to the request it answers, its route learns from its
result (the legacy ``initialize`` version, the modern tools' header rules), and replies
to the transport's own requests are kept here instead of being delivered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import msgspec
from msgspec import UNSET

from ....protocol.engine import encode, is_request_id
from ....protocol.events import RequestId
from .route import InFlight
from .wire import In, decode_in

__all__ = ["Inbound"]


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
