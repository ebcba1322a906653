"""Failed exchanges become JSON-RPC error responses (docs/http.md, "The client side").

Nothing in the transport raises to the caller of ``send``: when the exchange for a
request fails, the awaiting caller gets an error response for it instead. An HTTP error
whose body is a JSON-RPC error is that response; otherwise one is made up here (code
-32603) whose message names the status and quotes at most 512 bytes of the body, with
``data={"status": ..., "body": ...}`` and ``"retryAfter"`` when the server sent
``Retry-After``.

A request whose own connection broke (:meth:`Failures.lost`) is another matter: its
outcome is unknown, and the client's caller must get ``ConnectionClosed`` for it (a
retry policy sends it again only if it is idempotent) while the other requests go on.
The transport cannot say that with a JSON-RPC message, so it calls the
``on_request_lost(id, reason)`` hook the client sets on it; without one, the error
response says so in its ``data`` (``{"connection": "lost"}``). Once a request's stream
broke, whatever failure follows for it (its resumption was refused, say) is a loss too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import msgspec
from msgspec import UNSET

from ....protocol.engine import encode
from ....protocol.errors import INTERNAL_ERROR, flatten_text
from ....protocol.events import RequestId
from .wire import EXCERPT, decode_in

if TYPE_CHECKING:
    import httpx

__all__ = ["ExchangeFailed", "Failures", "Emit", "Deliver", "OnRequestLost", "LossHook"]

#: Hands one inbound message on.
Emit = Callable[[bytes], None]
#: :meth:`~.inbound.Inbound.deliver`: whether the message answered the request, None if it is no JSON-RPC message.
Deliver = Callable[[bytes, RequestId | None], bool | None]
#: ``on_request_lost(id, reason)``: the connection of request ``id`` broke; fail just that request.
OnRequestLost = Callable[[RequestId, str], None]


class LossHook(Protocol):
    """Where the client's ``on_request_lost`` hook is found (``HttpTransport``)."""

    @property
    def on_request_lost(self) -> OnRequestLost | None: ...


class ExchangeFailed(Exception):
    """The exchange for a request cannot complete: ``message`` and ``data`` make the
    error response its caller gets."""

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class Failures:
    """Delivers error responses for the transport's requests through ``emit`` (made up)
    or ``deliver`` (a JSON-RPC error body the server sent), and reports lost requests
    to ``hooks.on_request_lost`` (without ``hooks``, as error responses)."""

    def __init__(self, emit: Emit, deliver: Deliver, hooks: LossHook | None = None) -> None:
        self._emit = emit
        self._deliver = deliver
        self._hooks = hooks
        self._broken: set[RequestId] = set()  # requests whose stream broke

    def broke(self, rid: RequestId) -> None:
        """Request ``rid``'s response stream broke: any failure that follows for it is a
        loss (:meth:`lost`), until :meth:`forget`."""
        self._broken.add(rid)

    def forget(self, rid: RequestId) -> None:
        """Request ``rid``'s exchange is over."""
        self._broken.discard(rid)

    def lost(self, rid: RequestId, reason: str) -> None:
        """The connection of request ``rid`` broke before its response: report it to
        the client's ``on_request_lost`` hook (its caller gets ``ConnectionClosed``), or
        without one deliver an error response with ``data={"connection": "lost"}``."""
        self._broken.discard(rid)
        hook = self._hooks.on_request_lost if self._hooks is not None else None
        if hook is not None:
            hook(rid, reason)
        else:
            self.fail(rid, flatten_text(f"Connection lost: {reason}", EXCERPT), {"connection": "lost"})

    def fail(self, rid: RequestId, message: str, data: Any = None) -> None:
        """Deliver a synthesized error response (-32603) for request ``rid`` (a loss
        instead if its stream broke)."""
        if rid in self._broken:
            self.lost(rid, f"the response stream broke, then: {message}")
            return
        error: dict[str, Any] = {"code": INTERNAL_ERROR, "message": message}
        if data is not None:
            error["data"] = data
        self._emit(encode({"jsonrpc": "2.0", "id": rid, "error": error}))

    def fail_http(self, rid: RequestId, resp: httpx.Response, raw: bytes, what: str = "") -> None:
        """Deliver an error response for request ``rid`` naming ``resp``'s status (after
        ``what``, if given) and quoting the start of its body ``raw``."""
        if rid in self._broken:
            self.lost(rid, f"the response stream broke, then: {what + ': ' if what else ''}HTTP {resp.status_code}")
            return
        excerpt = flatten_text(raw[: EXCERPT * 4], EXCERPT).strip()
        head = f"{what + ': ' if what else ''}HTTP {resp.status_code} {resp.reason_phrase}".rstrip()
        data: dict[str, Any] = {"status": resp.status_code, "body": excerpt}
        if "retry-after" in resp.headers:
            data["retryAfter"] = flatten_text(resp.headers["retry-after"], 64)
        self.fail(rid, f"{head}: {excerpt}" if excerpt.strip() else head, data)

    def refused(self, rid: RequestId, resp: httpx.Response, raw: bytes) -> None:
        """Request ``rid`` got an error status: its JSON-RPC error body is the response,
        else one is made up with :meth:`fail_http`."""
        try:
            env = decode_in(raw)
        except (msgspec.DecodeError, RecursionError):  # ValidationError included
            env = None
        if env is not None and env.method is UNSET and isinstance(env.error, dict) and env.id in (None, UNSET, rid):
            self._deliver(raw, rid)
        else:
            self.fail_http(rid, resp, raw)
