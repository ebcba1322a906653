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
import math
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, Protocol

from .identity import AccessToken
from .jwks import Keys, KeySetCache, KeySetUnavailable

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

#: The most tokens an :class:`IntrospectionVerifier` remembers answers for, accepted
#: and refused each (the oldest make room).
MAX_CACHED: Final = 10_000


class InvalidToken(Exception):
    """The token must be refused: malformed, forged, expired, or not for this resource.
    The message says why (it is logged at debug level and never contains the token)."""


class VerifierUnavailable(Exception):
    """The verifier cannot decide now (its JWKS or introspection endpoint is down or
    overloaded): the request is refused with 503, never let through. ``retry_after``, when
    given, is the seconds after which trying again makes sense: the 503's
    ``Retry-After`` (default 5 s)."""

    def __init__(self, message: str = "", *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def _leeway(value: object) -> float:
    """``value`` as a leeway. Raises ``ValueError`` unless it is a finite number >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
        raise ValueError("leeway must be a finite number of seconds >= 0")
    return float(value)


def _seconds(timeout: object, **durations: object) -> None:
    """Raises ``ValueError`` unless ``timeout`` is a finite number of seconds > 0 and
    each of ``durations`` one >= 0 (named in the message)."""
    for name, value in {"timeout": timeout, **durations}.items():
        positive = name == "timeout"
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or value < 0
            or (positive and value == 0)
        ):
            raise ValueError(f"{name} must be a finite number of seconds {'> 0' if positive else '>= 0'}")


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


#: The key type (JWK ``kty``) each family of signature algorithms verifies with: a token
#: whose header pairs its algorithm with a key of another type is refused (PyJWT would raise
#: ``TypeError`` for the pair, which is not the token being invalid).
_KEY_TYPES: Final = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}


class JWTVerifier:
    """Verifies JWT access tokens signed by a key of the JWKS at ``jwks_url``.

    Checks the signature (only ``algorithms``; never ``none``), ``iss`` == ``issuer``,
    ``aud`` contains ``audience`` (this resource's URL, RFC 8707), and ``exp``/``nbf``
    with ``leeway`` seconds.

    The key set (docs/auth.md, "When the key set cannot be fetched") is fetched on first
    use, one fetch at a time whoever waits for it, each within ``timeout`` seconds. It is
    fresh for ``cache_ttl`` seconds, then refreshed in the background while it goes on
    serving. While the endpoint fails, fetches back off (1 s doubling to
    ``max_backoff``; meanwhile a request that needs a fetch gets 503 at once) and the last
    key set fetched keeps serving for at most ``max_stale`` seconds past its
    ``cache_ttl`` (0: not at all). A token naming a key id the set lacks triggers one
    refetch (key rotation), at most every ``min_refetch`` seconds. ``http_client`` (an
    ``httpx.AsyncClient``) is used if given. Raises ``ValueError`` for a ``none`` or
    ``HS*`` algorithm or a negative ``leeway``, ``cache_ttl``, ``max_stale``,
    ``min_refetch`` or ``max_backoff``, or a ``timeout`` that is not positive.
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
        max_stale: float = 3600.0,
        max_backoff: float = 60.0,
    ) -> None:
        import jwt  # the auth extra: fail at construction, not at the first request

        if not algorithms or any(a.lower() == "none" or a.startswith("HS") for a in algorithms):
            raise ValueError("algorithms must be asymmetric signature algorithms (not none, not HS*)")
        _seconds(timeout=timeout, cache_ttl=cache_ttl, max_stale=max_stale, min_refetch=min_refetch, max_backoff=max_backoff)
        self._jwt = jwt
        self.jwks_url = jwks_url
        self.issuer = issuer
        self.audience = [audience] if isinstance(audience, str) else list(audience)
        self.algorithms = list(algorithms)
        self.leeway = _leeway(leeway)
        self.timeout = timeout
        self._http = http_client
        self._keys = KeySetCache(
            self._fetch,
            url=jwks_url,
            cache_ttl=cache_ttl,
            max_stale=max_stale,
            min_refetch=min_refetch,
            max_backoff=max_backoff,
            timeout=timeout,
        )

    async def _fetch(self) -> Keys:
        """The key set at ``jwks_url``. Raises :class:`KeySetUnavailable` saying what went
        wrong (an unreachable endpoint, an error status, a document that is not a key set)."""
        import httpx

        client = self._http or httpx.AsyncClient(timeout=self.timeout)
        try:
            resp = await client.get(self.jwks_url, timeout=self.timeout)
            if resp.status_code != 200:
                raise KeySetUnavailable(f"HTTP {resp.status_code}")
            keyset = self._jwt.PyJWKSet.from_dict(resp.json())
        except (httpx.HTTPError, ValueError, self._jwt.PyJWTError) as exc:
            raise KeySetUnavailable(type(exc).__name__) from None
        finally:
            if self._http is None:
                await client.aclose()
        keys = {k.key_id: k for k in keyset.keys if k.key_id}
        return keys, keyset.keys[0] if len(keyset.keys) == 1 else None

    async def _key(self, kid: str | None) -> Any:
        try:
            key = await self._keys.key(kid)
        except KeySetUnavailable as exc:
            raise VerifierUnavailable(str(exc), retry_after=exc.retry_after) from None
        if key is None:
            if kid is None:
                raise InvalidToken("the token names no key id and the key set has several keys")
            raise InvalidToken("the token is signed by an unknown key")
        return key

    async def verify(self, token: str) -> AccessToken:
        """The identity ``token`` proves. Raises :class:`InvalidToken` (bad signature,
        algorithm, issuer, audience, expiry) or :class:`VerifierUnavailable` (no usable key
        set can be had now). Cancellation abandons the wait for a key fetch, not the
        fetch (other requests may be waiting for it)."""
        jwt = self._jwt
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise InvalidToken("not a JWT") from None
        alg = header.get("alg")
        if alg not in self.algorithms:
            raise InvalidToken("the token's algorithm is not accepted")
        kid = header.get("kid")
        key = await self._key(kid if isinstance(kid, str) else None)
        if _KEY_TYPES.get(alg[:2]) != key.key_type:
            raise InvalidToken("the token's key is not of its algorithm's type")
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


#: An introspection gives up its slot once the endpoint has not answered for this many
#: times ``timeout`` (an endpoint that drips its answer cannot hold slots for ever).
_HOLD_LIMIT: Final = 3

#: A token as RFC 6750 lets a ``Bearer`` header carry it (``b64token``); nothing else
#: can be a token worth asking an authorization server about.
_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")


class _Expiring:
    """At most ``size`` values by key, each until its own deadline (``time.time()``);
    the oldest entry makes room for a new one."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: dict[str, tuple[float, Any]] = {}

    def get(self, key: str, now: float) -> Any:
        item = self._items.get(key)
        if item is None:
            return None
        if item[0] <= now:
            del self._items[key]
            return None
        return item[1]

    def put(self, key: str, value: Any, until: float) -> None:
        self._items.pop(key, None)
        while len(self._items) >= self._size:
            del self._items[next(iter(self._items))]
        self._items[key] = (until, value)

    def __len__(self) -> int:
        return len(self._items)


class _Shared:
    """One introspection in flight, and how many requests wait for its answer."""

    __slots__ = ("task", "waiters")

    def __init__(self) -> None:
        self.task: asyncio.Task[AccessToken]
        self.waiters = 0


class IntrospectionVerifier:
    """Verifies opaque tokens with an RFC 7662 introspection endpoint, authenticating
    with ``client_id``/``client_secret`` (HTTP Basic). Refuses inactive tokens and,
    when ``audience`` is given, tokens whose ``aud`` does not contain it, and tokens
    whose ``exp`` is ``leeway`` seconds past.

    What the endpoint is asked is bounded, so a flood of made-up tokens cannot turn this
    server into a load generator against the authorization server (docs/auth.md,
    "Introspection"): a token that cannot be one (not RFC 6750 ``b64token`` syntax) is
    refused without asking; concurrent requests with the same token share one
    introspection; at most ``max_concurrent`` introspections are in flight at once (one
    holds its slot until the endpoint answers, even if nobody waits any more), and a
    token that cannot get its answer (a free slot included) within ``timeout`` seconds
    gets 503; an accepted token's answer is kept ``cache_ttl`` seconds (never past its
    ``exp`` plus ``leeway``), a refused one's ``negative_ttl`` seconds (each cache holds
    :data:`MAX_CACHED` tokens, by digest). Raises ``ValueError`` for a negative
    ``leeway``, ``cache_ttl`` or ``negative_ttl``, a ``max_concurrent`` below 1 or a
    ``timeout`` that is not positive."""

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
        negative_ttl: float = 10.0,
        max_concurrent: int = 16,
    ) -> None:
        import httpx

        _seconds(timeout=timeout, cache_ttl=cache_ttl, negative_ttl=negative_ttl)
        if isinstance(max_concurrent, bool) or not isinstance(max_concurrent, int) or max_concurrent < 1:
            raise ValueError("max_concurrent must be an integer >= 1")
        self._httpx = httpx
        self.url = url
        self._auth = httpx.BasicAuth(client_id, client_secret)
        self.audience = audience
        self.cache_ttl = cache_ttl
        self.negative_ttl = negative_ttl
        self.max_concurrent = max_concurrent
        self.timeout = timeout
        self.leeway = _leeway(leeway)
        self._http = http_client
        self._accepted = _Expiring(MAX_CACHED)
        self._refused = _Expiring(MAX_CACHED)
        self._inflight: dict[str, _Shared] = {}
        self._slots: asyncio.Semaphore | None = None

    async def verify(self, token: str) -> AccessToken:
        """The identity ``token`` proves. Raises :class:`InvalidToken` (not a token,
        inactive, another audience, expired; for a while also every later time it is
        presented) or :class:`VerifierUnavailable` (the endpoint cannot be reached, answers
        an error, or no answer could be had within ``timeout``). Cancellation abandons the
        wait, not an introspection other requests for the same token may share."""
        if not _B64TOKEN.fullmatch(token):
            raise InvalidToken("the token is malformed")
        key = hashlib.sha256(token.encode()).hexdigest()
        now = time.time()
        accepted: AccessToken | None = self._accepted.get(key, now)
        if accepted is not None:
            return accepted
        refused: str | None = self._refused.get(key, now)
        if refused is not None:
            raise InvalidToken(refused)
        shared = self._inflight.get(key)
        if shared is None or shared.task.get_loop() is not asyncio.get_running_loop():
            shared = self._inflight[key] = _Shared()
            shared.task = asyncio.ensure_future(self._introspect(token, key, shared))
            shared.task.add_done_callback(_retrieve)
        shared.waiters += 1
        try:
            async with asyncio.timeout(self.timeout):
                return await asyncio.shield(shared.task)
        except TimeoutError:
            raise VerifierUnavailable(f"no introspection answer within {self.timeout:g} s", retry_after=1) from None
        finally:
            shared.waiters -= 1

    async def _introspect(self, token: str, key: str, shared: _Shared) -> AccessToken:
        """Ask the endpoint about ``token`` once a slot is free (within ``timeout``, and
        only if a request still waits for the answer), and remember what it said. The slot
        is held until the endpoint answers — also when every request that wanted the
        answer has stopped waiting meanwhile — so that the endpoint never has more than
        ``max_concurrent`` of our introspections to work on; an answer that takes
        :data:`_HOLD_LIMIT` timeouts gives the slot up. Raises as :meth:`verify`."""
        try:
            if self._slots is None:
                self._slots = asyncio.Semaphore(self.max_concurrent)
            try:
                async with asyncio.timeout(self.timeout):
                    await self._slots.acquire()
            except TimeoutError:
                raise VerifierUnavailable("too many introspections in flight", retry_after=1) from None
            if not shared.waiters:  # everyone gave up while it waited for a slot: do not ask
                self._slots.release()
                raise VerifierUnavailable("too many introspections in flight", retry_after=1)
            try:
                async with asyncio.timeout(_HOLD_LIMIT * self.timeout):
                    claims = await self._ask(token)
            except TimeoutError:
                raise VerifierUnavailable("the introspection endpoint answers too slowly", retry_after=1) from None
            finally:
                self._slots.release()
            try:
                identity = self._identity(claims)
            except InvalidToken as exc:
                if self.negative_ttl > 0:
                    self._refused.put(key, str(exc), time.time() + self.negative_ttl)
                raise
            now = time.time()
            last = now + self.cache_ttl if identity.expires_at is None else identity.expires_at + self.leeway
            until = min(now + self.cache_ttl, last)
            if until > now:
                self._accepted.put(key, identity, until)
            return identity
        finally:
            if self._inflight.get(key) is shared:  # not one a request on another loop started since
                del self._inflight[key]

    async def _ask(self, token: str) -> Any:
        """The endpoint's JSON answer about ``token`` (each step of the exchange within
        ``timeout``). Raises :class:`VerifierUnavailable` if it cannot be had."""
        httpx = self._httpx
        client = self._http or httpx.AsyncClient(timeout=self.timeout)
        try:
            resp = await client.post(self.url, data={"token": token}, auth=self._auth, timeout=self.timeout)
            resp.raise_for_status()
            return resp.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise VerifierUnavailable(f"cannot reach the introspection endpoint: {type(exc).__name__}") from None
        finally:
            if self._http is None:
                await client.aclose()

    def _identity(self, claims: Any) -> AccessToken:
        """The identity an introspection answer describes. Raises :class:`InvalidToken`."""
        if not isinstance(claims, dict) or claims.get("active") is not True:
            raise InvalidToken("the token is not active")
        if self.audience is not None:
            aud = claims.get("aud")
            auds = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
            if self.audience not in auds:
                raise InvalidToken("the token is not for this resource (aud)")
        identity = identity_from_claims(claims)
        check_expiry(identity, self.leeway)
        return identity


def _retrieve(future: asyncio.Future[Any]) -> None:
    """Mark a shared introspection's exception as seen (its waiters, if any, got it)."""
    if not future.cancelled():
        future.exception()


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
