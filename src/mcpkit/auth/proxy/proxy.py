""":class:`OAuthProxy`: an authorization server in front of an identity provider that
lacks what MCP clients need — dynamic client registration, the ``resource`` parameter,
tokens for this server — served by the MCP server's own app (docs/auth.md, "An OAuth
proxy").

MCP clients register with the proxy, are sent through a consent page of the proxy's and
then the provider's login (with the proxy's one pre-registered client there), and get the
proxy's own tokens, which the MCP server verifies in process. The endpoints are those of
:data:`~mcpkit.auth.proxy.settings.PATHS` under the issuer (the MCP server's origin by
default); :meth:`OAuthProxy.resource_server` is the ``auth=`` of ``server.asgi_app`` that
serves them beside the MCP endpoint, and the proxy is also an ASGI app of its own (404
for any other path), to mount at the root of a host application.
"""

from __future__ import annotations

import logging
import math
import secrets
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx
from cryptography.hazmat.primitives.asymmetric import ec

from ...stores.buckets import BucketStore, InMemoryBuckets, check_bucket
from ...stores.errors import StoreUnavailable
from ..server import ResourceServer
from ..verifiers import DEFAULT_LEEWAY
from .consent import ConsentJar
from .grants import revoke, token
from .http import BadRequest, ProxyRequest, Receive, Response, Scope, Send, json_response, oauth_error, read_request
from .login import authorize, callback, consent
from .registration import register
from .settings import PATHS, GrantScopes, ProxySettings
from .store import InMemoryProxyStore, ProxyStore
from .tokens import ProxyVerifier, TokenMinter
from .upstream import Upstream, UpstreamProvider

__all__ = ["OAuthProxy"]

log = logging.getLogger("mcpkit.auth")

_DAY = 86_400


