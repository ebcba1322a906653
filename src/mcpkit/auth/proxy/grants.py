"""The OAuth proxy's tokens endpoint and revocation (docs/auth.md, "An OAuth proxy"):
``/token`` trades the proxy's authorization code (with the client's PKCE verifier) or a
refresh token for the proxy's own access token — a JWT for the MCP server's resource —
and a new refresh token (rotation); ``/revoke`` is RFC 7009.

Codes and refresh tokens are taken from the store, so each works once. A code or refresh
token presented again is ``invalid_grant``, and the grant it belonged to is revoked: the
tokens already issued for it stop working (RFC 6749 §4.1.2, OAuth 2.1 §4.3.1 on refresh
token reuse) — whoever replays it, the thief or the client, the grant is over. Revoking a
refresh token ends its grant and every access token issued for it; revoking an access
token ends that token.
"""

from __future__ import annotations

import logging
import secrets
import time
from typing import Any, Final

from ..verifiers import InvalidToken
from .http import ProxyRequest, Response, json_response, oauth_error
from .login import PKCE_VALUE, s256
from .registration import ClientRefused, authenticate_client
from .settings import ProxySettings
from .tokens import digest

__all__ = ["token", "revoke"]

log = logging.getLogger("mcpkit.auth")


async def token(settings: ProxySettings, request: ProxyRequest) -> Response:
    """``POST /token`` (RFC 6749 §4.1.3, §6): the module docs. Errors: 401
    ``invalid_client``; 400 ``invalid_request``, ``unsupported_grant_type``,
    ``invalid_grant`` (unknown, expired, used or another client's code or refresh token,
    another redirect URI, a wrong PKCE verifier), ``invalid_target`` (RFC 8707),
    ``invalid_scope``, ``unauthorized_client``."""
    form = request.form()
    try:
        client = await authenticate_client(settings, request, form)
    except ClientRefused as refused:
        return refused.response
    grant_type = form.get("grant_type")
    if grant_type not in ("authorization_code", "refresh_token"):
        return oauth_error("unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
    if grant_type not in client["grant_types"]:
        return oauth_error("unauthorized_client", f"this client did not register the {grant_type} grant")
    if "resource" in form and form["resource"].rstrip("/") != settings.resource.rstrip("/"):
        return oauth_error("invalid_target", f"this authorization server issues tokens for {settings.resource} only")
    if grant_type == "authorization_code":
        return await _code(settings, client, form)
    return await _refresh(settings, client, form)


async def _revoke_grant(settings: ProxySettings, grant_id: str) -> bool:
    """Mark the grant revoked (False: the store is full and could not)."""
    return await settings.store.put(
        "revoked", f"grant:{grant_id}", {"revoked": True}, settings.refresh_token_ttl + settings.access_token_ttl
    )


#: How many rotations a failed revocation follows to the grant's live refresh token.
_MAX_CHAIN: Final = 1000


async def _replayed(settings: ProxySettings, used: dict[str, Any]) -> Response:
    """A code or refresh token came back (``used`` is its mark): the grant is revoked. If
    the store cannot record that, the grant is ended all the same — its live refresh token
    deleted, found by following the rotations from ``used`` — so nothing more is issued
    for it; its access tokens then live out their (short) time."""
    if not await _revoke_grant(settings, used["grant_id"]):
        log.warning("the OAuth proxy cannot record a revocation (the store is full); ending the grant's refresh token")
        mark: dict[str, Any] | None = used
        for _ in range(_MAX_CHAIN):
            successor = mark.get("refresh") if mark is not None else None
            if not successor:
                break
            await settings.store.delete("refresh", successor)
            mark = await settings.store.get("used", f"refresh:{successor}")
    return oauth_error("invalid_grant", "the code or refresh token was already used; its grant is revoked")


def _full() -> Response:
    return oauth_error("temporarily_unavailable", "cannot record the use of this grant now; try again later", 503,
                       [("retry-after", "5")])  # fmt: skip


async def _code(settings: ProxySettings, client: dict[str, Any], form: dict[str, str]) -> Response:
    code, verifier = form.get("code", ""), form.get("code_verifier", "")
    if not code or not verifier:
        return oauth_error("invalid_request", "code and code_verifier are required")
    key = digest(code)
    record = await settings.store.get("code", key)
    if record is None:
        used = await settings.store.get("used", f"code:{key}")
        if used is not None:
            return await _replayed(settings, used)
        return oauth_error("invalid_grant", "the authorization code is unknown, expired or already used")
    if record["client_id"] != client["client_id"]:  # not the owner's: it neither spends the code nor ends the grant
        return oauth_error("invalid_grant", "the authorization code was issued to another client")
    mark = {"grant_id": record["grant_id"]}
    if not await settings.store.put("used", f"code:{key}", mark, settings.refresh_token_ttl):
        return _full()  # without the mark a replay could not be told: refuse, the code stays
    if await settings.store.take("code", key) is None:  # another request of the owner's took it: a replay
        return await _replayed(settings, mark)
    if form.get("redirect_uri", record["redirect_uri"]) != record["redirect_uri"]:
        return oauth_error("invalid_grant", "the redirect_uri is not the authorization request's")
    if not PKCE_VALUE.fullmatch(verifier) or not secrets.compare_digest(s256(verifier), record["code_challenge"]):
        return oauth_error("invalid_grant", "the code_verifier does not match the code_challenge")
    # its first code: the client is kept client_ttl from now. Replacing its record is no new
    # record, so it fits; if it lapsed meanwhile and cannot come back, it registers again
    first, active = not client.get("active", True), client | {"active": True}
    if first and not await settings.store.put("client", client["client_id"], active, settings.client_ttl):
        log.warning("the OAuth proxy cannot keep client %s for longer (the store is full)", client["client_id"])
    return await _issue(settings, client, record, record["scopes"], f"code:{key}")


async def _refresh(settings: ProxySettings, client: dict[str, Any], form: dict[str, str]) -> Response:
    presented = form.get("refresh_token", "")
    if not presented:
        return oauth_error("invalid_request", "refresh_token is required")
    key = digest(presented)
    record = await settings.store.get("refresh", key)
    if record is None:
        used = await settings.store.get("used", f"refresh:{key}")
        if used is not None:  # a rotated-out refresh token came back: someone has a copy
            return await _replayed(settings, used)
        return oauth_error("invalid_grant", "the refresh token is unknown, expired, revoked or already used")
    if record["client_id"] != client["client_id"]:
        return oauth_error("invalid_grant", "the refresh token was issued to another client")
    mark = {"grant_id": record["grant_id"]}
    if not await settings.store.put("used", f"refresh:{key}", mark, settings.refresh_token_ttl):
        return _full()  # without the mark a reuse could not be told: refuse, the token stays
    if await settings.store.take("refresh", key) is None:  # taken by a concurrent request: a reuse
        return await _replayed(settings, mark)
    if await settings.store.get("revoked", f"grant:{record['grant_id']}") is not None:
        return oauth_error("invalid_grant", "the grant was revoked")
    scopes = record["scopes"]
    if form.get("scope", "").strip():
        asked = list(dict.fromkeys(form["scope"].split()))
        if not set(asked) <= set(scopes):
            return oauth_error("invalid_scope", "a refresh cannot add scopes the grant does not have")
        scopes = asked
    return await _issue(settings, client, record, scopes, f"refresh:{key}")


async def _issue(
    settings: ProxySettings, client: dict[str, Any], grant: dict[str, Any], scopes: list[str], used: str
) -> Response:
    """The tokens of ``grant``; the mark ``used`` (of the code or refresh token traded)
    learns the new refresh token's digest, so that a failed revocation can end it."""
    access, _ = settings.minter.mint(
        subject=grant["subject"], client_id=client["client_id"], scopes=scopes, grant_id=grant["grant_id"],
        lifetime=settings.access_token_ttl, claims=grant["claims"],
    )  # fmt: skip
    body: dict[str, Any] = {"access_token": access, "token_type": "Bearer", "expires_in": settings.access_token_ttl,
                            "scope": " ".join(scopes)}  # fmt: skip
    if "refresh_token" in client["grant_types"]:
        refresh = secrets.token_urlsafe(32)
        record = {k: grant[k] for k in ("subject", "claims", "grant_id")} | {
            "client_id": client["client_id"],
            "scopes": grant["scopes"],
        }
        if not await settings.store.put("refresh", digest(refresh), record, settings.refresh_token_ttl):
            return oauth_error("temporarily_unavailable", "too many grants; try again later", 503)
        # replacing the mark written a moment ago: no new record, so it fits
        mark = {"grant_id": grant["grant_id"], "refresh": digest(refresh)}
        await settings.store.put("used", used, mark, settings.refresh_token_ttl)
        body["refresh_token"] = refresh
    return json_response(200, body)


async def revoke(settings: ProxySettings, request: ProxyRequest) -> Response:
    """``POST /revoke`` (RFC 7009): 200 whatever the token (an unknown one, or another
    client's, changes nothing); 401 ``invalid_client``; 400 ``invalid_request`` without
    a token."""
    form = request.form()
    try:
        client = await authenticate_client(settings, request, form)
    except ClientRefused as refused:
        return refused.response
    value = form.get("token", "")
    if not value:
        return oauth_error("invalid_request", "token is required")
    record = await settings.store.get("refresh", digest(value))
    if record is not None:
        if record["client_id"] == client["client_id"]:
            if not await _revoke_grant(settings, record["grant_id"]):
                return oauth_error("temporarily_unavailable", "cannot record the revocation now", 503)
            await settings.store.delete("refresh", digest(value))
        return json_response(200, {})
    try:
        claims = settings.minter.decode(value, verify_exp=False)
    except InvalidToken:
        return json_response(200, {})
    if claims.get("client_id") == client["client_id"]:
        ttl = max(1.0, float(claims["exp"]) - time.time() + 120)
        if not await settings.store.put("revoked", f"token:{claims['jti']}", {"revoked": True}, ttl):
            return oauth_error("temporarily_unavailable", "cannot record the revocation now", 503)
    return json_response(200, {})
