"""One HTTP exchange with the server: start it, read a bounded body, tell its content type.

Connecting is bounded by ``connect_timeout``; reading a response is not (a request's
deadline is the client's business, docs/http.md). A server that cannot be reached raises
:class:`Lost`: the connection as a whole is over (the client reconnects, or ends). One
that drops the connection of an exchange before answering raises :class:`Dropped`: that
exchange is over, and nothing is known of the others (a kept-alive connection that died
with the node behind a load balancer, say). httpx is imported here, lazily, when the
transport starts, and so is the connection pool (``pool.py``) built on it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from .settings import Settings

if TYPE_CHECKING:
    import httpx

__all__ = ["Lost", "Dropped", "HttpExchange", "content_type", "broke"]

logger = logging.getLogger("mcpkit.http")
_httpx_log = logging.getLogger("httpx")


class Lost(Exception):
    """The server could not be reached: the connection as a whole is over."""


class Dropped(Lost):
    """The connection of one exchange broke before its response was complete (reset,
    closed, or a kept-alive connection that had died): that request's outcome is
    unknown, but the server may well be there. A part that cannot tell one exchange from
    the connection (the legacy GET stream, a notification) handles it as :class:`Lost`."""


def broke(resp: httpx.Response) -> bool:
    """Whether reading ``resp``'s body to its end was stopped by a transport error
    (httpx closes a response itself only once its body was read to the end)."""
    return not resp.is_closed


def content_type(resp: httpx.Response) -> str:
    """The media type of a response, lowercased, without parameters ("" if none)."""
    return str(resp.headers.get("content-type", "")).partition(";")[0].strip().lower()


class HttpExchange:
    """The transport's ``httpx.AsyncClient`` (given, or created at :meth:`open` and
    closed by :meth:`aclose`) and the ways it is used."""

    def __init__(self, settings: Settings, client: httpx.AsyncClient | None) -> None:
        self._settings = settings
        self._client = client
        self._owns_client = client is None
        self._timeout: Any = None
        self._url: Any = None  # the settings' url, parsed (an httpx.URL)
        self._url_text: str | None = None  # ... from this string
        self._pool: Any = None  # our own client's ConnectionPool, if it has one
        self._defaults: list[tuple[str, str, str]] = []  # ... and its default headers: (lowercased, name, value)
        self._timeouts: dict[str, float | None] = {}  # the default timeout, as a request's extension

    def open(self) -> None:
        """Import httpx and create the client if none was given: on mcpkit's own
        connection pool (``pool.py``), unless the environment names a proxy, which httpx's
        own transport honours. Connects lazily."""
        from urllib.request import getproxies  # httpx imports it too

        import httpx

        from .pool import ConnectionPool  # imports httpx

        self._timeout = httpx.Timeout(self._settings.connect_timeout, read=None, write=None, pool=None)
        self._timeouts = self._timeout.as_dict()
        if self._client is None:
            self._pool = None if getproxies() else ConnectionPool()
            self._client = httpx.AsyncClient(timeout=self._timeout, follow_redirects=False, transport=self._pool)
            raw = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in self._client.headers.raw]
            self._defaults = [(name.lower(), name, value) for name, value in raw]

    def _auth(self) -> Any:
        """The transport's ``auth``, else the client's own default."""
        import httpx

        return self._settings.auth if self._settings.auth is not None else httpx.USE_CLIENT_DEFAULT

    async def send(self, verb: str, headers: dict[str, str], body: bytes | None = None, timeout: Any = None) -> httpx.Response:
        """Start an exchange and return the response with its body unread (the caller
        closes it). A body is sent as ``application/json`` (added to ``headers``).
        Raises :class:`Lost` if the server cannot be reached, :class:`Dropped` if the
        connection breaks before the response starts, ``httpx.TimeoutException`` if it
        is too slow to answer."""
        import httpx

        assert self._client is not None
        if body is not None:
            headers["Content-Type"] = "application/json"
        url = self._settings.url
        if url is not self._url_text:  # parsed once, not per request
            self._url, self._url_text = httpx.URL(url), url
        try:
            # direct unless httpx's auth layer has something to do: an ``auth``, or a URL's
            # credentials (which AsyncClient.send sends as Basic auth)
            if self._pool is not None and self._settings.auth is None and not self._url.userinfo:
                return await self._send_direct(verb, headers, body, timeout)
            request = self._client.build_request(verb, self._url, content=body, headers=headers, timeout=timeout or self._timeout)
            return await self._client.send(request, stream=True, auth=self._auth())
        except httpx.TransportError as exc:
            if isinstance(exc, httpx.TimeoutException) and not isinstance(exc, httpx.ConnectTimeout):
                raise  # slow, not gone: this exchange fails, the connection does not
            what = f"{verb} {url} failed: {type(exc).__name__}: {exc}".rstrip(": ")
            if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.UnsupportedProtocol)):
                raise Lost(what) from None  # nobody there
            raise Dropped(what) from None  # reset, or a kept-alive connection that was dead

    async def _send_direct(self, verb: str, headers: dict[str, str], body: bytes | None, timeout: Any) -> httpx.Response:
        """:meth:`send` through our own client's pool, without the client's per-request
        layers that have nothing to do here (no auth, no redirects, no event hooks, no
        proxy: ``open`` made it so): the same request (the client's default headers
        under ours, its cookies) and the response's cookies kept, as the client would."""
        import httpx

        assert self._client is not None
        ours = {name.lower() for name in headers}
        merged = [(name, value) for low, name, value in self._defaults if low not in ours]
        merged.extend(headers.items())
        timeouts = self._timeouts if timeout is None else httpx.Timeout(timeout).as_dict()
        request = httpx.Request(verb, self._url, content=body, headers=merged, extensions={"timeout": timeouts})
        cookies = self._client.cookies
        if cookies:
            cookies.set_cookie_header(request)
        resp: httpx.Response = await self._pool.handle_async_request(request)
        resp.request = request
        if "set-cookie" in resp.headers:
            cookies.extract_cookies(resp)
        if _httpx_log.isEnabledFor(logging.INFO):  # the line httpx's client logs for each request
            _httpx_log.info(
                'HTTP Request: %s %s "%s %d %s"', verb, request.url, resp.http_version, resp.status_code, resp.reason_phrase
            )
        return resp

    async def read(self, resp: httpx.Response, limit: int) -> tuple[bytes, bool]:
        """Up to ``limit`` bytes of the body, and whether that is all of it (False too
        when the connection broke while reading). Reading stops at the first chunk past
        ``limit``, and nothing past it is kept. Never raises an HTTP error; cancellation
        propagates (the caller closes ``resp``)."""
        import httpx

        parts: list[bytes] = []
        size = 0
        try:
            async for chunk in resp.aiter_bytes():
                if len(chunk) > limit - size:
                    parts.append(chunk[: limit - size])
                    return b"".join(parts), False
                parts.append(chunk)
                size += len(chunk)
        except httpx.HTTPError:
            return b"".join(parts), False
        return b"".join(parts), True

    async def delete(self, headers: dict[str, str], timeout: float) -> None:
        """DELETE the URL, waiting at most ``timeout`` seconds; any failure is logged
        and ignored. Nothing is sent if the transport never started."""
        if self._client is None:
            return
        try:
            delete = self._client.delete(self._settings.url, headers=headers, timeout=timeout, auth=self._auth())
            await asyncio.wait_for(delete, timeout)
        except Exception as exc:
            logger.debug("DELETE of the session failed: %r", exc)

    async def aclose(self) -> None:
        """Close the client if it was created here; failures are logged, not raised."""
        if self._owns_client and self._client is not None:
            try:
                await self._client.aclose()
            except Exception:
                logger.debug("closing the HTTP client failed", exc_info=True)

    async def renew(self) -> None:
        """Before starting again after a lost connection: close the client if it was
        created here, so that :meth:`open` makes a new one (with none of the old pool's
        dead connections). A client that was given is kept."""
        if self._owns_client and self._client is not None:
            await self.aclose()
            self._client = self._pool = None
