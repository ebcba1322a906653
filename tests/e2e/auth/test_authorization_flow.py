"""MCP authorization end to end: mcpkit's own resource server, a real authorization server,
and two clients.

The authorization server is authlib's (tests/support/servers/oauth_as.py) on loopback, issuing RFC
9068 JWT access tokens (ES256, key set at ``/jwks``) and answering RFC 7662 introspection
and RFC 7009 revocation. Two mcpkit servers are protected by :class:`ResourceServer` —
one verifying tokens with :class:`JWTVerifier` against that key set, one with
:class:`IntrospectionVerifier` against that endpoint — each behind a recorder of its
responses. The clients are mcpkit's :class:`OAuthClientAuth` (the "browser" is httpx, which
follows the authorization server's redirect to the client's :class:`LoopbackRedirect`) and
the official ``mcp`` SDK's ``OAuthClientProvider``. Everything runs under uvicorn in threads;
every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt
import pytest
from joserfc.jwk import ECKey

from mcpkit import (
    Client,
    ClientOptions,
    Context,
    HttpTransport,
    InMemoryTokenStorage,
    LoopbackRedirect,
    McpError,
    OAuthClientAuth,
    Server,
)
from mcpkit.auth.server import ResourceServer
from mcpkit.auth.verifiers import FunctionVerifier, IntrospectionVerifier, JWTVerifier
from support.eras import LEGACY as LEGACY_VERSION, MODERN as MODERN_VERSION
from support.servers.oauth_as import LoopbackAuthorizationServer

pytestmark = pytest.mark.timeout(60)

# The era is pinned: a login takes longer than the 5 s server/discover probe would wait.
MODERN = ClientOptions(protocol_version=MODERN_VERSION, request_timeout=20)
LEGACY = ClientOptions(protocol_version=LEGACY_VERSION, request_timeout=20)
ERAS = [pytest.param(MODERN, id="modern"), pytest.param(LEGACY, id="legacy")]
SCOPES = ["mcp", "admin", "offline_access"]


# --- the servers ---------------------------------------------------------------------------------------


def mcp_server() -> Server:
    server = Server("e2e", "1.0.0")

    @server.tool
    def whoami(ctx: Context) -> str:
        """Who the resource server says is calling: ``ctx.identity``, as JSON."""
        who = ctx.identity
        assert who is not None
        return json.dumps(
            {
                "subject": who.subject,
                "client_id": who.client_id,
                "scopes": sorted(who.scopes),
                "expires_at": who.expires_at,
                "aud": who.claims.get("aud"),
                "iss": who.claims.get("iss"),
            }
        )

    @server.tool(scopes=["admin"])
    def purge(ctx: Context) -> str:
        assert ctx.identity is not None
        return f"purged by {ctx.identity.subject}"

    @server.tool
    async def confirm(ctx: Context) -> str:
        answer = await ctx.elicit("Sure?", {"type": "object", "properties": {"ok": {"type": "boolean"}}}, key="k")
        return f"{answer.action} for {ctx.identity.subject if ctx.identity else None}"

    return server


class Recorder:
    """An ASGI middleware that records each response's method, status and
    ``WWW-Authenticate`` (the resource server's answers, as a client saw them)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.responses: list[tuple[str, int, str]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def recording(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = {k.decode().lower(): v.decode() for k, v in message.get("headers", [])}
                self.responses.append((scope["method"], message["status"], headers.get("www-authenticate", "")))
            await send(message)

        await self.app(scope, receive, recording)

    def refusals(self) -> list[tuple[int, str]]:
        return [(status, challenge) for _, status, challenge in self.responses if status in (401, 403)]


def listening_socket() -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


def url_of(sock: socket.socket, path: str = "") -> str:
    return f"http://127.0.0.1:{sock.getsockname()[1]}{path}"


@contextlib.contextmanager
def serving(*apps: tuple[socket.socket, Any]) -> Iterator[None]:
    """uvicorn for each (bound socket, app), in threads; bounded start-up and shutdown."""
    import uvicorn

    servers = []
    threads = []
    try:
        for sock, app in apps:
            config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
            server = uvicorn.Server(config)
            thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
            thread.start()
            servers.append(server)
            threads.append(thread)
        deadline = time.monotonic() + 10
        while not all(s.started for s in servers):
            assert all(t.is_alive() for t in threads), "uvicorn exited during start-up"
            assert time.monotonic() < deadline, "uvicorn did not start within 10 s"
            time.sleep(0.01)
        yield
    finally:
        for server in servers:
            server.should_exit = True
        for thread in threads:
            thread.join(10)
        for sock, _ in apps:
            sock.close()
        assert not any(t.is_alive() for t in threads), "uvicorn did not shut down within 10 s"


@dataclass
class World:
    auth_server: LoopbackAuthorizationServer
    issuer: str
    jwt_url: str  # verified by JWTVerifier against the authorization server's JWKS
    introspection_url: str  # verified by IntrospectionVerifier against its introspection endpoint
    recorders: dict[str, Recorder] = field(default_factory=dict)

    def recorder(self, url: str) -> Recorder:
        return self.recorders[url]


@pytest.fixture(scope="module")
def servers() -> Iterator[World]:
    """The authorization server and the two protected servers, for the whole module."""
    as_sock, jwt_sock, intro_sock = listening_socket(), listening_socket(), listening_socket()
    issuer = url_of(as_sock)
    jwt_url, intro_url = url_of(jwt_sock, "/mcp"), url_of(intro_sock, "/mcp")
    auth_server = LoopbackAuthorizationServer(issuer, scopes=SCOPES, jwt_access_tokens=True)
    auth_server.add_resource_server("mcp-rs", "rs-secret")
    by_jwt = ResourceServer(
        jwt_url,
        [issuer],
        JWTVerifier(f"{issuer}/jwks", issuer=issuer, audience=jwt_url, leeway=0, timeout=2),
        required_scopes=["mcp"],
    )
    by_introspection = ResourceServer(
        intro_url,
        [issuer],
        # No caching here, so that a revocation shows at once (the default keeps answers 30 s).
        IntrospectionVerifier(
            f"{issuer}/introspect", client_id="mcp-rs", client_secret="rs-secret", audience=intro_url, cache_ttl=0, timeout=2
        ),
        required_scopes=["mcp"],
    )
    recorders = {
        jwt_url: Recorder(mcp_server().asgi_app(auth=by_jwt)),
        intro_url: Recorder(mcp_server().asgi_app(auth=by_introspection)),
    }
    with serving((as_sock, auth_server.app()), (jwt_sock, recorders[jwt_url]), (intro_sock, recorders[intro_url])):
        yield World(auth_server, issuer, jwt_url, intro_url, recorders)


@pytest.fixture
def world(servers: World) -> World:
    """The servers, with a fresh authorization server state (no clients but the resource
    server, no tokens, an empty log, the default settings) and empty recorders. (The JWT
    verifier keeps the key set it fetched: the key does not change.)"""
    auth_server = servers.auth_server
    auth_server.clients = {"mcp-rs": auth_server.clients["mcp-rs"]}
    auth_server.codes.clear()
    auth_server.tokens.clear()
    auth_server.log.clear()
    auth_server.lifetime = None
    auth_server.withheld.clear()
    auth_server.deny_consent = False
    auth_server.iss_in_redirect = True
    for recorder in servers.recorders.values():
        recorder.responses.clear()
    return servers


@pytest.fixture(params=["jwt", "introspection"])
def verifier_url(request: pytest.FixtureRequest, world: World) -> str:
    """The URL of one of the two protected servers: by JWT, or by introspection."""
    return world.jwt_url if request.param == "jwt" else world.introspection_url


# --- the clients -------------------------------------------------------------------------------------


def browser(user: str = "alice") -> Callable[[str], Awaitable[None]]:
    """A browser in which ``user`` consents at once: it opens the authorization URL and
    follows the authorization server's redirect to the client's loopback listener."""

    async def open_url(url: str) -> None:
        async with httpx.AsyncClient(timeout=10) as http:
            answer = await http.get(url, headers={"x-test-user": user})
            assert answer.status_code == 302, answer.text
            await http.get(answer.headers["location"])

    return open_url


def login(user: str = "alice", storage: InMemoryTokenStorage | None = None) -> OAuthClientAuth:
    return OAuthClientAuth(redirect=LoopbackRedirect(open_url=browser(user), timeout=20), storage=storage)


async def whoami(client: Client) -> dict[str, Any]:
    result = await client.call_tool("whoami", {})
    assert not result.is_error, result
    return dict(json.loads(result.content[0].text))  # type: ignore[union-attr]


async def access_token(auth: OAuthClientAuth, url: str) -> str:
    """The access token ``auth`` holds for ``url``."""
    record = await auth.storage.load(f"tokens {url}")
    assert record is not None
    return str(record["access_token"])


async def token_for(world: World, url: str, user: str = "alice", options: ClientOptions = MODERN) -> str:
    """``user`` logs in with mcpkit's client for ``url``; the access token it got."""
    auth = login(user)
    async with Client(HttpTransport(url, auth=auth), options) as client:
        assert (await whoami(client))["subject"] == user
    return await access_token(auth, url)


async def raw_call(
    url: str, token: str | None, tool: str = "whoami", extra: dict[str, Any] | None = None, **headers: str
) -> httpx.Response:
    """A modern ``tools/call`` of ``tool``, sent by hand with ``token``."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    }
    sent = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN_VERSION,
        "mcp-method": "tools/call",
        "mcp-name": tool,
        **headers,
    }
    if token is not None:
        sent["authorization"] = f"Bearer {token}"
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": {}, **(extra or {}), "_meta": meta},
    }
    async with httpx.AsyncClient(timeout=10) as http:
        return await http.post(url, json=body, headers=sent)


def challenge(resp: httpx.Response) -> str:
    return str(resp.headers.get("www-authenticate", ""))


def metadata_url(url: str) -> str:
    return url.removesuffix("/mcp") + "/.well-known/oauth-protected-resource/mcp"


# --- 1. mcpkit's client against mcpkit's resource server ----------------------------------------------------


@pytest.mark.parametrize("options", ERAS)
async def test_discovery_registration_pkce_login_and_the_identity_in_the_tool(world: World, options: ClientOptions) -> None:
    """From nothing to a tool call: the 401 points at the metadata, the client registers,
    logs alice in with PKCE through the loopback redirect, and the tool sees her identity
    as the JWT the authorization server issued says it."""
    started = time.monotonic()
    auth = login("alice")
    async with Client(HttpTransport(world.jwt_url, auth=auth), options) as client:
        who = await whoami(client)
        assert client.era == ("modern" if options is MODERN else "legacy")
    (registration,) = world.auth_server.calls("register")
    assert registration["token_endpoint_auth_method"] == "none"
    (authorize,) = world.auth_server.calls("authorize")
    assert authorize["code_challenge_method"] == "S256"
    assert authorize["resource"] == world.jwt_url
    assert authorize["scope"] == "mcp offline_access"  # the 401's scope, and a refresh token
    (exchange,) = world.auth_server.calls("token")
    assert exchange["grant_type"] == "authorization_code"
    assert exchange["resource"] == world.jwt_url
    client_id = authorize["client_id"]
    assert who["subject"] == "alice"
    assert who["client_id"] == client_id
    assert who["scopes"] == ["mcp", "offline_access"]
    assert who["aud"] == world.jwt_url  # RFC 8707: the token names this server
    assert who["iss"] == world.issuer
    assert who["expires_at"] > time.time() + 3000
    # The first request's 401 named the metadata and the scope; no refusal after the login.
    assert world.recorder(world.jwt_url).refusals() == [
        (401, f'Bearer resource_metadata="{metadata_url(world.jwt_url)}", scope="mcp"')
    ]
    assert len(world.auth_server.calls("jwks")) <= 1  # the key set is fetched once (per module), then cached
    header = jwt.get_unverified_header(await access_token(auth, world.jwt_url))
    assert (header["alg"], header["kid"], header["typ"]) == ("ES256", "as-1", "at+jwt")
    assert time.monotonic() - started < 15


async def test_the_same_flow_against_the_introspecting_server(world: World) -> None:
    auth = login("alice")
    async with Client(HttpTransport(world.introspection_url, auth=auth), MODERN) as client:
        who = await whoami(client)
    assert (who["subject"], who["aud"], who["iss"]) == ("alice", world.introspection_url, world.issuer)
    assert who["scopes"] == ["mcp", "offline_access"]
    assert world.auth_server.calls("introspect")  # the resource server asked about the token
    assert not world.auth_server.calls("jwks")


@pytest.mark.parametrize("options", ERAS)
async def test_an_access_token_that_expires_under_the_client_is_refreshed(world: World, options: ClientOptions) -> None:
    """The authorization server says the token lives an hour, but it lives six seconds
    (as if the resource server's clock ran ahead; the verifier has no leeway): the resource
    server refuses it as expired, and the client refreshes it — no second login; a legacy
    session goes on with the new token (the same subject)."""
    world.auth_server.lifetime = 6  # "exp" is whole seconds: at least 5 s to log in and call once
    auth = login("alice")
    transport = HttpTransport(world.jwt_url, auth=auth)
    async with Client(transport, options) as client:
        session_id = transport.session_id
        assert (session_id is not None) == (options is LEGACY)
        first = await whoami(client)
        old = await access_token(auth, world.jwt_url)
        exp = jwt.decode(old, options={"verify_signature": False})["exp"]
        await asyncio.sleep(max(0.0, exp - time.time()) + 0.1)  # at most 6.1 s: until it has expired
        expired = await raw_call(world.jwt_url, old)
        assert expired.status_code == 401
        assert challenge(expired) == (
            f'Bearer resource_metadata="{metadata_url(world.jwt_url)}", scope="mcp", '
            'error="invalid_token", error_description="the token has expired"'
        )
        second = await whoami(client)
        assert transport.session_id == session_id
    assert second["subject"] == "alice"
    assert second["expires_at"] > first["expires_at"]
    assert await access_token(auth, world.jwt_url) != old
    assert [c["grant_type"] for c in world.auth_server.calls("token")] == ["authorization_code", "refresh_token"]
    (refresh,) = [c for c in world.auth_server.calls("token") if c["grant_type"] == "refresh_token"]
    assert refresh["resource"] == world.jwt_url
    assert len(world.auth_server.calls("authorize")) == 1
    statuses = [status for status, _ in world.recorder(world.jwt_url).refusals()]
    assert statuses == [401, 401, 401]  # the first request, the hand-sent expired token, the client's expired token


@pytest.mark.parametrize("options", ERAS)
async def test_step_up_to_the_scope_a_tool_declares(world: World, options: ClientOptions) -> None:
    """``purge`` is declared ``scopes=["admin"]``: the resource server answers 403
    insufficient_scope naming every scope needed, the client asks for the union, and
    the call goes through with the wider token."""
    auth = login("alice")
    async with Client(HttpTransport(world.jwt_url, auth=auth), options) as client:
        assert (await whoami(client))["scopes"] == ["mcp", "offline_access"]
        result = await client.call_tool("purge", {})
        assert result.content[0].text == "purged by alice"  # type: ignore[union-attr]
        assert (await whoami(client))["scopes"] == ["admin", "mcp", "offline_access"]
    first, second = world.auth_server.calls("authorize")
    assert first["scope"] == "mcp offline_access"
    assert set(second["scope"].split()) == {"mcp", "offline_access", "admin"}
    assert world.recorder(world.jwt_url).refusals()[-1] == (
        403,
        f'Bearer resource_metadata="{metadata_url(world.jwt_url)}", scope="mcp admin", error="insufficient_scope"',
    )


async def test_step_up_refused_by_the_authorization_server_ends_in_403(world: World) -> None:
    world.auth_server.withheld.add("admin")  # alice may never have it
    async with Client(HttpTransport(world.jwt_url, auth=login("alice")), MODERN) as client:
        await whoami(client)
        with pytest.raises(McpError) as caught:
            await client.call_tool("purge", {})
        assert caught.value.data["status"] == 403
        assert (await whoami(client))["subject"] == "alice"  # the session goes on
    assert len(world.auth_server.calls("authorize")) == 3  # the login and two step-ups (the limit)


async def test_a_revoked_token_is_refused_and_the_client_recovers(world: World) -> None:
    """RFC 7009: revoking the access token alone makes the introspecting server refuse it
    (401 invalid_token) and the client refresh; revoking the whole grant makes the
    refresh fail and the client log in again."""
    url = world.introspection_url
    auth = login("alice")
    async with Client(HttpTransport(url, auth=auth), MODERN) as client:
        await whoami(client)
        client_id = world.auth_server.calls("authorize")[0]["client_id"]
        token = await access_token(auth, url)
        async with httpx.AsyncClient(timeout=5) as http:
            revoked = await http.post(
                f"{world.issuer}/revoke", data={"token": token, "token_type_hint": "access_token", "client_id": client_id}
            )
        assert revoked.status_code == 200
        refused = await raw_call(url, token)
        assert refused.status_code == 401
        assert 'error="invalid_token", error_description="the token is not active"' in challenge(refused)
        assert (await whoami(client))["subject"] == "alice"
        assert [c["grant_type"] for c in world.auth_server.calls("token")] == ["authorization_code", "refresh_token"]

        token = await access_token(auth, url)
        async with httpx.AsyncClient(timeout=5) as http:
            revoked = await http.post(f"{world.issuer}/revoke", data={"token": token, "client_id": client_id})
        assert revoked.status_code == 200
        assert (await raw_call(url, token)).status_code == 401
        assert (await whoami(client))["subject"] == "alice"
    grants = [c["grant_type"] for c in world.auth_server.calls("token")]
    assert grants == ["authorization_code", "refresh_token", "refresh_token", "authorization_code"]
    assert len(world.auth_server.calls("authorize")) == 2  # the refresh was refused: a second login


def forged_jwt(world: World, url: str, **claims: Any) -> str:
    """A JWT shaped like the authorization server's, signed by another key under its key id."""
    other = ECKey.generate_key("P-256", parameters={"kid": "as-1"}, private=True)
    now = int(time.time())
    body = {"iss": world.issuer, "aud": url, "sub": "alice", "client_id": "x", "scope": "mcp admin", "iat": now, "exp": now + 300}
    return jwt.encode({**body, **claims}, other.as_pem(private=True), algorithm="ES256", headers={"kid": "as-1"})


def expired_token(world: World, url: str, token: str) -> str:
    """``token`` (issued by the authorization server for ``url``), expired: a JWT the
    server's own key signs with ``exp`` in the past; for introspection, its record."""
    if url == world.jwt_url:
        claims = jwt.decode(token, options={"verify_signature": False})
        claims["exp"] = int(time.time()) - 5
        return jwt.encode(claims, world.auth_server.signing_key.as_pem(private=True), algorithm="ES256", headers={"kid": "as-1"})
    world.auth_server.tokens[token].expires_at = time.time() - 5
    return token


@pytest.mark.parametrize("case", ["missing", "forged", "unsigned", "expired", "wrong audience", "malformed header"])
async def test_bad_tokens_are_refused_with_the_challenge(world: World, verifier_url: str, case: str) -> None:
    url = verifier_url
    other = world.introspection_url if url == world.jwt_url else world.jwt_url
    prefix = f'Bearer resource_metadata="{metadata_url(url)}", scope="mcp"'
    if case == "missing":
        resp = await raw_call(url, None)
        assert (resp.status_code, challenge(resp)) == (401, prefix)
        return
    if case == "malformed header":
        resp = await raw_call(url, None, authorization="Basic YWxpY2U6cHc=")
        assert (resp.status_code, challenge(resp)) == (401, prefix + ', error="invalid_request"')
        return
    if case == "forged":
        token = forged_jwt(world, url)
        reason = "the token is invalid (InvalidSignatureError)" if url == world.jwt_url else "the token is not active"
    elif case == "unsigned":  # alg "none": what the token says, with no signature at all
        now = int(time.time())
        claims = {"iss": world.issuer, "aud": url, "sub": "alice", "scope": "mcp", "exp": now + 300}
        token = jwt.encode(claims, "", algorithm="none")
        reason = "the token's algorithm is not accepted" if url == world.jwt_url else "the token is not active"
    elif case == "expired":
        token = expired_token(world, url, await token_for(world, url))
        reason = "the token has expired" if url == world.jwt_url else "the token is not active"
    else:  # a token the authorization server issued to alice for the other server
        token = await token_for(world, other)
        reason = "the token is not for this resource (aud)"
    resp = await raw_call(url, token)
    assert resp.status_code == 401
    assert challenge(resp) == f'{prefix}, error="invalid_token", error_description="{reason}"'
    assert token not in resp.text


async def narrowed_token(world: World, url: str, scope: str) -> str:
    """A token the authorization server issued alice for ``url``, granting only ``scope``
    (a JWT its own key signs again with that scope; for introspection, its record)."""
    token = await token_for(world, url)
    if url == world.jwt_url:
        claims = jwt.decode(token, options={"verify_signature": False})
        claims["scope"] = scope
        key = world.auth_server.signing_key.as_pem(private=True)
        return jwt.encode(claims, key, algorithm="ES256", headers={"kid": "as-1", "typ": "at+jwt"})
    world.auth_server.tokens[token].scope = scope
    return token


async def test_a_token_without_the_servers_scope_is_403(world: World, verifier_url: str) -> None:
    """A genuine token whose grant lacks the scope every request needs: 403
    insufficient_scope (step-up), not 401."""
    token = await narrowed_token(world, verifier_url, "offline_access")
    resp = await raw_call(verifier_url, token)
    assert resp.status_code == 403
    assert challenge(resp) == f'Bearer resource_metadata="{metadata_url(verifier_url)}", scope="mcp", error="insufficient_scope"'


async def test_the_insufficient_scope_challenge_names_every_scope_the_call_needs(world: World) -> None:
    token = await narrowed_token(world, world.jwt_url, "offline_access")
    resp = await raw_call(world.jwt_url, token, tool="purge")
    assert resp.status_code == 403
    assert 'scope="mcp admin", error="insufficient_scope"' in challenge(resp)


async def test_the_key_set_down_fails_closed_with_503(world: World) -> None:
    """A JWT verifier that cannot fetch the key set refuses (503, Retry-After) within its
    timeout, never letting a request through unchecked; mcpkit's client, logged in at the
    authorization server, gets that 503 as the call's error promptly (no login loop)."""
    sock = listening_socket()
    url = url_of(sock, "/mcp")
    dead = listening_socket()  # bound, never listening: connections are refused
    verifier = JWTVerifier(f"{url_of(dead)}/jwks", issuer=world.issuer, audience=url, timeout=2)
    app = mcp_server().asgi_app(auth=ResourceServer(url, [world.issuer], verifier, required_scopes=["mcp"]))
    try:
        with serving((sock, app)):
            started = time.monotonic()
            resp = await raw_call(url, forged_jwt(world, url))
            assert resp.status_code == 503
            assert resp.headers["retry-after"]
            assert "www-authenticate" not in resp.headers
            assert time.monotonic() - started < 5
            started = time.monotonic()
            with pytest.raises(McpError) as caught:
                async with Client(HttpTransport(url, auth=login("alice")), MODERN) as client:
                    await client.call_tool("whoami", {})
            assert caught.value.data["status"] == 503
            assert time.monotonic() - started < 10
            assert len(world.auth_server.calls("authorize")) == 1  # one login, then the 503 is the answer
    finally:
        dead.close()


@pytest.mark.parametrize("options", ERAS)
async def test_concurrent_users_each_see_their_own_identity(world: World, options: ClientOptions) -> None:
    """Alice's and bob's calls interleave on one server: each handler sees its caller."""
    async with (
        Client(HttpTransport(world.jwt_url, auth=login("alice")), options) as alice,
        Client(HttpTransport(world.jwt_url, auth=login("bob")), options) as bob,
    ):
        calls = [whoami(alice if i % 2 else bob) for i in range(20)]
        answers = await asyncio.wait_for(asyncio.gather(*calls), 20)
    assert [a["subject"] for a in answers] == ["bob", "alice"] * 10


# --- 2. the official SDK's client against mcpkit's resource server ----------------------------------------


class OfficialStorage:
    """The official SDK's ``TokenStorage``, in memory."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client_info: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client_info

    async def set_client_info(self, client_info: Any) -> None:
        self.client_info = client_info


def official_provider(url: str, user: str, redirect_uri: str) -> Any:
    """The official SDK's ``OAuthClientProvider``: its redirect handler is the browser (it
    reads the code from the authorization server's redirect instead of following it), its
    callback handler hands the code back."""
    from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata

    arrived: asyncio.Queue[dict[str, list[str]]] = asyncio.Queue()

    async def redirect_handler(authorization_url: str) -> None:
        async with httpx.AsyncClient(timeout=10) as http:
            answer = await http.get(authorization_url, headers={"x-test-user": user})
        assert answer.status_code == 302, answer.text
        location = answer.headers["location"]
        assert location.startswith(redirect_uri)
        arrived.put_nowait(parse_qs(urlsplit(location).query))

    async def callback_handler() -> AuthorizationCodeResult:
        params = await asyncio.wait_for(arrived.get(), 10)
        return AuthorizationCodeResult(code=params["code"][0], state=params["state"][0], iss=params.get("iss", [None])[0])

    metadata = OAuthClientMetadata(
        client_name="official e2e",
        redirect_uris=[redirect_uri],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    return OAuthClientProvider(url, metadata, OfficialStorage(), redirect_handler, callback_handler)


@pytest.mark.parametrize("mode", ["legacy", MODERN_VERSION, "auto"])
async def test_the_official_client_logs_in_and_calls_tools(world: World, verifier_url: str, mode: str) -> None:
    """The official client discovers, registers, logs carol in with PKCE and calls a tool
    on mcpkit's resource server; a tool declared ``scopes=["admin"]`` makes it step up."""
    import httpx2
    from mcp.client.client import Client as OfficialClient
    from mcp.client.streamable_http import streamable_http_client

    redirect_uri = "http://127.0.0.1:1/callback"  # never reached: the handler reads the redirect
    provider = official_provider(verifier_url, "carol", redirect_uri)

    async def run() -> None:
        async with (
            httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(10, read=20)) as http,
            OfficialClient(streamable_http_client(verifier_url, http_client=http), mode=mode) as client,
        ):
            assert client.protocol_version == (LEGACY_VERSION if mode == "legacy" else MODERN_VERSION)
            result = await client.call_tool("whoami", {})
            who = json.loads(result.content[0].text)  # type: ignore[union-attr]
            assert (who["subject"], who["aud"], who["iss"]) == ("carol", verifier_url, world.issuer)
            assert "mcp" in who["scopes"]
            purged = await client.call_tool("purge", {})
            assert purged.content[0].text == "purged by carol"  # type: ignore[union-attr]

    await asyncio.wait_for(run(), 30)
    (registration,) = world.auth_server.calls("register")
    registered: Any = registration["redirect_uris"]  # the registration's JSON body
    assert registered == [redirect_uri]
    first, second = world.auth_server.calls("authorize")
    assert first["code_challenge_method"] == "S256"
    assert first["resource"] == verifier_url
    assert "mcp" in first["scope"].split()
    assert {"mcp", "admin"} <= set(second["scope"].split())
    assert all(c["resource"] == verifier_url for c in world.auth_server.calls("token"))
    assert [status for status, _ in world.recorder(verifier_url).refusals()] == [401, 403]


# --- 3. what one user obtained is not another's --------------------------------------------------------------


async def test_a_legacy_session_is_bound_to_the_user_who_opened_it(world: World) -> None:
    """Alice opens a legacy session; bob, logged in through the same authorization server,
    presents its id with his own valid token: 403 for requests, the stream and DELETE.
    Alice's session goes on; bob's own session works."""
    url = world.jwt_url
    alice_transport = HttpTransport(url, auth=login("alice"))
    async with Client(alice_transport, LEGACY) as alice:
        assert (await whoami(alice))["subject"] == "alice"
        session_id = alice_transport.session_id
        assert session_id
        bob_auth = login("bob")
        async with Client(HttpTransport(url, auth=bob_auth), LEGACY) as bob:
            assert (await whoami(bob))["subject"] == "bob"
            bob_token = await access_token(bob_auth, url)
            headers = {
                "authorization": f"Bearer {bob_token}",
                "mcp-session-id": session_id,
                "mcp-protocol-version": LEGACY_VERSION,
                "accept": "application/json, text/event-stream",
            }
            body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}
            async with httpx.AsyncClient(timeout=5) as http:
                assert (await http.post(url, json=body, headers=headers)).status_code == 403
                assert (await http.get(url, headers=headers)).status_code == 403
                assert (await http.delete(url, headers=headers)).status_code == 403
            assert (await whoami(bob))["subject"] == "bob"
        assert (await whoami(alice))["subject"] == "alice"  # not ended, not taken over
        assert alice_transport.session_id == session_id


