"""Token requests (RFC 6749 §4.1.3, §4.4, §6) and reading their responses.

Every request names the resource (RFC 8707) and authenticates the client
(``client_auth.py``), with a DPoP proof when the flow uses DPoP. A response must be a
JSON object with an ``access_token`` of ``token_type`` Bearer (or DPoP, after a proof);
an error response (``{"error": ...}``) raises :class:`~.errors.OAuthError` with its code.
A refresh that returns no new refresh token keeps the old one (RFC 6749 §6).
"""

from __future__ import annotations

import time
from typing import Any

from .client_auth import authenticate
from .discovery import ServerMetadata
from .dpop import DPoP
from .errors import OAuthError, quote
from .fetch import Fetcher
from .storage import RegisteredClient, Tokens

__all__ = ["exchange_code", "refresh", "client_credentials", "jwt_bearer", "revoke", "JWT_BEARER"]

#: The RFC 7523 grant type: an assertion (a JWT from an identity provider) for a token.
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


def _tokens(
    body: dict[str, Any], meta: ServerMetadata, requested: str | None, previous: Tokens | None, resource: str, bound: bool
) -> Tokens:
    access = body.get("access_token")
    if not isinstance(access, str) or not access:
        raise OAuthError("the token response has no access_token")
    token_type = body.get("token_type")
    kind = token_type.lower() if isinstance(token_type, str) else None
    if kind != "bearer" and not (kind == "dpop" and bound):
        raise OAuthError(f"the token response is of type {quote(token_type)!r}, not Bearer" + (" or DPoP" if bound else ""))
    expires_in = body.get("expires_in")
    expires_at = None
    if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool) and expires_in >= 0:
        expires_at = time.time() + float(expires_in)
    refresh_token = body.get("refresh_token")
    if not isinstance(refresh_token, str) or not refresh_token:
        refresh_token = previous.refresh_token if previous is not None else None
    scope = body.get("scope")
    return Tokens(
        access_token=access,
        issuer=meta.issuer,
        refresh_token=refresh_token,
        expires_at=expires_at,
        scope=scope if isinstance(scope, str) else requested,
        requested_scope=requested,
        legacy=meta.defaults,
        resource=resource,
        token_type="DPoP" if kind == "dpop" else "Bearer",
    )


async def _token_request(
    fetch: Fetcher,
    meta: ServerMetadata,
    client: RegisteredClient | None,
    data: dict[str, str],
    requested: str | None,
    previous: Tokens | None = None,
    dpop: DPoP | None = None,
) -> Tokens:
    """POST a token request (authenticated, with a DPoP proof when ``dpop``; once more
    with the server's nonce if it asks for one) and read the tokens."""
    for attempt in (1, 2):
        form, headers = dict(data), {"Content-Type": "application/x-www-form-urlencoded"}
        if client is not None:
            authenticate(client, meta.issuer, form, headers)  # a fresh assertion each time
        if dpop is not None:
            headers["DPoP"] = dpop.proof("POST", meta.token_endpoint)
        reply = await fetch.request("POST", meta.token_endpoint, "token endpoint", data=form, headers=headers)
        renewed = dpop is not None and dpop.remember(meta.token_endpoint, reply.headers)
        if not (attempt == 1 and renewed and reply.status == 400 and reply.body and reply.body.get("error") == "use_dpop_nonce"):
            break
    if reply.status != 200 or reply.body is None:
        error = reply.body.get("error") if reply.body else None
        raise OAuthError(
            f"the token request ({data['grant_type']}) was refused: {reply.describe()}",
            error=error if isinstance(error, str) else None,
            status=reply.status,
        )
    return _tokens(reply.body, meta, requested, previous, data["resource"], dpop is not None)


async def exchange_code(
    fetch: Fetcher,
    meta: ServerMetadata,
    client: RegisteredClient,
    *,
    code: str,
    verifier: str,
    redirect_uri: str,
    resource: str,
    scope: str | None,
    dpop: DPoP | None = None,
) -> Tokens:
    """Trade an authorization code for tokens (with the PKCE verifier). Raises
    :class:`OAuthError`."""
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        "code_verifier": verifier,
        "resource": resource,
    }
    return await _token_request(fetch, meta, client, data, scope, dpop=dpop)


async def refresh(
    fetch: Fetcher, meta: ServerMetadata, client: RegisteredClient, tokens: Tokens, resource: str, dpop: DPoP | None = None
) -> Tokens:
    """New tokens for ``tokens.refresh_token`` (same scopes). Raises :class:`OAuthError`."""
    if tokens.refresh_token is None:
        raise OAuthError("there is no refresh token")
    data = {"grant_type": "refresh_token", "refresh_token": tokens.refresh_token, "resource": resource}
    return await _token_request(fetch, meta, client, data, tokens.requested_scope, tokens, dpop)


async def client_credentials(
    fetch: Fetcher, meta: ServerMetadata, client: RegisteredClient, *, resource: str, scope: str | None, dpop: DPoP | None = None
) -> Tokens:
    """A token for the client itself (the ``client_credentials`` grant). Raises
    :class:`OAuthError`."""
    data = {"grant_type": "client_credentials", "resource": resource}
    if scope:
        data["scope"] = scope
    return await _token_request(fetch, meta, client, data, scope, dpop=dpop)


async def jwt_bearer(
    fetch: Fetcher,
    meta: ServerMetadata,
    client: RegisteredClient | None,
    *,
    assertion: str,
    resource: str,
    scope: str | None,
    dpop: DPoP | None = None,
) -> Tokens:
    """A token for an identity assertion (RFC 7523 §2.1: workload identity, or an
    enterprise ID-JAG); the client authenticates if it has an identity. Raises
    :class:`OAuthError` (the request is never retried with another grant)."""
    data = {"grant_type": JWT_BEARER, "assertion": assertion, "resource": resource}
    if scope:
        data["scope"] = scope
    return await _token_request(fetch, meta, client, data, scope, dpop=dpop)


async def revoke(
    fetch: Fetcher, endpoint: str, meta: ServerMetadata, client: RegisteredClient | None, token: str, hint: str
) -> None:
    """Revoke ``token`` (a ``hint``: ``refresh_token`` or ``access_token``) at
    ``endpoint``, the authorization server's revocation endpoint (RFC 7009 §2.1); the
    client authenticates if it has an identity there. A 200 is success, whether the
    server knew the token or not (§2.2). Raises :class:`OAuthError` for a refusal (its
    ``error`` kept: ``unsupported_token_type``, or 503 for "try later") or an
    unreachable endpoint."""
    form, headers = {"token": token, "token_type_hint": hint}, {"Content-Type": "application/x-www-form-urlencoded"}
    if client is not None:
        authenticate(client, meta.issuer, form, headers)
    reply = await fetch.request("POST", endpoint, "revocation endpoint", data=form, headers=headers)
    if reply.status != 200:
        error = reply.body.get("error") if reply.body else None
        raise OAuthError(
            f"revoking the {hint.replace('_', ' ')} was refused: {reply.describe()}",
            error=error if isinstance(error, str) else None,
            status=reply.status,
        )
