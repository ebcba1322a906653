"""Retries and reconnection over real loopback HTTP, with faults injected by the tests'
own means (tests/support/faults.py): an ASGI wrapper that answers 503 + ``Retry-After``, and a
TCP proxy that drops, delays or cuts connections. The server's own counters prove what
reached it."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from mcpkit import (
    Client,
    ClientEvent,
    ClientOptions,
    HttpTransport,
    McpError,
    Reconnected,
    RetriesExhausted,
    RetryPolicy,
    Server,
    ToolAnnotations,
)
from support.eras import ERAS, LEGACY, MODERN
from support.faults import FaultProxy, Refusals
from support.processes import load_server
from support.serving import serve_in_thread

pytestmark = pytest.mark.timeout(60)


class Shop:
    """A server that counts what reaches its handlers."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.server = server = Server("shop")
        self.looking_up = threading.Event()  # set (in the server's thread) once slow_lookup runs

        @server.resource("data://price")
        def price() -> str:
            self.calls["price"] += 1
            return "42"

        @server.tool
        def charge(amount: int) -> str:
            self.calls["charge"] += 1
            return f"charged {amount}"

        @server.tool(annotations=ToolAnnotations(read_only_hint=True))
        async def slow_lookup() -> str:
            self.calls["slow_lookup"] += 1
            self.looking_up.set()
            await asyncio.Event().wait()
            return "never"


@pytest.fixture
def shop() -> Iterator[tuple[Shop, Refusals, int]]:
    shop = Shop()
    app = Refusals(shop.server.asgi_app(path="/mcp"))
    with serve_in_thread(app) as port:
        yield shop, app, port


class Kinds:
    def __init__(self) -> None:
        self.events: list[ClientEvent] = []

    def __call__(self, event: ClientEvent) -> None:
        self.events.append(event)

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.kind == kind]


@pytest.mark.parametrize("era", ERAS)
async def test_503_with_retry_after_is_waited_out_for_a_read_and_final_for_a_charge(
    era: str, shop: tuple[Shop, Refusals, int]
) -> None:
    counts, refusals, port = shop
    seen = Kinds()
    options = ClientOptions(protocol_version=era, retry=RetryPolicy(3, initial_delay=0.01), on_event=seen)
    async with Client(HttpTransport(f"http://127.0.0.1:{port}/mcp"), options) as client:
        refusals.refuse("resources/read", 503, times=2, retry_after="1")
        started = time.monotonic()
        result = await client.read_resource("data://price")
        took = time.monotonic() - started
        assert result.contents[0].text == "42"
        assert [e.attempt for e in seen.of("attempt")] == [1, 2, 3]
        assert [e.delay for e in seen.of("retry")] == [1.0, 1.0]  # Retry-After, not the 0.01 s back-off
        assert [e.error.data["status"] for e in seen.of("retry")] == [503, 503]
        assert 2.0 <= took < 7.0

        refusals.refuse("tools/call", 503, times=1, retry_after="1")
        started = time.monotonic()
        with pytest.raises(McpError) as caught:
            await client.call_tool("charge", {"amount": 5})
        assert len(seen.of("retry")) == 2  # the read's two: a charge is never retried
    assert type(caught.value) is McpError
    assert caught.value.data["status"] == 503
    assert caught.value.data["retryAfter"] == "1"
    assert "HTTP 503" in caught.value.message
    assert refusals.refused == {"resources/read": 2, "tools/call": 1}
    assert counts.calls == {"price": 1}  # the refused requests never reached the server


@pytest.mark.parametrize("era", ERAS)
async def test_a_lost_request_times_out_on_its_own_deadline_and_is_sent_again(era: str, shop: tuple[Shop, Refusals, int]) -> None:
    counts, _, port = shop
    seen = Kinds()
    policy = RetryPolicy(3, initial_delay=0.0, jitter=0.0)
    async with FaultProxy(port) as proxy:
        url = f"http://127.0.0.1:{proxy.port}/mcp"
        async with Client(HttpTransport(url), ClientOptions(protocol_version=era, retry=policy, on_event=seen)) as client:
            proxy.drop(b"resources/read", times=2)
            started = time.monotonic()
            result = await client.read_resource("data://price", timeout=0.5)
            took = time.monotonic() - started
    assert result.contents[0].text == "42"
    assert [(e.attempt, e.timeout) for e in seen.of("timeout")] == [(1, 0.5), (2, 0.5)]
    assert 1.0 <= took < 6.0
    assert proxy.dropped[b"resources/read"] == 2
    assert counts.calls == {"price": 1}


async def test_a_slow_network_is_bounded_by_total_timeout(shop: tuple[Shop, Refusals, int]) -> None:
    _, _, port = shop
    policy = RetryPolicy(20, initial_delay=0.05, jitter=0.0, total_timeout=1.5)
    async with FaultProxy(port) as proxy:
        url = f"http://127.0.0.1:{proxy.port}/mcp"
        async with Client(HttpTransport(url), ClientOptions(protocol_version=MODERN, retry=policy)) as client:
            proxy.delay = 1.0  # every answer now takes a second
            started = time.monotonic()
            with pytest.raises(RetriesExhausted) as caught:
                await client.read_resource("data://price", timeout=0.4)
            took = time.monotonic() - started
    assert 1.3 <= took < 6.0  # bounded: twenty attempts would take 8 s and more
    assert caught.value.reason == "total_timeout=1.5 s would pass"
    assert 2 <= len(caught.value.attempts) <= 4
    assert all(a.code == -32001 for a in caught.value.attempts)


async def test_a_legacy_subscription_follows_its_session_when_the_server_forgets_it() -> None:
    import httpx

    module = load_server("resilient")
    renewed = asyncio.Event()
    seen = Kinds()

    def on_event(event: ClientEvent) -> None:
        seen(event)
        if isinstance(event, Reconnected):
            renewed.set()

    with serve_in_thread(module.server.asgi_app(path="/mcp")) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        transport = HttpTransport(url)
        client = Client(transport, ClientOptions(protocol_version=LEGACY, on_event=on_event, request_timeout=10))
        async with client, client.listen(resource_uris=["data://x"]) as changes:
            await client.call_tool("touch", {"name": "x"})
            async with asyncio.timeout(5):
                assert (await anext(changes)).uri == "data://x"
            old = transport.session_id
            assert old is not None
            async with httpx.AsyncClient() as http:  # the server forgets the session (as after a restart)
                gone = await http.delete(url, headers={"Mcp-Session-Id": old, "MCP-Protocol-Version": LEGACY})
            assert gone.status_code in (200, 202, 204)
            assert (await client.call_tool("pid")).structured_content is not None  # 404, a new session, the call again
            async with asyncio.timeout(10):
                await renewed.wait()
            assert transport.session_id not in (None, old)
            async with asyncio.timeout(5):
                caught_up = await anext(changes)  # what happened in between is unknown: one change per resource
            assert caught_up.uri == "data://x"
            for _ in range(20):  # the new session has the subscription: its notices arrive
                await client.call_tool("touch", {"name": "x"})
                try:
                    async with asyncio.timeout(0.5):
                        change = await anext(changes)
                    break
                except TimeoutError:
                    continue  # the new session's GET stream may not be open yet
            else:
                pytest.fail("no change notice in the new session")
            assert change.uri == "data://x"
    assert [e.reason for e in seen.of("reconnect")] == ["session renewed"]
