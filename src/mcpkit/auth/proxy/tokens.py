"""The OAuth proxy's own tokens (docs/auth.md, "An OAuth proxy"): :class:`TokenMinter`
signs its JWT access tokens (RFC 9068: ``iss`` the proxy, ``aud`` the MCP server's
resource, ``sub`` the user as the upstream provider names them) and publishes the public
key; :class:`ProxyVerifier` is the MCP server's verifier of them — the signature, issuer,
audience and expiry as :class:`~mcpkit.auth.verifiers.JWTVerifier` checks them, with the
key at hand rather than fetched, and the proxy's store asked whether the token or its
grant was revoked (RFC 7009).
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from ...stores.errors import StoreUnavailable
from ..identity import AccessToken
from ..verifiers import DEFAULT_LEEWAY, InvalidToken, VerifierUnavailable, identity_from_claims
from .store import ProxyStore

__all__ = ["TokenMinter", "ProxyVerifier", "digest"]


def digest(value: str) -> str:
    """How a secret (a refresh token, a code) is named in the store: never itself."""
    return hashlib.sha256(value.encode()).hexdigest()


def _load_key(key: ec.EllipticCurvePrivateKey | str | bytes | None) -> ec.EllipticCurvePrivateKey:
    if key is None:
        return ec.generate_private_key(ec.SECP256R1())
    if isinstance(key, ec.EllipticCurvePrivateKey):
        loaded: Any = key
    else:
        loaded = serialization.load_pem_private_key(key.encode() if isinstance(key, str) else key, password=None)
    if not isinstance(loaded, ec.EllipticCurvePrivateKey) or not isinstance(loaded.curve, ec.SECP256R1):
        raise ValueError("the signing key must be an EC P-256 private key (ES256)")
    return loaded


class TokenMinter:
    """Signs the proxy's access tokens with ``signing_key`` (an EC P-256 private key, or
    its PEM; default: a new one per process — give one to every node of a deployment).
    ``issuer`` is the proxy's issuer URL, ``audience`` the MCP server's resource URL.
    Raises ``ValueError`` for a key that is not P-256."""

    def __init__(self, issuer: str, audience: str, signing_key: ec.EllipticCurvePrivateKey | str | bytes | None) -> None:
        self.issuer = issuer
        self.audience = audience
        self._key = _load_key(signing_key)
        self.public_key = self._key.public_key()
        self.jwk: dict[str, Any] = jwt.algorithms.ECAlgorithm.to_jwk(self.public_key, as_dict=True)
        self.key_id = _thumbprint(self.jwk)
        self.jwk.update({"kid": self.key_id, "use": "sig", "alg": "ES256"})

    def jwks(self) -> dict[str, Any]:
        """The public key set (``/jwks``), for resource servers elsewhere (``JWTVerifier``)."""
        return {"keys": [self.jwk]}

    def mint(self, *, subject: str, client_id: str, scopes: list[str], grant_id: str, lifetime: int,
             claims: dict[str, Any]) -> tuple[str, dict[str, Any]]:  # fmt: skip
        """A signed access token and its claims: ``claims`` (the user's, from upstream)
        first, then the registered ones, which nothing upstream can override."""
        now = int(time.time())
        body = {
            **claims,
            "iss": self.issuer,
            "aud": self.audience,
            "sub": subject,
            "client_id": client_id,
            "scope": " ".join(scopes),
            "iat": now,
            "exp": now + lifetime,
            "jti": secrets.token_urlsafe(16),
            "gid": grant_id,
        }
        token = jwt.encode(body, self._key, algorithm="ES256", headers={"kid": self.key_id, "typ": "at+jwt"})
        return token, body

    def decode(self, token: str, *, leeway: float = DEFAULT_LEEWAY, verify_exp: bool = True) -> dict[str, Any]:
        """The claims of one of this proxy's tokens. Raises :class:`InvalidToken` for any
        other (signature, issuer, audience, expiry, a missing ``jti``)."""
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                self.public_key,
                algorithms=["ES256"],
                audience=self.audience,
                issuer=self.issuer,
                leeway=leeway,
                options={"require": ["exp", "iss", "aud", "jti", "sub"], "verify_exp": verify_exp},
            )
        except jwt.ExpiredSignatureError:
            raise InvalidToken("the token has expired") from None
        except jwt.InvalidAudienceError:
            raise InvalidToken("the token is not for this resource (aud)") from None
        except jwt.InvalidIssuerError:
            raise InvalidToken("the token is from another issuer") from None
        except jwt.PyJWTError as exc:
            raise InvalidToken(f"the token is invalid ({type(exc).__name__})") from None
        return claims


def _thumbprint(jwk: dict[str, Any]) -> str:
    """The RFC 7638 thumbprint of an EC public JWK (base64url, no padding)."""
    canonical = json.dumps({k: jwk[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"), sort_keys=True)
    return base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode()


class ProxyVerifier:
    """The MCP server's verifier of the proxy's tokens (a
    :class:`~mcpkit.auth.verifiers.TokenVerifier`). Raises
    :class:`~mcpkit.auth.verifiers.InvalidToken` for a token the proxy did not sign for
    this resource, an expired one (``leeway`` seconds), or a revoked one;
    :class:`~mcpkit.auth.verifiers.VerifierUnavailable` when the store cannot say."""

    def __init__(self, minter: TokenMinter, store: ProxyStore, *, leeway: float = DEFAULT_LEEWAY) -> None:
        self._minter = minter
        self._store = store
        self.leeway = leeway

    async def verify(self, token: str) -> AccessToken:
        claims = self._minter.decode(token, leeway=self.leeway)
        try:
            revoked = await self._store.get("revoked", f"token:{claims['jti']}") is not None
            revoked = revoked or await self._store.get("revoked", f"grant:{claims.get('gid')}") is not None
        except StoreUnavailable as exc:
            raise VerifierUnavailable(str(exc)) from None
        if revoked:
            raise InvalidToken("the token was revoked")
        return identity_from_claims(claims)
