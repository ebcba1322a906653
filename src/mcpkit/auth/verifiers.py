"""Verifying bearer tokens (docs/auth.md): JWTs against a JWKS, RFC 7662 introspection,
or a function of your own.

Every verifier is an object with ``async verify(token) -> AccessToken``, raising
:class:`InvalidToken` for a token that must be refused (401) and
:class:`VerifierUnavailable` when it cannot decide (its key set or introspection
endpoint is unreachable: 503 — it fails closed, never open). Tokens are never logged.
PyJWT and httpx load when a verifier is built (the ``auth`` and ``http`` extras).

Expiry is one rule for all: a token is refused once its ``exp`` is ``leeway`` seconds
past (clock skew between the authorization server and this one). Each verifier here has
a ``leeway`` attribute (default :data:`DEFAULT_LEEWAY`, 30 s); :func:`leeway_of` reads it,
falling back to the default for a verifier of your own without one, and
:class:`~mcpkit.auth.server.ResourceServer` applies :func:`check_expiry` to whatever a
verifier accepts — so a verifier that does not look at ``exp`` still gets it checked.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, Protocol

from .identity import AccessToken

__all__ = [
    "TokenVerifier",
    "InvalidToken",
    "VerifierUnavailable",
    "JWTVerifier",
    "IntrospectionVerifier",
    "FunctionVerifier",
    "DEFAULT_LEEWAY",
    "leeway_of",
    "check_expiry",
]

#: Seconds past its ``exp`` a token is still taken, for clock skew, unless a verifier's
#: ``leeway`` says otherwise.
DEFAULT_LEEWAY: Final = 30.0


class InvalidToken(Exception):
    """The token must be refused: malformed, forged, expired, or not for this resource.
    The message says why (it is logged at debug level and never contains the token)."""


class VerifierUnavailable(Exception):
    """The verifier cannot decide now (its JWKS or introspection endpoint is down): the
    request is refused with 503, never let through."""


def _leeway(value: object) -> float:
    """``value`` as a leeway. Raises ``ValueError`` unless it is a finite number >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
        raise ValueError("leeway must be a finite number of seconds >= 0")
    return float(value)


def leeway_of(verifier: object) -> float:
    """The seconds past ``exp`` a token ``verifier`` accepted is still taken: its
    ``leeway`` attribute when that is a finite number >= 0, else :data:`DEFAULT_LEEWAY`."""
    value = getattr(verifier, "leeway", DEFAULT_LEEWAY)
    try:
        return _leeway(value)
    except ValueError:
        return DEFAULT_LEEWAY


def check_expiry(identity: AccessToken, leeway: float, now: float | None = None) -> None:
    """Raises :class:`InvalidToken` ("the token has expired") if ``identity`` has an
    ``expires_at`` and ``now`` (default: the current time) is ``leeway`` seconds or more
    past it — the same instant PyJWT's ``exp`` check refuses at."""
    if identity.expires_at is not None and identity.expires_at + leeway <= (time.time() if now is None else now):
        raise InvalidToken("the token has expired")


class TokenVerifier(Protocol):
    async def verify(self, token: str) -> AccessToken:
        """The token's identity. Raises :class:`InvalidToken` or
        :class:`VerifierUnavailable`."""
        ...


def _scopes(value: Any) -> frozenset[str]:
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, (list, tuple)):
        return frozenset(str(v) for v in value)
    return frozenset()


def identity_from_claims(claims: dict[str, Any]) -> AccessToken:
    """An :class:`AccessToken` from JWT or introspection claims (``sub``,
    ``client_id``/``azp``, ``scope``/``scp``, ``exp``)."""
    client = claims.get("client_id", claims.get("azp"))
    exp = claims.get("exp")
    return AccessToken(
        subject=str(claims["sub"]) if claims.get("sub") is not None else None,
        client_id=str(client) if client is not None else None,
        scopes=_scopes(claims.get("scope", claims.get("scp"))),
        expires_at=float(exp) if isinstance(exp, (int, float)) and not isinstance(exp, bool) else None,
        claims=claims,
    )


