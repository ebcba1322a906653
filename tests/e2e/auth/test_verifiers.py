"""What each verifier takes and refuses (src/mcpkit/auth/verifiers.py), as a client sees it over
real HTTP (uvicorn on loopback, the server in this process): the JWT algorithms and key types,
``nbf``, the leeway and the expiry instant, the settings refused at construction, and an
introspection answer that does not say plainly that the token is active."""

from __future__ import annotations

import time
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from mcpkit.auth import verifiers
from mcpkit.auth.identity import AccessToken
from mcpkit.auth.server import ResourceServer
from mcpkit.auth.verifiers import FunctionVerifier, IntrospectionVerifier, InvalidToken, JWTVerifier, TokenVerifier
from support.auth import ISSUER, KeyServer, challenge, key_server, make_server, post, token
from support.serving import serve_in_thread

pytestmark = pytest.mark.timeout(60)


@contextmanager
def guarded_by(verifier: TokenVerifier) -> Iterator[tuple[str, ResourceServer]]:
    """A server requiring scope ``mcp``, guarded by ``verifier``, on loopback: its MCP URL
    (the resource, and a JWT verifier's audience) and its ``ResourceServer``."""
    auth = ResourceServer(
        resource="http://placeholder/mcp", authorization_servers=[ISSUER], verifier=verifier, required_scopes=["mcp"]
    )
    with serve_in_thread(make_server().asgi_app(auth=auth)) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        auth.resource = url
        if isinstance(verifier, JWTVerifier):
            verifier.audience = [url]
        yield url, auth


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


@pytest.fixture(scope="module")
def jwt_guarded(keyset: tuple[KeyServer, str]) -> Iterator[tuple[str, ResourceServer]]:
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
        public = ks.keys["k1"].public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        confused = _hs256(claims, public, kid="k1")
        assert_refused(post(url, confused), auth, "the token's algorithm is not accepted")
        assert_refused(post(url, "e30.e30.sig"), auth, "the token's algorithm is not accepted")  # a header without alg


def _hs256(claims: dict[str, Any], secret: bytes, *, kid: str) -> str:
    import base64
    import hashlib
    import hmac
    import json

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    signing = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode()) + "." + b64(json.dumps(claims).encode())
    return signing + "." + b64(hmac.new(secret, signing.encode(), hashlib.sha256).digest())


@pytest.mark.parametrize(
    "algorithms", [["none"], ["None"], ["NONE"], ["RS256", "none"], ["HS256"], ["ES256", "HS512"], [], ()]
)
def test_unsigned_and_symmetric_algorithms_are_refused_at_construction(algorithms: list[str]) -> None:
    with pytest.raises(ValueError, match=r"^algorithms must be asymmetric signature algorithms \(not none, not HS\*\)$"):
        JWTVerifier("http://127.0.0.1:9/jwks", issuer=ISSUER, audience="a", algorithms=algorithms)


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

    import asyncio

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
        with guarded_by(
            IntrospectionVerifier(f"{base}/introspect", client_id="rs", client_secret="s", audience="urn:mcp")
        ) as (url, auth):
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
