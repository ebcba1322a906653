"""DPoP on the resource server (RFC 9449): ``ResourceServer(dpop=DPoPChecker())`` takes
DPoP-bound tokens only with a valid proof of their key, over real HTTP. mcpkit's client
turns DPoP on by itself when both the authorization server and the MCP server's metadata
offer it; hand-made proofs (raw httpx) check each refusal: a replayed proof, a proof for
another URL or method or token, a stale one, one signed by another key, one with a
private or symmetric key, a missing or doubled proof, a bound token sent as Bearer —
each a 401 with the error RFC 9449 names."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import secrets
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcpkit import (
    Client,
    ClientOptions,
    Context,
    DPoPChecker,
    FunctionVerifier,
    HttpTransport,
    McpError,
    OAuthClientAuth,
    PreRegisteredClient,
    Server,
)  # fmt: skip
from mcpkit.auth.dpop import InMemoryReplayCache, ReplayCacheFull, thumbprint
from mcpkit.auth.server import ResourceServer
from mcpkit.stores.redis import RedisStore
from support.nodes import Redis, require
from support.serving import serve_in_thread

pytestmark = pytest.mark.timeout(60)

MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
DISCOVER = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}}


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Key:
    """A client's DPoP key, making proofs (any of whose parts a test may spoil)."""

    def __init__(self) -> None:
        self.private = ec.generate_private_key(ec.SECP256R1())
        n = self.private.public_key().public_numbers()
        self.jwk = {"kty": "EC", "crv": "P-256", "x": b64(n.x.to_bytes(32, "big")), "y": b64(n.y.to_bytes(32, "big"))}

    def proof(self, method: str, url: str, token: str | None = None, **changes: Any) -> str:
        claims: dict[str, Any] = {"jti": secrets.token_urlsafe(16), "htm": method, "htu": url, "iat": int(time.time())}
        if token is not None:
            claims["ath"] = b64(hashlib.sha256(token.encode()).digest())
        header = {"typ": "dpop+jwt", "jwk": changes.pop("jwk", self.jwk)}
        claims.update(changes)
        return jwt.encode({k: v for k, v in claims.items() if v is not None}, self.private, algorithm="ES256", headers=header)


@dataclass
class World:
    issuer: str = ""
    url: str = ""
    plain_url: str = ""  # the same MCP server, without DPoP
    issued: dict[str, dict[str, Any]] = field(default_factory=dict)
    token_requests: list[dict[str, Any]] = field(default_factory=list)

    def authorization_server(self) -> Starlette:
        async def metadata(request: Request) -> JSONResponse:
            doc = {
                "issuer": self.issuer,
                "token_endpoint": f"{self.issuer}/token",
                "grant_types_supported": ["client_credentials"],
            }
            return JSONResponse({**doc, "dpop_signing_alg_values_supported": ["ES256"]})

        async def token(request: Request) -> JSONResponse:
            proof = request.headers.get("dpop")
            self.token_requests.append({"form": dict(await request.form()), "dpop": proof})
            access = secrets.token_urlsafe(16)
            claims: dict[str, Any] = {"sub": "bot", "scope": "mcp"}
            if proof is not None:  # bound to the proof's key
                claims["cnf"] = {"jkt": thumbprint(jwt.get_unverified_header(proof)["jwk"])}
            self.issued[access] = claims
            return JSONResponse({"access_token": access, "token_type": "DPoP" if proof else "Bearer", "expires_in": 600})

        return Starlette(
            routes=[Route("/.well-known/oauth-authorization-server", metadata), Route("/token", token, methods=["POST"])]
        )

    def bind(self, key: Key) -> str:
        """A token bound to ``key``, issued without asking the authorization server."""
        access = secrets.token_urlsafe(16)
        self.issued[access] = {"sub": "bot", "scope": "mcp", "cnf": {"jkt": thumbprint(key.jwk)}}
        return access


def mcp_server(lifespan: Any = None) -> Server:
    server = Server("dpop", lifespan=lifespan)

    @server.tool
    def bound(ctx: Context) -> str:
        assert ctx.identity is not None
        return "bound" if "cnf" in ctx.identity.claims else "bearer"

    return server


@pytest.fixture
def world() -> Iterator[World]:
    world = World()
    verifier = FunctionVerifier(world.issued.get)
    # the URLs are known once the servers listen: the ResourceServers are told then
    guarded = ResourceServer(
        "http://127.0.0.1:1/mcp", ["http://127.0.0.1:1"], verifier, required_scopes=["mcp"], dpop=DPoPChecker()
    )
    plain = ResourceServer("http://127.0.0.1:1/mcp", ["http://127.0.0.1:1"], verifier, required_scopes=["mcp"])
    with (
        serve_in_thread(world.authorization_server()) as as_port,
        serve_in_thread(mcp_server().asgi_app(auth=guarded)) as port,
        serve_in_thread(mcp_server().asgi_app(auth=plain)) as plain_port,
    ):
        world.issuer = f"http://127.0.0.1:{as_port}"
        world.url = f"http://127.0.0.1:{port}/mcp"
        world.plain_url = f"http://127.0.0.1:{plain_port}/mcp"
        guarded.resource, guarded.authorization_servers = world.url, [world.issuer]
        plain.resource, plain.authorization_servers = world.plain_url, [world.issuer]
        yield world