class JWTVerifier:
    """Verifies JWT access tokens signed by a key of the JWKS at ``jwks_url``.

    Checks the signature (only ``algorithms``; never ``none``), ``iss`` == ``issuer``,
    ``aud`` contains ``audience`` (this resource's URL, RFC 8707), and ``exp``/``nbf``
    with ``leeway`` seconds. The key set is fetched on first use and cached for
    ``cache_ttl`` seconds; a token naming a key id the cache lacks triggers one refetch
    (key rotation), at most every ``min_refetch`` seconds. Fetches time out after
    ``timeout`` seconds. ``http_client`` (an ``httpx.AsyncClient``) is used if given.
    Raises ``ValueError`` for a ``none`` or ``HS*`` algorithm or a negative ``leeway``.
    """

    def __init__(
        self,
        jwks_url: str,
        *,
        issuer: str,
        audience: str | Sequence[str],
        algorithms: Sequence[str] = ("RS256", "ES256", "PS256", "EdDSA"),
        leeway: float = DEFAULT_LEEWAY,
        cache_ttl: float = 300.0,
        min_refetch: float = 10.0,
        timeout: float = 5.0,
        http_client: Any = None,
    ) -> None:
        import jwt  # the auth extra: fail at construction, not at the first request

        if not algorithms or any(a.lower() == "none" or a.startswith("HS") for a in algorithms):
            raise ValueError("algorithms must be asymmetric signature algorithms (not none, not HS*)")
        self._jwt = jwt
        self.jwks_url = jwks_url
        self.issuer = issuer
        self.audience = [audience] if isinstance(audience, str) else list(audience)
        self.algorithms = list(algorithms)
        self.leeway = _leeway(leeway)
        self.cache_ttl = cache_ttl
        self.min_refetch = min_refetch
        self.timeout = timeout
        self._http = http_client
        self._keys: dict[str, Any] = {}
        self._fetched_at = -1e18
        self._lock = asyncio.Lock()

    async def _fetch(self) -> None:
        import httpx

        client = self._http or httpx.AsyncClient(timeout=self.timeout)
        try:
            resp = await client.get(self.jwks_url, timeout=self.timeout)
            resp.raise_for_status()
            keyset = self._jwt.PyJWKSet.from_dict(resp.json())
        except (httpx.HTTPError, ValueError, self._jwt.PyJWTError) as exc:
            raise VerifierUnavailable(f"cannot fetch the JWKS: {type(exc).__name__}") from None
        finally:
            if self._http is None:
                await client.aclose()
        self._keys = {k.key_id: k for k in keyset.keys if k.key_id}
        self._default = keyset.keys[0] if len(keyset.keys) == 1 else None
        self._fetched_at = time.monotonic()

    async def _key(self, kid: str | None) -> Any:
        async with self._lock:
            age = time.monotonic() - self._fetched_at
            if age > self.cache_ttl or (kid not in self._keys and age > self.min_refetch):
                await self._fetch()
        if kid is None:
            if self._default is None:
                raise InvalidToken("the token names no key id and the key set has several keys")
            return self._default
        key = self._keys.get(kid)
        if key is None:
            raise InvalidToken("the token is signed by an unknown key")
        return key

    async def verify(self, token: str) -> AccessToken:
        """The identity ``token`` proves. Raises :class:`InvalidToken` (bad signature,
        algorithm, issuer, audience, expiry) or :class:`VerifierUnavailable` (the key set
        cannot be fetched). Cancellation during a key fetch abandons the fetch."""
        jwt = self._jwt
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise InvalidToken("not a JWT") from None
        if header.get("alg") not in self.algorithms:
            raise InvalidToken("the token's algorithm is not accepted")
        key = await self._key(header.get("kid"))
        try:
            claims = jwt.decode(
                token,
                key=key.key,
                algorithms=self.algorithms,
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.ExpiredSignatureError:
            raise InvalidToken("the token has expired") from None
        except jwt.InvalidAudienceError:
            raise InvalidToken("the token is not for this resource (aud)") from None
        except jwt.InvalidIssuerError:
            raise InvalidToken("the token is from another issuer") from None
        except jwt.PyJWTError as exc:
            raise InvalidToken(f"the token is invalid ({type(exc).__name__})") from None
        return identity_from_claims(claims)


class IntrospectionVerifier:
    """Verifies opaque tokens with an RFC 7662 introspection endpoint, authenticating
    with ``client_id``/``client_secret`` (HTTP Basic). Refuses inactive tokens and,
    when ``audience`` is given, tokens whose ``aud`` does not contain it, and tokens
    whose ``exp`` is ``leeway`` seconds past. Answers are cached for ``cache_ttl``
    seconds (never past the token's ``exp`` plus ``leeway``). Raises ``ValueError`` for a
    negative ``leeway``."""

    def __init__(
        self,
        url: str,
        *,
        client_id: str,
        client_secret: str,
        audience: str | None = None,
        cache_ttl: float = 30.0,
        timeout: float = 5.0,
        http_client: Any = None,
        leeway: float = DEFAULT_LEEWAY,
    ) -> None:
        import httpx

        self._httpx = httpx
        self.url = url
        self._auth = httpx.BasicAuth(client_id, client_secret)
        self.audience = audience
        self.cache_ttl = cache_ttl
        self.timeout = timeout
        self.leeway = _leeway(leeway)
        self._http = http_client
        self._cache: dict[str, tuple[float, AccessToken]] = {}

    async def verify(self, token: str) -> AccessToken:
        """The identity ``token`` proves. Raises :class:`InvalidToken` (inactive,
        another audience, expired) or :class:`VerifierUnavailable` (the endpoint cannot
        be reached or answers an error)."""
        key = hashlib.sha256(token.encode()).hexdigest()
        cached = self._cache.get(key)
        now = time.time()
        if cached is not None and cached[0] > now:
            return cached[1]
        httpx = self._httpx
        client = self._http or httpx.AsyncClient(timeout=self.timeout)
        try:
            resp = await client.post(self.url, data={"token": token}, auth=self._auth, timeout=self.timeout)
            resp.raise_for_status()
            claims = resp.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise VerifierUnavailable(f"cannot reach the introspection endpoint: {type(exc).__name__}") from None
        finally:
            if self._http is None:
                await client.aclose()
        if not isinstance(claims, dict) or claims.get("active") is not True:
            raise InvalidToken("the token is not active")
        if self.audience is not None:
            aud = claims.get("aud")
            auds = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
            if self.audience not in auds:
                raise InvalidToken("the token is not for this resource (aud)")
        identity = identity_from_claims(claims)
        check_expiry(identity, self.leeway, now)
        last = now + self.cache_ttl if identity.expires_at is None else identity.expires_at + self.leeway
        until = min(now + self.cache_ttl, last)
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[key] = (until, identity)
        return identity


class FunctionVerifier:
    """A verifier of your own: ``fn(token)`` (sync or async) returns an
    :class:`AccessToken` (or a claims dict), or raises :class:`InvalidToken`; returning
    None refuses the token. A token whose ``expires_at`` (``exp``) is ``leeway`` seconds
    past is refused too, whether or not ``fn`` looks at it. Raises ``ValueError`` for a
    negative ``leeway``."""

    def __init__(
        self,
        fn: Callable[[str], AccessToken | dict[str, Any] | Awaitable[Any] | None],
        *,
        leeway: float = DEFAULT_LEEWAY,
    ) -> None:
        self._fn = fn
        self.leeway = _leeway(leeway)

    async def verify(self, token: str) -> AccessToken:
        """The identity ``fn`` returns. Raises :class:`InvalidToken` if it returns None
        (or raises it) or the identity has expired (past ``leeway``), ``TypeError`` if it
        returns something else. Cancellation while an async ``fn`` runs cancels it."""
        result = self._fn(token)
        if inspect.isawaitable(result):
            result = await result
        if result is None:
            raise InvalidToken("the token was refused")
        if isinstance(result, dict):
            result = identity_from_claims(result)
        if not isinstance(result, AccessToken):
            raise TypeError("a verifier function must return an AccessToken, a claims dict or None")
        check_expiry(result, self.leeway)
        return result
