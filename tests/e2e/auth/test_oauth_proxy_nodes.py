"""The OAuth proxy's store (docs/auth.md, "Several nodes"): the :class:`ProxyStore`
contract kept by :class:`InMemoryProxyStore` and by :class:`RedisProxyStore` on a real
redis-server, and two nodes of one MCP server sharing a Redis: a client registered on one
signs in through the other, its code works once across both, and a revocation on one is
refused by the other.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from mcpkit import InMemoryProxyStore, OAuthProxy, ProxyStore, RedisStore
from mcpkit.auth import providers
from mcpkit.auth.proxy.redis import RedisProxyStore
from support.servers.oauth_upstream import UpstreamIdP
from support.store_attacks import hung_redis, redis_server

from .test_authorization_flow import listening_socket, url_of
from .test_oauth_proxy import (
    CLIENT_REDIRECT,
    SIGNING_KEY,
    Browser,
    World,
    assert_invalid_token,
    assert_oauth_error,
    authorize_url,
    mcp_server,
    pkce,
    redirected,
)

pytestmark = pytest.mark.timeout(60)


@contextlib.asynccontextmanager
async def serving_here(*apps: tuple[socket.socket, Any]) -> AsyncIterator[None]:
    """uvicorn for each (bound socket, app) on this test's event loop, where the Redis
    connections of the stores live; bounded start-up and shutdown."""
    servers = [uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")) for _, app in apps]
    tasks = [asyncio.create_task(server.serve(sockets=[sock])) for server, (sock, _) in zip(servers, apps, strict=True)]
    try:
        async with asyncio.timeout(10):
            while not all(server.started for server in servers):
                assert not any(task.done() for task in tasks), "uvicorn exited during start-up"
                await asyncio.sleep(0.01)
        yield
    finally:
        for server in servers:
            server.should_exit = True
        async with asyncio.timeout(10):
            await asyncio.gather(*tasks)
        for sock, _ in apps:
            sock.close()


class Clock:
    """A clock the test moves: the in-memory store's TTLs without waiting."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with redis_server(Path(tmp_path_factory.mktemp("redis"))) as redis:
        yield redis.url


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest, redis_url: str) -> AsyncIterator[tuple[ProxyStore, Any]]:
    """A store with a limit of 2 codes, and what tells its time to live."""
    if request.param == "memory":
        clock = Clock()
        yield InMemoryProxyStore(limits={"code": 2}, clock=clock), clock
        return
    root = RedisStore(redis_url, prefix=f"t{request.node.name.__hash__() & 0xFFFFFF:x}")
    try:
        yield RedisProxyStore(root, limits={"code": 2}), root
    finally:
        await root.aclose()


async def test_a_record_is_kept_for_its_time(store: tuple[ProxyStore, Any]) -> None:
    s, clock = store
    assert isinstance(s, ProxyStore)
    assert await s.put("client", "c1", {"name": "app", "uris": ["x"]}, 60)
    assert await s.get("client", "c1") == {"name": "app", "uris": ["x"]}
    assert await s.get("client", "nope") is None
    if isinstance(clock, Clock):
        clock.now += 60
        assert await s.get("client", "c1") is None
    else:
        ttl = await clock.redis.pttl(f"{clock.prefix}:oauth:client:c1")
        assert 0 < ttl <= 60_000
    await s.delete("client", "c1")
    assert await s.get("client", "c1") is None


async def test_a_record_is_taken_once(store: tuple[ProxyStore, Any]) -> None:
    s, _ = store
    assert await s.put("code", "k", {"grant": "g"}, 60)
    both = await asyncio.gather(s.take("code", "k"), s.take("code", "k"))
    assert sorted(both, key=lambda x: x is None) == [{"grant": "g"}, None]
    assert await s.get("code", "k") is None


