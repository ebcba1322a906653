"""The OAuth client (mcpkit.OAuthClientAuth) against a real authorization server on loopback.

The authorization server is authlib's (tests/support/servers/oauth_as.py, with a thin Starlette
front); the MCP server is an mcpkit ``Server`` behind a small guard that checks the
tokens that server issued (audience, expiry, scopes per tool) and answers 401/403 with
the MCP challenge. Both run under uvicorn in threads. The "browser" is httpx: it opens
the authorization URL, and follows the redirect to the client's loopback listener.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from joserfc.jwk import ECKey

from mcpkit import (
    Client,
    ClientOptions,
    HttpTransport,
    InMemoryTokenStorage,
    LoopbackRedirect,
    McpError,
    OAuthClientAuth,
    OAuthClientMetadata,
    PreRegisteredClient,
    Server,
)
from mcpkit.auth.client.grants import JWT_BEARER
from mcpkit.auth.client.storage import tokens_key
from mcpkit.auth.client.urls import canonical_resource
from support.ports import free_port
from support.servers.oauth_as import Client as RegisteredAt, Guard, LoopbackAuthorizationServer
from support.serving import serve_in_thread

pytestmark = pytest.mark.timeout(60)

MODERN = ClientOptions(protocol_version="2026-07-28", request_timeout=20)
LEGACY = ClientOptions(protocol_version="2025-11-25", request_timeout=20)


def mcp_server() -> Server:
    server = Server("notes", "1.0.0")

    @server.tool
    def echo(text: str) -> str:
        return text

    @server.tool
    def purge() -> str:
        return "purged"

    return server


@dataclass
class World:
    auth_server: LoopbackAuthorizationServer
    guard: Guard
    url: str


@pytest.fixture
def world() -> Iterator[World]:
    auth_server = LoopbackAuthorizationServer("", scopes=["mcp", "admin", "offline_access"])
    urls: dict[str, str] = {}
    guard = Guard(
        mcp_server().asgi_app(),
        lambda: auth_server,
        lambda: urls["mcp"],
        required=["mcp"],
        tool_scopes={"purge": ["admin"]},
        scopes_supported=["mcp"],
    )
    with serve_in_thread(auth_server.app()) as as_port, serve_in_thread(guard) as rs_port:
        auth_server.issuer = f"http://127.0.0.1:{as_port}"
        urls["mcp"] = f"http://127.0.0.1:{rs_port}/mcp"
        yield World(auth_server, guard, urls["mcp"])


async def browser(url: str) -> None:
    """A user who consents at once: follow the authorization server's redirect to the
    client's loopback listener."""
    async with httpx.AsyncClient(timeout=10) as http:
        answer = await http.get(url)
        assert answer.status_code == 302, answer.text
        await http.get(answer.headers["location"])


def login(**options: Any) -> OAuthClientAuth:
    return OAuthClientAuth(redirect=LoopbackRedirect(open_url=browser, timeout=20), **options)


async def echo(url: str, auth: OAuthClientAuth, options: ClientOptions = MODERN, text: str = "hi") -> str:
    """Call the ``echo`` tool at ``url`` through ``auth``; its answer."""
    async with Client(HttpTransport(url, auth=auth), options) as client:
        result = await client.call_tool("echo", {"text": text})
        return str(result.content[0].text)


@pytest.mark.parametrize("options", [MODERN, LEGACY], ids=["modern", "legacy"])
async def test_discovery_registration_pkce_login_and_a_tool_call(world: World, options: ClientOptions) -> None:
    started = time.monotonic()
    auth = login()
    assert await echo(world.url, auth, options) == "hi"
    registrations = world.auth_server.calls("register")
    assert len(registrations) == 1
    registration = registrations[0]
    assert registration["application_type"] == "native"
    assert registration["token_endpoint_auth_method"] == "none"
    assert "refresh_token" in registration["grant_types"]
    redirect_uri = registration["redirect_uris"][0]
    assert redirect_uri.startswith("http://127.0.0.1:")
    (request,) = world.auth_server.calls("authorize")
    assert request["code_challenge_method"] == "S256"
    assert len(request["code_challenge"]) == 43
    assert request["resource"] == world.url
    assert request["redirect_uri"] == redirect_uri
    assert request["scope"] == "mcp offline_access"  # the server's scopes_supported, and a refresh token
    assert request["state"]
    (exchange,) = world.auth_server.calls("token")
    assert exchange["grant_type"] == "authorization_code"
    assert exchange["resource"] == world.url
    assert len(exchange["code_verifier"]) >= 43
    # The first request got the challenge; every later one carried the token.
    assert [status for status, _ in world.guard.challenges] == [401]
    assert time.monotonic() - started < 15