async def test_a_request_state_is_bound_to_the_user_who_obtained_it(world: World, verifier_url: str) -> None:
    """Alice's call asks for input (a modern ``requestState``); bob, with his own valid
    token, cannot answer it in her place (-32602); alice can."""
    alice = await token_for(world, verifier_url, "alice")
    bob = await token_for(world, verifier_url, "bob")
    first = (await raw_call(verifier_url, alice, tool="confirm")).json()["result"]
    assert first["resultType"] == "input_required"
    answer = {"requestState": first["requestState"], "inputResponses": {"k": {"action": "accept"}}}
    stolen = await raw_call(verifier_url, bob, tool="confirm", extra=answer)
    assert stolen.status_code == 400  # a modern -32602 goes out with 400 (docs/http.md)
    error = stolen.json()["error"]
    assert error["code"] == -32602
    assert "another principal" in error["message"]
    own = (await raw_call(verifier_url, alice, tool="confirm", extra=answer)).json()
    assert own["result"]["content"][0]["text"] == "accept for alice"


async def test_a_session_opened_by_a_token_without_a_principal_is_not_anyones(world: World) -> None:
    """Two different tokens, each valid, neither naming a subject or a client: the session
    one opened must not be usable with the other."""
    sock = listening_socket()
    url = url_of(sock, "/mcp")
    tokens = {"token-one": {"active": True, "scope": "mcp"}, "token-two": {"active": True, "scope": "mcp"}}
    auth = ResourceServer(url, [world.issuer], FunctionVerifier(tokens.get), required_scopes=["mcp"])
    with serving((sock, mcp_server().asgi_app(auth=auth))):
        transport = HttpTransport(url, headers={"authorization": "Bearer token-one"})
        async with Client(transport, LEGACY) as client:
            await client.list_tools()
            assert transport.session_id
            headers = {
                "authorization": "Bearer token-two",
                "mcp-session-id": transport.session_id,
                "mcp-protocol-version": LEGACY_VERSION,
                "accept": "application/json, text/event-stream",
            }
            body = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}
            async with httpx.AsyncClient(timeout=5) as http:
                assert (await http.post(url, json=body, headers=headers)).status_code == 403
