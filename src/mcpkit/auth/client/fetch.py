"""The OAuth client's own HTTP requests: metadata, registration and token requests.

Every request has a timeout (the flow's ``timeout``), follows no redirect, and reads at
most :data:`MAX_BODY` bytes of a response; a JSON body must be an object. Before it is
sent its URL is vetted (``vet``: the flow's target policy, ``targets.py``), and when the
policy checked an address the request goes to that address, the URL's host kept in the
``Host`` header and for TLS (server name and certificate check). A server that cannot be
reached, or is too slow, raises :class:`~.errors.OAuthError` naming what was being
fetched and from where, so an authorization server that is down gives a clear error
instead of a hang. httpx is imported by the caller (``flow.py``), lazily.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from .errors import OAuthError, quote

if TYPE_CHECKING:
    import httpx

__all__ = ["Fetcher", "Reply", "Vet", "MAX_BODY"]

#: The most of a response body that is read (metadata documents and token responses are small).
MAX_BODY = 256 * 1024

#: Vets a URL before the client goes there: ``vet(url, what)`` returns the address to
#: connect to (None: by name), or raises :class:`OAuthError` to refuse it.
Vet = Callable[[str, str], Awaitable[str | None]]


async def _anywhere(url: str, what: str) -> str | None:
    return None


class Reply:
    """A response the client read: ``status``, the JSON object of its body (None if the
    body is not a JSON object), and its headers."""

    def __init__(self, status: int, body: dict[str, Any] | None, headers: httpx.Headers) -> None:
        self.status = status
        self.body = body
        self.headers = headers

    def describe(self) -> str:
        """``HTTP 400 (invalid_grant: the code expired)``: the status and the OAuth error
        the body names, bounded, for messages."""
        error = self.body.get("error") if self.body else None
        if not isinstance(error, str):
            return f"HTTP {self.status}"
        text = f"{error}: {self.body.get('error_description')}" if self.body and self.body.get("error_description") else error
        return f"HTTP {self.status} ({quote(text)})"


class Fetcher:
    """Sends the flow's requests with ``client`` (an ``httpx.AsyncClient`` the caller
    owns), each URL vetted by ``vet`` first (default: any URL, by name)."""

    def __init__(self, client: httpx.AsyncClient, timeout: float, vet: Vet = _anywhere) -> None:
        self._client = client
        self._timeout = timeout
        self.vet = vet

    async def request(
        self,
        method: str,
        url: str,
        what: str,
        *,
        data: dict[str, str] | None = None,
        json_body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        """Send one request and read its reply. Raises :class:`OAuthError` if the URL is
        refused, the server cannot be reached, times out, or sends more than
        :data:`MAX_BODY` bytes. Cancellation closes the response."""
        import httpx

        address = await self.vet(url, what)
        sent = {"Accept": "application/json", **(headers or {})}
        target, extensions = url, {}
        if address is not None:
            target, host = _to_address(url, address)
            sent["Host"] = host
            if urlsplit(url).scheme.lower() == "https":
                extensions["sni_hostname"] = urlsplit(url).hostname or ""
        try:
            async with self._client.stream(
                method,
                target,
                data=data,
                json=json_body,
                headers=sent,
                timeout=self._timeout,
                follow_redirects=False,
                auth=None,
                extensions=extensions,
            ) as resp:
                raw = bytearray()
                async for chunk in resp.aiter_bytes():
                    raw += chunk
                    if len(raw) > MAX_BODY:
                        raise OAuthError(f"the {what} at {quote(url)} is larger than {MAX_BODY} bytes", status=resp.status_code)
                return Reply(resp.status_code, _json_object(bytes(raw)), resp.headers)
        except httpx.TimeoutException:
            raise OAuthError(f"the {what} at {quote(url)} did not answer within {self._timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise OAuthError(f"could not reach the {what} at {quote(url)}: {type(exc).__name__}") from None

    async def get_json(self, url: str, what: str) -> Reply:
        """GET a JSON document (see :meth:`request`)."""
        return await self.request("GET", url, what)


def _to_address(url: str, address: str) -> tuple[str, str]:
    """``url`` with its host replaced by the IP ``address``, and the ``Host`` header the
    original URL implies (``host[:port]``)."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    literal = f"[{address}]" if ":" in address else address
    netloc = literal if parts.port is None else f"{literal}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, "")), host


def _json_object(raw: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None
