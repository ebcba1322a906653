"""What every endpoint of the OAuth proxy reads: :class:`ProxySettings`, built once by
:class:`~mcpkit.auth.proxy.OAuthProxy` — the URLs (issuer, resource, callback), the
scopes, the lifetimes, the store, the token minter, the upstream client and the consent
cookies — and the one scope policy."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from .consent import ConsentJar
from .store import ProxyStore
from .tokens import TokenMinter
from .upstream import Upstream, UpstreamIdentity

__all__ = ["ProxySettings", "GrantScopes", "PATHS"]

#: Where each endpoint is served, under the proxy's issuer (the MCP server's origin).
PATHS: Final = {
    "metadata": "/.well-known/oauth-authorization-server",
    "authorize": "/authorize",
    "consent": "/consent",
    "callback": "/callback",
    "token": "/token",
    "register": "/register",
    "revoke": "/revoke",
    "jwks": "/jwks",
}

#: Which of the requested scopes a user gets: ``(identity, requested) -> granted``,
#: sync or async (None: all requested).
GrantScopes = Callable[[UpstreamIdentity, list[str]], "list[str] | Awaitable[list[str]]"]


@dataclass
class ProxySettings:
    issuer: str
    resource: str
    scopes_supported: list[str]
    default_scopes: list[str]
    store: ProxyStore
    minter: TokenMinter
    upstream: Upstream
    consent: ConsentJar
    access_token_ttl: int
    refresh_token_ttl: int
    code_ttl: int
    login_ttl: int
    client_ttl: int
    unused_client_ttl: int
    grant_scopes: GrantScopes | None

    def url(self, endpoint: str) -> str:
        """The absolute URL of one of the proxy's endpoints."""
        return self.issuer.rstrip("/") + PATHS[endpoint]

    async def granted(self, identity: UpstreamIdentity, requested: list[str]) -> list[str]:
        """The scopes this user gets of ``requested`` (the policy's answer, kept within
        what was requested)."""
        if self.grant_scopes is None:
            return requested
        answer: Any = self.grant_scopes(identity, list(requested))
        if inspect.isawaitable(answer):
            answer = await answer
        return [s for s in requested if s in set(answer)]

    def metadata(self) -> dict[str, Any]:
        """The RFC 8414 authorization server metadata."""
        return {
            "issuer": self.issuer,
            "authorization_endpoint": self.url("authorize"),
            "token_endpoint": self.url("token"),
            "registration_endpoint": self.url("register"),
            "revocation_endpoint": self.url("revoke"),
            "jwks_uri": self.url("jwks"),
            "scopes_supported": self.scopes_supported,
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
            "revocation_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
            "authorization_response_iss_parameter_supported": True,
            "client_id_metadata_document_supported": False,
        }