class OAuthProxy:
    """An authorization server for ``resource`` (the MCP endpoint's canonical URL) that
    signs users in at ``upstream`` with the proxy's client there (``client_id``,
    ``client_secret``; its redirect URI is :attr:`callback_url`, register it upstream).

    ``scopes``: the scopes MCP clients may ask for (``default_scopes`` when they ask for
    none); ``grant_scopes(identity, requested)`` (sync or async) decides which a user gets
    (default: all requested). ``issuer``: the proxy's issuer URL (default: the resource's
    origin). ``store``: where clients, logins, codes and tokens are kept
    (:class:`~mcpkit.auth.proxy.store.InMemoryProxyStore`; share a
    :class:`~mcpkit.auth.proxy.redis.RedisProxyStore` between nodes, with the same
    ``signing_key`` and ``secret``). ``signing_key``: the EC P-256 key (or PEM) the access
    tokens are signed with; ``secret``: the key of the consent cookies (both random per
    process by default). Lifetimes are in seconds: a registered client lives
    ``unused_client_ttl`` until its first code is exchanged, then ``client_ttl``. ``http_client`` and ``timeout`` are for
    the requests to the provider.

    ``rate_limit=(capacity, refill)`` limits ``/register`` and ``/authorize``, each, per
    client address (the ASGI ``client``: behind a reverse proxy, let the server take it
    from ``X-Forwarded-For``, as uvicorn's ``--forwarded-allow-ips`` does): ``capacity``
    requests at once and ``refill`` more a second, then 429 with ``Retry-After``. Its
    buckets are in ``rate_limit_store`` (:class:`~mcpkit.stores.buckets.InMemoryBuckets`
    by default; ``RedisStore(...).buckets`` for several nodes). Raises ``ValueError`` for
    settings that cannot work."""

    def __init__(
        self,
        upstream: UpstreamProvider,
        *,
        client_id: str,
        client_secret: str | None,
        resource: str,
        scopes: Sequence[str] = ("mcp",),
        default_scopes: Sequence[str] | None = None,
        grant_scopes: GrantScopes | None = None,
        issuer: str | None = None,
        store: ProxyStore | None = None,
        signing_key: ec.EllipticCurvePrivateKey | str | bytes | None = None,
        secret: bytes | None = None,
        access_token_ttl: int = 3600,
        refresh_token_ttl: int = 30 * _DAY,
        code_ttl: int = 300,
        login_ttl: int = 600,
        client_ttl: int = 90 * _DAY,
        unused_client_ttl: int = 3600,
        consent_ttl: int = 30 * _DAY,
        http_client: httpx.AsyncClient | None = None,
        timeout: float = 10.0,
        rate_limit: tuple[float, float] | None = None,
        rate_limit_store: BucketStore | None = None,
    ) -> None:
        parts = urlsplit(resource)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.fragment:
            raise ValueError("resource must be an absolute http(s) URL without a fragment")
        issuer = issuer or f"{parts.scheme}://{parts.netloc}"
        issuer_parts = urlsplit(issuer)
        if issuer_parts.scheme not in ("http", "https") or not issuer_parts.netloc or issuer_parts.query or issuer_parts.fragment:
            raise ValueError("issuer must be an http(s) URL with a host, without query or fragment")
        if not all(s and " " not in s for s in scopes):
            raise ValueError("scopes must be non-empty strings without spaces")
        defaults = list(scopes if default_scopes is None else default_scopes)
        if not set(defaults) <= set(scopes):
            raise ValueError("default_scopes must be among scopes")
        if min(access_token_ttl, refresh_token_ttl, code_ttl, login_ttl, client_ttl, consent_ttl, unused_client_ttl) <= 0:
            raise ValueError("lifetimes must be positive")
        if secret is not None and len(secret) < 16:
            raise ValueError("secret must be at least 16 bytes")
        if rate_limit is not None:
            check_bucket(rate_limit[0], rate_limit[1], 1.0)
        self._rate_limit = rate_limit
        self._buckets: BucketStore | None = None
        if rate_limit is not None:
            self._buckets = rate_limit_store if rate_limit_store is not None else InMemoryBuckets()
        self._base = issuer_parts.path.rstrip("/")
        store = store if store is not None else InMemoryProxyStore()
        minter = TokenMinter(issuer, resource, signing_key)
        self.settings = ProxySettings(
            issuer=issuer,
            resource=resource,
            scopes_supported=list(scopes),
            default_scopes=defaults,
            store=store,
            minter=minter,
            upstream=Upstream(upstream, client_id, client_secret, timeout=timeout, http_client=http_client),
            consent=ConsentJar(
                secret or secrets.token_bytes(32), ttl=consent_ttl, secure=issuer_parts.scheme == "https", path=self._base or "/"
            ),
            access_token_ttl=access_token_ttl,
            refresh_token_ttl=refresh_token_ttl,
            code_ttl=code_ttl,
            login_ttl=login_ttl,
            client_ttl=client_ttl,
            unused_client_ttl=min(unused_client_ttl, client_ttl),
            grant_scopes=grant_scopes,
        )
        metadata_path = PATHS["metadata"] + self._base
        self._routes = {self._base + path: name for name, path in PATHS.items() if name != "metadata"}
        self._routes[metadata_path] = "metadata"

    @property
    def callback_url(self) -> str:
        """The redirect URI to register for the proxy's client at the provider."""
        return self.settings.url("callback")

    @property
    def issuer(self) -> str:
        """The proxy's issuer URL (its metadata's ``issuer``, its tokens' ``iss``)."""
        return self.settings.issuer

    def verifier(self, *, leeway: float = DEFAULT_LEEWAY) -> ProxyVerifier:
        """The verifier of this proxy's tokens, for a :class:`ResourceServer`."""
        return ProxyVerifier(self.settings.minter, self.settings.store, leeway=leeway)

    def resource_server(self, *, required_scopes: Sequence[str] = (), **options: Any) -> ResourceServer:
        """The ``auth=`` of ``server.asgi_app`` (or ``server.run("http", ...)``): the MCP
        endpoint protected by this proxy's tokens, the proxy's endpoints served beside
        it. ``options`` are the other :class:`ResourceServer` fields."""
        return ResourceServer(
            self.settings.resource, [self.settings.issuer], self.verifier(), required_scopes=required_scopes,
            scopes_supported=options.pop("scopes_supported", self.settings.scopes_supported), endpoints=self, **options,
        )  # fmt: skip

    def handles(self, path: str) -> bool:
        """Whether ``path`` is one of the proxy's endpoints."""
        return path in self._routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The proxy as an ASGI app: its endpoints, 404 elsewhere."""
        if scope["type"] != "http":
            return
        response = await self._answer(scope, receive)
        await response.send(send)

    async def _answer(self, scope: Scope, receive: Receive) -> Response:
        name = self._routes.get(scope.get("path", ""))
        if name is None:
            return Response(404, b"Not Found", [("content-type", "text/plain")])
        method = scope["method"]
        # HEAD for the documents only: a HEAD of /authorize or /callback would begin or end a login
        wanted = ("GET", "HEAD") if name in ("metadata", "jwks") else ("GET",) if name in ("authorize", "callback") else ("POST",)
        if method not in wanted:
            return Response(405, b"Method Not Allowed", [("allow", ", ".join(wanted))])
        try:
            limited = await self._limited(name, scope)
            if limited is not None:
                return limited
            request = await read_request(scope, receive)
            return await self._route(name, request)
        except BadRequest as exc:
            return oauth_error("invalid_request", str(exc))
        except StoreUnavailable as exc:
            log.warning("the OAuth proxy cannot reach its store: %s", exc)
            return oauth_error("temporarily_unavailable", "the server cannot serve this now", 503, [("retry-after", "5")])

    async def _limited(self, name: str, scope: Scope) -> Response | None:
        """429 when this client address is over ``rate_limit`` at ``/register`` or ``/authorize``."""
        if self._buckets is None or self._rate_limit is None or name not in ("register", "authorize"):
            return None
        client = scope.get("client")
        address = str(client[0]) if client else "-"
        capacity, refill = self._rate_limit
        wait = await self._buckets.take(f"oauth-proxy:{name}:{address}", capacity=capacity, refill=refill, cost=1.0)
        if wait <= 0:
            return None
        seconds = str(max(1, math.ceil(wait)))
        return oauth_error("temporarily_unavailable", f"too many requests; try again in {seconds} s", 429,
                           [("retry-after", seconds)])  # fmt: skip

    async def _route(self, name: str, request: ProxyRequest) -> Response:
        s = self.settings
        if name == "metadata":
            return json_response(200, s.metadata(), cacheable=True)
        if name == "jwks":
            return json_response(200, s.minter.jwks(), cacheable=True)
        handler = {"authorize": authorize, "consent": consent, "callback": callback, "token": token,
                   "register": register, "revoke": revoke}[name]  # fmt: skip
        return await handler(s, request)
