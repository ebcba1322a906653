"""The identity provider behind the OAuth proxy (docs/auth.md, "An OAuth proxy"):
:class:`UpstreamProvider` says what the proxy needs to know of it — its endpoints (or its
OpenID Connect issuer, to discover them), the scopes to ask for, where the user's identity
comes from (the ID token's claims, or a user-info call for providers whose access tokens
are opaque, like GitHub) and which claim names the user — and :class:`Upstream` is the
proxy's pre-registered client there: the authorization request (PKCE S256, ``state``,
``nonce``), the code exchange, and the identity. Presets for common providers are in
:mod:`mcpkit.auth.providers`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlencode, urlsplit

import httpx

from ..verifiers import InvalidToken, JWTVerifier, VerifierUnavailable

__all__ = ["UpstreamProvider", "Upstream", "UpstreamError", "UpstreamIdentity"]


class UpstreamError(Exception):
    """The identity provider refused, failed or answered what the proxy cannot use; the
    message says which (never a token or a secret)."""


@dataclass(frozen=True)
class UpstreamProvider:
    """An identity provider as the proxy uses it.

    ``issuer``: its OpenID Connect issuer; the endpoints not given are discovered from
    ``{issuer}/.well-known/openid-configuration`` (whose ``issuer`` must be exactly this
    one), and ID tokens are checked against it. ``identity``: ``"id_token"`` (the ID
    token's verified claims; ``openid`` must be among ``scopes``) or ``"userinfo"`` (a GET
    of ``userinfo_endpoint`` with the access token, ``userinfo_headers`` added).
    ``subject_claim`` names the user (``sub``; GitHub's ``id``; Entra ID's ``oid``), and
    ``profile_claims`` are copied into the proxy's tokens when present.
    ``token_auth_method``: how the proxy authenticates at the token endpoint.
    ``supports_registration``: the provider offers dynamic client registration itself, so
    MCP clients could use it without the proxy. Raises ``ValueError`` for a description
    that cannot work."""

    name: str
    issuer: str | None = None
    authorization_endpoint: str | None = None
    token_endpoint: str | None = None
    userinfo_endpoint: str | None = None
    jwks_uri: str | None = None
    scopes: tuple[str, ...] = ("openid", "email", "profile")
    identity: Literal["id_token", "userinfo"] = "id_token"
    subject_claim: str = "sub"
    profile_claims: tuple[str, ...] = ("email", "email_verified", "name", "preferred_username")
    token_auth_method: Literal["client_secret_post", "client_secret_basic"] = "client_secret_post"
    supports_registration: bool = False
    authorize_params: Mapping[str, str] = field(default_factory=dict)
    userinfo_headers: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.issuer is None and (self.authorization_endpoint is None or self.token_endpoint is None):
            raise ValueError(f"{self.name}: give an issuer to discover, or the authorization and token endpoints")
        if self.identity == "userinfo" and self.issuer is None and self.userinfo_endpoint is None:
            raise ValueError(f"{self.name}: identity='userinfo' needs a userinfo_endpoint (or an issuer to discover it)")
        if self.identity == "id_token" and "openid" not in self.scopes:
            raise ValueError(f"{self.name}: identity='id_token' needs 'openid' among the scopes")

    @property
    def needs_proxy(self) -> bool:
        """Whether MCP clients need the proxy in front of this provider: it has no
        dynamic client registration of its own."""
        return not self.supports_registration


@dataclass(frozen=True)
class UpstreamIdentity:
    """Who signed in upstream: the subject, and the profile claims kept from upstream."""

    subject: str
    claims: dict[str, Any]


@dataclass(frozen=True)
class _Endpoints:
    authorization: str
    token: str
    userinfo: str | None
    jwks: str | None


class Upstream:
    """The proxy's client at ``provider``, pre-registered there as ``client_id`` (with
    ``client_secret``), its redirect URI the proxy's ``/callback``. Every request is
    bounded by ``timeout`` seconds; ``http_client`` is used when given."""

    def __init__(self, provider: UpstreamProvider, client_id: str, client_secret: str | None, *,
                 timeout: float = 10.0, http_client: httpx.AsyncClient | None = None) -> None:  # fmt: skip
        self.provider = provider
        self.client_id = client_id
        self._secret = client_secret
        self._timeout = timeout
        self._http = http_client
        self._endpoints: _Endpoints | None = None
        self._lock = asyncio.Lock()
        self._id_tokens: JWTVerifier | None = None

    async def _request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        what = urlsplit(url).path or url
        client = self._http or httpx.AsyncClient(timeout=self._timeout)
        try:
            return await client.request(method, url, timeout=self._timeout, **kwargs)
        except httpx.HTTPError as exc:
            raise UpstreamError(f"could not reach {self.provider.name} ({what}): {type(exc).__name__}") from None
        finally:
            if self._http is None:
                await client.aclose()

    async def endpoints(self) -> _Endpoints:
        """The provider's endpoints, discovered once (concurrent callers share it).
        Raises :class:`UpstreamError` when discovery fails or is for another issuer."""
        async with self._lock:
            if self._endpoints is None:
                self._endpoints = await self._discover()
            return self._endpoints

    async def _discover(self) -> _Endpoints:
        p = self.provider
        doc: dict[str, Any] = {}
        missing = p.authorization_endpoint is None or p.token_endpoint is None
        missing = missing or (p.identity == "userinfo" and p.userinfo_endpoint is None)
        missing = missing or (p.identity == "id_token" and p.jwks_uri is None)
        if p.issuer is not None and missing:
            resp = await self._request("GET", p.issuer.rstrip("/") + "/.well-known/openid-configuration")
            try:
                doc = resp.json() if resp.status_code == 200 else {}
            except ValueError:
                doc = {}
            if not isinstance(doc, dict) or doc.get("issuer") != p.issuer:
                raise UpstreamError(f"{p.name}'s OpenID configuration is missing or names another issuer")
        endpoints = _Endpoints(
            authorization=p.authorization_endpoint or str(doc.get("authorization_endpoint") or ""),
            token=p.token_endpoint or str(doc.get("token_endpoint") or ""),
            userinfo=p.userinfo_endpoint or doc.get("userinfo_endpoint"),
            jwks=p.jwks_uri or doc.get("jwks_uri"),
        )
        if not endpoints.authorization or not endpoints.token:
            raise UpstreamError(f"{p.name} names no authorization or token endpoint")
        return endpoints

    async def authorization_url(self, *, redirect_uri: str, state: str, code_challenge: str, nonce: str) -> str:
        """Where the browser goes to sign in upstream."""
        endpoints = await self.endpoints()
        params = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": redirect_uri,
            "scope": " ".join(self.provider.scopes),
            "state": state,
            "code_challenge": code_challenge,
            "code_challenge_method": "S256",
            **({"nonce": nonce} if "openid" in self.provider.scopes else {}),
            **self.provider.authorize_params,
        }
        sep = "&" if "?" in endpoints.authorization else "?"
        return f"{endpoints.authorization}{sep}{urlencode(params)}"

    async def exchange(self, *, code: str, code_verifier: str, redirect_uri: str) -> dict[str, Any]:
        """The token response for ``code``. Raises :class:`UpstreamError` when refused
        (an HTTP error, or an ``error`` in a 200 as GitHub sends) or malformed."""
        endpoints = await self.endpoints()
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri, "code_verifier": code_verifier}
        auth: tuple[str, str] | None = None
        if self.provider.token_auth_method == "client_secret_basic" and self._secret is not None:
            auth = (self.client_id, self._secret)
        else:
            form["client_id"] = self.client_id
            if self._secret is not None:
                form["client_secret"] = self._secret
        resp = await self._request("POST", endpoints.token, data=form, auth=auth, headers={"accept": "application/json"})
        try:
            body = resp.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise UpstreamError(f"{self.provider.name}'s token endpoint answered HTTP {resp.status_code} without JSON")
        if resp.status_code != 200 or "error" in body:
            raise UpstreamError(f"{self.provider.name} refused the code: {str(body.get('error', resp.status_code))[:100]}")
        if not isinstance(body.get("access_token"), str):
            raise UpstreamError(f"{self.provider.name}'s token response has no access token")
        return body

    async def identity(self, tokens: dict[str, Any], *, nonce: str) -> UpstreamIdentity:
        """Who the tokens are for: the verified ID token's claims (signature by the
        provider's key set, ``iss``, ``aud`` this client, ``exp``, ``nonce``), or the
        user-info document. Raises :class:`UpstreamError` when neither can be had."""
        p = self.provider
        if p.identity == "id_token":
            claims = await self._id_token_claims(tokens.get("id_token"), nonce)
        else:
            claims = await self._userinfo(str(tokens["access_token"]))
        subject = claims.get(p.subject_claim)
        if subject is None or isinstance(subject, (dict, list, bool)) or str(subject) == "":
            raise UpstreamError(f"{p.name}'s identity has no {p.subject_claim!r}")
        profile = {name: claims[name] for name in p.profile_claims if name in claims}
        return UpstreamIdentity(str(subject), profile)

    async def _id_token_claims(self, id_token: Any, nonce: str) -> dict[str, Any]:
        p = self.provider
        if not isinstance(id_token, str):
            raise UpstreamError(f"{p.name} sent no ID token")
        endpoints = await self.endpoints()
        if self._id_tokens is None:
            if endpoints.jwks is None or p.issuer is None:
                raise UpstreamError(f"{p.name} names no key set to check ID tokens with")
            self._id_tokens = JWTVerifier(endpoints.jwks, issuer=p.issuer, audience=self.client_id,
                                          timeout=self._timeout, http_client=self._http)  # fmt: skip
        try:
            claims = (await self._id_tokens.verify(id_token)).claims
        except InvalidToken as exc:
            raise UpstreamError(f"{p.name}'s ID token was refused: {exc}") from None
        except VerifierUnavailable as exc:
            raise UpstreamError(f"{p.name}'s key set cannot be had: {exc}") from None
        if claims.get("nonce") != nonce:
            raise UpstreamError(f"{p.name}'s ID token does not carry this login's nonce")
        return claims

    async def _userinfo(self, access_token: str) -> dict[str, Any]:
        endpoints = await self.endpoints()
        if endpoints.userinfo is None:
            raise UpstreamError(f"{self.provider.name} names no user-info endpoint")
        headers = {"authorization": f"Bearer {access_token}", "accept": "application/json", **self.provider.userinfo_headers}
        resp = await self._request("GET", endpoints.userinfo, headers=headers)
        try:
            body = resp.json()
        except ValueError:
            body = None
        if resp.status_code != 200 or not isinstance(body, dict):
            raise UpstreamError(f"{self.provider.name}'s user-info endpoint answered HTTP {resp.status_code}")
        return body
