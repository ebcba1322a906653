"""DPoP (RFC 9449): sender-constrained tokens, when the authorization server offers them.

A :class:`DPoP` holds one ephemeral P-256 key (it never leaves the process, so neither
do the tokens bound to it) and the latest nonce each server handed out. It makes the
proofs: a ``dpop+jwt`` JWS, with the public key in its header, over the request's method
and URL (``htm``, ``htu``: no query or fragment), a fresh ``jti``, ``iat``, the server's
nonce if it gave one, and, for a request to the MCP server, ``ath``, the hash of the
access token. PyJWT signs; ``cryptography`` makes the key.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .errors import OAuthError

__all__ = ["DPoP", "ALGORITHM", "supported"]

ALGORITHM = "ES256"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def supported(algorithms: object) -> bool:
    """Whether an authorization server's ``dpop_signing_alg_values_supported`` allows ours."""
    return isinstance(algorithms, list) and ALGORITHM in algorithms


class DPoP:
    """A proof-of-possession key and the servers' nonces (see the module docstring).
    Raises :class:`OAuthError` if the JOSE libraries (the ``auth`` extra) are missing."""

    def __init__(self) -> None:
        try:
            import jwt  # noqa: F401 - checked here, used in proof()
            from cryptography.hazmat.primitives.asymmetric import ec
        except ImportError as exc:  # the auth extra is missing
            raise OAuthError("DPoP needs PyJWT with cryptography: pip install 'mcpkit[auth]'") from exc
        self._key = ec.generate_private_key(ec.SECP256R1())
        numbers = self._key.public_key().public_numbers()
        self.jwk = {
            "kty": "EC",
            "crv": "P-256",
            "x": _b64(numbers.x.to_bytes(32, "big")),
            "y": _b64(numbers.y.to_bytes(32, "big")),
        }
        self._nonces: dict[str, str] = {}

    @staticmethod
    def _target(url: str) -> tuple[str, str]:
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.netloc}".lower(), urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))

    def proof(self, method: str, url: str, access_token: str | None = None) -> str:
        """A fresh proof for ``method`` on ``url`` (bound to ``access_token`` if given)."""
        import jwt

        server, htu = self._target(url)
        claims: dict[str, Any] = {"jti": secrets.token_urlsafe(24), "htm": method.upper(), "htu": htu, "iat": int(time.time())}
        if access_token is not None:
            claims["ath"] = _b64(hashlib.sha256(access_token.encode("ascii")).digest())
        nonce = self._nonces.get(server)
        if nonce is not None:
            claims["nonce"] = nonce
        return jwt.encode(claims, self._key, algorithm=ALGORITHM, headers={"typ": "dpop+jwt", "jwk": self.jwk})

    def remember(self, url: str, headers: Mapping[str, str]) -> bool:
        """Keep the ``DPoP-Nonce`` a server at ``url`` sent; True if it is a new one."""
        nonce = headers.get("dpop-nonce")
        if not nonce or len(nonce) > 1024:
            return False
        server, _ = self._target(url)
        if self._nonces.get(server) == nonce:
            return False
        self._nonces[server] = nonce
        return True
