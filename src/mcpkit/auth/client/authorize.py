"""The authorization request and its response (OAuth 2.1 §4.1, PKCE, RFC 9207).

:func:`start` makes the URL the user's browser opens: ``response_type=code``, the
client id and redirect URI, a fresh PKCE S256 challenge, a fresh ``state``, the
``resource`` (RFC 8707) and the scopes. It records, with the verifier and the state,
the issuer whose validated metadata gave the endpoint.

:func:`finish` reads the callback URL the browser was sent back to, in the order the
spec requires: first the issuer (``iss``: compared to the recorded issuer by plain
string comparison when present; required when the server advertises
``authorization_response_iss_parameter_supported``), so that nothing of a response from
the wrong server is acted on, not even its error; then ``state``; then an ``error``;
then the ``code``.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .discovery import ServerMetadata
from .errors import OAuthError, quote

__all__ = ["Pending", "start", "finish", "pkce_pair"]


def pkce_pair() -> tuple[str, str]:
    """A fresh PKCE code verifier (86 unreserved characters) and its S256 challenge."""
    verifier = secrets.token_urlsafe(64)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


@dataclass
class Pending:
    """One authorization request in progress: its URL, and what its response is
    checked against."""

    url: str
    state: str
    redirect_uri: str
    issuer: str
    iss_required: bool
    verifier: str = field(repr=False)


def start(meta: ServerMetadata, client_id: str, redirect_uri: str, *, resource: str, scope: str | None) -> Pending:
    """A new authorization request. Raises :class:`OAuthError` if the server has no
    authorization endpoint or does not support PKCE with S256 (the spec requires the
    client to refuse then)."""
    if meta.authorization_endpoint is None:
        raise OAuthError(f"the authorization server {quote(meta.issuer)!r} has no authorization endpoint")
    if "S256" not in (meta.code_challenge_methods or []):
        raise OAuthError(
            f"the authorization server {quote(meta.issuer)!r} does not advertise PKCE with S256 "
            "(code_challenge_methods_supported): refusing to proceed"
        )
    verifier, challenge = pkce_pair()
    state = secrets.token_urlsafe(32)
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": state,
        "resource": resource,
    }
    if scope:
        params["scope"] = scope
    parts = urlsplit(meta.authorization_endpoint)
    query = urlencode([*parse_qsl(parts.query, keep_blank_values=True), *params.items()])
    url = urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))
    return Pending(url, state, redirect_uri, meta.issuer, meta.iss_parameter_supported, verifier)


def finish(pending: Pending, callback_url: str) -> str:
    """The authorization code in ``callback_url`` (or just its query string). Raises
    :class:`OAuthError` when the response comes from another issuer, lacks a required
    ``iss``, has the wrong ``state``, is an error, or has no code."""
    query = urlsplit(callback_url).query if "?" in callback_url or "://" in callback_url else callback_url
    values: dict[str, list[str]] = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        values.setdefault(name, []).append(value)
    if any(len(v) > 1 for k, v in values.items() if k in ("iss", "state", "code", "error")):
        raise OAuthError("the authorization response repeats a parameter")
    params = {k: v[0] for k, v in values.items()}
    iss = params.get("iss")
    if iss is not None and iss != pending.issuer:
        raise OAuthError(
            f"the authorization response comes from the issuer {quote(iss)!r}, not {quote(pending.issuer)!r} "
            "(RFC 9207): it was not used"
        )
    if iss is None and pending.iss_required:
        raise OAuthError(f"the authorization response lacks the iss parameter that {quote(pending.issuer)!r} promises (RFC 9207)")
    if params.get("state") != pending.state:
        raise OAuthError("the authorization response does not carry the state that was sent: it was not used")
    error = params.get("error")
    if error is not None:
        detail = params.get("error_description")
        raise OAuthError(f"authorization failed: {quote(error)}" + (f": {quote(detail)}" if detail else ""), error=error)
    code = params.get("code")
    if not code:
        raise OAuthError("the authorization response has no code")
    return code
