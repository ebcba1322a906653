"""Enterprise-managed authorization (ext-auth), the client side: ``IdJagExchange`` trades
the user's ID token at an identity provider (RFC 8693) for an ID-JAG, and
``OAuthClientAuth(assertion=...)`` presents it to the MCP server's authorization server
(authlib's, on loopback, with the RFC 7523 grant) — over real HTTP, end to end. The
identity provider is a stand-in on loopback that records what it is asked and signs
ID-JAGs with its key, which the authorization server trusts."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from joserfc.jwk import ECKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcpkit import Client, ClientOptions, HttpTransport, IdJagExchange, McpError, OAuthClientAuth, PreRegisteredClient, Server
from mcpkit.auth.client.grants import JWT_BEARER
from mcpkit.auth.client.token_exchange import ID_JAG, TOKEN_EXCHANGE
from support.servers.oauth_as import Client as RegisteredAt, Guard, LoopbackAuthorizationServer
from support.serving import serve_in_thread

pytestmark = pytest.mark.timeout(60)

OPTIONS = ClientOptions(protocol_version="2026-07-28", request_timeout=20)


@dataclass
class IdentityProvider:
    """Answers token exchanges with ID-JAGs (or with what ``answer`` says instead)."""

    issuer: str = ""
    key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    asked: list[dict[str, str]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    answer: tuple[int, dict[str, Any]] | None = None

    def app(self) -> Starlette:
        async def metadata(request: Request) -> JSONResponse:
            return JSONResponse({"issuer": self.issuer, "token_endpoint": f"{self.issuer}/token"})

        async def token(request: Request) -> JSONResponse:
            form = {k: str(v) for k, v in (await request.form()).items()}
            self.asked.append(form)
            self.headers.append(dict(request.headers))
            if self.answer is not None:
                return JSONResponse(self.answer[1], status_code=self.answer[0])
            now = int(time.time())
            claims = {"iss": self.issuer, "sub": "alice", "aud": form["audience"], "resource": form.get("resource"),
                      "client_id": "desktop", "scope": form.get("scope", ""), "jti": str(len(self.asked)), "iat": now,
                      "exp": now + 300}  # fmt: skip
            grant = jwt.encode(claims, self.key, algorithm="ES256", headers={"typ": "oauth-id-jag+jwt"})
            return JSONResponse({"issued_token_type": ID_JAG, "access_token": grant, "token_type": "N_A", "expires_in": 300})

        return Starlette(
            routes=[Route("/.well-known/oauth-authorization-server", metadata), Route("/token", token, methods=["POST"])]
        )


@dataclass
class World:
    idp: IdentityProvider
    auth_server: LoopbackAuthorizationServer
    url: str


@pytest.fixture
def world() -> Iterator[World]:
    server = Server("notes", "1.0.0")

    @server.tool
    def echo(text: str) -> str:
        return text

    idp = IdentityProvider()
    auth_server = LoopbackAuthorizationServer("", scopes=["mcp"])
    urls: dict[str, str] = {}
    guard = Guard(server.asgi_app(), lambda: auth_server, lambda: urls["mcp"], required=["mcp"], scopes_supported=["mcp"])
    with serve_in_thread(idp.app()) as idp_port, serve_in_thread(auth_server.app()) as as_port, serve_in_thread(guard) as rs_port:
        idp.issuer = f"http://127.0.0.1:{idp_port}"
        auth_server.issuer = f"http://127.0.0.1:{as_port}"
        urls["mcp"] = f"http://127.0.0.1:{rs_port}/mcp"
        public = idp.key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        auth_server.clients[idp.issuer] = RegisteredAt(idp.issuer, grant_types=[JWT_BEARER], public_key=ECKey.import_key(public))
        yield World(idp, auth_server, urls["mcp"])


async def echo(world: World, auth: OAuthClientAuth) -> str:
    async with Client(HttpTransport(world.url, auth=auth), OPTIONS) as client:
        return str((await client.call_tool("echo", {"text": "hi"})).content[0].text)


async def test_the_id_token_is_exchanged_for_an_id_jag_that_buys_the_token(world: World) -> None:
    tokens = iter(["id-token-1", "id-token-2"])
    exchange = IdJagExchange(
        client=PreRegisteredClient("desktop", client_secret="s3cret"),
        subject_token=lambda: next(tokens),
        token_endpoint=f"{world.idp.issuer}/token",
        scope="mcp",
    )
    assert await echo(world, OAuthClientAuth(assertion=exchange)) == "hi"  # the grant follows from the assertion
    (asked,) = world.idp.asked
    assert asked == {
        "grant_type": TOKEN_EXCHANGE,
        "requested_token_type": ID_JAG,
        "audience": world.auth_server.issuer,
        "resource": world.url,
        "subject_token": "id-token-1",
        "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
        "scope": "mcp",
    }
    assert world.idp.headers[0]["authorization"].startswith("Basic ")  # the client authenticated at the provider
    (token_request,) = world.auth_server.calls("token")
    assert token_request["grant_type"] == JWT_BEARER
    assert token_request["resource"] == world.url
    assert jwt.decode(token_request["assertion"], options={"verify_signature": False})["sub"] == "alice"


async def test_the_providers_endpoint_is_found_from_its_issuer(world: World) -> None:
    async def id_token() -> str:
        return "from-an-async-source"

    exchange = IdJagExchange(client=PreRegisteredClient("desktop"), subject_token=id_token, issuer=world.idp.issuer,
                             send_resource=False)  # fmt: skip
    assert await echo(world, OAuthClientAuth(assertion=exchange)) == "hi"
    (asked,) = world.idp.asked
    assert "resource" not in asked
    assert "scope" not in asked
    assert asked["client_id"] == "desktop"  # a public client names itself
    assert asked["subject_token"] == "from-an-async-source"


async def test_a_refusal_of_the_provider_is_final_and_says_its_code(world: World) -> None:
    world.idp.answer = (400, {"error": "access_denied", "error_description": "policy: not for this server"})
    exchange = IdJagExchange(client=PreRegisteredClient("desktop"), subject_token="t", token_endpoint=f"{world.idp.issuer}/token")
    with pytest.raises(McpError) as caught:
        await echo(world, OAuthClientAuth(assertion=exchange))
    assert "the identity provider refused the token exchange" in caught.value.message
    assert "access_denied" in caught.value.message
    assert len(world.idp.asked) == 1  # asked once, not retried
    assert not world.auth_server.calls("token")  # and nothing else was tried


async def test_anything_but_an_id_jag_is_refused(world: World) -> None:
    world.idp.answer = (200, {"issued_token_type": "urn:ietf:params:oauth:token-type:access_token", "access_token": "x"})
    exchange = IdJagExchange(client=PreRegisteredClient("desktop"), subject_token="t", token_endpoint=f"{world.idp.issuer}/token")
    with pytest.raises(McpError) as caught:
        await echo(world, OAuthClientAuth(assertion=exchange))
    assert "not an ID-JAG" in caught.value.message
    assert not world.auth_server.calls("token")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "give the identity provider's token_endpoint or its issuer (one of them)"),
        (
            {"token_endpoint": "https://idp/token", "issuer": "https://idp"},
            "give the identity provider's token_endpoint or its issuer",
        ),
        ({"token_endpoint": "http://idp.example.com/token"}, "it must be https (plain http only for loopback hosts)"),
        ({"token_endpoint": "https://idp/token", "subject_token_type": "jwt"}, "subject_token_type must be one of id_token"),
        ({"token_endpoint": "https://idp/token", "timeout": 0}, "timeout must be positive"),
        ({"token_endpoint": "https://idp/token", "subject_token": ""}, "subject_token must not be empty"),
    ],
)
def test_settings_that_cannot_work_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        IdJagExchange(**{"client": PreRegisteredClient("desktop"), "subject_token": "t", **options})


def test_the_subject_token_never_shows_in_repr() -> None:
    exchange = IdJagExchange(client=PreRegisteredClient("desktop", client_secret="s"), subject_token="secret-id-token",
                             token_endpoint="https://idp/token")  # fmt: skip
    assert "secret" not in repr(exchange).replace("client_secret", "")
