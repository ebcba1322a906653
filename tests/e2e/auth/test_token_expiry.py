"""Token expiry is one rule in the auth layer (docs/auth.md, "Expired tokens"): whatever
the verifier — a function of our own, JWT against a JWKS, introspection with its cache,
or any object with ``verify`` — a token whose ``exp`` is the verifier's ``leeway``
(30 s unless it names one) or more past is refused with 401 ``invalid_token``, and one
just expired within the leeway (clock skew) is taken. Over real HTTP on /mcp (uvicorn
on loopback), in the modern era and mid-session in the legacy era."""

from __future__ import annotations

import time
import types
from typing import Any

import httpx
import pytest

from mcpkit.auth import verifiers
from mcpkit.auth.identity import AccessToken
from mcpkit.auth.server import ResourceServer
from mcpkit.auth.verifiers import DEFAULT_LEEWAY, FunctionVerifier, IntrospectionVerifier, JWTVerifier
from support.auth import ISSUER, KeyServer, challenge, guarded_by, post, token
from support.wire import aopen_session

pytestmark = pytest.mark.timeout(60)

EXPIRED = "the token has expired"


def assert_taken(resp: httpx.Response, who: str = "alice") -> None:
    assert resp.status_code == 200, (resp.status_code, challenge(resp))
    assert resp.json()["result"]["content"][0]["text"].startswith(f"{who} via ")


def assert_expired(resp: httpx.Response, auth: ResourceServer) -> None:
    """401 with the exact challenge: the metadata, the scope, invalid_token and why."""
    assert resp.status_code == 401, resp.text
    assert challenge(resp) == (
        f'Bearer resource_metadata="{auth.metadata_url}", scope="mcp", error="invalid_token", error_description="{EXPIRED}"'
    )


def test_function_verifier_expiry_with_the_default_leeway() -> None:
    """``fn`` never looks at ``exp``: a claims dict or an ``AccessToken`` 5 s past it is
    taken (within 30 s), 60 s past it is refused; a leeway of 0 refuses the first."""
    now = time.time()
    claims = {
        "recent": {"sub": "alice", "scope": "mcp", "exp": now - 5},
        "old": {"sub": "alice", "scope": "mcp", "exp": now - 60},
        "future": {"sub": "alice", "scope": "mcp", "exp": now + 300},
    }
    tokens: dict[str, Any] = {
        **claims,
        "recent-object": AccessToken("alice", None, frozenset({"mcp"}), expires_at=now - 5),
        "old-object": AccessToken("alice", None, frozenset({"mcp"}), expires_at=now - 60),
    }
    verifier = FunctionVerifier(tokens.get)
    assert verifier.leeway == DEFAULT_LEEWAY == 30.0
    with guarded_by(verifier) as (url, auth):
        assert_taken(post(url, "recent"))
        assert_taken(post(url, "recent-object"))
        assert_taken(post(url, "future"))
        assert_expired(post(url, "old"), auth)
        assert_expired(post(url, "old-object"), auth)
    with guarded_by(FunctionVerifier(tokens.get, leeway=0)) as (url, auth):
        assert_expired(post(url, "recent"), auth)
        assert_taken(post(url, "future"))


def test_jwt_verifier_expiry_with_its_leeway(keys: tuple[KeyServer, str]) -> None:
    """A JWT 5 s past ``exp`` is taken (30 s leeway), 60 s past is refused, with the same
    challenge as every other verifier; with ``leeway=0`` the first is refused too."""
    _, base = keys
    for leeway, recent_taken in ((30.0, True), (0.0, False)):
        verifier = JWTVerifier(f"{base}/jwks", issuer=ISSUER, audience="placeholder", leeway=leeway, timeout=2)
        with guarded_by(verifier) as (url, auth):
            now = int(time.time())
            recent = post(url, token(keys, url, exp=now - 5))
            if recent_taken:
                assert_taken(recent)
            else:
                assert_expired(recent, auth)
            assert_expired(post(url, token(keys, url, exp=now - 60)), auth)
            assert_taken(post(url, token(keys, url, exp=now + 300)))