async def test_concurrent_requests_share_one_login(world: World) -> None:
    auth = login()
    async with Client(HttpTransport(world.url, auth=auth), MODERN) as client:
        results = await asyncio.gather(*(client.call_tool("echo", {"text": str(i)}) for i in range(4)))
    assert sorted(r.content[0].text for r in results) == ["0", "1", "2", "3"]
    assert len(world.auth_server.calls("authorize")) == 1


async def test_a_login_outlives_the_request_that_started_it(world: World) -> None:
    """The era probe outlasts its ``discover_timeout`` while the user is still logging in,
    so ``initialize`` is sent too; the login goes on, and every request waits for it
    instead of starting another (the era is whichever question was answered first)."""

    async def slow_user(url: str) -> None:
        await asyncio.sleep(1.0)  # the user is slow on purpose: longer than discover_timeout (0.3 s)
        await browser(url)

    auth = OAuthClientAuth(redirect=LoopbackRedirect(open_url=slow_user, timeout=20))
    options = ClientOptions(discover_timeout=0.3, request_timeout=20)
    async with Client(HttpTransport(world.url, auth=auth), options) as client:
        assert (await client.call_tool("echo", {"text": "late"})).content[0].text == "late"
        assert client.era in ("modern", "legacy")
    assert len(world.auth_server.calls("authorize")) == 1


async def test_an_expired_token_is_refreshed_without_a_new_login(world: World) -> None:
    auth = login()
    async with Client(HttpTransport(world.url, auth=auth), MODERN) as client:
        await client.call_tool("echo", {"text": "one"})
        for token in world.auth_server.tokens.values():
            token.expires_at = 0  # the resource server now sees it expired: 401 invalid_token
        result = await client.call_tool("echo", {"text": "two"})
    assert result.content[0].text == "two"
    assert [c["grant_type"] for c in world.auth_server.calls("token")] == ["authorization_code", "refresh_token"]
    assert len(world.auth_server.calls("authorize")) == 1
    assert 'error="invalid_token"' in world.guard.challenges[-1][1]


async def test_stored_tokens_are_reused_and_refreshed_before_use_when_expired(world: World) -> None:
    storage = InMemoryTokenStorage()
    assert await echo(world.url, login(storage=storage)) == "hi"
    assert await echo(world.url, login(storage=storage)) == "hi"  # a new program, the same storage
    assert len(world.auth_server.calls("authorize")) == 1
    key = f"tokens {world.url}"
    record = await storage.load(key)
    assert record is not None
    assert record["refresh_token"]
    record["expires_at"] = time.time() - 1
    await storage.save(key, record)
    challenged = len(world.guard.challenges)
    assert await echo(world.url, login(storage=storage)) == "hi"
    assert [c["grant_type"] for c in world.auth_server.calls("token")] == ["authorization_code", "refresh_token"]
    assert len(world.guard.challenges) == challenged  # refreshed before sending: no 401


async def test_step_up_to_a_wider_scope(world: World) -> None:
    auth = login()
    async with Client(HttpTransport(world.url, auth=auth), MODERN) as client:
        assert (await client.call_tool("echo", {"text": "x"})).content[0].text == "x"
        assert (await client.call_tool("purge", {})).content[0].text == "purged"
        assert (await client.call_tool("echo", {"text": "y"})).content[0].text == "y"
    first, second = world.auth_server.calls("authorize")
    assert first["scope"] == "mcp offline_access"
    assert set(second["scope"].split()) == {"mcp", "offline_access", "admin"}  # the union, not just the challenge
    status, challenge = world.guard.challenges[-1]
    assert status == 403
    assert 'error="insufficient_scope"' in challenge


async def test_step_up_gives_up_after_its_retry_limit(world: World) -> None:
    world.auth_server.withheld.add("admin")  # the user may never have it
    auth = login(max_step_ups=2)
    async with Client(HttpTransport(world.url, auth=auth), MODERN) as client:
        await client.call_tool("echo", {"text": "x"})
        with pytest.raises(McpError) as caught:
            await client.call_tool("purge", {})
    assert caught.value.data["status"] == 403
    assert len(world.auth_server.calls("authorize")) == 3  # the login, then two step-ups


