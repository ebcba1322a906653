"""What each verifier takes and refuses (src/mcpkit/auth/verifiers.py), as a client sees it over
real HTTP (uvicorn on loopback, the server in this process): the JWT algorithms and key types,
``nbf``, the leeway and the expiry instant, the settings refused at construction, and an
introspection answer that does not say plainly that the token is active."""

from __future__ import annotations

import asyncio
import base64
import gc
import json
import logging
import re
import time
import types
from collections.abc import Iterator
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from mcpkit.auth import jwks, verifiers
from mcpkit.auth.identity import AccessToken
from mcpkit.auth.server import ResourceServer
from mcpkit.auth.verifiers import (
    FunctionVerifier,
    IntrospectionVerifier,
    InvalidToken,
    JWTVerifier,
    VerifierUnavailable,
)
from support.auth import ISSUER, KeyServer, challenge, guarded_by, key_server, post, token
from support.serving import serve_in_thread

pytestmark = pytest.mark.timeout(60)


def assert_taken(resp: httpx.Response) -> None:
    assert resp.status_code == 200, (resp.status_code, challenge(resp))
    assert resp.json()["result"]["content"][0]["text"] == "alice via app-1 with mcp"


def assert_refused(resp: httpx.Response, auth: ResourceServer, why: str) -> None:
    """401 with the exact challenge: the metadata, the scope, invalid_token and ``why``."""
    assert resp.status_code == 401, (resp.status_code, resp.text)
    assert challenge(resp) == (
        f'Bearer resource_metadata="{auth.metadata_url}", scope="mcp", error="invalid_token", error_description="{why}"'
    )


# --- JWTs: algorithms and the key types they verify with ---------------------------------------------


@pytest.fixture(scope="module")
def keyset() -> Iterator[tuple[KeyServer, str]]:
    """A key set with an RSA key (k1), a P-256 key (ec) and an Ed25519 key (ed)."""
    with key_server() as (ks, base):
        ks.keys["ec"] = ec.generate_private_key(ec.SECP256R1())
        ks.keys["ed"] = ed25519.Ed25519PrivateKey.generate()
        yield ks, base


@pytest.fixture
def jwt_guarded(keyset: tuple[KeyServer, str]) -> Iterator[tuple[str, ResourceServer]]:
    """A server guarded by a JWT verifier of its own (made in each test: what a test
    exercises includes building it)."""
    _, base = keyset
    with guarded_by(JWTVerifier(f"{base}/jwks", issuer=ISSUER, audience="placeholder", timeout=2)) as found:
        yield found


@pytest.mark.parametrize(("alg", "kid"), [("RS256", "k1"), ("PS256", "k1"), ("ES256", "ec"), ("EdDSA", "ed")])
def test_each_default_algorithm_with_its_key_type_is_taken(
    keyset: tuple[KeyServer, str], jwt_guarded: tuple[str, ResourceServer], alg: str, kid: str
) -> None:
    url, _ = jwt_guarded
    assert_taken(post(url, token(keyset, url, alg=alg, kid=kid)))


@pytest.mark.parametrize(
    ("alg", "kid", "signer"),
    [
        ("RS256", "ec", "k1"),  # an EC key where RSA is expected
        ("PS256", "ed", "k1"),
        ("ES256", "k1", "ec"),  # the kid resolves to an RSA key
        ("ES256", "ed", "ec"),
        ("EdDSA", "ec", "ed"),
        ("EdDSA", "k1", "ed"),
    ],
)
def test_a_key_of_another_type_than_the_algorithm_is_401_not_503(
    keyset: tuple[KeyServer, str], jwt_guarded: tuple[str, ResourceServer], alg: str, kid: str, signer: str
) -> None:
    """The token's header chooses both the algorithm and the key: a pair that cannot go
    together is the token being bad (401), not the verifier being unable to decide (503)."""
    ks, _ = keyset
    url, auth = jwt_guarded
    resp = post(url, token(keyset, url, alg=alg, kid=kid, key=ks.keys[signer]))
    assert_refused(resp, auth, "the token's key is not of its algorithm's type")


def test_a_token_not_valid_yet_is_refused_within_the_leeway_only(
    keyset: tuple[KeyServer, str], jwt_guarded: tuple[str, ResourceServer]
) -> None:
    """``nbf`` ten minutes ahead: 401 (an hour of leeway would let it in); 10 s ahead: within
    the 30 s leeway for clock skew, taken."""
    url, auth = jwt_guarded
    now = int(time.time())
    assert_refused(post(url, token(keyset, url, nbf=now + 600)), auth, "the token is invalid (ImmatureSignatureError)")
    assert_refused(post(url, token(keyset, url, nbf=now + 90)), auth, "the token is invalid (ImmatureSignatureError)")
    assert_taken(post(url, token(keyset, url, nbf=now + 10)))
    assert_taken(post(url, token(keyset, url, nbf=now - 600)))


def test_an_algorithm_not_accepted_is_refused(keyset: tuple[KeyServer, str]) -> None:
    """A verifier for ES256 only refuses an RS256 token, an unsigned one and an HS256 one
    made with the RSA public key as its secret (key confusion)."""
    ks, base = keyset
    with guarded_by(JWTVerifier(f"{base}/jwks", issuer=ISSUER, audience="placeholder", algorithms=["ES256"])) as (url, auth):
        assert_taken(post(url, token(keyset, url, alg="ES256", kid="ec")))
        assert_refused(post(url, token(keyset, url)), auth, "the token's algorithm is not accepted")
        claims = {"iss": ISSUER, "aud": url, "sub": "alice", "scope": "mcp", "exp": int(time.time()) + 300}
        unsigned = jwt.encode(claims, None, algorithm="none", headers={"kid": "ec"})
        assert_refused(post(url, unsigned), auth, "the token's algorithm is not accepted")
        public = (
            ks.keys["k1"].public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        )
        confused = _hs256(claims, public, kid="k1")
        assert_refused(post(url, confused), auth, "the token's algorithm is not accepted")
        assert_refused(post(url, "e30.e30.sig"), auth, "the token's algorithm is not accepted")  # a header without alg


