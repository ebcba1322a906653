"""Which hosts the OAuth client may reach when the MCP server names them (docs/auth.md,
"Where the client goes").

The MCP server chooses the URLs the OAuth client fetches: the ``resource_metadata`` of
its 401, the authorization servers its metadata lists, and through their metadata the
token, registration and authorization endpoints. A hostile server could point them at
what only the client can reach — the cloud metadata service at ``169.254.169.254``, a
service on the client's loopback, an intranet host — and use the client to probe or
poke it (server-side request forgery). :class:`TargetPolicy` is the check every such
URL passes before anything is sent to it, on by default.

The rule: when the MCP server is **not local** (its URL names a host that is not
loopback, and the client did not reach it on a loopback address), a URL it names may
only lead to **public** addresses. Its host is resolved and every address it resolves
to must be public, or be the very address the client reached the MCP server at (its
own origin, say), or be allowed (``TargetPolicy(allow=[...])``: host names, addresses,
networks). Private (RFC 1918, unique-local, shared, documentation, reserved), loopback,
link-local, unspecified and multicast addresses are refused, also when spelled in
another form — IPv4-mapped, IPv4-compatible, 6to4, Teredo and NAT64 IPv6 addresses are
judged by the IPv4 address inside, and a host such as ``2130706433`` or ``127.1`` by what
the resolver makes of it. The request then goes to the address that was checked (the
URL's host stays in the ``Host`` header and in TLS, certificate check included), so a
name that resolves differently a moment later (DNS rebinding) changes nothing. The
client never follows redirects (``fetch.py``), so a redirect cannot lead anywhere either.

A local MCP server (``localhost``, ``127.0.0.1``, ``[::1]``) is development: anything it
names may be fetched, which keeps tests and local setups on loopback working.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from urllib.parse import urlsplit

from .errors import OAuthError, quote

__all__ = ["TargetPolicy", "address_kind", "unwrap", "IPAddress"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def unwrap(ip: IPAddress) -> IPAddress:
    """The address a connection to ``ip`` really reaches: the IPv4 address inside an
    IPv6 form that carries one (IPv4-mapped, IPv4-compatible, NAT64, 6to4, the client of
    Teredo), else ``ip`` itself."""
    if isinstance(ip, ipaddress.IPv4Address):
        return ip
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _NAT64 or (int(ip) >> 32 == 0 and int(ip) > 1):  # NAT64, or ::a.b.c.d (IPv4-compatible)
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    return ip


def address_kind(ip: IPAddress) -> str | None:
    """What kind of non-public address ``ip`` is (``"loopback"``, ``"link-local"``,
    ``"unspecified"``, ``"multicast"``, ``"private"``), judged by the address it really
    reaches (:func:`unwrap`); None for a public one."""
    real = unwrap(ip)
    if real.is_loopback:
        return "loopback"
    if real.is_link_local:
        return "link-local"
    if real.is_unspecified or (isinstance(ip, ipaddress.IPv6Address) and ip.is_unspecified):
        return "unspecified"
    if real.is_multicast:
        return "multicast"
    if real.is_private or not real.is_global:
        return "private"
    return None


def _host(url: str) -> str:
    """The URL's host, lowercased, without brackets, a zone id or a trailing dot."""
    host = (urlsplit(url).hostname or "").lower()
    return host.rstrip(".")


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return None


def _is_local_name(host: str) -> bool:
    """Whether ``host`` names this machine by itself: ``localhost`` (and its subdomains)
    or a loopback address in any form."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    literal = _literal(host)
    return literal is not None and address_kind(literal) == "loopback"


class TargetPolicy:
    """Where the OAuth client may go when a server that is not local names a URL: the
    module's rule, with the exceptions in ``allow`` — host names (``"sso.corp.example"``,
    matched exactly, case-insensitively), addresses (``"10.0.0.7"``) and networks
    (``"10.0.0.0/8"``, ``"fd00::/8"``). Give it as ``OAuthClientAuth(targets=...)``;
    ``targets=None`` turns the check off. Raises ``ValueError`` for an entry of ``allow``
    that is empty or not a string.

    A policy of your own is any object with this class's :meth:`check` coroutine.
    """

    __slots__ = ("_names", "_networks", "allow")

    def __init__(self, *, allow: Iterable[str] = ()) -> None:
        self.allow: tuple[str, ...] = tuple(allow)
        names: set[str] = set()
        networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for entry in self.allow:
            if not isinstance(entry, str) or not entry.strip():
                raise ValueError("each entry of allow must be a host name, an address or a network")
            text = entry.strip().lower().strip("[]")
            try:
                networks.append(ipaddress.ip_network(text, strict=False))
            except ValueError:
                names.add(text.rstrip("."))
        self._names = frozenset(names)
        self._networks = tuple(networks)

    def __repr__(self) -> str:
        return f"TargetPolicy(allow={list(self.allow)!r})"

    def _allowed(self, ip: IPAddress) -> bool:
        return any(each in network for each in {ip, unwrap(ip)} for network in self._networks if each.version == network.version)

    async def check(
        self, url: str, *, what: str, server_url: str, server_address: str | None = None, timeout: float = 10.0
    ) -> str | None:
        """Whether the client may send a request for ``what`` (``"protected resource
        metadata"``, ``"token endpoint"``, …) to ``url``, named by the MCP server at
        ``server_url``, which the client reached at the IP address ``server_address``
        (None: not known). Returns the address to connect to (the one that was checked),
        or None to connect by name (the check did not resolve it: a local server, an
        allowed name). Raises :class:`OAuthError` saying why the URL is refused, or that
        its host cannot be resolved (within ``timeout`` seconds)."""
        reached = _literal(server_address.split("%", 1)[0]) if server_address else None
        server_host = _host(server_url)
        if _is_local_name(server_host) or (reached is not None and address_kind(reached) == "loopback"):
            return None
        if reached is None:
            reached = _literal(server_host)
        host = _host(url)
        if not host:
            raise OAuthError(f"refusing the {what} URL {quote(url)!r}: it names no host")
        if host in self._names:
            return None
        literal = _literal(host)
        addresses = [literal] if literal is not None else await _resolve(host, url, what, timeout)
        for ip in addresses:
            kind = address_kind(ip)
            if kind is None or self._allowed(ip) or (reached is not None and ip == reached):
                continue
            article = "an" if kind[0] in "aeiou" else "a"
            raise OAuthError(
                f"refusing the {what} URL {quote(url)!r}: {quote(host)} is {article} {kind} address ({ip}) and the MCP server "
                f"is not local; if it is meant, allow it: OAuthClientAuth(targets=TargetPolicy(allow=[{quote(host)!r}]))"
            )
        return None if literal is not None else str(addresses[0])


async def _resolve(host: str, url: str, what: str, timeout: float) -> list[IPAddress]:
    """Every address ``host`` resolves to. Raises :class:`OAuthError` if it resolves to
    none within ``timeout`` seconds."""
    port = urlsplit(url).port or (443 if url.lower().startswith("https:") else 80)
    try:
        async with asyncio.timeout(timeout):
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, TimeoutError, UnicodeError) as exc:
        raise OAuthError(f"cannot resolve the host of the {what} URL {quote(url)!r}: {type(exc).__name__}") from None
    found: list[IPAddress] = []
    for info in infos:
        ip = _literal(str(info[4][0]))
        if ip is not None and ip not in found:
            found.append(ip)
    if not found:
        raise OAuthError(f"cannot resolve the host of the {what} URL {quote(url)!r}")
    return found