async def test_client_credentials_with_client_secret_basic(world: World) -> None:
    world.auth_server.clients["robot"] = RegisteredAt(
        "robot", "client_secret_basic", "s3cret:/?", grant_types=["client_credentials"]
    )
    auth = OAuthClientAuth(client=PreRegisteredClient("robot", client_secret="s3cret:/?"))
    assert await echo(world.url, auth) == "hi"
    (request,) = world.auth_server.calls("token")
    assert request["grant_type"] == "client_credentials"
    assert request["resource"] == world.url
    assert request["scope"] == "mcp"  # no offline_access for a client acting on its own behalf
    assert "client_secret" not in request
    assert not world.auth_server.calls("register")
    assert not world.auth_server.calls("authorize")


async def test_client_credentials_with_private_key_jwt(world: World) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    world.auth_server.clients["signer"] = RegisteredAt(
        "signer", "private_key_jwt", grant_types=["client_credentials"], public_key=ECKey.import_key(public)
    )
    auth = OAuthClientAuth(client=PreRegisteredClient("signer", private_key=pem.decode()))
    assert await echo(world.url, auth) == "hi"
    (request,) = world.auth_server.calls("token")
    assert request["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


async def test_jwt_bearer_trades_an_identity_assertion_for_a_token(world: World) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    idp = "https://idp.example.com"
    world.auth_server.clients[idp] = RegisteredAt(idp, grant_types=[JWT_BEARER], public_key=ECKey.import_key(public))
    asked: list[tuple[str, str]] = []

    async def workload_token(issuer: str, resource: str) -> str:
        asked.append((issuer, resource))
        now = int(time.time())
        return jwt.encode({"iss": idp, "sub": "job-42", "aud": issuer, "iat": now, "exp": now + 60}, key, algorithm="ES256")

    auth = OAuthClientAuth(grant="jwt_bearer", assertion=workload_token)
    assert await echo(world.url, auth) == "hi"
    assert asked == [(world.auth_server.issuer, world.url)]
    (request,) = world.auth_server.calls("token")
    assert request["grant_type"] == JWT_BEARER
    assert request["resource"] == world.url


async def test_metadata_naming_another_resource_is_refused(world: World) -> None:
    world.guard.prm_resource = lambda: "http://127.0.0.1:1/mcp"
    with pytest.raises(McpError) as caught:
        await echo(world.url, login())
    assert "refusing to authorize for another resource" in caught.value.message
    assert not world.auth_server.calls("register")
    assert not world.auth_server.calls("authorize")


async def test_an_authorization_server_that_is_down_fails_clearly_and_promptly(world: World) -> None:
    world.auth_server.issuer = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    started = time.monotonic()
    with pytest.raises(McpError) as caught:
        await echo(world.url, login(timeout=2))
    assert "could not reach the authorization server metadata" in caught.value.message
    assert time.monotonic() - started < 10


async def test_a_denied_consent_is_reported(world: World) -> None:
    world.auth_server.deny_consent = True
    with pytest.raises(McpError) as caught:
        await echo(world.url, login())
    assert "access_denied" in caught.value.message
    assert not world.auth_server.calls("token")


async def test_a_response_without_the_promised_iss_is_not_used(world: World) -> None:
    world.auth_server.iss_in_redirect = False  # the metadata still promise it
    with pytest.raises(McpError) as caught:
        await echo(world.url, login())
    assert "lacks the iss parameter" in caught.value.message
    assert not world.auth_server.calls("token")


async def test_no_redirect_ever_arrives(world: World) -> None:
    async def user_walks_away(url: str) -> None:
        return None

    auth = OAuthClientAuth(redirect=LoopbackRedirect(open_url=user_walks_away, timeout=0.5))
    with pytest.raises(McpError) as caught:
        await echo(world.url, auth)
    assert "no authorization arrived" in caught.value.message


async def test_client_id_metadata_document_is_the_client_id_when_supported(world: World) -> None:
    document = "https://app.example.com/mcp-client.json"
    metadata = world.auth_server.metadata

    def with_cimd() -> dict[str, Any]:
        return {**metadata(), "client_id_metadata_document_supported": True}

    world.auth_server.metadata = with_cimd  # type: ignore[method-assign]
    redirect = LoopbackRedirect(open_url=browser, timeout=5)
    world.auth_server.clients[document] = RegisteredAt(document, redirect_uris=[await redirect.redirect_uri()])
    auth = OAuthClientAuth(redirect=redirect, metadata=OAuthClientMetadata(metadata_url=document))
    assert await echo(world.url, auth) == "hi"
    assert not world.auth_server.calls("register")
    assert world.auth_server.calls("authorize")[0]["client_id"] == document


@contextlib.contextmanager
def serve_on(sock: socket.socket, app: Any, keep_alive: float = 5) -> Iterator[None]:
    """uvicorn on an already bound socket, in a thread (bounded start and stop)."""
    import uvicorn

    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2, timeout_keep_alive=keep_alive)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive(), "uvicorn exited during start-up"
        assert time.monotonic() < deadline, "uvicorn did not start within 10 s"
        time.sleep(0.01)
    try:
        yield
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


