"""DNS-rebinding protection: which ``Host`` and ``Origin`` headers the endpoint accepts,
as a middleware (:class:`HostOriginGuard`) in front of the MCP endpoint and the
deprecated HTTP+SSE endpoints alike.

The rules (docs/http.md, "Security"): explicit ``allowed_hosts`` / ``allowed_origins``
lists win; otherwise, when protection is on (by default: when the app is served on a
loopback address), both must name a loopback host; with protection off, an ``Origin``
must match ``Host``. A request that breaks them is refused 403 before anything below the
guard sees it; the app's health endpoints and authorization metadata sit in front of it
and need no particular ``Host``.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Awaitable, Sequence

from .asgi import ASGIApp, Headers, Receive, Reject, Scope, Send, request_headers

__all__ = ["HostOriginGuard"]


@functools.lru_cache(maxsize=256)  # bounded: the host comes from a header anyone can send
def _loopback(host: str) -> bool:
    """Whether ``host`` (a name or an IP literal, IPv6 with or without brackets) is a
    loopback host. Cached: every request asks it of the same few hosts."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


def _host_name(host_header: str) -> str:
    """A ``Host`` value without its port (IPv6 literals keep their brackets)."""
    if host_header.startswith("["):
        return host_header[: host_header.find("]") + 1]
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header


class HostOriginGuard:
    """Middleware that checks each request's ``Host`` and ``Origin`` against the
    configured rules before calling ``app``.

    ``allowed_hosts`` entries are compared case-insensitively, with or without a port;
    ``allowed_origins`` entries case-insensitively and without a trailing slash.
    ``protection`` None means on exactly when the ASGI server reports a loopback bind.
    Raises :class:`Reject` (403) for a request they refuse.
    """

    def __init__(
        self,
        app: ASGIApp,
        allowed_hosts: Sequence[str] | None,
        allowed_origins: Sequence[str] | None,
        protection: bool | None,
    ) -> None:
        self.app = app
        self.allowed_hosts = [h.lower() for h in allowed_hosts] if allowed_hosts is not None else None
        self.allowed_origins = [o.lower().rstrip("/") for o in allowed_origins] if allowed_origins is not None else None
        self.protection = protection

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        self.check(scope, request_headers(scope))
        return self.app(scope, receive, send)

    def check(self, scope: Scope, headers: Headers) -> None:
        """Raises :class:`Reject` (403) if the request's ``Host`` or ``Origin`` is not allowed."""
        protect = self.protection
        if protect is None:
            bound = scope.get("server")
            protect = _loopback(str(bound[0])) if bound else False
        host = headers.get("host", "").lower()
        self._check_host(host, protect)
        origin = headers.get("origin", "").lower().rstrip("/")
        if origin:
            self._check_origin(origin, host, protect)

    def _check_host(self, host: str, protect: bool) -> None:
        if self.allowed_hosts is not None:
            if host not in self.allowed_hosts and _host_name(host) not in self.allowed_hosts:
                raise Reject(403, "Forbidden: Host not allowed")
        elif protect and host and not _loopback(_host_name(host)):
            raise Reject(403, "Forbidden: Host not allowed")

    def _check_origin(self, origin: str, host: str, protect: bool) -> None:
        origin_host = origin.split("://", 1)[-1]
        if self.allowed_origins is not None:
            allowed = origin in self.allowed_origins
        elif protect:
            allowed = _loopback(_host_name(origin_host))
        else:
            allowed = origin_host == host
        if not allowed:
            raise Reject(403, "Forbidden: Origin not allowed")