async def test_a_full_kind_refuses_rather_than_forgets(store: tuple[ProxyStore, Any]) -> None:
    s, _clock = store
    assert await s.put("code", "a", {}, 60)
    assert await s.put("code", "b", {}, 60)
    assert not await s.put("code", "c", {}, 60)  # full of live codes
    assert await s.get("code", "a") == {}  # none forgotten
    assert await s.put("code", "a", {"again": True}, 60)  # replacing one is no new record
    await s.take("code", "b")
    assert await s.put("code", "c", {}, 60)  # room again
    assert await s.put("login", "other kind", {}, 60)  # each kind its own bound


async def test_a_record_may_be_named_like_the_index(store: tuple[ProxyStore, Any]) -> None:
    s, _ = store
    assert await s.put("code", "index", {"n": 1}, 60)  # the name of the kind's count, once
    assert await s.put("code", "a", {"n": 2}, 60)
    assert not await s.put("code", "b", {}, 60)  # still counted: full
    assert await s.get("code", "index") == {"n": 1}
    assert await s.take("code", "index") == {"n": 1}
    assert await s.put("code", "b", {}, 60)


async def test_the_count_of_a_kind_outlives_its_longest_record(redis_url: str) -> None:
    root = RedisStore(redis_url, prefix="ttls")
    try:
        s = RedisProxyStore(root, limits={"revoked": 2})
        assert await s.put("revoked", "grant:g", {}, 3600)  # a grant's revocation: long
        assert await s.put("revoked", "token:t", {}, 60)  # a token's: short, and written last
        index = [k async for k in root.redis.scan_iter("ttls:oauth*index*")]
        assert len(index) == 1
        assert await root.redis.pttl(index[0]) > 3_600_000  # kept for the long one, not the last one
        assert not await s.put("revoked", "token:u", {}, 60)  # both still counted
    finally:
        await root.aclose()


async def test_names_the_proxy_never_makes_do_not_reach_the_store(redis_url: str) -> None:
    mcp_sock = listening_socket()
    resource = url_of(mcp_sock, "/mcp")
    root = RedisStore(redis_url, prefix="names")
    proxy = OAuthProxy(providers.github(), client_id="c", client_secret="s", resource=resource,
                       store=RedisProxyStore(root), signing_key=SIGNING_KEY)  # fmt: skip
    app = mcp_server().asgi_app(auth=proxy.resource_server(required_scopes=["mcp"]))
    try:
        async with serving_here((mcp_sock, app)), httpx.AsyncClient() as http:
            origin = url_of(mcp_sock)
            assert (await http.post(f"{origin}/register", json={"redirect_uris": [CLIENT_REDIRECT]})).status_code == 201
            for name in ("index", "a:b", "x" * 129, "caf\u00e9"):
                resp = await http.get(f"{origin}/authorize", params={"client_id": name, "redirect_uri": CLIENT_REDIRECT})
                assert_oauth_error(resp, "invalid_request")  # unknown client, not 503
                resp = await http.post(f"{origin}/token", data={"grant_type": "refresh_token", "client_id": name,
                                                                "refresh_token": "r"})  # fmt: skip
                assert_oauth_error(resp, "invalid_client", 401)
                assert (await http.post(f"{origin}/consent", data={"login": name, "decision": "allow"})).status_code == 400
                assert (await http.get(f"{origin}/callback", params={"state": name, "code": "c"})).status_code == 400
    finally:
        await root.aclose()


# --- two nodes ---------------------------------------------------------------------------------------------


