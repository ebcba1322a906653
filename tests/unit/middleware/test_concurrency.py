"""ConcurrencyLimit through the public API: at most so many calls of a tool in flight;
past it a clear refusal, or a bounded wait in turn; slots freed however a call ends.
Decided by events (a call known to be running, a queue known to be waiting), not by time."""

from __future__ import annotations

import asyncio
from types import ModuleType
from typing import Any

import pytest

from mcpkit import Client, ClientOptions, Context, McpError, Server
from mcpkit.middleware import ConcurrencyLimit
from support.eras import ERAS, MODERN
from support.transports import TRANSPORTS
from support.waiting import until

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_past_the_limit_a_call_is_refused_and_other_tools_run(
    kind: str, era: str, guarded: ModuleType, connect: Any
) -> None:
    app = guarded.build() if kind != "stdio" else None
    async with connect(kind, era, app.server if app else None) as client:
        first = asyncio.create_task(client.call_tool("slow", {"tag": "a"}))
        assert (await client.call_tool("started", {"tag": "a"})).content[0].text == "started"
        with pytest.raises(McpError) as caught:
            await client.call_tool("slow", {"tag": "b"})
        assert caught.value.code == -32603
        assert caught.value.message == "Too many calls in progress: at most 1 at once for slow"
        assert caught.value.data == {"retryAfter": 1, "limit": 1}
        assert (await client.call_tool("echo", {"text": "other tools run"})).content[0].text == "other tools run"
        await client.call_tool("release", {"tag": "a"})
        assert (await first).content[0].text == "a done"
        await client.call_tool("release", {"tag": "c"})  # c's gate open before it runs
        assert (await client.call_tool("slow", {"tag": "c"})).content[0].text == "c done"


def gated() -> tuple[Server, dict[str, asyncio.Event], ConcurrencyLimit]:
    gates: dict[str, asyncio.Event] = {}
    limit = ConcurrencyLimit(1, wait=30)
    server = Server("gated")
    server.use(limit)

    @server.tool
    async def slow(tag: str) -> str:
        await gates.setdefault(tag, asyncio.Event()).wait()
        return tag

    return server, gates, limit


async def test_a_call_past_the_limit_waits_its_turn() -> None:
    server, gates, limit = gated()
    async with Client(server, ClientOptions(protocol_version=MODERN)) as client:
        first = asyncio.create_task(client.call_tool("slow", {"tag": "a"}))
        await until(lambda: limit.in_flight("slow") == 1)
        second = asyncio.create_task(client.call_tool("slow", {"tag": "b"}))
        await until(lambda: limit.in_flight("slow") == 2)
        gates.setdefault("b", asyncio.Event()).set()  # b could finish at once, but waits for a's slot
        assert not second.done()
        gates["a"].set()
        assert (await first).content[0].text == "a"
        assert (await second).content[0].text == "b"
    assert limit.in_flight("slow") == 0


async def test_a_waiting_call_cancelled_leaves_the_queue() -> None:
    server, gates, limit = gated()
    async with Client(server, ClientOptions(protocol_version=MODERN)) as client:
        first = asyncio.create_task(client.call_tool("slow", {"tag": "a"}))
        await until(lambda: limit.in_flight("slow") == 1)
        waiting = asyncio.create_task(client.call_tool("slow", {"tag": "b"}))
        await until(lambda: limit.in_flight("slow") == 2)
        waiting.cancel()
        await until(lambda: limit.in_flight("slow") == 1)
        gates["a"].set()
        await first
    assert limit.in_flight("slow") == 0


async def test_the_wait_is_bounded() -> None:
    limit = ConcurrencyLimit(1, wait=0.05)
    never = asyncio.Event()
    server = Server("stuck")
    server.use(limit)

    @server.tool
    async def stuck() -> str:
        await never.wait()
        return "never"

    async with Client(server, ClientOptions(protocol_version=MODERN)) as client:
        blocker = asyncio.create_task(client.call_tool("stuck"))
        await until(lambda: limit.in_flight("stuck") == 1)
        with pytest.raises(McpError, match="Too many calls in progress"):
            await client.call_tool("stuck")  # the slot is never freed: refused once the wait is over
        blocker.cancel()
        await until(lambda: limit.in_flight("stuck") == 0)


async def test_per_method_and_per_key_limits() -> None:
    entered = asyncio.Event()
    gate = asyncio.Event()
    server = Server("per-method")

    def tenant(ctx: Context) -> str | None:
        value = ctx.meta.get("tenant")
        return value if isinstance(value, str) else None

    by_tenant = ConcurrencyLimit(1, per=tenant)
    server.use(ConcurrencyLimit(5, per="method", limits={"prompts/get": 1}))
    server.use(by_tenant)

    @server.prompt
    async def hold() -> str:
        entered.set()
        await gate.wait()
        return "held"

    @server.tool
    async def quick() -> str:
        return "quick"

    async with Client(server, ClientOptions(protocol_version=MODERN)) as client:
        held = asyncio.create_task(client.get_prompt("hold"))
        await entered.wait()
        with pytest.raises(McpError, match="at most 1 at once for prompts/get"):
            await client.get_prompt("hold")
        assert (await client.call_tool("quick", meta={"tenant": "t1"})).content[0].text == "quick"
        gate.set()
        await held
    assert by_tenant.in_flight("t1") == 0


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ConcurrencyLimit(0)
    with pytest.raises(ValueError, match="wait"):
        ConcurrencyLimit(1, wait=-1)