def test_introspection_verifier_expiry_and_its_cache(keys: tuple[KeyServer, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Introspection answers 5 s past ``exp`` are taken (30 s leeway), 60 s past refused.
    With ``leeway=1`` a token 0.5 s past its ``exp`` is taken, and the cached answer is
    not used once the leeway has run out: the same token is then refused. That second
    part runs on a clock of the test's own (the verifier's ``time.time``; the server is
    in this process), so that no machine is too slow for the 0.5 s it leaves."""
    ks, base = keys
    now = time.time()
    ks.active["recent"] = {"active": True, "sub": "alice", "scope": "mcp", "exp": now - 5}
    ks.active["old"] = {"active": True, "sub": "alice", "scope": "mcp", "exp": now - 60}
    ks.active["skewed"] = {"active": True, "sub": "alice", "scope": "mcp", "exp": now - 0.5}
    try:
        introspect = IntrospectionVerifier(f"{base}/introspect", client_id="rs", client_secret="s")
        assert introspect.leeway == DEFAULT_LEEWAY
        with guarded_by(introspect) as (url, auth):
            assert_taken(post(url, "recent"))
            assert_taken(post(url, "recent"))  # from the cache
            assert_expired(post(url, "old"), auth)
        clock = [now]
        monkeypatch.setattr(verifiers, "time", types.SimpleNamespace(time=lambda: clock[0], monotonic=time.monotonic))
        introspect = IntrospectionVerifier(f"{base}/introspect", client_id="rs", client_secret="s", leeway=1, cache_ttl=30)
        with guarded_by(introspect) as (url, auth):
            assert_taken(post(url, "skewed"))
            clock[0] = now + 0.6  # past exp + leeway
            assert_expired(post(url, "skewed"), auth)
    finally:
        for name in ("recent", "old", "skewed"):
            ks.active.pop(name, None)


class _Plain:
    """A verifier of one's own without a ``leeway``: the default (30 s) applies."""

    async def verify(self, tok: str) -> AccessToken:
        return AccessToken("alice", None, frozenset({"mcp"}), expires_at=time.time() - (5 if tok == "recent" else 60))


def test_any_verifier_gets_the_check() -> None:
    with guarded_by(_Plain()) as (url, auth):
        assert_taken(post(url, "recent"))
        assert_expired(post(url, "old"), auth)


async def test_a_legacy_session_is_refused_once_its_token_has_expired() -> None:
    """A legacy session opened with a token whose ``exp`` then passes: within the leeway
    its requests go on; past it, a request (and the GET stream) gets 401 invalid_token;
    a fresh token of the same subject goes on in the same session."""
    claims = {"sub": "alice", "scope": "mcp", "exp": time.time() + 300}
    tokens = {"short": claims, "fresh": {"sub": "alice", "scope": "mcp"}}
    with guarded_by(FunctionVerifier(tokens.get)) as (url, auth):
        async with httpx.AsyncClient(timeout=10) as http:
            headers = await aopen_session(http, url, headers={"authorization": "Bearer short"})

            def ping(rid: int) -> dict[str, Any]:
                return {"jsonrpc": "2.0", "id": rid, "method": "ping"}

            claims["exp"] = time.time() - 5  # within the leeway
            assert (await http.post(url, json=ping(1), headers=headers)).json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
            claims["exp"] = time.time() - 60
            assert_expired(await http.post(url, json=ping(2), headers=headers), auth)
            assert_expired(await http.get(url, headers={**headers, "accept": "text/event-stream"}), auth)
            fresh = {**headers, "authorization": "Bearer fresh"}
            assert (await http.post(url, json=ping(3), headers=fresh)).json() == {"jsonrpc": "2.0", "id": 3, "result": {}}


@pytest.mark.parametrize("leeway", [-1, float("inf"), float("nan")])
def test_leeway_must_be_a_finite_non_negative_number(leeway: float) -> None:
    with pytest.raises(ValueError, match="leeway"):
        FunctionVerifier(lambda t: None, leeway=leeway)
    with pytest.raises(ValueError, match="leeway"):
        IntrospectionVerifier("http://127.0.0.1:9/introspect", client_id="rs", client_secret="s", leeway=leeway)
    with pytest.raises(ValueError, match="leeway"):
        JWTVerifier("http://127.0.0.1:9/jwks", issuer=ISSUER, audience="a", leeway=leeway)
