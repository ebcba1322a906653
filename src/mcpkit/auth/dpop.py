"""DPoP on the resource server (RFC 9449 §4.3, §7): checking that the client presenting
a sender-constrained token holds its key — :class:`DPoPChecker`.

A DPoP-bound access token names the thumbprint of the client's public key
(``cnf.jkt``, RFC 7638). The client sends it as ``Authorization: DPoP <token>`` with a
fresh ``DPoP`` proof: a ``dpop+jwt`` JWS signed by that key, its public half in the
header, over this request's method (``htm``) and URL (``htu``, without query or
fragment), when (``iat``), a unique ``jti``, and the hash of the token (``ath``). A
proof is accepted only when every one of these holds — the signature under an
asymmetric algorithm this server allows, a public key with no private part, the method,
the URL as this server's public address names it, ``iat`` within ``max_age`` seconds
(``leeway`` in the future), a ``jti`` not seen within the window, the token's hash, and
the key's thumbprint equal to the token's ``cnf.jkt``. A bound token sent as a
``Bearer`` token is refused: it could have been stolen.

Each ``jti`` is remembered for the window in a :class:`ReplayCache` (in memory by
default, bounded: when it is full of unexpired entries new proofs are refused with 503
rather than a replay let through; give every node one shared cache, the ``replay`` of a
:class:`~mcpkit.stores.redis.RedisStore`, to catch a proof replayed on another node). PyJWT (the ``auth``
extra) checks the signatures.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol
from urllib.parse import urlsplit, urlunsplit

__all__ = ["DPoPChecker", "InvalidProof", "ReplayCache", "InMemoryReplayCache", "ReplayCacheFull", "thumbprint", "token_hash"]

#: The algorithms accepted by default: asymmetric ones only (RFC 9449 §4.3 point 5).
DEFAULT_ALGORITHMS: Final = ("ES256", "ES384", "ES512", "RS256", "PS256", "EdDSA")
_ASYMMETRIC: Final = frozenset({"ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA"})
#: The members of each key type a thumbprint hashes (RFC 7638 §3.2).
_THUMBPRINT_MEMBERS: Final = {"EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n"), "OKP": ("crv", "kty", "x")}
#: Members of a private JWK: a proof's key must have none.
_PRIVATE_MEMBERS: Final = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth", "k"})
#: The largest proof read (bytes); a proof is a few hundred.
MAX_PROOF: Final = 8192


class InvalidProof(Exception):
    """The ``DPoP`` proof does not prove possession of the token's key (the message says
    why): a 401 ``invalid_dpop_proof``."""


class ReplayCacheFull(Exception):
    """The replay cache cannot take another ``jti`` now: a 503 (retry shortly)."""


class ReplayCache(Protocol):
    """Where the ``jti`` of accepted proofs are remembered."""

    async def first_use(self, jti: str, until: float) -> bool:
        """Remember ``jti`` until ``until`` (epoch seconds); True if it was not known.
        Raises :class:`ReplayCacheFull` when it cannot remember it, or
        :class:`~mcpkit.StoreUnavailable` when a shared cache cannot be reached (both
        a 503 from the resource server)."""
        ...


class InMemoryReplayCache:
    """A :class:`ReplayCache` in this process, of at most ``size`` entries."""

    def __init__(self, size: int = 100_000, clock: Callable[[], float] = time.time) -> None:
        if size < 1:
            raise ValueError("size must be positive")
        self.size = size
        self._clock = clock
        self._seen: OrderedDict[str, float] = OrderedDict()  # jti -> until, oldest first

    async def first_use(self, jti: str, until: float) -> bool:
        now = self._clock()
        seen = self._seen
        while seen:  # forget what expired: entries are in the order they were added
            oldest = next(iter(seen))
            if seen[oldest] > now:
                break
            del seen[oldest]
        if jti in seen:
            return False
        if len(seen) >= self.size:
            raise ReplayCacheFull(f"{len(seen)} proofs are remembered, the most this server keeps")
        seen[jti] = until
        return True

    def __len__(self) -> int:
        return len(self._seen)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def thumbprint(jwk: dict[str, Any]) -> str:
    """The RFC 7638 SHA-256 thumbprint of a public JWK. Raises :class:`InvalidProof` for
    a key type or members it cannot hash."""
    members = _THUMBPRINT_MEMBERS.get(jwk.get("kty"))  # type: ignore[arg-type]
    if members is None or not all(isinstance(jwk.get(m), str) for m in members):
        raise InvalidProof("the proof's key is not a usable EC, RSA or OKP public key")
    canonical = json.dumps({m: jwk[m] for m in members}, separators=(",", ":"), sort_keys=True)
    return _b64(hashlib.sha256(canonical.encode()).digest())


def token_hash(access_token: str) -> str:
    """``ath``: the base64url SHA-256 of the access token."""
    return _b64(hashlib.sha256(access_token.encode("ascii")).digest())


def _target(url: str) -> str:
    """``url`` as ``htu`` compares: scheme and host lower-case, default port left out,
    no query or fragment."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    netloc = host if port is None or (scheme, port) in (("https", 443), ("http", 80)) else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path or "/", "", ""))


