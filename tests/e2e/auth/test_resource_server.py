"""The resource-server side of MCP authorization, over real HTTP (uvicorn on loopback):
Protected Resource Metadata, 401/403/503 with the right ``WWW-Authenticate``, JWT
verification against a JWKS served on loopback (rotation, forged, expired, wrong
audience/issuer, endpoint down), introspection, per-tool scopes, the identity in
``Context``, sessions bound to their subject, and ``requestState`` bound to its principal."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from mcpkit import AccessToken, Client, ClientOptions, Context, HttpTransport
from mcpkit.auth.server import MAX_AUTHORIZATION_HEADER, AuthRefusal, ResourceServer
from mcpkit.auth.verifiers import FunctionVerifier, IntrospectionVerifier, InvalidToken, JWTVerifier, VerifierUnavailable
from support import wire
from support.auth import ISSUER, KeyServer, challenge, make_server, post, token
from support.eras import LEGACY
from support.serving import serve_in_thread
from support.waiting import wait_until


@pytest.fixture(scope="module")
def guarded(keys: tuple[KeyServer, str]) -> Iterator[tuple[str, ResourceServer]]:
    _, base = keys
    verifier = JWTVerifier(f"{base}/jwks", issuer=ISSUER, audience="placeholder", min_refetch=0.2, timeout=2)
    auth = ResourceServer(
        resource="http://placeholder/mcp", authorization_servers=[ISSUER], verifier=verifier, required_scopes=["mcp"]
    )
    app = make_server().asgi_app(auth=auth)
    with serve_in_thread(app) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        auth.resource = url
        verifier.audience = [url]
        yield url, auth


# --- metadata and the 401 ----------------------------------------------------------------------------


def test_protected_resource_metadata_is_served_at_both_well_known_paths(guarded: tuple[str, ResourceServer]) -> None:
    url, _ = guarded
    base = url.removesuffix("/mcp")
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        resp = httpx.get(base + path, timeout=5)
        assert resp.status_code == 200
        doc = resp.json()
        assert doc["resource"] == url
        assert doc["authorization_servers"] == [ISSUER]
        assert doc["scopes_supported"] == ["admin", "mcp", "secrets"]
        assert doc["bearer_methods_supported"] == ["header"]


def test_missing_token_is_401_pointing_at_the_metadata(guarded: tuple[str, ResourceServer]) -> None:
    url, auth = guarded
    resp = post(url, None)
    assert resp.status_code == 401
    assert challenge(resp) == f'Bearer resource_metadata="{auth.metadata_url}", scope="mcp"'
    assert auth.metadata_url.endswith("/.well-known/oauth-protected-resource/mcp")
    assert httpx.get(url.removesuffix("/mcp") + "/mcp", headers={"accept": "text/event-stream"}, timeout=5).status_code == 401


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("expired", "expired"),
        ("wrong audience", "aud"),
        ("wrong issuer", "issuer"),
        ("forged", "invalid"),
        ("unknown key", "unknown key"),
        ("malformed", "not a JWT"),
        ("no exp", "invalid"),
    ],
)
def test_bad_tokens_are_401_invalid_token(
    keys: tuple[KeyServer, str], guarded: tuple[str, ResourceServer], case: str, reason: str
) -> None:
    url, _ = guarded
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    tok = {
        "expired": lambda: token(keys, url, exp=int(time.time()) - 3600),
        "wrong audience": lambda: token(keys, url, aud="https://other.example/mcp"),
        "wrong issuer": lambda: token(keys, url, iss="https://evil.example"),
        "forged": lambda: token(keys, url, key=stranger),
        "unknown key": lambda: token(keys, url, kid="nope", key=stranger),
        "malformed": lambda: "not-a-jwt",
        "no exp": lambda: token(keys, url, exp=None),
    }[case]()
    resp = post(url, tok)
    assert resp.status_code == 401
    assert 'error="invalid_token"' in challenge(resp)
    assert reason in challenge(resp)
    assert tok not in resp.text  # the token is never echoed


@pytest.mark.parametrize("header", ["Basic abc", "Bearer", "Bearer a b", "Bearer " + "x" * 20_000])
def test_malformed_authorization_headers_are_401(guarded: tuple[str, ResourceServer], header: str) -> None:
    url, _ = guarded
    resp = httpx.post(url, json={}, headers={"authorization": header, "content-type": "application/json"}, timeout=5)
    assert resp.status_code == 401
    assert "resource_metadata=" in challenge(resp)


# --- scopes, identity, sessions ----------------------------------------------------------------------


def test_identity_reaches_the_handler_in_the_modern_era(keys: tuple[KeyServer, str], guarded: tuple[str, ResourceServer]) -> None:
    url, _ = guarded
    resp = post(url, token(keys, url, scope="mcp extra"))
    assert resp.status_code == 200
    assert resp.json()["result"]["content"][0]["text"] == "alice via app-1 with extra mcp"


def test_missing_scopes_are_403_with_step_up_scopes(keys: tuple[KeyServer, str], guarded: tuple[str, ResourceServer]) -> None:
    url, _ = guarded
    resp = post(url, token(keys, url, scope="read"))  # lacks the server-wide "mcp"
    assert resp.status_code == 403
    assert 'error="insufficient_scope"' in challenge(resp)
    assert 'scope="mcp"' in challenge(resp)
    resp = post(url, token(keys, url), params={"name": "admin", "arguments": {}})  # the tool needs "admin"
    assert resp.status_code == 403
    assert 'scope="mcp admin"' in challenge(resp)
    resp = post(url, token(keys, url, scope="mcp admin"), params={"name": "admin", "arguments": {}})
    assert resp.json()["result"]["content"][0]["text"] == "admin ok"
    meta_params = {"uri": "secret://x"}
    resp = post(url, token(keys, url), "resources/read", meta_params)
    assert resp.status_code == 403
    assert 'scope="mcp secrets"' in challenge(resp)
    assert post(url, token(keys, url, scope="mcp secrets"), "resources/read", meta_params).status_code == 200


async def test_legacy_session_is_bound_to_its_subject(keys: tuple[KeyServer, str], guarded: tuple[str, ResourceServer]) -> None:
    url, _ = guarded
    alice = token(keys, url)
    transport = HttpTransport(url, headers={"authorization": f"Bearer {alice}"})
    async with Client(transport, ClientOptions(protocol_version=LEGACY)) as client:
        result = await client.call_tool("whoami")
        assert result.content[0].text == "alice via app-1 with mcp"  # type: ignore[union-attr]
        session_id = transport.session_id
        assert session_id
        mallory = token(keys, url, sub="mallory")
        headers = {
            "authorization": f"Bearer {mallory}",
            "mcp-session-id": session_id,
            "mcp-protocol-version": LEGACY,
            "accept": "application/json, text/event-stream",
        }
        body = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}
        async with httpx.AsyncClient(timeout=5) as http:
            resp = await http.post(url, json=body, headers=headers)
            assert resp.status_code == 403
            assert (await http.delete(url, headers=headers)).status_code == 403  # nor end it
        assert (await client.call_tool("whoami")).content[0].text.startswith("alice")  # type: ignore[union-attr]


def test_request_state_is_bound_to_its_principal(keys: tuple[KeyServer, str], guarded: tuple[str, ResourceServer]) -> None:
    url, _ = guarded
    first = post(url, token(keys, url), params={"name": "confirm", "arguments": {}}).json()["result"]
    assert first["resultType"] == "input_required"
    retry = {
        "name": "confirm",
        "arguments": {},
        "requestState": first["requestState"],
        "inputResponses": {"k": {"action": "accept"}},
    }
    stolen = post(url, token(keys, url, sub="mallory"), params=retry)
    assert stolen.json()["error"]["code"] == -32602
    assert "another principal" in stolen.json()["error"]["message"]
    assert post(url, token(keys, url), params=retry).json()["result"]["content"][0]["text"] == "accept"


# --- the key set: rotation, outage --------------------------------------------------------------------


def test_key_rotation_is_picked_up(keys: tuple[KeyServer, str], guarded: tuple[str, ResourceServer]) -> None:
    ks, _ = keys
    url, _ = guarded
    assert post(url, token(keys, url)).status_code == 200
    ks.keys["k2"] = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    try:
        time.sleep(0.3)  # past min_refetch: an unknown kid may refetch
        assert post(url, token(keys, url, kid="k2")).status_code == 200
    finally:
        del ks.keys["k2"]


def test_key_set_down_fails_closed_with_503(keys: tuple[KeyServer, str]) -> None:
    ks, base = keys
    verifier = JWTVerifier(f"{base}/jwks", issuer=ISSUER, audience="placeholder", timeout=2)
    auth = ResourceServer(resource="http://placeholder/mcp", authorization_servers=[ISSUER], verifier=verifier)
    with serve_in_thread(make_server().asgi_app(auth=auth)) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        auth.resource = url
        verifier.audience = [url]
        ks.down = True
        try:
            started = time.monotonic()
            resp = post(url, token(keys, url))
            assert resp.status_code == 503
            assert resp.headers["retry-after"]
            assert time.monotonic() - started < 5
        finally:
            ks.down = False
        # and recovers, once the back-off after the failed fetch (1 s) has passed
        wait_until(lambda: post(url, token(keys, url)).status_code == 200, what="the key set is fetched again")


def test_unreachable_key_set_does_not_hang(keys: tuple[KeyServer, str]) -> None:
    verifier = JWTVerifier("http://10.255.255.1:9/jwks", issuer=ISSUER, audience="placeholder", timeout=1)
    auth = ResourceServer(resource="http://placeholder/mcp", authorization_servers=[ISSUER], verifier=verifier)
    with serve_in_thread(make_server().asgi_app(auth=auth)) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        started = time.monotonic()
        assert post(url, token(keys, url)).status_code == 503
        assert time.monotonic() - started < 5


# --- other verifiers ----------------------------------------------------------------------------------


def test_introspection_and_function_verifiers(keys: tuple[KeyServer, str]) -> None:
    ks, base = keys
    ks.active["opaque-1"] = {"active": True, "sub": "bob", "client_id": "cli", "scope": "mcp", "aud": "urn:mcp"}
    ks.active["opaque-2"] = {"active": True, "sub": "bob", "scope": "mcp", "aud": "urn:other"}
    introspect = IntrospectionVerifier(f"{base}/introspect", client_id="rs", client_secret="s", audience="urn:mcp")
    auth = ResourceServer(resource="http://placeholder/mcp", authorization_servers=[ISSUER], verifier=introspect)
    with serve_in_thread(make_server().asgi_app(auth=auth)) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        assert post(url, "opaque-1").json()["result"]["content"][0]["text"] == "bob via cli with mcp"
        assert post(url, "opaque-2").status_code == 401  # another audience
        assert post(url, "opaque-3").status_code == 401  # inactive

    async def check(tok: str) -> dict[str, Any] | None:
        await asyncio.sleep(0)  # an async verifier that really suspends
        return {"sub": "carol", "scope": "mcp"} if tok == "let-me-in" else None

    auth = ResourceServer(resource="http://placeholder/mcp", authorization_servers=[ISSUER], verifier=FunctionVerifier(check))
    with serve_in_thread(make_server().asgi_app(auth=auth)) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        assert post(url, "let-me-in").json()["result"]["content"][0]["text"] == "carol via None with mcp"
        assert post(url, "nope").status_code == 401


# --- the refusals, exactly as a client gets them ---------------------------------------------------------


class Scripted:
    """A verifier of the test's own: ``answers[token]`` is returned, or raised if it is an
    exception; ``leeway`` as given."""

    def __init__(self, answers: dict[str, Any], leeway: Any = None) -> None:
        self.answers = answers
        if leeway is not None:
            self.leeway = leeway

    async def verify(self, tok: str) -> Any:
        answer = self.answers[tok]
        if isinstance(answer, BaseException):
            raise answer
        return answer


ALICE = AccessToken("alice", "app-1", frozenset({"mcp"}))


@contextlib.contextmanager
def scripted(answers: dict[str, Any], **options: Any) -> Iterator[tuple[str, ResourceServer]]:
    """A server guarded by :class:`Scripted` ``answers`` (required scope ``mcp`` unless
    ``options`` say otherwise), on loopback: its MCP URL and its ``ResourceServer``."""
    leeway = options.pop("leeway", None)
    options.setdefault("required_scopes", ["mcp"])
    auth = ResourceServer(
        resource="http://placeholder/mcp", authorization_servers=[ISSUER], verifier=Scripted(answers, leeway), **options
    )
    server = make_server()

    @server.tool
    def digest(ctx: Context) -> str:
        who = ctx.identity
        assert who is not None
        return f"{who.principal} {who.token_digest}"

    with serve_in_thread(server.asgi_app(auth=auth)) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        auth.resource = url
        yield url, auth


def raw(url: str, authorization: str | None) -> httpx.Response:
    """A modern ``tools/call whoami`` with this ``Authorization`` header (None: without one)."""
    body, headers = wire.modern("tools/call", {"name": "whoami", "arguments": {}}, headers={"authorization": authorization})
    return httpx.post(url, json=body, headers=headers, timeout=10)


def text(resp: httpx.Response) -> tuple[int, str]:
    """The status and the one-line text body of a refusal."""
    return resp.status_code, resp.text.removesuffix("\n")


def test_the_401s_say_exactly_what_is_missing() -> None:
    with scripted({"tok": ALICE, "bad": InvalidToken('say "no" \\ politely')}) as (url, auth):
        meta = f'resource_metadata="{auth.metadata_url}"'
        resp = raw(url, None)
        assert text(resp) == (401, "Unauthorized: a bearer token is required")
        assert challenge(resp) == f'Bearer {meta}, scope="mcp"'
        assert "retry-after" not in resp.headers
        for header in ("Basic tok", "Bearer", "Bearer a b", "Bearertok", "tok"):
            resp = raw(url, header)
            assert text(resp) == (401, "Unauthorized: use Authorization: Bearer <token>"), header
            assert challenge(resp) == f'Bearer {meta}, scope="mcp", error="invalid_request"', header
        resp = raw(url, "Bearer bad")
        assert text(resp) == (401, "Unauthorized: invalid token")
        assert challenge(resp) == (
            f'Bearer {meta}, scope="mcp", error="invalid_token", error_description="say \\"no\\" \\\\ politely"'
        )
        for spelled in ("Bearer tok", "bearer tok", "BEARER tok", "Bearer   tok"):
            assert raw(url, spelled).status_code == 200, spelled


def test_the_authorization_header_is_read_up_to_16_kib() -> None:
    longest = "t" * (MAX_AUTHORIZATION_HEADER - len("Bearer "))
    with scripted({longest: ALICE}) as (url, auth):
        assert MAX_AUTHORIZATION_HEADER == 16 * 1024
        assert raw(url, f"Bearer {longest}").status_code == 200
        resp = raw(url, f"Bearer {longest}t")
        assert text(resp) == (401, "Unauthorized: header too long")
        assert challenge(resp) == f'Bearer resource_metadata="{auth.metadata_url}", scope="mcp", error="invalid_request"'


def test_without_required_scopes_the_challenges_name_none() -> None:
    with scripted({"tok": AccessToken("alice", None, frozenset())}, required_scopes=()) as (url, auth):
        resp = raw(url, None)
        assert challenge(resp) == f'Bearer resource_metadata="{auth.metadata_url}"'
        assert raw(url, "Bearer tok").status_code == 200  # no scope needed for whoami
        resp = post(url, "tok", params={"name": "admin", "arguments": {}})
        assert resp.status_code == 403
        assert challenge(resp) == f'Bearer resource_metadata="{auth.metadata_url}", scope="admin", error="insufficient_scope"'
        assert text(resp) == (403, "Forbidden: insufficient scope")


@pytest.mark.parametrize(
    ("hint", "retry_after"),
    [
        (None, "5"),
        (0.2, "1"),
        (0, "1"),
        (-3, "1"),
        (1.5, "2"),
        (3600, "3600"),
        (7200, "3600"),
        (float("inf"), "5"),
        (float("nan"), "5"),
        (True, "5"),
        ("9", "5"),
    ],
)
def test_an_unavailable_verifier_is_503_with_the_retry_after_it_suggests(hint: Any, retry_after: str) -> None:
    failure = VerifierUnavailable("the AS is down")
    failure.retry_after = hint
    with scripted({"tok": failure}) as (url, _):
        resp = raw(url, "Bearer tok")
        assert text(resp) == (503, "Service Unavailable: cannot verify tokens now")
        assert resp.headers["retry-after"] == retry_after
        assert "www-authenticate" not in resp.headers


def test_a_verifier_that_fails_unforeseen_is_503_logged_without_the_token(caplog: pytest.LogCaptureFixture) -> None:
    secret = "tok-" + "s3cr3t" * 4
    answers = {secret: RuntimeError(f"the database choked on {secret}"), "odd": "not an identity"}
    with caplog.at_level(logging.DEBUG, logger="mcpkit.auth"), scripted(answers) as (url, _):
        for tok, cause in (
            (secret, "RuntimeError: the database choked on [the token]"),
            ("odd", "TypeError: the verifier returned str, not an AccessToken"),
        ):
            caplog.clear()
            resp = raw(url, f"Bearer {tok}")
            assert text(resp) == (503, "Service Unavailable: cannot verify tokens now")
            assert resp.headers["retry-after"] == "5"
            (record,) = [r for r in caplog.records if r.name == "mcpkit.auth"]
            assert record.levelno == logging.ERROR
            message = record.getMessage()
            assert message.startswith(
                "the token verifier failed; the request is refused with 503: Traceback (most recent call last):\n  File "
            )
            assert cause in message
            assert secret not in message


def test_refusals_and_outages_are_logged_as_what_they_are(caplog: pytest.LogCaptureFixture) -> None:
    answers = {"bad": InvalidToken("forged"), "down": VerifierUnavailable("the AS is down"), "mute": VerifierUnavailable()}
    with caplog.at_level(logging.DEBUG, logger="mcpkit.auth"), scripted(answers) as (url, _):
        raw(url, "Bearer bad")
        raw(url, "Bearer down")
        resp = raw(url, "Bearer mute")  # an outage that says nothing: no message, no hint
        assert (resp.status_code, resp.headers["retry-after"]) == (503, "5")
    logged = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "mcpkit.auth"]
    assert logged == [
        (logging.DEBUG, "token refused: forged"),
        (logging.WARNING, "cannot verify tokens: the AS is down"),
        (logging.WARNING, "cannot verify tokens: "),
    ]


def test_the_leeway_of_the_verifier_applies_to_every_identity() -> None:
    now = time.time()
    answers = {
        "recent": AccessToken("alice", None, frozenset({"mcp"}), expires_at=now - 5),
        "older": AccessToken("alice", None, frozenset({"mcp"}), expires_at=now - 100),
    }
    for leeway, recent, older in ((None, 200, 401), (0, 401, 401), (300, 200, 200), ("junk", 200, 401)):
        with scripted(answers, leeway=leeway) as (url, _):
            assert raw(url, "Bearer recent").status_code == recent, leeway
            assert raw(url, "Bearer older").status_code == older, leeway


def test_an_identity_without_a_principal_is_known_by_its_token() -> None:
    anonymous = AccessToken(None, None, frozenset({"mcp"}))
    with scripted({"opaque-1": anonymous, "opaque-2": anonymous, "tok": ALICE}) as (url, _):
        texts = [
            post(url, t, params={"name": "digest", "arguments": {}}).json()["result"]["content"][0]["text"]
            for t in ("opaque-1", "opaque-2", "tok")
        ]
    digest = hashlib.sha256(b"opaque-1").hexdigest()[:32]
    assert texts[0].endswith(f" {digest}")
    assert texts[0] != texts[1]
    assert texts[2] == f"{ALICE.principal} None"


class _Down(VerifierUnavailable):
    """A verifier's own kind of outage that never set ``retry_after``."""

    def __init__(self) -> None:
        Exception.__init__(self, "down for maintenance")


def test_an_outage_of_a_kind_of_ones_own_is_503_with_the_default_retry_after() -> None:
    failure = _Down()
    assert not hasattr(failure, "retry_after")
    with scripted({"tok": failure}) as (url, _):
        resp = raw(url, "Bearer tok")
        assert text(resp) == (503, "Service Unavailable: cannot verify tokens now")
        assert resp.headers["retry-after"] == "5"


async def test_authenticate_checks_the_required_scopes_unless_told_not_to() -> None:
    auth = ResourceServer(
        resource="https://x/mcp",
        authorization_servers=[ISSUER],
        verifier=Scripted({"tok": AccessToken("alice", None, frozenset({"read"}))}),
        required_scopes=["mcp"],
    )
    with pytest.raises(AuthRefusal) as caught:
        await auth.authenticate("Bearer tok")
    assert caught.value.status == 403
    assert (await auth.authenticate("Bearer tok", check_scopes=False)).subject == "alice"
