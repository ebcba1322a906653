"""RateLimit through the public API: token buckets per principal, session, client or a
key function, on an injected clock; the refusal the client can act on (-32029, HTTP 429,
``retryAfter`` and ``Retry-After``), over every transport and in both eras."""

from __future__ import annotations

import asyncio
from types import ModuleType
from typing import Any

import httpx
import pytest

from mcpkit import Client, ClientOptions, Context, Implementation, McpError, Server
from mcpkit.middleware import RATE_LIMITED, InMemoryBuckets, RateLimit
from support import wire
from support.eras import ERAS, LEGACY, MODERN
from support.serving import serve_in_thread
from support.transports import TRANSPORTS

pytestmark = pytest.mark.timeout(60)


class Clock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def limited(limit: RateLimit) -> Server:
    server = Server("limited")
    server.use(limit)

    @server.tool
    def echo(text: str) -> str:
        return text

    return server


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_past_the_burst_a_request_is_refused_with_when_to_retry(
    kind: str, era: str, guarded: ModuleType, connect: Any
) -> None:
    app = guarded.build() if kind != "stdio" else None
    async with connect(kind, era, app.server if app else None) as client:
        for _ in range(3):
            result = await client.get_prompt("hello", {"name": "Ada"})
            assert result.messages
        with pytest.raises(McpError) as caught:
            await client.get_prompt("hello", {"name": "Bob"})
        assert caught.value.code == RATE_LIMITED
        assert caught.value.data == {"retryAfter": 1}
        assert "Rate limit exceeded" in caught.value.message
        # what is not limited still works: tools, reads, listing
        assert (await client.call_tool("echo", {"text": "still"})).content[0].text == "still"
        assert (await client.list_prompts()).prompts
        if app is not None:
            app.clock.advance(1.0)  # one token back
            assert (await client.get_prompt("hello", {"name": "Cy"})).messages
            with pytest.raises(McpError):
                await client.get_prompt("hello", {"name": "Di"})


@pytest.mark.parametrize("era", ERAS)
async def test_buckets_refill_at_the_rate_and_hold_at_most_the_capacity(era: str) -> None:
    clock = Clock()
    server = limited(RateLimit(2, 0.5, key="client", clock=clock))
    async with Client(server, ClientOptions(protocol_version=era)) as client:

        async def calls() -> int:
            """How many of five calls in a row get through (the others are rate limited)."""
            codes = []
            for _ in range(5):
                try:
                    await client.call_tool("echo", {"text": "x"})
                    codes.append(0)
                except McpError as err:
                    codes.append(err.code)
            assert set(codes) <= {0, RATE_LIMITED}
            return codes.count(0)

        assert await calls() == 2
        clock.now += 1.0  # half a token: still none
        with pytest.raises(McpError) as caught:
            await client.call_tool("echo", {"text": "x"})
        assert caught.value.data == {"retryAfter": 1}  # the other half, at 0.5 a second
        clock.now += 1.0
        assert await calls() == 1
        clock.now += 3600.0  # a long rest refills to the capacity, no more
        assert await calls() == 2


async def test_each_key_has_its_own_bucket() -> None:
    clock = Clock()
    limit = RateLimit(1, 1.0, key="client", clock=clock)
    server = limited(limit)

    def as_client(name: str) -> ClientOptions:
        return ClientOptions(protocol_version=MODERN, client_info=Implementation(name=name, version="1"))

    async with Client(server, as_client("alice")) as alice, Client(server, as_client("bob")) as bob:
        await alice.call_tool("echo", {"text": "a"})
        await bob.call_tool("echo", {"text": "b"})
        for client in (alice, bob):
            with pytest.raises(McpError):
                await client.call_tool("echo", {"text": "again"})


async def test_per_session_buckets_in_the_legacy_era() -> None:
    clock = Clock()
    server = limited(RateLimit(1, 1.0, key="session", clock=clock))
    options = ClientOptions(protocol_version=LEGACY)
    async with Client(server, options) as first, Client(server, options) as second:
        await first.call_tool("echo", {"text": "1"})
        await second.call_tool("echo", {"text": "2"})  # another session, another bucket
        with pytest.raises(McpError):
            await first.call_tool("echo", {"text": "1 again"})


async def test_a_key_function_chooses_the_bucket_and_none_is_not_limited() -> None:
    clock = Clock()

    def by_tenant(ctx: Context) -> str | None:
        tenant = ctx.meta.get("tenant")
        return tenant if isinstance(tenant, str) else None

    store = InMemoryBuckets()
    server = limited(RateLimit(1, 1.0, key=by_tenant, store=store, clock=clock))
    async with Client(server, ClientOptions(protocol_version=MODERN)) as client:
        for _ in range(5):  # no tenant: unlimited
            await client.call_tool("echo", {"text": "free"})
        await client.call_tool("echo", {"text": "t1"}, meta={"tenant": "t1"})
        await client.call_tool("echo", {"text": "t2"}, meta={"tenant": "t2"})
        with pytest.raises(McpError):
            await client.call_tool("echo", {"text": "t1"}, meta={"tenant": "t1"})
    assert len(store) == 2


def test_the_bucket_store_is_bounded_in_keys() -> None:
    store = InMemoryBuckets(max_keys=3, clock=lambda: 0.0)

    async def fill() -> None:
        for n in range(10):
            assert await store.take(f"k{n}", capacity=2, refill=1, cost=1) == 0.0

    asyncio.run(fill())
    assert len(store) == 3


def test_a_limit_that_could_never_be_met_is_refused() -> None:
    with pytest.raises(ValueError, match="capacity"):
        RateLimit(0, 1.0)
    with pytest.raises(ValueError, match="cost"):
        RateLimit(1, 1.0, cost=2)
    with pytest.raises(ValueError, match="key"):
        RateLimit(1, 1.0, key="ip")  # type: ignore[arg-type]


@pytest.mark.e2e
async def test_over_http_the_429_says_retry_after_as_the_error_does() -> None:
    clock = Clock()
    server = limited(RateLimit(1, 0.25, key="client", clock=clock))
    with serve_in_thread(server.asgi_app()) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        async with httpx.AsyncClient(timeout=10) as http:

            async def call() -> httpx.Response:
                body, headers = wire.modern("tools/call", {"name": "echo", "arguments": {"text": "x"}})
                return await http.post(url, json=body, headers=headers)

            assert (await call()).status_code == 200
            refused = await call()
            assert refused.status_code == 429
            assert refused.headers["retry-after"] == "4"  # a token every 4 s
            error: dict[str, Any] = refused.json()["error"]
            assert error["code"] == RATE_LIMITED
            assert error["data"] == {"retryAfter": 4}


@pytest.mark.e2e
@pytest.mark.parametrize(("asked", "header"), [(2.2, "3"), (10**9, "86400"), ("soon", "1"), (-5, "1"), (None, "1")])
async def test_retry_after_follows_the_errors_retry_after_within_bounds(asked: Any, header: str) -> None:
    server = Server("refusing")

    @server.use
    async def refuse(ctx: Context, call_next: Any) -> Any:
        if ctx.method == "tools/call":
            raise McpError(-32029, "later", {"retryAfter": asked} if asked is not None else None, status=429)
        return await call_next()

    with serve_in_thread(server.asgi_app()) as port:
        body, headers = wire.modern("tools/call", {"name": "any", "arguments": {}})
        async with httpx.AsyncClient(timeout=10) as http:
            refused = await http.post(f"http://127.0.0.1:{port}/mcp", json=body, headers=headers)
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == header