async def test_two_nodes_share_logins_codes_and_revocations(redis_url: str) -> None:
    up_sock, a_sock, b_sock = listening_socket(), listening_socket(), listening_socket()
    base, resource = url_of(up_sock), url_of(a_sock, "/mcp")  # one resource; the balancer sends to a node
    idp = UpstreamIdP(base, "google")
    roots = [RedisStore(redis_url, prefix="nodes"), RedisStore(redis_url, prefix="nodes")]
    proxies = [
        OAuthProxy(
            providers.google(issuer=base),
            client_id="mcp-proxy",
            client_secret="s",
            resource=resource,
            store=RedisProxyStore(root),
            signing_key=SIGNING_KEY,
            secret=b"shared consent secret",
        )
        for root in roots
    ]
    idp.add_client("mcp-proxy", "s", proxies[0].callback_url)
    apps = [mcp_server().asgi_app(auth=proxy.resource_server(required_scopes=["mcp"])) for proxy in proxies]
    node_a, node_b = url_of(a_sock), url_of(b_sock)
    try:
        async with (
            serving_here((up_sock, idp.asgi()), (a_sock, apps[0]), (b_sock, apps[1])),
            httpx.AsyncClient() as http,
            Browser() as browser,
        ):
            body = {"redirect_uris": [CLIENT_REDIRECT], "token_endpoint_auth_method": "none"}
            client = (await http.post(f"{node_b}/register", json=body)).json()  # registered on B
            verifier, challenge = pkce()
            world = World("google", idp, proxies[0], resource, node_a)  # the browser goes to node A
            params = redirected(await browser.go(authorize_url(world, client, challenge), CLIENT_REDIRECT))
            form = {"grant_type": "authorization_code", "client_id": client["client_id"], "code": params["code"],
                    "code_verifier": verifier, "redirect_uri": CLIENT_REDIRECT}  # fmt: skip
            tokens = await http.post(f"{node_b}/token", data=form)  # the login of A, the code at B
            assert tokens.status_code == 200, tokens.text
            access = tokens.json()["access_token"]
            for node in (node_a, node_b):
                assert (await call(http, f"{node}/mcp", access)).status_code == 200
            assert_oauth_error(await http.post(f"{node_a}/token", data=form), "invalid_grant")  # once, across nodes
            # the replay ended the grant on both nodes
            for node in (node_a, node_b):
                assert_invalid_token(await call(http, f"{node}/mcp", access), "revoked")
    finally:
        for root in roots:
            await root.aclose()


async def call(http: httpx.AsyncClient, url: str, token: str) -> httpx.Response:
    from support.eras import MODERN

    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": MODERN, "mcp-method": "tools/call",
               "mcp-name": "whoami", "authorization": f"Bearer {token}"}  # fmt: skip
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami", "arguments": {}, "_meta": meta}}
    return await http.post(url, json=body, headers=headers)


async def test_a_store_that_does_not_answer_is_503_not_a_pass() -> None:
    """Redis hung: registration and the token endpoint answer 503 ``temporarily_unavailable``,
    and the MCP server, which cannot tell whether a token was revoked, answers 503 too."""
    mcp_sock = listening_socket()
    resource = url_of(mcp_sock, "/mcp")
    with hung_redis() as url:
        root = RedisStore(url, timeout=0.5)
        proxy = OAuthProxy(providers.github(), client_id="c", client_secret="s", resource=resource,
                           store=RedisProxyStore(root), signing_key=SIGNING_KEY)  # fmt: skip
        token, _ = proxy.settings.minter.mint(
            subject="alice", client_id="c", scopes=["mcp"], grant_id="g", lifetime=300, claims={}
        )
        app = mcp_server().asgi_app(auth=proxy.resource_server(required_scopes=["mcp"]))
        try:
            async with serving_here((mcp_sock, app)), httpx.AsyncClient(timeout=10) as http:
                origin = url_of(mcp_sock)
                resp = await http.post(f"{origin}/register", json={"redirect_uris": [CLIENT_REDIRECT]})
                assert_oauth_error(resp, "temporarily_unavailable", 503)
                assert resp.headers["retry-after"] == "5"
                resp = await http.post(
                    f"{origin}/token", data={"grant_type": "refresh_token", "client_id": "x", "refresh_token": "r"}
                )
                assert_oauth_error(resp, "temporarily_unavailable", 503)
                resp = await call(http, resource, token)
                assert resp.status_code == 503
                assert "retry-after" in resp.headers
        finally:
            await root.aclose()