async def call_bound(url: str, **auth: Any) -> str:
    oauth = OAuthClientAuth(client=PreRegisteredClient("bot", client_secret="s"), **auth)
    async with Client(HttpTransport(url, auth=oauth), ClientOptions(protocol_version=MODERN)) as client:
        return str((await client.call_tool("bound")).content[0].text)


async def test_mcpkits_client_uses_dpop_where_both_servers_offer_it(world: World) -> None:
    assert await call_bound(world.url) == "bound"
    (request,) = world.token_requests
    assert request["dpop"] is not None  # the token request carried a proof: the token is bound
    async with httpx.AsyncClient() as http:
        metadata = (await http.get(world.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp"))).json()
    assert metadata["dpop_signing_alg_values_supported"] == ["ES256", "ES384", "ES512", "RS256", "PS256", "EdDSA"]
    assert metadata["dpop_bound_access_tokens_required"] is False


async def test_and_bearer_where_the_mcp_server_does_not(world: World) -> None:
    assert await call_bound(world.plain_url) == "bearer"
    assert world.token_requests[-1]["dpop"] is None
    with pytest.raises(McpError):  # forced on: a bound token, which the Bearer-only server cannot take
        await call_bound(world.plain_url, dpop=True)


async def post(url: str, authorization: str | None, proofs: list[str]) -> httpx.Response:
    headers = [("accept", "application/json, text/event-stream"), ("content-type", "application/json")]
    headers += [("dpop", p) for p in proofs]
    if authorization is not None:
        headers.append(("authorization", authorization))
    headers += [("mcp-method", "server/discover"), ("mcp-protocol-version", MODERN)]
    async with httpx.AsyncClient() as http:
        return await http.post(url, json=DISCOVER, headers=headers)


def dpop_error(response: httpx.Response) -> str:
    """The DPoP challenge's error (the second WWW-Authenticate), after checking the first is Bearer's."""
    challenges = response.headers.get_list("www-authenticate")
    assert challenges[0].startswith("Bearer resource_metadata=")
    (dpop,) = [c for c in challenges if c.startswith("DPoP ")]
    assert 'algs="ES256 ES384 ES512 RS256 PS256 EdDSA"' in dpop
    return dpop


async def test_a_valid_proof_is_taken_once(world: World) -> None:
    key = Key()
    token = world.bind(key)
    proof = key.proof("POST", world.url, token)
    assert (await post(world.url, f"DPoP {token}", [proof])).status_code == 200
    replayed = await post(world.url, f"DPoP {token}", [proof])
    assert replayed.status_code == 401
    assert 'error="invalid_dpop_proof", error_description="the proof was used before (jti replayed)"' in dpop_error(replayed)


@pytest.mark.parametrize(
    ("spoil", "why"),
    [
        (lambda k, w, t: [k.proof("POST", w.url.replace("/mcp", "/other"), t)], "the proof is for another URL"),
        (lambda k, w, t: [k.proof("POST", "http://evil.example/mcp", t)], "the proof is for another URL"),
        (lambda k, w, t: [k.proof("GET", w.url, t)], "the proof is for another HTTP method"),
        (lambda k, w, t: [k.proof("POST", w.url, "another-token")], "the proof is not for this access token (ath)"),
        (lambda k, w, t: [k.proof("POST", w.url, None)], "the proof is not for this access token (ath)"),
        (lambda k, w, t: [k.proof("POST", w.url, t, iat=int(time.time()) - 120)], "the proof is too old, or from the future"),
        (lambda k, w, t: [k.proof("POST", w.url, t, iat=int(time.time()) + 120)], "the proof is too old, or from the future"),
        (lambda k, w, t: [Key().proof("POST", w.url, t)], "the proof's key is not the one the token is bound to (cnf.jkt)"),
        (lambda k, w, t: [k.proof("POST", w.url, t, jwk={**k.jwk, "d": "AAAA"})], "the proof's jwk is a private key"),
        (lambda k, w, t: [k.proof("POST", w.url, t, jti="")], "the proof has no usable jti"),
        (lambda k, w, t: [k.proof("POST", w.url, t)] * 2, "send exactly one DPoP proof"),
        (lambda k, w, t: [], "the request carries no DPoP proof"),
        (lambda k, w, t: ["not a jws"], "the proof is not a JWS"),
        (
            lambda k, w, t: [
                jwt.encode(
                    {"jti": "x", "htm": "POST", "htu": w.url, "iat": int(time.time())},
                    "secret-secret-secret-secret-0123",
                    algorithm="HS256",
                    headers={"typ": "dpop+jwt", "jwk": k.jwk},
                )
            ],
            "the proof's algorithm is not one of ES256, ES384, ES512, RS256, PS256, EdDSA",
        ),
        (
            lambda k, w, t: [jwt.encode({"htm": "POST"}, k.private, algorithm="ES256", headers={"typ": "JWT", "jwk": k.jwk})],
            "the proof's typ is not dpop+jwt",
        ),
    ],
)
async def test_a_bad_proof_is_refused_saying_why(world: World, spoil: Any, why: str) -> None:
    key = Key()
    token = world.bind(key)
    response = await post(world.url, f"DPoP {token}", spoil(key, world, token))
    assert response.status_code == 401
    assert f'error="invalid_dpop_proof", error_description="{why}"' in dpop_error(response)


async def test_a_bound_token_sent_as_bearer_is_refused(world: World) -> None:
    key = Key()
    token = world.bind(key)
    response = await post(world.url, f"Bearer {token}", [])
    assert response.status_code == 401
    bearer = response.headers.get_list("www-authenticate")[0]
    assert (
        'error="invalid_token", error_description="the token is DPoP-bound: send it with the DPoP scheme and a proof"' in bearer
    )


async def test_an_unbound_token_sent_as_dpop_is_refused(world: World) -> None:
    token = secrets.token_urlsafe(8)
    world.issued[token] = {"sub": "bot", "scope": "mcp"}
    response = await post(world.url, f"DPoP {token}", [Key().proof("POST", world.url, token)])
    assert response.status_code == 401
    assert 'error="invalid_token", error_description="the token is not DPoP-bound' in response.headers["www-authenticate"]
    assert (await post(world.url, f"Bearer {token}", [])).status_code == 200  # as Bearer it is fine


async def test_a_server_without_dpop_refuses_the_scheme(world: World) -> None:
    key = Key()
    token = world.bind(key)
    response = await post(world.plain_url, f"DPoP {token}", [key.proof("POST", world.plain_url, token)])
    assert response.status_code == 401
    assert response.headers.get_list("www-authenticate") == [
        f'Bearer resource_metadata="{world.plain_url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")}", '
        'scope="mcp", error="invalid_request"'
    ]


async def test_the_replay_cache_is_bounded_and_fails_closed() -> None:
    now = [1000.0]
    cache = InMemoryReplayCache(size=2, clock=lambda: now[0])
    assert await cache.first_use("a", 1060)
    assert not await cache.first_use("a", 1060)
    assert await cache.first_use("b", 1070)
    with pytest.raises(ReplayCacheFull):
        await cache.first_use("c", 1070)  # full of unexpired entries: refuse, never forget one early
    now[0] = 1061.0  # "a" expired
    assert await cache.first_use("c", 1120)
    assert len(cache) == 2
    assert not await cache.first_use("b", 1130)


def test_settings_that_cannot_work() -> None:
    with pytest.raises(ValueError, match="asymmetric"):
        DPoPChecker(algorithms=["HS256"])
    with pytest.raises(ValueError, match="max_age"):
        DPoPChecker(max_age=0)
    with pytest.raises(ValueError, match="dpop_required needs"):
        ResourceServer("https://x/mcp", ["https://as"], FunctionVerifier(lambda t: None), dpop_required=True)


async def test_nodes_sharing_a_redis_replay_cache_refuse_a_proof_replayed_to_another_node(tmp_path: Path) -> None:
    """Two nodes of one deployment (one public URL), each with its own RedisStore on one
    redis-server: a proof taken by one is a replay on the other; Redis gone, a 503."""
    require("redis-server")
    redis = Redis(tmp_path)
    redis.start()
    world = World()
    verifier = FunctionVerifier(world.issued.get)
    prefix = f"dpop{secrets.token_hex(4)}"
    stores = [RedisStore(redis.url, prefix=prefix, timeout=1.0) for _ in range(2)]
    guards = [
        ResourceServer("http://127.0.0.1:1/mcp", ["http://127.0.0.1:1"], verifier, dpop=DPoPChecker(replay_cache=s.replay))
        for s in stores
    ]

    def closing(store: RedisStore) -> Any:
        @contextlib.asynccontextmanager
        async def lifespan(server: Server) -> AsyncIterator[None]:
            yield
            await store.aclose()  # on the node's own loop, where its connections live

        return lifespan

    one_app, two_app = (mcp_server(closing(s)).asgi_app(auth=g) for s, g in zip(stores, guards, strict=True))
    try:
        with serve_in_thread(one_app) as one, serve_in_thread(two_app) as two:
            public = f"http://127.0.0.1:{one}/mcp"  # the address clients know; the balancer may send them to either node
            for guard in guards:
                guard.resource = public
            key = Key()
            token = world.bind(key)
            proof = key.proof("POST", public, token)
            assert (await post(public, f"DPoP {token}", [proof])).status_code == 200
            replayed = await post(f"http://127.0.0.1:{two}/mcp", f"DPoP {token}", [proof])
            assert replayed.status_code == 401
            assert 'error_description="the proof was used before (jti replayed)"' in dpop_error(replayed)
            fresh = key.proof("POST", public, token)
            assert (await post(f"http://127.0.0.1:{two}/mcp", f"DPoP {token}", [fresh])).status_code == 200
            redis.kill()
            down = await post(public, f"DPoP {token}", [key.proof("POST", public, token)])
            assert down.status_code == 503  # neither taken nor called a replay: try again later
    finally:
        if redis.proc is not None and redis.proc.poll() is None:
            redis.kill()
