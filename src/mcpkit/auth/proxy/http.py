"""The little HTTP the OAuth proxy's endpoints need, over plain ASGI: a request read
(query, form or JSON body, bounded; cookies) and the responses they give (JSON, an OAuth
error, a redirect, an HTML page), with the headers RFC 6749 asks of token responses
(``Cache-Control: no-store``)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from typing import Any, Final
from urllib.parse import parse_qsl

__all__ = ["Scope", "Receive", "Send", "ProxyRequest", "Response", "read_request", "json_response", "oauth_error",
           "redirect", "html_page", "BadRequest"]  # fmt: skip

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

#: The largest body an endpoint reads (a registration, a form): 64 KiB.
MAX_BODY: Final = 64 * 1024


class BadRequest(Exception):
    """A request the endpoints cannot read: too large, or a body that does not parse."""


@dataclass
class ProxyRequest:
    """One request to the proxy: method, path, its query and form parameters (each
    name once; a repeated one is refused, RFC 6749 §3.1), headers (lower-cased names),
    cookies, and the raw body."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes = b""
    cookies: dict[str, str] = field(default_factory=dict)

    def form(self) -> dict[str, str]:
        """The body as ``application/x-www-form-urlencoded``. Raises :class:`BadRequest`
        for a parameter given twice or a body that is not UTF-8."""
        try:
            return _unique(parse_qsl(self.body.decode(), keep_blank_values=True))
        except UnicodeDecodeError:
            raise BadRequest("the body is not UTF-8") from None

    def json(self) -> Any:
        """The body as JSON. Raises :class:`BadRequest` when it is not, or when it nests
        too deeply to parse."""
        try:
            return json.loads(self.body)
        except ValueError:
            raise BadRequest("the body is not JSON") from None
        except RecursionError:
            raise BadRequest("the body nests too deeply") from None


def _unique(pairs: list[tuple[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in pairs:
        if name in out:
            raise BadRequest(f"the parameter {name} is repeated")
        out[name] = value
    return out


async def read_request(scope: Scope, receive: Receive) -> ProxyRequest:
    """The request of ``scope``, its body read (at most :data:`MAX_BODY` bytes). Raises
    :class:`BadRequest` for a larger body, a repeated query parameter or a query that is
    not UTF-8."""
    headers: dict[str, str] = {}
    for key, value in scope.get("headers", ()):
        name = key.decode("latin-1").lower()
        text = value.decode("latin-1")
        headers[name] = f"{headers[name]}; {text}" if name == "cookie" and name in headers else text
    try:
        query = _unique(parse_qsl(scope.get("query_string", b"").decode(), keep_blank_values=True))
    except UnicodeDecodeError:
        raise BadRequest("the query is not UTF-8") from None
    body = b""
    if scope["method"] == "POST":
        while True:
            message = await receive()
            body += message.get("body", b"")
            if len(body) > MAX_BODY:
                raise BadRequest("the body is too large")
            if not message.get("more_body"):
                break
    cookies: dict[str, str] = {}
    if "cookie" in headers:
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(headers["cookie"])
        except CookieError:
            pass
        cookies = {name: morsel.value for name, morsel in jar.items()}
    return ProxyRequest(scope["method"], scope.get("path", ""), query, headers, body, cookies)


@dataclass
class Response:
    """A response to send: status, headers, body."""

    status: int
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)

    async def send(self, send: Send) -> None:
        headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in self.headers]
        headers.append((b"content-length", str(len(self.body)).encode()))
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": self.body})


_NO_STORE: Final = [("cache-control", "no-store"), ("pragma", "no-cache")]


def json_response(status: int, document: Any, *, cacheable: bool = False) -> Response:
    """``document`` as JSON; ``no-store`` unless ``cacheable`` (metadata)."""
    headers = [("content-type", "application/json")]
    headers += [("cache-control", "max-age=3600"), ("access-control-allow-origin", "*")] if cacheable else _NO_STORE
    return Response(status, json.dumps(document).encode(), headers)


def oauth_error(error: str, description: str, status: int = 400, headers: list[tuple[str, str]] | None = None) -> Response:
    """An OAuth error response (RFC 6749 §5.2): ``{"error", "error_description"}``."""
    response = json_response(status, {"error": error, "error_description": description})
    response.headers += headers or []
    return response


def redirect(location: str, cookies: list[str] | None = None) -> Response:
    """A 302 to ``location``, setting ``cookies`` (``Set-Cookie`` values)."""
    headers = [("location", location), *_NO_STORE]
    headers += [("set-cookie", cookie) for cookie in cookies or []]
    return Response(302, b"", headers)


def html_page(status: int, html: str, cookies: list[str] | None = None) -> Response:
    """An HTML page that no other site may frame (clickjacking), setting ``cookies``."""
    headers = [
        ("content-type", "text/html; charset=utf-8"),
        ("x-frame-options", "DENY"),
        ("content-security-policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"),
        *_NO_STORE,
    ]
    headers += [("set-cookie", cookie) for cookie in cookies or []]
    return Response(status, html.encode(), headers)