def _hs256(claims: dict[str, Any], secret: bytes, *, kid: str) -> str:
    import hashlib
    import hmac

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    signing = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode()) + "." + b64(json.dumps(claims).encode())
    return signing + "." + b64(hmac.new(secret, signing.encode(), hashlib.sha256).digest())


@pytest.mark.parametrize("algorithms", [["none"], ["None"], ["NONE"], ["RS256", "none"], ["HS256"], ["ES256", "HS512"], [], ()])
def test_unsigned_and_symmetric_algorithms_are_refused_at_construction(algorithms: list[str]) -> None:
    with pytest.raises(ValueError, match=r"^algorithms must be asymmetric signature algorithms \(not none, not HS\*\)$"):
        JWTVerifier("http://127.0.0.1:9/jwks", issuer=ISSUER, audience="a", algorithms=algorithms)


@pytest.mark.parametrize("leeway", [-1, -0.001, float("inf"), float("nan"), True, "1", None])
def test_a_leeway_must_be_a_finite_number_of_seconds_at_least_zero(leeway: Any) -> None:
    for make in (
        lambda: JWTVerifier("http://127.0.0.1:9/jwks", issuer=ISSUER, audience="a", leeway=leeway),
        lambda: IntrospectionVerifier("http://127.0.0.1:9/i", client_id="c", client_secret="s", leeway=leeway),
        lambda: FunctionVerifier(lambda t: None, leeway=leeway),
    ):
        with pytest.raises(ValueError, match=r"^leeway must be a finite number of seconds >= 0$"):
            make()


@pytest.mark.parametrize("value", [-1, float("inf"), float("nan"), True, "1", None])
@pytest.mark.parametrize(
    ("name", "make"),
    [
        *[
            (name, lambda v, name=name: JWTVerifier("http://127.0.0.1:9/jwks", issuer=ISSUER, audience="a", **{name: v}))
            for name in ("timeout", "cache_ttl", "max_stale", "min_refetch", "max_backoff")
        ],
        *[
            (
                name,
                lambda v, name=name: IntrospectionVerifier("http://127.0.0.1:9/i", client_id="c", client_secret="s", **{name: v}),
            )
            for name in ("timeout", "cache_ttl", "negative_ttl")
        ],
    ],
)
def test_durations_are_finite_numbers_of_seconds(name: str, make: Any, value: Any) -> None:
    bound = "> 0" if name == "timeout" else ">= 0"
    with pytest.raises(ValueError, match=f"^{name} must be a finite number of seconds {re.escape(bound)}$"):
        make(value)
    if name == "timeout":
        with pytest.raises(ValueError, match=r"^timeout must be a finite number of seconds > 0$"):
            make(0)
        assert make(0.01).timeout == 0.01
    else:
        make(0)  # zero is fine: no caching, no staleness, no wait
        make(0.0)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "4", None])
def test_max_concurrent_is_an_integer_at_least_one(bad: Any) -> None:
    with pytest.raises(ValueError, match=r"^max_concurrent must be an integer >= 1$"):
        IntrospectionVerifier("http://127.0.0.1:9/i", client_id="c", client_secret="s", max_concurrent=bad)
    assert IntrospectionVerifier("http://127.0.0.1:9/i", client_id="c", client_secret="s", max_concurrent=1).max_concurrent == 1


async def test_the_jwt_verifier_takes_its_issuer_and_any_of_its_audiences(keyset: tuple[KeyServer, str]) -> None:
    _, base = keyset
    for audience in ("urn:me", ["urn:other", "urn:me"], ("urn:me",)):
        verifier = JWTVerifier(f"{base}/jwks", issuer=ISSUER, audience=audience)
        assert (await verifier.verify(token(keyset, "urn:me"))).subject == "alice"
        for claims, why in (
            ({"aud": "urn:else"}, "the token is not for this resource (aud)"),
            ({"iss": "https://evil.example"}, "the token is from another issuer"),
            ({"iss": None}, "the token is invalid (MissingRequiredClaimError)"),
        ):
            with pytest.raises(InvalidToken, match=f"^{re.escape(why)}$"):
                await verifier.verify(token(keyset, "urn:me", **claims))


