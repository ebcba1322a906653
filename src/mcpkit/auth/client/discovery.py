"""Finding the authorization server: Protected Resource Metadata, then its metadata.

1. **Protected Resource Metadata** (RFC 9728): the ``resource_metadata`` URL of the 401's
   ``WWW-Authenticate`` if there is one, else the well-known URLs (path-based, then
   root). A document whose ``resource`` does not cover the server's URL
   (:func:`~.urls.resource_covers`) is refused: metadata naming another resource must
   not send our tokens elsewhere. No document anywhere means a 2025-03-26 server: its
   authorization server is the MCP server's origin.
2. **Authorization server metadata** (RFC 8414, OpenID Connect Discovery): the
   well-known URLs of the issuer in the spec's order. A document whose ``issuer`` is not
   exactly the issuer we asked for is not used (RFC 8414 §3.3); one without ``S256`` in
   ``code_challenge_methods_supported`` cannot do PKCE, which the flow checks. For a
   2025-03-26 server without any metadata the default endpoints ``/authorize``,
   ``/token`` and ``/register`` at its origin are used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import OAuthError, quote
from .fetch import Fetcher
from .urls import (
    authorization_server_urls,
    canonical_resource,
    check_transport,
    origin,
    protected_resource_urls,
    resource_covers,
)

__all__ = ["ResourceInfo", "ServerMetadata", "discover_resource", "discover_server"]


@dataclass
class ResourceInfo:
    """What the MCP server says about itself: the ``resource`` to ask tokens for (as its
    metadata states it, or the server's canonical URL when it has none), its
    authorization servers, and its ``scopes_supported`` (None when it lists none).
    ``legacy`` is true for a server without metadata (2025-03-26)."""

    resource: str
    authorization_servers: list[str]
    scopes_supported: list[str] | None = None
    legacy: bool = False
    #: The server's ``dpop_signing_alg_values_supported`` (RFC 9728): it takes DPoP tokens.
    dpop_algorithms: list[str] | None = None


@dataclass
class ServerMetadata:
    """The parts of an authorization server's metadata the client uses."""

    issuer: str
    token_endpoint: str
    authorization_endpoint: str | None = None
    registration_endpoint: str | None = None
    scopes_supported: list[str] | None = None
    code_challenge_methods: list[str] | None = None
    token_auth_methods: list[str] | None = None
    grant_types: list[str] | None = None
    client_id_metadata_documents: bool = False
    iss_parameter_supported: bool = False
    dpop_algorithms: list[str] | None = None
    #: True when no metadata was found and the 2025-03-26 default endpoints are used.
    defaults: bool = False
    raw: dict[str, Any] = field(default_factory=dict)


def _strings(value: Any) -> list[str] | None:
    if not isinstance(value, list):
        return None
    return [item for item in value if isinstance(item, str)]


async def discover_resource(fetch: Fetcher, server_url: str, metadata_url: str | None, *, allow_http: bool) -> ResourceInfo:
    """The server's Protected Resource Metadata. Raises :class:`OAuthError` if a
    document names another resource, lists no authorization server, or a URL cannot be
    used or reached."""
    urls = protected_resource_urls(server_url)
    if metadata_url:
        urls.insert(0, metadata_url)
    for url in urls:
        check_transport(url, "protected resource metadata", allow_http=allow_http)
        reply = await fetch.get_json(url, "protected resource metadata")
        if reply.status != 200 or reply.body is None:
            continue
        doc = reply.body
        resource = doc.get("resource")
        if not isinstance(resource, str) or "#" in resource or not resource_covers(resource, server_url):
            raise OAuthError(
                f"the protected resource metadata at {quote(url)} is for {quote(resource)!r}, "
                f"not for {quote(server_url)!r}: refusing to authorize for another resource"
            )
        servers = _strings(doc.get("authorization_servers")) or []
        if not servers:
            raise OAuthError(f"the protected resource metadata at {quote(url)} names no authorization server")
        # The identifier exactly as the server states it: the audience its tokens must name.
        scopes, dpop = _strings(doc.get("scopes_supported")), _strings(doc.get("dpop_signing_alg_values_supported"))
        return ResourceInfo(resource.strip(), servers, scopes, dpop_algorithms=dpop)
    return ResourceInfo(canonical_resource(server_url), [origin(server_url)], None, legacy=True)


def _from_document(doc: dict[str, Any], issuer: str, *, allow_http: bool) -> ServerMetadata:
    token = check_transport(doc.get("token_endpoint"), "token endpoint", allow_http=allow_http)
    authorize = doc.get("authorization_endpoint")
    register = doc.get("registration_endpoint")
    return ServerMetadata(
        issuer=issuer,
        token_endpoint=token,
        authorization_endpoint=check_transport(authorize, "authorization endpoint", allow_http=allow_http) if authorize else None,
        registration_endpoint=check_transport(register, "registration endpoint", allow_http=allow_http) if register else None,
        scopes_supported=_strings(doc.get("scopes_supported")),
        code_challenge_methods=_strings(doc.get("code_challenge_methods_supported")),
        token_auth_methods=_strings(doc.get("token_endpoint_auth_methods_supported")),
        grant_types=_strings(doc.get("grant_types_supported")),
        client_id_metadata_documents=doc.get("client_id_metadata_document_supported") is True,
        iss_parameter_supported=doc.get("authorization_response_iss_parameter_supported") is True,
        dpop_algorithms=_strings(doc.get("dpop_signing_alg_values_supported")),
        raw=doc,
    )


async def discover_server(fetch: Fetcher, issuer: str, *, legacy: bool, allow_http: bool) -> ServerMetadata:
    """The metadata of the authorization server ``issuer``. For a ``legacy``
    (2025-03-26) server without any, the default endpoints at ``issuer``. Raises
    :class:`OAuthError` when there is none (or none whose ``issuer`` matches), or a URL
    cannot be used or reached."""
    check_transport(issuer, "authorization server", allow_http=allow_http)
    refused: list[str] = []
    for url in authorization_server_urls(issuer):
        reply = await fetch.get_json(url, "authorization server metadata")
        if reply.status != 200 or reply.body is None:
            continue
        if reply.body.get("issuer") != issuer:
            refused.append(f"{quote(url)} names the issuer {quote(reply.body.get('issuer'))!r}")
            continue
        return _from_document(reply.body, issuer, allow_http=allow_http)
    if refused:
        raise OAuthError(f"refusing authorization server metadata that is not for {quote(issuer)!r}: " + "; ".join(refused))
    if legacy:
        base = issuer.rstrip("/")
        return ServerMetadata(
            issuer=issuer,
            token_endpoint=f"{base}/token",
            authorization_endpoint=f"{base}/authorize",
            registration_endpoint=f"{base}/register",
            code_challenge_methods=["S256"],  # 2025-03-26 made PKCE mandatory for every server
            defaults=True,
        )
    raise OAuthError(
        f"found no authorization server metadata for {quote(issuer)!r} (tried the RFC 8414 and OpenID Connect locations)"
    )
