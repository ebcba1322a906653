"""URLs of the OAuth client: canonical resource URIs, the well-known locations to try,
and which URLs may be used at all.

* :func:`canonical_resource`: the MCP server's canonical URI (RFC 8707 §2, the MCP
  spec's "Canonical Server URI"): lowercase scheme and host, no default port, no
  fragment, no trailing slash.
* :func:`resource_covers`: whether Protected Resource Metadata naming ``resource`` may
  be used for the server at ``server_url`` (same origin, and its path a prefix of the
  server's on a segment boundary), so metadata that names another server is refused.
* :func:`protected_resource_urls` and :func:`authorization_server_urls`: the well-known
  URLs in the order the spec says to try them.
* :func:`check_transport`: authorization endpoints must be HTTPS; plain HTTP is accepted
  for loopback hosts (tests, local development) or when the user allows it.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit, urlunsplit

from .errors import OAuthError, quote

__all__ = [
    "canonical_resource",
    "resource_covers",
    "origin",
    "protected_resource_urls",
    "authorization_server_urls",
    "is_loopback",
    "check_transport",
]

_DEFAULT_PORTS = {"http": 80, "https": 443}
_PRM = "/.well-known/oauth-protected-resource"
_OAUTH = "/.well-known/oauth-authorization-server"
_OIDC = "/.well-known/openid-configuration"


def _netloc(scheme: str, url: str) -> str:
    """``host[:port]`` of ``url``, lowercased, without userinfo or a default port.
    Raises ``ValueError`` for a URL without a host or with a bad port."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if not host:
        raise ValueError(f"no host in {url!r}")
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    return host if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{host}:{port}"


def canonical_resource(url: str) -> str:
    """The canonical form of an absolute http(s) URL, as a resource indicator. Raises
    ``ValueError`` if ``url`` is not an absolute http(s) URL."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise ValueError(f"not an http(s) URL: {url!r}")
    path = parts.path.rstrip("/")
    return urlunsplit((scheme, _netloc(scheme, url.strip()), path, parts.query, ""))


def origin(url: str) -> str:
    """``scheme://host[:port]`` of an absolute http(s) URL."""
    parts = urlsplit(canonical_resource(url))
    return f"{parts.scheme}://{parts.netloc}"


def resource_covers(resource: str, server_url: str) -> bool:
    """Whether metadata for ``resource`` applies to the MCP endpoint ``server_url``: the
    same scheme, host and port, and ``resource``'s path equal to the server's or a parent
    of it (``https://h`` covers ``https://h/mcp``; ``https://h/m`` does not cover
    ``https://h/mcp``). A query in ``resource`` must equal the server's."""
    try:
        res, srv = urlsplit(canonical_resource(resource)), urlsplit(canonical_resource(server_url))
    except ValueError:
        return False
    if (res.scheme, res.netloc) != (srv.scheme, srv.netloc):
        return False
    if res.query and res.query != srv.query:
        return False
    return res.path == "" or srv.path == res.path or srv.path.startswith(res.path + "/")


def protected_resource_urls(server_url: str) -> list[str]:
    """Where RFC 9728 metadata may be, when the 401 named none: the path-based
    well-known URL (for an endpoint with a path), then the root one."""
    parts = urlsplit(server_url)
    root = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    urls = [f"{root}{_PRM}{path}"] if path else []
    urls.append(f"{root}{_PRM}")
    return urls


def authorization_server_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be, in the spec's order: for an issuer with a
    path, RFC 8414 path insertion, OpenID Connect path insertion, OpenID Connect path
    appending; without a path, RFC 8414 then OpenID Connect."""
    parts = urlsplit(issuer)
    root = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    if not path:
        return [f"{root}{_OAUTH}", f"{root}{_OIDC}"]
    return [f"{root}{_OAUTH}{path}", f"{root}{_OIDC}{path}", f"{root}{path}{_OIDC}"]


def is_loopback(url: str) -> bool:
    """Whether ``url``'s host is ``localhost`` or a loopback address."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_transport(url: object, what: str, *, allow_http: bool) -> str:
    """``url`` if it may be used for ``what``: an absolute ``https`` URL, or ``http``
    to a loopback host or when ``allow_http``. Raises :class:`OAuthError` otherwise."""
    if not isinstance(url, str) or not url:
        raise OAuthError(f"the {what} URL is missing or not a string")
    try:
        parts = urlsplit(url)
        ok_host = bool(parts.hostname)
    except ValueError:
        ok_host = False
    scheme = parts.scheme.lower() if ok_host else ""
    if scheme == "https" or (scheme == "http" and (allow_http or is_loopback(url))):
        return url
    raise OAuthError(f"refusing the {what} URL {quote(url)!r}: it must be https (plain http only for loopback hosts)")
