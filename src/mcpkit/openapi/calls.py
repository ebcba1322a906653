"""One call of an operation: the HTTP request built from a call's arguments (path
parameters percent-encoded, query values and arrays as the document's ``explode``
says, headers, cookies, a JSON body), sent with the server's ``httpx.AsyncClient`` and
retried as :class:`Retries` says.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote

import httpx

from .arguments import Arguments
from .operations import Operation

__all__ = ["Retries", "ResponseTooLarge", "BadPathValue", "build_request", "send"]

#: Methods that may be sent twice: an answer lost on the way does no harm when repeated.
IDEMPOTENT: Final = frozenset({"get", "head", "options", "put", "delete", "trace"})


@dataclass(frozen=True)
class Retries:
    """How a failed request is retried: at most ``attempts`` more times, after
    ``backoff`` seconds doubled each time (at most ``max_delay``; a ``Retry-After`` of
    at most ``max_delay`` is honoured instead). A request that could not be sent (no
    connection) is retried whatever its method; one answered with a status of
    ``statuses``, or whose answer was lost (a timeout, a dropped connection), only for
    an idempotent method (GET, HEAD, OPTIONS, PUT, DELETE). Raises ``ValueError`` for
    negative numbers."""

    attempts: int = 2
    backoff: float = 0.25
    max_delay: float = 10.0
    statuses: frozenset[int] = frozenset({429, 502, 503, 504})

    def __post_init__(self) -> None:
        if self.attempts < 0 or self.backoff < 0 or self.max_delay < 0:
            raise ValueError("retries, backoff and max_delay cannot be negative")

    def delay(self, attempt: int, response: httpx.Response | None) -> float:
        """How long to wait before retry number ``attempt`` (from 0)."""
        wait: float = min(self.max_delay, self.backoff * (2**attempt))
        header: str | None = response.headers.get("retry-after") if response is not None else None
        if header:
            asked = _retry_after(header)
            if asked is not None and asked <= self.max_delay:
                wait = max(0.0, asked)
        return wait


class ResponseTooLarge(Exception):
    """The API answered with more bytes than the server takes (``max_response_bytes``)."""


class BadPathValue(ValueError):
    """A path parameter's value that would not stay one segment of the operation's path:
    empty, ``.`` or ``..`` (a client normalizes ``/items/..`` to ``/``, so the call
    would reach another operation)."""


def _retry_after(value: str) -> float | None:
    if value.strip().isdigit():
        return float(value.strip())
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return float(when.timestamp() - time.time())


def build_request(client: httpx.AsyncClient, op: Operation, args: Arguments, arguments: Mapping[str, Any]) -> httpx.Request:
    """The request for one call of ``op`` with ``arguments`` (validated against
    ``args.schema``). Raises :class:`BadPathValue` for a path parameter that is empty,
    ``.`` or ``..``."""
    parts = args.split(arguments)
    path = op.path
    for name, value in parts.path.items():
        segment = quote(_text(value), safe="")
        if segment in ("", ".", ".."):
            raise BadPathValue(f"the path parameter {name!r} cannot be {_text(value)!r}: it must name one path segment")
        path = path.replace("{" + name + "}", segment)
    explode = {p.name: p.explode for p in op.parameters if p.location == "query"}
    query: list[tuple[str, str | int | float | bool | None]] = []
    for name, value in parts.query.items():
        if value is None:
            continue
        if isinstance(value, list):
            if explode.get(name, True):
                query.extend((name, _text(v)) for v in value)
            else:
                query.append((name, ",".join(_text(v) for v in value)))
        else:
            query.append((name, _text(value)))
    headers = {name: _text(value) for name, value in parts.header.items() if value is not None}
    cookies = "; ".join(f"{name}={quote(_text(v), safe='')}" for name, v in parts.cookie.items() if v is not None)
    if cookies:
        headers["cookie"] = cookies
    content = None
    if parts.has_body:
        content = json.dumps(parts.body, ensure_ascii=False, separators=(",", ":")).encode()
        headers["content-type"] = op.body.media_type if op.body is not None else "application/json"
    # relative to the client's base URL, path included (httpx joins them)
    return client.build_request(op.method.upper(), path, params=query, headers=headers, content=content)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


async def send(
    client: httpx.AsyncClient, request: httpx.Request, method: str, retries: Retries, limit: int
) -> tuple[httpx.Response, bytes]:
    """Send ``request``, retrying as ``retries`` says; the response and its body (at
    most ``limit`` bytes). Raises the last ``httpx.TransportError`` when no attempt got
    an answer, :class:`ResponseTooLarge` past ``limit``. Cancellation cancels the request
    in flight (or the wait between attempts) and propagates."""
    idempotent = method in IDEMPOTENT
    attempt = 0
    while True:
        answer: httpx.Response | None = None
        try:
            answer = await client.send(request, stream=True)
        except (httpx.ConnectError, httpx.ConnectTimeout):
            if attempt >= retries.attempts:
                raise
        except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError):
            if not idempotent or attempt >= retries.attempts:
                raise
        if answer is not None:
            if not (idempotent and answer.status_code in retries.statuses and attempt < retries.attempts):
                try:
                    return answer, await _read(answer, limit)
                finally:
                    await answer.aclose()
            await answer.aclose()
        await asyncio.sleep(retries.delay(attempt, answer))
        attempt += 1


async def _read(response: httpx.Response, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise ResponseTooLarge(f"the API's answer is larger than {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)