async def test_the_jwt_verifier_defaults(keyset: tuple[KeyServer, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The documented defaults, on a monotonic clock of the test's own (the key set's): a
    key set is fresh for 300 s, then refreshed in the background; an unknown kid refetches
    at most every 10 s; while the endpoint is down the last key set serves 3600 s past its
    freshness; the back-off doubles up to 60 s; each fetch within 5 s."""
    ks, base = keyset
    clock = [1000.0]
    monkeypatch.setattr(jwks, "time", types.SimpleNamespace(monotonic=lambda: clock[0], time=time.time))
    verifier = JWTVerifier(f"{base}/jwks", issuer=ISSUER, audience="urn:me")
    assert verifier.timeout == 5.0
    good = token(keyset, "urn:me")
    stranger = token(keyset, "urn:me", kid="k9", key=rsa.generate_private_key(public_exponent=65537, key_size=2048))
    ks.reset_counts()
    await verifier.verify(good)
    assert ks.fetches == 1
    clock[0] = 1300.0
    await verifier.verify(good)
    await asyncio.sleep(0.2)
    assert ks.fetches == 1  # still fresh
    clock[0] = 1300.5
    await verifier.verify(good)
    await _until(lambda: ks.fetches == 2, timeout=10)  # refreshed in the background
    clock[0] = 1310.4
    with pytest.raises(InvalidToken, match=r"^the token is signed by an unknown key$"):
        await verifier.verify(stranger)
    assert ks.fetches == 2  # within min_refetch of the last fetch
    clock[0] = 1310.6
    with pytest.raises(InvalidToken, match=r"^the token is signed by an unknown key$"):
        await verifier.verify(stranger)
    assert ks.fetches == 3  # refetched for it
    ks.down = True
    try:
        clock[0] = 1310.6 + 300 + 3600 - 0.1
        await verifier.verify(good)  # stale, still serving; its refresh fails
        await _until(lambda: ks.jwks_requests == 4, timeout=10)
        await asyncio.sleep(0.2)
        clock[0] = 1310.6 + 300 + 3600 + 0.1
        with pytest.raises(VerifierUnavailable):
            await verifier.verify(good)  # past max_stale: nothing is accepted
        backoffs = []
        for _ in range(7):
            clock[0] += 100
            with pytest.raises(VerifierUnavailable) as caught:
                await verifier.verify(good)
            backoffs.append(caught.value.retry_after)
        assert backoffs == [2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]
    finally:
        ks.down = False


def test_check_expiry_takes_the_time_it_is_given() -> None:
    """``check_expiry(identity, leeway, now)``: refused from ``expires_at + leeway`` on,
    at the ``now`` given (a caller's own clock), not the current time."""
    soon = AccessToken(subject="alice", client_id=None, scopes=frozenset(), expires_at=1_000.0)
    verifiers.check_expiry(soon, 0, now=999.5)
    verifiers.check_expiry(soon, 10, now=1_009.5)
    with pytest.raises(InvalidToken, match=r"^the token has expired$"):
        verifiers.check_expiry(soon, 10, now=1_010.0)
    later = AccessToken(subject="alice", client_id=None, scopes=frozenset(), expires_at=time.time() + 3600)
    with pytest.raises(InvalidToken):
        verifiers.check_expiry(later, 0, now=time.time() + 7200)
    verifiers.check_expiry(later, 0)  # the current time, an hour before it expires


def test_the_jwt_verifier_itself_refuses_an_expired_token(keyset: tuple[KeyServer, str]) -> None:
    """Used without a ResourceServer (which checks ``exp`` again): ``verify`` refuses a
    token 60 s past its ``exp`` with its 30 s leeway, and one 5 s past with none."""
    _, base = keyset

    async def verdicts() -> list[str]:
        out = []
        for leeway, exp in ((30.0, -60), (30.0, -3000), (0.0, -5), (30.0, -5), (0.0, 300)):
            verifier = JWTVerifier(f"{base}/jwks", issuer=ISSUER, audience="urn:me", leeway=leeway, timeout=2)
            try:
                who = await verifier.verify(token(keyset, "urn:me", exp=int(time.time()) + exp))
            except InvalidToken as exc:
                out.append(str(exc))
            else:
                out.append(f"{who.subject}, expires {who.expires_at is not None}")
        return out

    assert asyncio.run(verdicts()) == [
        "the token has expired",
        "the token has expired",
        "the token has expired",
        "alice, expires True",
        "alice, expires True",
    ]


# --- the expiry instant, for every verifier ----------------------------------------------------------


def test_a_token_is_refused_from_the_instant_its_exp_plus_the_leeway_is_reached(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a clock of the test's own (the auth layer's ``time.time``; the server is in this
    process): a token is taken a millisecond before ``exp`` + leeway and refused at it."""
    exp = 2_000_000_000.0
    clock = [exp]
    monkeypatch.setattr(verifiers, "time", types.SimpleNamespace(time=lambda: clock[0], monotonic=time.monotonic))
    tokens = {"t": {"sub": "alice", "client_id": "app-1", "scope": "mcp", "exp": exp}}
    for leeway in (30.0, 0.0):
        with guarded_by(FunctionVerifier(tokens.get, leeway=leeway)) as (url, auth):
            clock[0] = exp + leeway - 0.001
            assert_taken(post(url, "t"))
            clock[0] = exp + leeway
            assert_refused(post(url, "t"), auth, "the token has expired")


# --- introspection: only an answer that says plainly "active": true lets a token in ------------------


@pytest.mark.parametrize(
    "answer",
    [
        {"sub": "alice", "client_id": "app-1", "scope": "mcp"},  # no "active"
        {"active": "true", "sub": "alice", "client_id": "app-1", "scope": "mcp"},
        {"active": 1, "sub": "alice", "client_id": "app-1", "scope": "mcp"},
        {"active": [True], "sub": "alice", "client_id": "app-1", "scope": "mcp"},
        {"active": False, "sub": "alice", "client_id": "app-1", "scope": "mcp"},
        [{"active": True, "sub": "alice", "client_id": "app-1", "scope": "mcp"}],  # not an object
    ],
)
def test_introspection_refuses_unless_the_answer_says_active_true(answer: Any) -> None:
    with key_server() as (ks, base):
        ks.active["tok"] = answer
        ks.active["good"] = {"active": True, "sub": "alice", "client_id": "app-1", "scope": "mcp"}
        with guarded_by(IntrospectionVerifier(f"{base}/introspect", client_id="rs", client_secret="s")) as (url, auth):
            assert_refused(post(url, "tok"), auth, "the token is not active")
            assert_taken(post(url, "good"))


def test_introspection_checks_the_audience_when_it_is_given() -> None:
    with key_server() as (ks, base):
        common = {"active": True, "sub": "alice", "client_id": "app-1", "scope": "mcp"}
        ks.active.update(
            {
                "one": {**common, "aud": "urn:mcp"},
                "listed": {**common, "aud": ["urn:other", "urn:mcp"]},
                "other": {**common, "aud": "urn:other"},
                "others": {**common, "aud": ["urn:other"]},
                "none": common,
                "odd": {**common, "aud": {"urn:mcp": True}},
            }
        )
        with guarded_by(IntrospectionVerifier(f"{base}/introspect", client_id="rs", client_secret="s", audience="urn:mcp")) as (
            url,
            auth,
        ):
            for taken in ("one", "listed"):
                assert_taken(post(url, taken))
            for refused in ("other", "others", "none", "odd"):
                assert_refused(post(url, refused), auth, "the token is not for this resource (aud)")
        with guarded_by(IntrospectionVerifier(f"{base}/introspect", client_id="rs", client_secret="s")) as (url, _):
            for taken in ("one", "other", "none", "odd"):
                assert_taken(post(url, taken))  # no audience asked for: none checked


# --- a verifier of one's own ----------------------------------------------------------------------------


def test_a_function_verifier_takes_identities_and_claims_and_refuses_none() -> None:
    async def check(tok: str) -> Any:
        return {
            "claims": {"sub": "alice", "client_id": "app-1", "scope": "mcp"},
            "object": AccessToken("alice", "app-1", frozenset({"mcp"})),
        }.get(tok)

    with guarded_by(FunctionVerifier(check)) as (url, auth):
        assert_taken(post(url, "claims"))
        assert_taken(post(url, "object"))
        assert_refused(post(url, "other"), auth, "the token was refused")


# --- the key set document ----------------------------------------------------------------------------


class Document:
    """An endpoint of the test's own answering ``status`` and ``body`` to every request,
    counting them."""

    def __init__(self, body: Any, status: int = 200) -> None:
        self.body = body
        self.status = status
        self.requests = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        self.requests += 1
        data = self.body if isinstance(self.body, bytes) else json.dumps(self.body).encode()
        await send({"type": "http.response.start", "status": self.status, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": data})


def _jwk(key: rsa.RSAPrivateKey, **extra: str) -> dict[str, Any]:
    jwk: dict[str, Any] = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    return {**jwk, **extra}


def _signed(key: Any, url: str, headers: dict[str, Any]) -> str:
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": url, "sub": "alice", "client_id": "app-1", "scope": "mcp", "exp": now + 300}
    return jwt.encode(claims, key, algorithm="RS256", headers=headers)


def test_a_one_key_set_verifies_tokens_naming_no_key_id_and_a_larger_one_does_not() -> None:
    one, two = (rsa.generate_private_key(public_exponent=65537, key_size=2048) for _ in range(2))
    doc = Document({"keys": [_jwk(one)]})  # a key without a kid
    with serve_in_thread(doc) as port:
        with guarded_by(JWTVerifier(f"http://127.0.0.1:{port}/jwks", issuer=ISSUER, audience="x")) as (url, auth):
            assert_taken(post(url, _signed(one, url, {})))
            header = base64.urlsafe_b64encode(b'{"alg":"RS256","kid":7}').rstrip(b"=").decode()
            numbered = header + "." + _signed(one, url, {}).split(".", 1)[1]
            assert_refused(post(url, numbered), auth, "not a JWT")  # PyJWT refuses a kid that is not a string
            assert_refused(post(url, _signed(one, url, {"kid": "a"})), auth, "the token is signed by an unknown key")
        doc.body = {"keys": [_jwk(one, kid="a"), _jwk(two, kid="b")]}
        with guarded_by(JWTVerifier(f"http://127.0.0.1:{port}/jwks", issuer=ISSUER, audience="x")) as (url, auth):
            assert_taken(post(url, _signed(two, url, {"kid": "b"})))
            assert_refused(post(url, _signed(one, url, {})), auth, "the token names no key id and the key set has several keys")
            assert_refused(post(url, _signed(two, url, {"kid": "a"})), auth, "the token is invalid (InvalidSignatureError)")
        doc.body = {"keys": [_jwk(one, kid="a"), _jwk(two)]}  # only keys with a kid are found by one
        with guarded_by(JWTVerifier(f"http://127.0.0.1:{port}/jwks", issuer=ISSUER, audience="x")) as (url, auth):
            assert_taken(post(url, _signed(one, url, {"kid": "a"})))
            assert_refused(post(url, _signed(two, url, {})), auth, "the token names no key id and the key set has several keys")


@pytest.mark.parametrize(
    ("status", "body", "reason"),
    [
        (500, {"keys": []}, "HTTP 500"),
        (404, b"gone", "HTTP 404"),
        (201, None, "HTTP 201"),  # None: a good key set, but not a 200
        (200, b"<html>", "JSONDecodeError"),
        (200, {"keys": "none"}, "PyJWKSetError"),
        (200, {"no": "keys"}, "PyJWKSetError"),
        (200, [1], "AttributeError"),
    ],
)
def test_a_key_set_that_cannot_be_had_is_503_and_logged(
    caplog: pytest.LogCaptureFixture, status: int, body: Any, reason: str
) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with (
        caplog.at_level(logging.WARNING, logger="mcpkit.auth"),
        serve_in_thread(Document({"keys": [_jwk(key, kid="a")]} if body is None else body, status)) as port,
        guarded_by(JWTVerifier(f"http://127.0.0.1:{port}/jwks", issuer=ISSUER, audience="x", timeout=2)) as (url, _),
    ):
        resp = post(url, _signed(key, url, {"kid": "a"}))
        assert resp.status_code == 503, resp.text
        assert resp.headers["retry-after"] == "1"  # the back-off after a first failure
    logged = [r.getMessage() for r in caplog.records if r.name == "mcpkit.auth"]
    assert logged == [
        f"cannot fetch the key set from http://127.0.0.1:{port}/jwks ({reason}): tokens are refused (503); next try in 1 s",
        f"cannot verify tokens: cannot fetch the key set: {reason}",
    ], logged


def test_a_key_set_that_does_not_come_within_timeout_is_503(caplog: pytest.LogCaptureFixture) -> None:
    with (
        caplog.at_level(logging.WARNING, logger="mcpkit.auth"),
        key_server() as (ks, base),
        guarded_by(JWTVerifier(f"{base}/jwks", issuer=ISSUER, audience="x", timeout=1)) as (url, _),
    ):
        ks.delay = 60.0
        started = time.monotonic()
        resp = post(url, token((ks, base), url))
        ks.delay = 0.0
        assert resp.status_code == 503
        assert time.monotonic() - started < 10
    logged = [r.getMessage() for r in caplog.records if r.name == "mcpkit.auth"]
    assert "cannot verify tokens: cannot fetch the key set: no answer within 1 s" in logged, logged


async def test_the_verifiers_timeout_applies_to_each_request_whatever_the_clients_default() -> None:
    """A client of one's own whose default timeout is short: the verifier's requests wait
    their own ``timeout`` (5 s) for an authorization server that answers after 1 s."""
    async with httpx.AsyncClient(timeout=0.2) as client:
        with key_server() as (ks, base):
            ks.active["tok"] = ALICE
            verifier = JWTVerifier(f"{base}/jwks", issuer=ISSUER, audience="urn:me", http_client=client)
            introspect = IntrospectionVerifier(f"{base}/introspect", client_id="rs", client_secret="s", http_client=client)
            ks.delay = 1.0
            assert (await verifier.verify(token((ks, base), "urn:me"))).subject == "alice"
            assert (await introspect.verify("tok")).subject == "alice"


@pytest.mark.parametrize(
    ("claims", "why"),
    [
        ({"aud": "https://other.example/mcp"}, "the token is not for this resource (aud)"),
        ({"iss": "https://evil.example"}, "the token is from another issuer"),
        ({"exp": 1_000_000_000}, "the token has expired"),
        ({"exp": None}, "the token is invalid (MissingRequiredClaimError)"),
        ({"iss": None}, "the token is invalid (MissingRequiredClaimError)"),
        ({"aud": None}, "the token is invalid (MissingRequiredClaimError)"),
        ({"exp": "tomorrow"}, "the token is invalid (DecodeError)"),
    ],
)
def test_each_bad_claim_is_refused_saying_which(
    keyset: tuple[KeyServer, str], jwt_guarded: tuple[str, ResourceServer], claims: dict[str, Any], why: str
) -> None:
    url, auth = jwt_guarded
    assert_refused(post(url, token(keyset, url, **claims)), auth, why)


def test_forged_and_unknown_and_malformed_tokens_are_refused_saying_which(
    keyset: tuple[KeyServer, str], jwt_guarded: tuple[str, ResourceServer]
) -> None:
    url, auth = jwt_guarded
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert_refused(post(url, token(keyset, url, key=stranger)), auth, "the token is invalid (InvalidSignatureError)")
    assert_refused(post(url, token(keyset, url, key=stranger, kid="nope")), auth, "the token is signed by an unknown key")
    for malformed in ("not-a-jwt", "a.b.c", "e30"):
        assert_refused(post(url, malformed), auth, "not a JWT")


async def test_a_client_of_ones_own_is_used_and_left_open(keyset: tuple[KeyServer, str]) -> None:
    ks, base = keyset
    sent: list[str] = []

    async def record(request: httpx.Request) -> None:
        sent.append(request.url.path)

    async with httpx.AsyncClient(event_hooks={"request": [record]}) as client:
        verifier = JWTVerifier(
            f"{base}/jwks", issuer=ISSUER, audience="urn:me", http_client=client, cache_ttl=0, max_stale=0, min_refetch=0
        )
        for _ in range(2):
            assert (await verifier.verify(token(keyset, "urn:me"))).subject == "alice"
        assert sent == ["/jwks", "/jwks"]  # fetched each time (cache_ttl 0), with this client
        assert not client.is_closed
        introspect = IntrospectionVerifier(f"{base}/introspect", client_id="rs", client_secret="s", http_client=client)
        ks.active["mine"] = {"active": True, "sub": "alice", "scope": "mcp"}
        assert (await introspect.verify("mine")).subject == "alice"
        assert sent == ["/jwks", "/jwks", "/introspect"]
        assert not client.is_closed
        assert (await verifier.verify(token(keyset, "urn:me"))).subject == "alice"
        assert sent[-1] == "/jwks"


# --- introspection: what the authorization server is asked ---------------------------------------------


def _clock(monkeypatch: pytest.MonkeyPatch, start: float) -> list[float]:
    """The auth layer's ``time.time`` on a clock of the test's own (the server is in this process)."""
    clock = [start]
    monkeypatch.setattr(verifiers, "time", types.SimpleNamespace(time=lambda: clock[0], monotonic=time.monotonic))
    return clock


ALICE = {"active": True, "sub": "alice", "client_id": "app-1", "scope": "mcp"}


def test_what_cannot_be_a_token_is_refused_without_asking() -> None:
    with (
        key_server() as (ks, base),
        guarded_by(IntrospectionVerifier(f"{base}/introspect", client_id="rs", client_secret="s")) as (url, auth),
    ):
        for bad in ("tok@en", "=abc", "a=b", "tok!", "a,b", "a;b", "a*b"):
            assert_refused(post(url, bad), auth, "the token is malformed")
        assert ks.introspections == 0
        ks.active.update({t: ALICE for t in ("a-b.c_d~e+f/g==", "Zz09")})
        for good in ("a-b.c_d~e+f/g==", "Zz09"):
            assert_taken(post(url, good))
        assert ks.introspections == 2


def test_answers_are_cached_for_cache_ttl_and_never_past_exp(monkeypatch: pytest.MonkeyPatch) -> None:
    now = 2_000_000_000.0
    clock = _clock(monkeypatch, now)
    with key_server() as (ks, base):
        ks.active["long"] = ALICE
        ks.active["short"] = {**ALICE, "exp": now + 5}
        verifier = IntrospectionVerifier(f"{base}/introspect", client_id="rs", client_secret="s", cache_ttl=30, leeway=10)
        with guarded_by(verifier) as (url, auth):
            assert_taken(post(url, "long"))
            assert_taken(post(url, "short"))
            assert ks.introspections == 2
            clock[0] = now + 14.9
            assert_taken(post(url, "long"))
            assert_taken(post(url, "short"))  # cached until exp + leeway
            assert ks.introspections == 2
            clock[0] = now + 15
            assert_refused(post(url, "short"), auth, "the token has expired")
            assert ks.introspections == 3  # the cached answer lapsed with exp + leeway: asked again
            clock[0] = now + 29.9
            assert_taken(post(url, "long"))
            assert ks.introspections == 3
            clock[0] = now + 30
            assert_taken(post(url, "long"))
            assert ks.introspections == 4  # cache_ttl passed: asked again
        uncached = IntrospectionVerifier(f"{base}/introspect", client_id="rs", client_secret="s", cache_ttl=0)
        with guarded_by(uncached) as (url, _):
            assert_taken(post(url, "long"))
            assert_taken(post(url, "long"))
            assert ks.introspections == 6


def test_refusals_are_cached_for_negative_ttl(monkeypatch: pytest.MonkeyPatch) -> None:
    now = 2_000_000_000.0
    clock = _clock(monkeypatch, now)
    with key_server() as (ks, base):
        ks.active["late"] = {"active": False}
        verifier = IntrospectionVerifier(f"{base}/introspect", client_id="rs", client_secret="s", negative_ttl=10)
        with guarded_by(verifier) as (url, auth):
            for _ in range(3):
                assert_refused(post(url, "late"), auth, "the token is not active")
            assert ks.introspections == 1
            ks.active["late"] = ALICE  # became active meanwhile: not seen until negative_ttl has passed
            clock[0] = now + 9.9
            assert_refused(post(url, "late"), auth, "the token is not active")
            assert ks.introspections == 1
            clock[0] = now + 10
            assert_taken(post(url, "late"))
            assert ks.introspections == 2
        ks.active["late"] = {"active": False}
        with guarded_by(IntrospectionVerifier(f"{base}/introspect", client_id="rs", client_secret="s", negative_ttl=0.5)) as (
            url,
            auth,
        ):
            clock[0] = now + 100
            assert_refused(post(url, "late"), auth, "the token is not active")
            assert_refused(post(url, "late"), auth, "the token is not active")
            assert ks.introspections == 3  # half a second is remembered too
        with guarded_by(IntrospectionVerifier(f"{base}/introspect", client_id="rs", client_secret="s", negative_ttl=0)) as (
            url,
            auth,
        ):
            assert_refused(post(url, "late"), auth, "the token is not active")
            assert_refused(post(url, "late"), auth, "the token is not active")
            assert ks.introspections == 5  # nothing remembered


def test_the_caches_hold_max_cached_tokens_each_the_oldest_making_room(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verifiers, "MAX_CACHED", 2)
    with key_server() as (ks, base):
        ks.active.update({"a": ALICE, "b": ALICE, "c": ALICE})
        with guarded_by(IntrospectionVerifier(f"{base}/introspect", client_id="rs", client_secret="s")) as (url, auth):
            for tok in ("a", "b", "a", "c"):  # "a" again: still cached, and not moved
                assert_taken(post(url, tok))
            assert ks.introspections == 3
            assert_taken(post(url, "c"))
            assert ks.introspections == 3
            assert_taken(post(url, "a"))  # made room for "c"
            assert ks.introspections == 4
            for tok in ("x", "y", "z", "y", "x"):
                assert_refused(post(url, tok), auth, "the token is not active")
            assert ks.introspections == 8  # x, y, z, then x again (z made room for it)


async def test_one_token_presented_at_once_is_introspected_once() -> None:
    with key_server() as (ks, base):
        ks.active["tok"] = ALICE
        verifier = IntrospectionVerifier(f"{base}/introspect", client_id="rs", client_secret="s", timeout=10)
        ks.delay = 60.0
        calls = [asyncio.ensure_future(verifier.verify("tok")) for _ in range(5)]
        await _until(lambda: ks.introspections == 1)
        ks.delay = 0.0
        assert [who.subject for who in await asyncio.gather(*calls)] == ["alice"] * 5
        assert ks.introspections == 1
        assert (await verifier.verify("tok")).subject == "alice"  # and then from the cache
        assert ks.introspections == 1


async def test_introspections_in_flight_are_bounded_and_a_token_nobody_waits_for_is_not_asked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """With two slots, four tokens at once against an endpoint that hangs: two are asked,
    the other two wait for a slot; all four get 503 when ``timeout`` passes, and the two
    that waited are not asked when a slot frees after that, since nobody waits for them."""
    with key_server() as (ks, base):
        for tok in "abcd":
            ks.active[tok] = ALICE
        verifier = IntrospectionVerifier(f"{base}/introspect", client_id="rs", client_secret="s", max_concurrent=2, timeout=2)
        ks.delay = 60.0
        calls = [asyncio.ensure_future(verifier.verify(tok)) for tok in "abcd"]
        outcomes = await asyncio.gather(*calls, return_exceptions=True)
        assert all(isinstance(o, VerifierUnavailable) and o.retry_after == 1 for o in outcomes), outcomes
        ks.delay = 0.0
        await asyncio.sleep(0.5)  # time for a freed slot to be (wrongly) used
        assert (ks.introspections, ks.peak) == (2, 2)
        del calls, outcomes
        gc.collect()  # an introspection whose failure nobody awaited must not be reported as unretrieved
        assert not [r.getMessage() for r in caplog.records if r.name == "asyncio"]
        for tok in "cd":
            assert (await verifier.verify(tok)).subject == "alice"
        assert ks.introspections == 4


async def test_an_endpoint_that_does_not_answer_in_time_is_503() -> None:
    with key_server() as (ks, base):
        ks.active["tok"] = ALICE
        verifier = IntrospectionVerifier(f"{base}/introspect", client_id="rs", client_secret="s", timeout=1)
        ks.delay = 60.0
        with pytest.raises(VerifierUnavailable) as caught:
            await verifier.verify("tok")
        assert str(caught.value) == "no introspection answer within 1 s"
        assert caught.value.retry_after == 1
        ks.delay = 0.0


@pytest.mark.parametrize(
    ("status", "body", "reason"),
    [(500, {"active": True}, "HTTPStatusError"), (200, b"not json", "JSONDecodeError"), (401, b"{}", "HTTPStatusError")],
)
def test_an_introspection_endpoint_that_fails_is_503_and_logged(
    caplog: pytest.LogCaptureFixture, status: int, body: Any, reason: str
) -> None:
    with caplog.at_level(logging.WARNING, logger="mcpkit.auth"), serve_in_thread(Document(body, status)) as port:
        verifier = IntrospectionVerifier(f"http://127.0.0.1:{port}/introspect", client_id="rs", client_secret="s")
        with guarded_by(verifier) as (url, _):
            resp = post(url, "tok")
            assert resp.status_code == 503
            assert resp.headers["retry-after"] == "5"
    logged = [r.getMessage() for r in caplog.records if r.name == "mcpkit.auth"]
    assert logged == [f"cannot verify tokens: cannot reach the introspection endpoint: {reason}"], logged


async def _until(condition: Any, timeout: float = 20) -> None:
    async with asyncio.timeout(timeout):
        while not condition():  # noqa: ASYNC110 - the key server runs in another thread
            await asyncio.sleep(0.01)


class Drip:
    """An introspection endpoint that answers ``"drip"`` a space at a time (every 0.2 s,
    so no read times out) until ``stop`` is set, and any other token at once: active."""

    def __init__(self) -> None:
        self.stop = False
        self.asked: list[str] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = (await receive()).get("body", b"")
        tok = dict(p.split("=", 1) for p in body.decode().split("&") if "=" in p).get("token", "")
        self.asked.append(tok)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        while tok == "drip" and not self.stop:
            await send({"type": "http.response.body", "body": b" ", "more_body": True})
            await asyncio.sleep(0.2)
        await send({"type": "http.response.body", "body": json.dumps(ALICE).encode()})


async def test_a_slot_is_held_while_the_endpoint_drips_its_answer_and_given_up_after_three_timeouts() -> None:
    """One slot, taken by a token whose answer the endpoint drips (timeout 4 s). A second
    token waits for the slot; a request for it that came 2 s later shares that wait, and is
    told why it ended without a slot. The dripping introspection gives its slot up at
    three timeouts (12 s): a request that joined it at 10 s is told so, and the slot
    serves the second token."""
    drip = Drip()
    with serve_in_thread(drip) as port:
        try:
            url = f"http://127.0.0.1:{port}/introspect"
            verifier = IntrospectionVerifier(url, client_id="rs", client_secret="s", max_concurrent=1, timeout=4)
            loop = asyncio.get_running_loop()
            started = loop.time()
            holder = asyncio.ensure_future(verifier.verify("drip"))
            await _until(lambda: drip.asked == ["drip"])
            first = asyncio.ensure_future(verifier.verify("other"))
            await asyncio.sleep(2)
            later = asyncio.ensure_future(verifier.verify("other"))
            outcomes = await asyncio.gather(holder, first, later, return_exceptions=True)
            assert [str(o) for o in outcomes] == [
                "no introspection answer within 4 s",
                "no introspection answer within 4 s",
                "too many introspections in flight",
            ]
            assert [getattr(o, "retry_after", None) for o in outcomes] == [1, 1, 1]
            await asyncio.sleep(started + 10 - loop.time())
            with pytest.raises(VerifierUnavailable, match=r"^the introspection endpoint answers too slowly$") as caught:
                await verifier.verify("drip")  # joins the introspection still dripping
            assert caught.value.retry_after == 1
            assert (await verifier.verify("other")).subject == "alice"  # the slot was given up
            assert drip.asked == ["drip", "other"]
        finally:
            drip.stop = True


class Stall:
    """An introspection endpoint that sends nothing about ``"stall"`` until ``stop`` is
    set, and answers any other token at once: active."""

    def __init__(self) -> None:
        self.stop = False
        self.asked: list[str] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = (await receive()).get("body", b"")
        tok = dict(p.split("=", 1) for p in body.decode().split("&") if "=" in p).get("token", "")
        self.asked.append(tok)
        while tok == "stall" and not self.stop:  # noqa: ASYNC110 - the test sets it from another thread
            await asyncio.sleep(0.05)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": json.dumps(ALICE).encode()})


async def test_an_endpoint_silent_for_timeout_frees_its_slot_at_once() -> None:
    """One slot (timeout 4 s), taken by a token the endpoint never answers. The HTTP
    request itself times out with the wait for it, so the slot is free for the next token
    at once, not only at the three timeouts that bound an answer still coming."""
    stall = Stall()
    with serve_in_thread(stall) as port:
        try:
            url = f"http://127.0.0.1:{port}/introspect"
            verifier = IntrospectionVerifier(url, client_id="rs", client_secret="s", max_concurrent=1, timeout=4)
            with pytest.raises(VerifierUnavailable, match=r"^no introspection answer within 4 s$"):
                await verifier.verify("stall")
            assert (await verifier.verify("other")).subject == "alice"
            assert stall.asked == ["stall", "other"]
        finally:
            stall.stop = True


# --- the identity a verifier's claims describe -----------------------------------------------------------


@pytest.mark.parametrize(
    ("claims", "who"),
    [
        ({"sub": "alice", "client_id": "app-1", "scope": "mcp extra"}, "alice via app-1 with extra mcp"),
        ({"sub": 42, "azp": "app-2", "scp": ["mcp", 7]}, "42 via app-2 with 7 mcp"),
        ({"sub": "alice", "client_id": "app-1", "azp": "app-2", "scope": "mcp", "scp": "other"}, "alice via app-1 with mcp"),
        ({"sub": None, "client_id": "svc", "scp": ("mcp",)}, "None via svc with mcp"),
        ({"sub": "alice", "scope": 5}, "403"),  # no scopes at all
        ({"sub": "alice", "scope": "mcp", "exp": True}, "alice via None with mcp"),  # not a time
        ({"sub": "alice", "scope": "mcp", "exp": "0"}, "alice via None with mcp"),
        ({"sub": "alice", "scope": "mcp", "exp": 1}, "401"),  # a time, long past
        ({"sub": "alice", "scope": "mcp", "exp": 1.5}, "401"),
    ],
)
def test_the_identity_the_claims_describe(claims: dict[str, Any], who: str) -> None:
    with guarded_by(FunctionVerifier(lambda tok: claims)) as (url, _):
        resp = post(url, "tok")
        if who.isdigit():
            assert resp.status_code == int(who), resp.text
        else:
            assert resp.json()["result"]["content"][0]["text"] == who


def test_a_verifier_function_may_be_sync_and_must_return_an_identity(caplog: pytest.LogCaptureFixture) -> None:
    answers: dict[str, Any] = {"claims": {"sub": "alice", "client_id": "app-1", "scope": "mcp"}, "odd": 42}
    with caplog.at_level(logging.ERROR, logger="mcpkit.auth"), guarded_by(FunctionVerifier(answers.get)) as (url, auth):
        assert_taken(post(url, "claims"))
        assert_refused(post(url, "unknown"), auth, "the token was refused")
        assert post(url, "odd").status_code == 503
    (record,) = [r for r in caplog.records if r.name == "mcpkit.auth"]
    assert "TypeError: a verifier function must return an AccessToken, a claims dict or None" in record.getMessage()


class Strict:
    """An introspection endpoint that answers only its own client (HTTP Basic rs:s), with
    the token as a form field: active for "tok", else not; 401 for anyone else."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = (await receive()).get("body", b"").decode()
        auth = dict(scope["headers"]).get(b"authorization", b"").decode()
        self.seen.append((scope["method"], auth))
        form = dict(p.split("=", 1) for p in body.split("&") if "=" in p)
        if auth != "Basic " + base64.b64encode(b"rs:s").decode():
            status, answer = 401, {"error": "invalid_client"}
        else:
            status, answer = 200, ALICE if form.get("token") == "tok" else {"active": False}
        await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": json.dumps(answer).encode()})


def test_introspection_posts_the_token_as_its_client() -> None:
    endpoint = Strict()
    with serve_in_thread(endpoint) as port:
        url = f"http://127.0.0.1:{port}/introspect"
        with guarded_by(IntrospectionVerifier(url, client_id="rs", client_secret="s")) as (mcp, auth):
            assert_taken(post(mcp, "tok"))
            assert_refused(post(mcp, "other"), auth, "the token is not active")
        with guarded_by(IntrospectionVerifier(url, client_id="rs", client_secret="wrong")) as (mcp, _):
            assert post(mcp, "tok").status_code == 503
    assert [method for method, _ in endpoint.seen] == ["POST"] * 3


def test_the_introspection_verifier_defaults() -> None:
    verifier = IntrospectionVerifier("http://127.0.0.1:9/introspect", client_id="rs", client_secret="s")
    assert (verifier.url, verifier.audience) == ("http://127.0.0.1:9/introspect", None)
    assert (verifier.cache_ttl, verifier.timeout, verifier.negative_ttl, verifier.max_concurrent) == (30.0, 5.0, 10.0, 16)
    assert verifier.leeway == 30.0


async def test_a_request_still_waiting_gets_the_answer_when_another_for_the_same_token_gave_up() -> None:
    """Two requests for one token wait for the only slot; the first is cancelled (its client
    went away); when the slot frees, the token is asked about for the one still waiting."""
    drip = Drip()
    with serve_in_thread(drip) as port:
        try:
            url = f"http://127.0.0.1:{port}/introspect"
            verifier = IntrospectionVerifier(url, client_id="rs", client_secret="s", max_concurrent=1, timeout=10)
            holder = asyncio.ensure_future(verifier.verify("drip"))
            await _until(lambda: drip.asked == ["drip"])
            first = asyncio.ensure_future(verifier.verify("other"))
            second = asyncio.ensure_future(verifier.verify("other"))
            await asyncio.sleep(0.1)
            first.cancel()
            drip.stop = True  # the holder is answered: its slot frees
            assert (await holder).subject == "alice"
            assert (await second).subject == "alice"
            assert drip.asked == ["drip", "other"]
        finally:
            drip.stop = True
