"""Interactive login: the :class:`RedirectHandler` protocol and :class:`LoopbackRedirect`.

The authorization code flow needs a user agent: the user's browser opens the
authorization URL, logs in and consents, and the authorization server redirects it back
to the client's redirect URI with the code. A :class:`RedirectHandler` is that part:
it names the redirect URI and, given the authorization URL, returns the URL the browser
came back to. :class:`LoopbackRedirect` does it for desktop and command-line programs
(RFC 8252 §7.3): it listens on ``127.0.0.1`` for the one redirect, answers the browser
with a short page, and stops listening.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import socket
import webbrowser
from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable
from urllib.parse import urlsplit

from .errors import OAuthError

__all__ = ["RedirectHandler", "LoopbackRedirect"]

logger = logging.getLogger("mcpkit.auth")

_PAGE = (
    b"<!doctype html><meta charset=utf-8><title>Authorization</title>"
    b"<p>Authorization received. You can close this window and return to the application.</p>"
)
_MAX_REQUEST_LINE = 8192


@runtime_checkable
class RedirectHandler(Protocol):
    """Takes the user through the authorization server's login page and back.

    ``redirect_uri()`` is the URI to register and send (it may start listening);
    ``authorize(url)`` shows ``url`` to the user (opens a browser, prints it, ...) and
    returns the full URL the authorization server redirected back to, query included.
    Cancelling ``authorize`` abandons the login.
    """

    async def redirect_uri(self) -> str:
        """The redirect URI of this handler."""
        ...

    async def authorize(self, authorization_url: str) -> str:
        """Have the user authorize at ``authorization_url``; return the callback URL."""
        ...


#: What LoopbackRedirect does with the authorization URL: open it somewhere.
OpenUrl = Callable[[str], Awaitable[None] | None]


class LoopbackRedirect:
    """A :class:`RedirectHandler` for desktop and CLI programs: the redirect URI is
    ``http://127.0.0.1:{port}{path}``, where it listens for the one request the
    browser makes when the authorization server sends it back.

    ``port=0`` picks a free port once, kept for this object's life; pin a port when the
    authorization server (or your client ID metadata document) lists an exact redirect
    URI. ``open_url(url)`` (sync or async) shows the authorization URL to the user;
    by default the system browser opens it (and the URL is logged on ``mcpkit.auth``).
    ``timeout`` bounds the wait for the user, in seconds; past it :class:`OAuthError`.
    Requests to other paths get 404, and the listener stops after the first callback
    (a request to ``path`` with ``code`` or ``error`` in its query).
    """

    def __init__(
        self,
        *,
        port: int = 0,
        path: str = "/callback",
        open_url: OpenUrl | None = None,
        timeout: float = 300.0,
        host: str = "127.0.0.1",
    ) -> None:
        if not path.startswith("/"):
            raise ValueError("path must start with '/'")
        self.host = host
        self.path = path
        self.timeout = timeout
        self._port = port
        self._open_url = open_url
        self._socket: socket.socket | None = None

    async def redirect_uri(self) -> str:
        """``http://127.0.0.1:{port}{path}``; binds the port on first use. Raises
        ``OSError`` if the port cannot be bound."""
        if self._socket is None:
            sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((self.host, self._port))
                sock.listen(8)
                sock.setblocking(False)
            except OSError:
                sock.close()
                raise
            self._socket = sock
            self._port = sock.getsockname()[1]
        return f"{self._origin()}{self.path}"

    def _origin(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self._port}"

    async def authorize(self, authorization_url: str) -> str:
        """Open ``authorization_url`` and wait (at most ``timeout`` s) for the browser to
        come back; return the callback URL. Raises :class:`OAuthError` on timeout.
        Cancellation stops listening."""
        redirect = await self.redirect_uri()
        assert self._socket is not None
        sock, self._socket = self._socket, None  # the server owns (and closes) it now
        arrived: asyncio.Future[str] = asyncio.get_running_loop().create_future()

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                target = await self._read_target(reader)
                found = target is not None and urlsplit(target).path == self.path and _is_callback(target)
                status = b"200 OK" if found else b"404 Not Found"
                page = _PAGE if found else b"Not found"
                head = f"HTTP/1.1 {status.decode()}\r\nContent-Type: text/html; charset=utf-8\r\n"
                writer.write(head.encode() + f"Content-Length: {len(page)}\r\nConnection: close\r\n\r\n".encode() + page)
                await writer.drain()
                if found and target is not None and not arrived.done():
                    arrived.set_result(self._origin() + target)
            except (OSError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
                pass
            finally:
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()

        server = await asyncio.start_server(serve, sock=sock, limit=_MAX_REQUEST_LINE)
        try:
            await self._show(authorization_url)
            try:
                return await asyncio.wait_for(arrived, self.timeout)
            except TimeoutError:
                raise OAuthError(f"no authorization arrived at {redirect} within {self.timeout:g} s") from None
        finally:
            server.close()
            await server.wait_closed()

    async def _show(self, url: str) -> None:
        if self._open_url is not None:
            result = self._open_url(url)
            if inspect.isawaitable(result):
                await result
            return
        logger.warning("Open this URL to authorize the MCP client: %s", url)
        await asyncio.to_thread(webbrowser.open, url)

    @staticmethod
    async def _read_target(reader: asyncio.StreamReader) -> str | None:
        """The request target of a GET, after reading the request head (bounded)."""
        line = await asyncio.wait_for(reader.readuntil(b"\r\n"), 10)
        parts = line.decode("latin-1").split()
        for _ in range(100):  # the headers, which we do not need
            if await asyncio.wait_for(reader.readuntil(b"\r\n"), 10) == b"\r\n":
                break
        if len(parts) != 3 or parts[0] != "GET" or not parts[1].startswith("/"):
            return None
        return parts[1]


def _is_callback(target: str) -> bool:
    query = urlsplit(target).query
    names = {pair.partition("=")[0] for pair in query.split("&")}
    return "code" in names or "error" in names
