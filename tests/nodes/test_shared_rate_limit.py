"""RateLimit across nodes (docs/howto/middleware.md): two servers, each with a RedisStore
of its own on one real redis-server, share their token buckets — a client's burst spent on
one node is spent on the other — through RedisBuckets' one Lua script; on Redis's clock
or on one the test gives, and a store fault answered as one."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mcpkit import Client, ClientOptions, McpError, RedisStore, Server, StoreUnavailable
from mcpkit.middleware import RATE_LIMITED, RateLimit
from support.eras import ERAS
from support.store_attacks import redis_server

pytestmark = pytest.mark.timeout(60)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def node(store: RedisStore, clock: Clock | None) -> Server:
    server = Server("node")
    server.use(RateLimit(3, 0.5, key="client", store=store.buckets, clock=clock))

    @server.tool
    def echo(text: str) -> str:
        return text

    return server


@pytest.fixture
async def stores(tmp_path: Path) -> AsyncIterator[tuple[RedisStore, RedisStore]]:
    with redis_server(tmp_path) as redis:
        one, two = RedisStore(redis.url, prefix="t"), RedisStore(redis.url, prefix="t")
        try:
            yield one, two
        finally:
            await asyncio.gather(one.aclose(), two.aclose())


@pytest.mark.parametrize("era", ERAS)
async def test_the_burst_is_shared_by_the_nodes(era: str, stores: tuple[RedisStore, RedisStore]) -> None:
    clock = Clock()
    one, two = (node(store, clock) for store in stores)
    options = ClientOptions(protocol_version=era)
    async with Client(one, options) as on_one, Client(two, options) as on_two:
        for client in (on_one, on_two, on_one):
            await client.call_tool("echo", {"text": "x"})
        for client in (on_one, on_two):
            with pytest.raises(McpError) as caught:
                await client.call_tool("echo", {"text": "over"})
            assert caught.value.code == RATE_LIMITED
            assert caught.value.data == {"retryAfter": 2}  # a token every 2 s
        clock.now += 2.0
        await on_two.call_tool("echo", {"text": "one back"})
        with pytest.raises(McpError):
            await on_one.call_tool("echo", {"text": "spent on the other node"})


async def test_on_redis_clock(stores: tuple[RedisStore, RedisStore]) -> None:
    buckets = stores[0].buckets
    taken = [await buckets.take("k", capacity=2, refill=0.001, cost=1) for _ in range(3)]
    assert taken[:2] == [0.0, 0.0]
    assert taken[2] > 500  # a token every 1000 s: far more than this test could take
    assert await stores[1].buckets.take("k", capacity=2, refill=0.001, cost=1) > 500
    ttl = await stores[0].redis.pttl("t:bucket:k")
    assert 0 < ttl <= 2_001_000  # gone once it would be full again


async def test_concurrent_takes_never_spend_more_than_the_capacity(stores: tuple[RedisStore, RedisStore]) -> None:
    takes = [store.buckets.take("burst", capacity=10, refill=0.001, cost=1, now=5.0) for store in stores for _ in range(25)]
    waits = await asyncio.gather(*takes)
    assert sum(1 for wait in waits if wait == 0.0) == 10


async def test_a_key_of_another_type_is_a_store_fault(stores: tuple[RedisStore, RedisStore]) -> None:
    one, _ = stores
    await one.redis.rpush("t:bucket:rate:client:+mcpkit", b"not a bucket")
    async with Client(node(one, None), ClientOptions()) as client:
        with pytest.raises(McpError) as caught:
            await client.call_tool("echo", {"text": "x"})
    assert caught.value.code == -32603
    with pytest.raises(StoreUnavailable):
        await one.buckets.take("rate:client:+mcpkit", capacity=1, refill=1, cost=1)
