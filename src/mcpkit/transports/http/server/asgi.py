"""ASGI plumbing of the Streamable HTTP server: the callable types, the HTTP-level
refusal (:class:`Reject`), writing plain responses, and reading a request body.

Nothing here knows JSON-RPC beyond encoding an error response; nothing here knows the
protocol eras. The statuses and text bodies of refusals are listed in docs/http.md
("HTTP status codes").
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from typing import Any, Final

from ....protocol.engine import encode
from ....protocol.errors import McpError
from ....protocol.events import RequestId

__all__ = [
    "Scope",
    "Message",
    "Receive",
    "Send",
    "Headers",
    "SSE_HEADERS",
    "Reject",
    "ClientDisconnected",
    "json_error",
    "accepts",
    "read_body",
    "safe_send",
    "send_json",
    "send_empty",
    "send_reject",
    "start_sse",
    "send_frame",
    "end_body",
    "wait_disconnect",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
#: Request headers, names lower-cased (the last of repeated headers wins).
Headers = Mapping[str, str]

SSE_HEADERS: Final = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
]


class Reject(Exception):
    """An HTTP-level refusal: a status with a one-line text body, or with ``body``
    (a JSON-RPC error response) sent as ``application/json``."""

    def __init__(self, status: int, text: str, headers: Sequence[tuple[bytes, bytes]] = (), body: bytes | None = None) -> None:
        super().__init__(text)
        self.status = status
        self.text = text
        self.headers = list(headers)
        self.body = body


class ClientDisconnected(Exception):
    """The client went away before its request body was complete."""


def json_error(rid: RequestId | None, error: McpError) -> bytes:
    """A JSON-RPC error response to request ``rid``."""
    return encode({"jsonrpc": "2.0", "id": rid, "error": error.to_wire()})


def accepts(accept: str, kind: str) -> bool:
    """Whether an ``Accept`` header value allows media type ``kind`` (wildcards
    included; quality values are not weighed)."""
    major = kind.split("/")[0]
    for part in accept.split(","):
        media = part.split(";")[0].strip().lower()
        if media in (kind, f"{major}/*", "*/*"):
            return True
    return False


async def read_body(receive: Receive, headers: Headers, limit: int, timeout: float | None = None) -> bytes:
    """The whole request body, refused as soon as it is known to exceed ``limit`` bytes
    (from ``Content-Length``, else while reading: never buffered whole), or if it has not
    all arrived within ``timeout`` seconds (None: no limit).

    Raises :class:`Reject` (413) for a body over the limit, :class:`Reject` (408, with
    ``Connection: close``) for one too slow, :class:`ClientDisconnected` if the client
    goes away first. Cancellation propagates; nothing is kept.
    """
    declared = headers.get("content-length")
    # ASCII digits only, and a length test before int(): no ValueError for a hostile value.
    if declared is not None and declared.isascii() and declared.isdigit() and (len(declared) > 18 or int(declared) > limit):
        raise Reject(413, f"Payload Too Large: the limit is {limit} bytes")
    if timeout is None:
        return await _read_all(receive, limit)
    try:
        async with asyncio.timeout(timeout):
            return await _read_all(receive, limit)
    except TimeoutError:
        raise Reject(408, "Request Timeout: the body did not arrive in time", [(b"connection", b"close")]) from None


async def _read_all(receive: Receive, limit: int) -> bytes:
    """The body's chunks joined; raises like :func:`read_body`."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnected
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise Reject(413, f"Payload Too Large: the limit is {limit} bytes")
        parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts)


async def wait_disconnect(receive: Receive) -> None:
    """Return when the client disconnects (whatever else it sends is ignored)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


async def safe_send(send: Send, message: Message) -> None:
    """ASGI send that tolerates a client that already went away."""
    try:
        await send(message)
    except (OSError, RuntimeError):
        pass


async def send_json(send: Send, status: int, body: bytes, extra: Sequence[tuple[bytes, bytes]] = ()) -> None:
    """A complete ``application/json`` response."""
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *extra]
    await safe_send(send, {"type": "http.response.start", "status": status, "headers": headers})
    await safe_send(send, {"type": "http.response.body", "body": body})


async def send_empty(send: Send, status: int, extra: Sequence[tuple[bytes, bytes]] = ()) -> None:
    """A complete response without a body."""
    headers = [(b"content-length", b"0"), *extra]
    await safe_send(send, {"type": "http.response.start", "status": status, "headers": headers})
    await safe_send(send, {"type": "http.response.body", "body": b""})


async def send_reject(send: Send, rej: Reject) -> None:
    """The response of a :class:`Reject`."""
    if rej.body is not None:
        body, ctype = rej.body, b"application/json"
    else:
        body, ctype = rej.text.encode() + b"\n", b"text/plain; charset=utf-8"
    headers = [(b"content-type", ctype), (b"content-length", str(len(body)).encode()), *rej.headers]
    await safe_send(send, {"type": "http.response.start", "status": rej.status, "headers": headers})
    await safe_send(send, {"type": "http.response.body", "body": body})


async def start_sse(send: Send) -> None:
    """Start a 200 ``text/event-stream`` response; its body follows in frames."""
    await safe_send(send, {"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})


async def send_frame(send: Send, frame: bytes) -> None:
    """Write part of a streamed body (SSE events or a comment); more follows."""
    await safe_send(send, {"type": "http.response.body", "body": frame, "more_body": True})


async def end_body(send: Send, last: bytes = b"") -> None:
    """End a streamed body, with ``last`` as its final part."""
    await safe_send(send, {"type": "http.response.body", "body": last, "more_body": False})
