"""How the client authenticates itself at the token endpoint (RFC 6749 §2.3, RFC 7523).

* ``none``: a public client sends only its ``client_id``;
* ``client_secret_basic``: HTTP Basic with the form-encoded id and secret (§2.3.1);
* ``client_secret_post``: id and secret in the form body;
* ``private_key_jwt``: a short-lived JWT assertion (``iss`` = ``sub`` = the client id,
  ``aud`` = the authorization server's issuer, a fresh ``jti``) signed with the
  client's private key by PyJWT, imported only here and only then.
"""

from __future__ import annotations

import base64
import secrets
import time
from typing import Any
from urllib.parse import quote as urlquote

from .errors import OAuthError
from .storage import RegisteredClient

__all__ = ["authenticate", "choose_secret_method", "ASSERTION_TYPE", "ASSERTION_LIFETIME"]

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
#: Seconds a client assertion is valid for.
ASSERTION_LIFETIME = 300


def choose_secret_method(supported: list[str] | None) -> str:
    """The way to send a client secret to a server that supports ``supported`` (RFC
    8414: absent means ``client_secret_basic``)."""
    if supported and "client_secret_basic" not in supported and "client_secret_post" in supported:
        return "client_secret_post"
    return "client_secret_basic"


def authenticate(client: RegisteredClient, audience: str, data: dict[str, str], headers: dict[str, str]) -> None:
    """Add ``client``'s authentication to a token request's form ``data`` and
    ``headers``. ``audience`` is the issuer, for an assertion. Raises
    :class:`OAuthError` if the client lacks what its method needs."""
    method = client.auth_method
    if method in ("client_secret_basic", "client_secret_post") and not client.client_secret:
        raise OAuthError(f"the client has no secret for {method}")
    if method == "client_secret_basic":
        pair = f"{urlquote(client.client_id, safe='')}:{urlquote(client.client_secret or '', safe='')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
    elif method == "client_secret_post":
        data["client_id"] = client.client_id
        data["client_secret"] = client.client_secret or ""
    elif method == "private_key_jwt":
        data["client_id"] = client.client_id
        data["client_assertion_type"] = ASSERTION_TYPE
        data["client_assertion"] = _assertion(client, audience)
    else:
        data["client_id"] = client.client_id


def _algorithm(key: Any) -> str:
    """The JWS algorithm for a private key object of ``cryptography``."""
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    if isinstance(key, rsa.RSAPrivateKey):
        return "RS256"
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return "EdDSA"
    if isinstance(key, ec.EllipticCurvePrivateKey):
        by_curve = {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}
        if key.curve.name in by_curve:
            return by_curve[key.curve.name]
    raise OAuthError("cannot infer a signing algorithm for this private key: pass signing_alg")


def _assertion(client: RegisteredClient, audience: str) -> str:
    """A signed ``private_key_jwt`` client assertion. Raises :class:`OAuthError` for a
    key that cannot be loaded or used."""
    try:
        import jwt
        from cryptography.hazmat.primitives.serialization import load_pem_private_key
    except ImportError as exc:  # the auth extra is missing
        raise OAuthError("private_key_jwt needs PyJWT with cryptography: pip install 'mcpkit[auth]'") from exc
    if client.private_key is None:
        raise OAuthError("private_key_jwt needs the client's private key")
    pem = client.private_key.encode() if isinstance(client.private_key, str) else client.private_key
    try:
        key = load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise OAuthError(f"the client's private key cannot be loaded: {type(exc).__name__}") from None
    now = int(time.time())
    claims = {
        "iss": client.client_id,
        "sub": client.client_id,
        "aud": audience,
        "iat": now,
        "exp": now + ASSERTION_LIFETIME,
        "jti": secrets.token_urlsafe(24),
    }
    headers = {"kid": client.key_id} if client.key_id else None
    try:
        return jwt.encode(claims, key, algorithm=client.signing_alg or _algorithm(key), headers=headers)  # type: ignore[arg-type]
    except (jwt.PyJWTError, NotImplementedError, ValueError, TypeError) as exc:
        raise OAuthError(f"could not sign the client assertion: {type(exc).__name__}: {exc}") from None
