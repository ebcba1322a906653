"""Presets of :class:`~mcpkit.auth.proxy.UpstreamProvider` for common identity
providers (docs/auth.md, "Providers"): each says where the provider's endpoints are, what
to ask for, where the user's identity comes from and which claim names them, and whether
it offers dynamic client registration itself (``needs_proxy``). Every base URL can be
given, for a self-hosted or regional deployment — and for tests on loopback.

=================  =====================  ===================  ==========================
preset             endpoints              identity             dynamic registration
=================  =====================  ===================  ==========================
``github``         fixed (OAuth apps)     ``GET /user``: id    no: the proxy is needed
``google``         OIDC discovery         ID token: sub        no: the proxy is needed
``entra``          OIDC discovery/tenant  ID token: oid        no: the proxy is needed
``auth0``          OIDC discovery         ID token: sub        optional (tenant setting)
``workos``         OIDC discovery         ID token: sub        yes (AuthKit): optional
``keycloak``       OIDC discovery/realm   ID token: sub        yes: the proxy is optional
``okta``           OIDC discovery         ID token: sub        only with an API token
``oidc``           OIDC discovery         ID token: sub        as you say
=================  =====================  ===================  ==========================
"""

from __future__ import annotations

from collections.abc import Sequence

from .proxy.upstream import UpstreamProvider

__all__ = ["github", "google", "entra", "auth0", "workos", "keycloak", "okta", "oidc"]

_OIDC = ("openid", "email", "profile")


def github(*, scopes: Sequence[str] = ("read:user", "user:email"), base_url: str = "https://github.com",
           api_url: str = "https://api.github.com") -> UpstreamProvider:  # fmt: skip
    """GitHub (an OAuth app or a GitHub App's user authorization): no discovery, no
    registration, opaque access tokens; the user is ``GET {api_url}/user`` (``id``, a
    number that never changes, unlike ``login``). ``base_url`` for GitHub Enterprise
    Server is the instance's URL and ``api_url`` its ``/api/v3``."""
    base = base_url.rstrip("/")
    return UpstreamProvider(
        name="GitHub",
        authorization_endpoint=f"{base}/login/oauth/authorize",
        token_endpoint=f"{base}/login/oauth/access_token",
        userinfo_endpoint=f"{api_url.rstrip('/')}/user",
        scopes=tuple(scopes),
        identity="userinfo",
        subject_claim="id",
        profile_claims=("login", "name", "email"),
        userinfo_headers={"accept": "application/vnd.github+json", "x-github-api-version": "2022-11-28"},
    )


def oidc(issuer: str, *, name: str = "the identity provider", scopes: Sequence[str] = _OIDC, subject_claim: str = "sub",
         supports_registration: bool = False) -> UpstreamProvider:  # fmt: skip
    """Any OpenID Connect provider, by discovery at ``{issuer}/.well-known/openid-configuration``."""
    return UpstreamProvider(name=name, issuer=issuer, scopes=tuple(scopes), subject_claim=subject_claim,
                            supports_registration=supports_registration)  # fmt: skip


def google(*, scopes: Sequence[str] = _OIDC, issuer: str = "https://accounts.google.com") -> UpstreamProvider:
    """Google: OpenID Connect discovery, no dynamic registration (create an OAuth client
    of type "Web application" in the Cloud console)."""
    return oidc(issuer, name="Google", scopes=scopes)


def entra(tenant: str, *, scopes: Sequence[str] = (*_OIDC, "offline_access"),
          authority: str = "https://login.microsoftonline.com") -> UpstreamProvider:  # fmt: skip
    """Microsoft Entra ID, one ``tenant`` (its id or domain: the ID token's issuer names
    the tenant, so ``common`` and ``organizations`` cannot be checked and are refused).
    The user is ``oid``, the same in every application of the tenant (``sub`` differs per
    application)."""
    if tenant in ("common", "organizations", "consumers"):
        raise ValueError("name one tenant (its id or domain): multi-tenant issuers cannot be checked")
    return oidc(f"{authority.rstrip('/')}/{tenant}/v2.0", name="Microsoft Entra ID", scopes=scopes, subject_claim="oid")


def auth0(domain: str, *, scopes: Sequence[str] = _OIDC, scheme: str = "https",
          registration: bool = False) -> UpstreamProvider:  # fmt: skip
    """Auth0, the tenant at ``domain`` (``example.eu.auth0.com`` or a custom domain). A
    tenant with dynamic registration turned on (``registration=True``) can serve MCP
    clients directly."""
    return oidc(f"{scheme}://{domain}/", name="Auth0", scopes=scopes, supports_registration=registration)


def workos(domain: str, *, scopes: Sequence[str] = _OIDC, scheme: str = "https") -> UpstreamProvider:
    """WorkOS AuthKit at ``domain`` (``example.authkit.app``), which has dynamic
    registration for MCP clients itself: the proxy is optional."""
    return oidc(f"{scheme}://{domain}", name="WorkOS AuthKit", scopes=scopes, supports_registration=True)


def keycloak(base_url: str, realm: str, *, scopes: Sequence[str] = _OIDC) -> UpstreamProvider:
    """Keycloak, ``realm`` of the server at ``base_url``; it has dynamic registration
    (with a client registration policy), so the proxy is optional."""
    return oidc(f"{base_url.rstrip('/')}/realms/{realm}", name="Keycloak", scopes=scopes, supports_registration=True)


def okta(domain: str, *, authorization_server: str = "default", scopes: Sequence[str] = _OIDC,
         scheme: str = "https") -> UpstreamProvider:  # fmt: skip
    """Okta, the custom authorization server ``authorization_server`` of the org at
    ``domain``. Its registration needs an API token, which MCP clients do not have."""
    return oidc(f"{scheme}://{domain}/oauth2/{authorization_server}", name="Okta", scopes=scopes)
