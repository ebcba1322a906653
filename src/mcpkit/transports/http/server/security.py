"""DNS-rebinding protection: which ``Host`` and ``Origin`` headers the app accepts, as a
middleware (:class:`HostOriginGuard`) in front of everything the app serves — the MCP
endpoint, the deprecated HTTP+SSE endpoints, the authorization metadata at
``/.well-known/``, and (through :class:`~.health.Health`, which asks the guard) the
health probes.

The rules (docs/http.md, "Security"): explicit ``allowed_hosts`` / ``allowed_origins``
lists win; otherwise, when protection is on (by default: when the app is served on a
loopback address), both must name a loopback host; with protection off, an ``Origin``
must match ``Host``. A request that breaks them is refused 403 before anything below the
guard sees it. A deployment whose probes cannot send an allowed ``Host`` (a load
balancer checking a node by its address) lists them in ``probe_hosts``
(:class:`HostList`: names, IP networks, or ``*``), which the health endpoints accept
besides.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Awaitable, Sequence

from .asgi import ASGIApp, Headers, Receive, Reject, Scope, Send, request_headers

__all__ = ["HostOriginGuard", "HostList"]


@functools.lru_cache(maxsize=256)  # bounded: the host comes from a header anyone can send
def _loopback(host: str) -> bool:
    """Whether ``host`` (a name or an IP literal, IPv6 with or without brackets) is a
    loopback host. Cached: every request asks it of the same few hosts."""
    bare = _unbracketed(host)
    if bare is None:
        return False
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        return host == "localhost"


def _unbracketed(host: str) -> str | None:
    """``host`` without the brackets of an IPv6 literal; None for half a pair (no host)."""
    bracketed = host.startswith("[")
    if bracketed != host.endswith("]"):
        return None
    return host[1:-1] if bracketed else host


def _host_name(host_header: str) -> str:
    """A ``Host`` value without its port (IPv6 literals keep their brackets). A value that
    is not ``host``, ``host:port`` or ``[v6]``/``[v6]:port`` with a decimal port (or none
    after the colon) is returned whole: it then names no host any rule allows
    (``[::1]x]`` and ``127.0.0.1:80x`` are not loopback)."""
    if host_header.startswith("["):
        end = host_header.find("]")
        rest = host_header[end + 1 :]
        if end < 0 or not (rest == "" or (rest[0] == ":" and _port(rest[1:]))):
            return host_header
        return host_header[: end + 1]
    if host_header.count(":") != 1:
        return host_header
    name, port = host_header.split(":")
    return name if _port(port) else host_header


def _port(text: str) -> bool:
    """Whether ``text`` is a port as a ``Host`` writes it: ASCII digits, or nothing."""
    return text == "" or (text.isascii() and text.isdigit())


class HostList:
    """``Host`` values to accept: each entry a host name or IP literal (with a port, only
    that port; without, any), an IP network in CIDR notation (``10.0.0.0/8``: any host
    whose address is in it), or ``*`` (any ``Host``, or none). Names compare
    case-insensitively. Raises ``ValueError`` for an entry that is empty or a malformed
    network."""

    def __init__(self, entries: Sequence[str]) -> None:
        if isinstance(entries, str):
            raise ValueError("probe_hosts must be a list of hosts, not one string")
        self.any = False
        self._names: set[str] = set()
        self._networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for entry in entries:
            value = entry.strip().lower()
            if not value:
                raise ValueError("an empty entry in probe_hosts")
            if value == "*":
                self.any = True
            elif "/" in value:
                self._networks.append(ipaddress.ip_network(value.strip("[]"), strict=False))
            else:
                self._names.add(value)

    def __contains__(self, host: object) -> bool:
        """Whether ``host`` (a ``Host`` header's value, lower-cased) is listed."""
        if self.any:
            return True
        if not isinstance(host, str) or not host:
            return False
        name = _host_name(host)
        if host in self._names or name in self._names:
            return True
        bare = _unbracketed(name)
        if self._networks and bare is not None:
            try:
                address = ipaddress.ip_address(bare)
            except ValueError:
                return False
            return any(address in network for network in self._networks)
        return False


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

    def check(self, scope: Scope, headers: Headers, also: HostList | None = None) -> None:
        """Raises :class:`Reject` (403) if the request's ``Host`` or ``Origin`` is not
        allowed; a ``Host`` in ``also`` is allowed besides (the ``Origin`` rules stay)."""
        protect = self.protection
        if protect is None:
            bound = scope.get("server")
            protect = _loopback(str(bound[0])) if bound else False
        host = headers.get("host", "").lower()
        if also is None or host not in also:
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
