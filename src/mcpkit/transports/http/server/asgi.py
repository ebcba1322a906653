"""ASGI plumbing of the Streamable HTTP server: the callable types, the HTTP-level
refusal (:class:`Reject`) and the middleware that answers it (:class:`Refusals`),
the request's headers and path as every layer reads them, the app's paths
(:class:`Paths`), writing plain responses, and reading a request body.

The app is a stack of small ASGI middleware around the MCP endpoint (``transports/http/
app.py`` builds it): each layer checks one thing and either answers, raises
:class:`Reject`, or calls the app it wraps. A layer that only checks (and may raise)
before passing the request on is a plain function returning what the app it wraps
returns, not a coroutine of its own: every request crosses the whole stack, and each
coroutine layer is one more frame to create and to resume at every wait. (The outermost
app, which ASGI servers inspect, stays an ``async def``.) A :class:`Reject` raised anywhere below
:class:`Refusals` becomes its plain response there — a status with a one-line text body
(or a JSON-RPC error body), before any JSON-RPC parsing when it comes from a check — and
any other exception a logged 500 with a JSON-RPC -32603 body, never the ASGI server's
traceback. No body says why something failed inside the server: exception text and
internal addresses go to the log, under a reference id the response carries
(:func:`withheld`, and the 500's ``data``). The headers are decoded once per request (:func:`request_headers`, kept in
the scope) whichever layers read them.

Nothing here knows JSON-RPC beyond encoding an error response; nothing here knows the
protocol eras. The statuses and text bodies of refusals are listed in docs/http.md
("HTTP status codes").
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Awaitable, Callable, Collection, Mapping, MutableMapping, Sequence
from typing import Any, Final

from ....protocol.engine import encode
from ....protocol.errors import INTERNAL_ERROR, McpError
from ....protocol.events import RequestId

__all__ = [
    "Scope",
    "Message",
    "Receive",
    "Send",
    "ASGIApp",
    "Headers",
    "SSE_HEADERS",
    "Reject",
    "Refusals",
    "withheld",
    "under_reference",
    "Paths",
    "ClientDisconnected",
    "request_headers",
    "local_path",
    "json_error",
    "accepts",
    "accepts_json_and_sse",
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
#: An ASGI application (or middleware, which is one wrapping another).
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
#: Request headers, names lower-cased (the last of repeated headers wins).
Headers = Mapping[str, str]

_log = logging.getLogger("mcpkit.http")
#: Where :func:`request_headers` keeps a request's decoded headers in its scope.
_HEADERS_KEY: Final = "mcpkit.headers"
#: Header names as :func:`request_headers` gives them, by their bytes: the same few on
#: every request. Bounded (names come from clients): past the bound, names are decoded.
_NAMES: dict[bytes, str] = {}
_MAX_NAMES: Final = 256

_JSON: Final = (b"content-type", b"application/json")

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


class Refusals:
    """Middleware that answers what the layers below it refuse: a :class:`Reject` with
    its response, any other exception (logged) with 500 and a JSON-RPC -32603 body. If
    the response had started, the ASGI server refuses the second one (:func:`safe_send`
    ignores that). Scopes other than ``http`` pass through untouched. Cancellation
    propagates."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            await self.app(scope, receive, send)
        except Reject as rej:
            await send_reject(send, rej)
        except Exception:  # the last resort: never uvicorn's plain-text 500 and traceback
            ref = _reference()
            _log.exception("unexpected error serving %s %s (reference %s)", scope.get("method"), scope.get("path"), ref)
            await send_json(send, 500, json_error(None, McpError(INTERNAL_ERROR, "Internal error", {"reference": ref})))


def _reference() -> str:
    """A fresh reference id: what a client quotes to find a failure in the server's log."""
    return os.urandom(6).hex()


def under_reference(what: str, cause: BaseException | str, *, level: int = logging.WARNING) -> str:
    """Log ``cause`` — an exception or its text, which may name files, addresses or
    secrets — under a fresh reference id, at ``level`` (with its traceback from ERROR
    up); returns what a client may be told instead: ``"<what> (reference 3f2a...)"``."""
    ref = _reference()
    traceback = cause if isinstance(cause, BaseException) and level >= logging.ERROR else None
    _log.log(level, "%s (reference %s): %s", what, ref, cause, exc_info=traceback)
    return f"{what} (reference {ref})"


