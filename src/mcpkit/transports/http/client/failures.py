"""Failed exchanges become JSON-RPC error responses (docs/http.md, "The client side").

Nothing in the transport raises to the caller of ``send``: when the exchange for a
request fails, the awaiting caller gets an error response for it instead. An HTTP error
whose body is a JSON-RPC error is that response; otherwise one is made up here (code
-32603) whose message names the status and quotes at most 512 bytes of the body, with
``data={"status": ..., "body": ...}`` and ``"retryAfter"`` when the server sent
``Retry-After``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET

from ....protocol.engine import encode
from ....protocol.errors import INTERNAL_ERROR, flatten_text
from ....protocol.events import RequestId
from .wire import EXCERPT, decode_in

if TYPE_CHECKING:
    import httpx

__all__ = ["ExchangeFailed", "Failures", "Emit", "Deliver"]

#: Hands one inbound message on.
Emit = Callable[[bytes], None]
#: :meth:`~.inbound.Inbound.deliver`: whether the message answered the request, None if it is no JSON-RPC message.
Deliver = Callable[[bytes, RequestId | None], bool | None]


class ExchangeFailed(Exception):
    """The exchange for a request cannot complete: ``message`` and ``data`` make the
    error response its caller gets."""

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class Failures:
    """Delivers error responses for the transport's requests through ``emit`` (made up)
    or ``deliver`` (a JSON-RPC error body the server sent)."""

    def __init__(self, emit: Emit, deliver: Deliver) -> None:
        self._emit = emit
        self._deliver = deliver

    def fail(self, rid: RequestId, message: str, data: Any = None) -> None:
        """Deliver a synthesized error response (-32603) for request ``rid``."""
        error: dict[str, Any] = {"code": INTERNAL_ERROR, "message": message}
        if data is not None:
            error["data"] = data
        self._emit(encode({"jsonrpc": "2.0", "id": rid, "error": error}))

    def fail_http(self, rid: RequestId, resp: httpx.Response, raw: bytes, what: str = "") -> None:
        """Deliver an error response for request ``rid`` naming ``resp``'s status (after
        ``what``, if given) and quoting the start of its body ``raw``."""
        excerpt = flatten_text(raw[: EXCERPT * 4], EXCERPT)
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