class DPoPChecker:
    """Checks ``DPoP`` proofs for a resource server (see the module docstring).

    ``algorithms``: the JWS algorithms accepted (asymmetric ones only; advertised as
    ``dpop_signing_alg_values_supported``). ``max_age``: how old a proof may be
    (seconds since its ``iat``), ``leeway``: how far in the future its ``iat`` may be
    (clock skew). ``replay_cache``: where ``jti`` are remembered (default: in memory,
    100,000 at most). ``clock``: epoch seconds (tests pass their own). Raises
    ``ValueError`` for settings that cannot work, ``ImportError`` without PyJWT
    (``pip install 'mcpkit[auth]'``)."""

    def __init__(
        self,
        *,
        algorithms: Sequence[str] = DEFAULT_ALGORITHMS,
        max_age: float = 60.0,
        leeway: float = 5.0,
        replay_cache: ReplayCache | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        unknown = [a for a in algorithms if a not in _ASYMMETRIC]
        if not algorithms or unknown:
            raise ValueError(f"algorithms must be asymmetric JWS algorithms ({', '.join(sorted(_ASYMMETRIC))}); not {unknown}")
        if not 0 < max_age <= 3600 or not 0 <= leeway <= 300:
            raise ValueError("max_age must be in (0, 3600] seconds and leeway in [0, 300]")
        import jwt  # the auth extra: fail at construction, not at the first request

        self._jwt = jwt
        self.algorithms = tuple(algorithms)
        self.max_age = max_age
        self.leeway = leeway
        self.replay_cache: ReplayCache = replay_cache if replay_cache is not None else InMemoryReplayCache(clock=clock)
        self._clock = clock

    async def check(self, proof: str, *, method: str, url: str, access_token: str, jkt: object) -> None:
        """Accept ``proof`` for a request of ``method`` to ``url`` carrying
        ``access_token``, bound to the key thumbprint ``jkt`` (the token's ``cnf.jkt``).
        Raises :class:`InvalidProof` naming the first check that fails,
        :class:`ReplayCacheFull` when the ``jti`` cannot be remembered."""
        jwt = self._jwt
        if len(proof) > MAX_PROOF:
            raise InvalidProof(f"the proof is longer than {MAX_PROOF} bytes")
        try:
            header = jwt.get_unverified_header(proof)
        except jwt.PyJWTError:
            raise InvalidProof("the proof is not a JWS") from None
        if header.get("typ") != "dpop+jwt":
            raise InvalidProof("the proof's typ is not dpop+jwt")
        alg = header.get("alg")
        if alg not in self.algorithms:
            raise InvalidProof(f"the proof's algorithm is not one of {', '.join(self.algorithms)}")
        jwk = header.get("jwk")
        if not isinstance(jwk, dict):
            raise InvalidProof("the proof's header has no jwk")
        if _PRIVATE_MEMBERS & set(jwk):
            raise InvalidProof("the proof's jwk is a private key")
        print_ = thumbprint(jwk)
        try:
            key = jwt.PyJWK(jwk, algorithm=alg).key
            claims = jwt.decode(
                proof,
                key,
                algorithms=[alg],
                options={"verify_aud": False, "verify_exp": False, "verify_iat": False, "verify_nbf": False},
            )
        except jwt.PyJWTError as exc:
            raise InvalidProof(f"the proof's signature does not verify under its key ({type(exc).__name__})") from None
        if not isinstance(claims.get("jti"), str) or not claims["jti"] or len(claims["jti"]) > 256:
            raise InvalidProof("the proof has no usable jti")
        if claims.get("htm") != method.upper():
            raise InvalidProof("the proof is for another HTTP method")
        htu = claims.get("htu")
        if not isinstance(htu, str) or _target(htu) != _target(url):
            raise InvalidProof("the proof is for another URL")
        iat = claims.get("iat")
        now = self._clock()
        if not isinstance(iat, (int, float)) or isinstance(iat, bool):
            raise InvalidProof("the proof has no iat")
        if iat > now + self.leeway or iat < now - self.max_age:
            raise InvalidProof("the proof is too old, or from the future")
        if claims.get("ath") != token_hash(access_token):
            raise InvalidProof("the proof is not for this access token (ath)")
        if not isinstance(jkt, str) or print_ != jkt:
            raise InvalidProof("the proof's key is not the one the token is bound to (cnf.jkt)")
        if not await self.replay_cache.first_use(f"{print_}:{claims['jti']}", now + self.max_age + self.leeway):
            raise InvalidProof("the proof was used before (jti replayed)")