def withheld(
    status: int,
    what: str,
    cause: BaseException | str,
    headers: Sequence[tuple[bytes, bytes]] = (),
    *,
    level: int = logging.WARNING,
) -> Reject:
    """A refusal that tells the client only ``what`` failed and a reference id
    (``"Service Unavailable: <what> (reference 3f2a...)"``); ``cause`` is logged under
    that id (:func:`under_reference`)."""
    phrase = {503: "Service Unavailable", 500: "Internal Server Error"}.get(status, "Error")
    return Reject(status, f"{phrase}: {under_reference(what, cause, level=level)}", headers)


class Paths:
    """Middleware that lets through only requests for ``paths`` (as :func:`local_path`
    gives them: below any ``root_path``, a trailing slash not mattering); ``paths`` None
    lets every path through (an app mounted by a host that routes). Raises
    :class:`Reject` (404) for another path."""

    def __init__(self, app: ASGIApp, paths: Collection[str] | None) -> None:
        self.app = app
        self.paths = frozenset(paths) if paths is not None else None

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        if self.paths is not None and local_path(scope) not in self.paths:
            raise Reject(404, "Not Found")
        return self.app(scope, receive, send)


def request_headers(scope: Scope) -> Headers:
    """The request's headers: names lower-cased, values without their surrounding
    whitespace (RFC 9110 5.5: h11 strips it, httptools does not, and other ASGI servers
    differ). Decoded once, at the first layer that asks, and kept in ``scope``."""
    headers: Headers | None = scope.get(_HEADERS_KEY)
    if headers is None:
        names = _NAMES
        decoded: dict[str, str] = {}
        for k, v in scope.get("headers", ()):
            name = names.get(k) if type(k) is bytes else None
            if name is None:
                name = k.decode("latin-1").lower()
                if type(k) is bytes and len(names) < _MAX_NAMES:
                    names[k] = name
            decoded[name] = v.decode("latin-1").strip(" \t")
        headers = scope[_HEADERS_KEY] = decoded
    return headers


def local_path(scope: Scope) -> str:
    """The request's path below the ``root_path`` it is mounted at, without a trailing
    slash (``/`` for the root)."""
    path: str = scope.get("path", "")
    root: str = scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root) :]
    return path.rstrip("/") or "/"


def json_error(rid: RequestId | None, error: McpError) -> bytes:
    """A JSON-RPC error response to request ``rid``."""
    return encode({"jsonrpc": "2.0", "id": rid, "error": error.to_wire()})


@functools.lru_cache(maxsize=256)  # bounded: the value comes from a header anyone can send
def accepts_json_and_sse(accept: str) -> bool:
    """Whether an ``Accept`` header value allows both JSON and SSE (what a POST needs).
    Cached: clients send the same value on every request."""
    return accepts(accept, "application/json") and accepts(accept, "text/event-stream")


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
    """A complete ``application/json`` response (each message sent as :func:`safe_send`
    does, written out here: this is every JSON answer's path)."""
    headers = [_JSON, (b"content-length", b"%d" % len(body)), *extra]
    try:
        await send({"type": "http.response.start", "status": status, "headers": headers})
    except (OSError, RuntimeError):
        pass
    try:
        await send({"type": "http.response.body", "body": body})
    except (OSError, RuntimeError):
        pass


async def send_empty(send: Send, status: int, extra: Sequence[tuple[bytes, bytes]] = ()) -> None:
    """A complete response without a body (sent as :func:`send_json` sends)."""
    headers = [(b"content-length", b"0"), *extra]
    try:
        await send({"type": "http.response.start", "status": status, "headers": headers})
    except (OSError, RuntimeError):
        pass
    try:
        await send({"type": "http.response.body", "body": b""})
    except (OSError, RuntimeError):
        pass


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