async def test_a_login_longer_than_the_servers_keep_alive(world: World) -> None:
    """A login that outlasts the server's keep-alive: the request is sent again on a
    connection that is still open (the 401's is read and given back before the login)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    guard = Guard(mcp_server().asgi_app(), lambda: world.auth_server, lambda: url, required=["mcp"])

    async def slow_user(authorization_url: str) -> None:
        await asyncio.sleep(0.8)  # the user is slow on purpose: longer than the server's keep-alive (0.2 s)
        await browser(authorization_url)

    auth = OAuthClientAuth(redirect=LoopbackRedirect(open_url=slow_user, timeout=20))
    with serve_on(sock, guard, keep_alive=0.2):
        assert await echo(url, auth) == "hi"


@pytest.mark.parametrize("options", [MODERN, LEGACY], ids=["modern", "legacy"])
async def test_against_an_official_sdk_server_with_auth(world: World, options: ClientOptions) -> None:
    """The official SDK's MCPServer as the resource server (its own metadata, challenge
    and checks), trusting the tokens of the authlib server."""
    from mcp.server.auth.provider import AccessToken
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.mcpserver import MCPServer

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    issued = world.auth_server.tokens

    class Verifier:
        async def verify_token(self, token: str) -> AccessToken | None:
            found = issued.get(token)
            if found is None or found.expires_at < time.time():
                return None
            return AccessToken(token=token, client_id=found.client_id, scopes=found.scope.split(), resource=found.audience)

    official = MCPServer(
        "official-protected",
        token_verifier=Verifier(),
        auth=AuthSettings(
            issuer_url=world.auth_server.issuer,
            resource_server_url=url,
            required_scopes=["mcp"],
            validate_token_resource=True,
        ),
        log_level="WARNING",
    )

    @official.tool(name="echo")
    def echo_tool(text: str) -> str:
        return text

    with serve_on(sock, official.streamable_http_app(stateless_http=True, json_response=True)):
        assert await echo(url, login(), options) == "hi"
    (request,) = world.auth_server.calls("authorize")
    assert request["resource"] == url
    assert "mcp" in request["scope"].split()


async def test_logout_revokes_the_grant_and_the_next_call_logs_in_again(world: World) -> None:
    """RFC 7009: ``logout()`` revokes the refresh token (the whole grant), then the access
    token, at the authorization server, and forgets both; the revoked token is refused
    by the MCP server, and the next request takes a new login."""
    storage = InMemoryTokenStorage()
    auth = login(storage=storage)
    async with Client(HttpTransport(world.url, auth=auth), MODERN) as client:
        assert (await client.call_tool("echo", {"text": "before"})).content[0].text == "before"
        (issued,) = world.auth_server.tokens.values()
        assert issued.refresh_token is not None
        assert await auth.logout() is True
        revocations = world.auth_server.calls("revoke")
        assert [(r["token"], r["token_type_hint"]) for r in revocations] == [
            (issued.refresh_token, "refresh_token"), (issued.access_token, "access_token"),
        ]  # fmt: skip
        assert all(r["client_id"] for r in revocations)  # the public client names itself
        assert (issued.revoked, issued.access_revoked) == (True, True)
        assert await storage.load(tokens_key(canonical_resource(world.url))) is None
        async with httpx.AsyncClient() as http:  # the revoked token, sent by hand: refused
            refused = await http.post(world.url, headers={"authorization": f"Bearer {issued.access_token}"}, json={})
        assert refused.status_code == 401
        assert (await client.call_tool("echo", {"text": "after"})).content[0].text == "after"
    assert len(world.auth_server.calls("authorize")) == 2  # a new login after the logout


async def test_logout_with_nothing_to_revoke_or_nowhere_to_revoke_it(world: World) -> None:
    assert await login().logout() is False  # never used: nothing to forget
    everything = world.auth_server.metadata
    world.auth_server.metadata = lambda: {k: v for k, v in everything().items() if k != "revocation_endpoint"}  # type: ignore[method-assign]
    auth = login()
    assert await echo(world.url, auth) == "hi"
    assert await auth.logout() is False  # forgotten here only: the server offers no revocation
    assert not world.auth_server.calls("revoke")
    assert await echo(world.url, auth) == "hi"
    assert len(world.auth_server.calls("authorize")) == 2
