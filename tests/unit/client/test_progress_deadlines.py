"""Deadlines that understand progress (docs/timeouts-and-retries.md): with
``reset_timeout_on_progress`` each progress notification restarts a call's timeout, and
``max_total_timeout`` still ends it. Over a real stdio server process in both eras and
over real loopback HTTP; the settings' rules in memory."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcpkit import (
    REQUEST_TIMEOUT,
    Client,
    ClientOptions,
    Context,
    HttpTransport,
    McpError,
    RequestOptions,
    RequestTimeout,
    Server,
    StdioTransport,
)
from support.clock import virtual_time
from support.eras import ERAS, LEGACY, MODERN
from support.processes import load_server, server_command
from support.serving import serve_in_thread

pytestmark = pytest.mark.timeout(60)

TICKS = {"seconds": 3.0, "interval": 0.2}  # progress every 0.2 s for 3 s


async def three_ways(client: Client) -> tuple[Any, float, Any, float, Any, float]:
    """The same 3-second tool three times at once, with a 1 s timeout: resetting on
    progress, not resetting, and resetting but bounded by a 2 s total."""
    await client.call_tool("tick", {"seconds": 0, "interval": 0}, timeout=30)  # warm-up: the first call's one-off costs
    loop = asyncio.get_running_loop()
    started = loop.time()
    ends: dict[str, float] = {}

    async def timed(name: str, **kwargs: Any) -> Any:
        try:
            return await client.call_tool("tick", TICKS, timeout=1.0, **kwargs)
        except McpError as exc:
            return exc
        finally:
            ends[name] = loop.time() - started

    reset, plain, bounded = await asyncio.gather(
        timed("reset", reset_timeout_on_progress=True),
        timed("plain"),
        timed("bounded", reset_timeout_on_progress=True, max_total_timeout=2.0),
    )
    return reset, ends["reset"], plain, ends["plain"], bounded, ends["bounded"]


def check_three_ways(outcome: tuple[Any, float, Any, float, Any, float]) -> None:
    reset, reset_took, plain, plain_took, bounded, bounded_took = outcome
    assert not isinstance(reset, McpError), reset
    assert reset.content[0].text.startswith("ticked ")
    assert 2.9 <= reset_took < 5.0
    assert isinstance(plain, RequestTimeout)
    assert plain.code == REQUEST_TIMEOUT == -32001
    assert 0.95 <= plain_took < 1.8
    assert isinstance(bounded, RequestTimeout)
    assert 1.95 <= bounded_took < 2.8


@pytest.mark.e2e
@pytest.mark.parametrize("era", ERAS)
async def test_progress_keeps_a_long_call_alive_over_stdio(era: str, tmp_path: Any) -> None:
    transport = StdioTransport(server_command("resilient", str(tmp_path / "log")), stderr="devnull")
    async with Client(transport, ClientOptions(protocol_version=era)) as client:
        check_three_ways(await three_ways(client))


@pytest.mark.e2e
@pytest.mark.parametrize("era", ERAS)
async def test_progress_keeps_a_long_call_alive_over_http(era: str) -> None:
    server = load_server("resilient").server
    with serve_in_thread(server.asgi_app(path="/mcp")) as port:
        async with Client(HttpTransport(f"http://127.0.0.1:{port}/mcp"), ClientOptions(protocol_version=era)) as client:
            check_three_ways(await three_ways(client))


def ticking_server() -> Server:
    server = Server("ticks")

    @server.tool
    async def tick(steps: int, interval: float, ctx: Context) -> str:
        for step in range(1, steps + 1):
            await asyncio.sleep(interval)
            await ctx.report_progress(step, steps)
        return f"{steps} ticks"

    return server


async def test_client_wide_setting_and_its_per_call_and_per_request_overrides() -> None:
    options = ClientOptions(request_timeout=0.3, reset_timeout_on_progress=True, max_total_timeout=5.0)
    async with virtual_time(), Client(ticking_server(), options) as client:
        assert (await client.call_tool("tick", {"steps": 6, "interval": 0.1})).content[0].text == "6 ticks"
        with pytest.raises(RequestTimeout):
            await client.call_tool("tick", {"steps": 6, "interval": 0.1}, reset_timeout_on_progress=False)
        with pytest.raises(RequestTimeout):
            await client.call_tool("tick", {"steps": 6, "interval": 0.1}, max_total_timeout=0.4)
        raw = await client.send_request("tools/call", {"name": "tick", "arguments": {"steps": 6, "interval": 0.1}})
        assert raw["content"][0]["text"] == "6 ticks"
        with pytest.raises(RequestTimeout):
            await client.send_request(
                "tools/call",
                {"name": "tick", "arguments": {"steps": 6, "interval": 0.1}},
                RequestOptions(reset_timeout_on_progress=False),
            )


async def test_the_default_bound_is_ten_times_the_timeout() -> None:
    async with virtual_time() as loop, Client(ticking_server(), ClientOptions(reset_timeout_on_progress=True)) as client:
        started = loop.time()
        with pytest.raises(RequestTimeout):  # progress every 0.02 s for ever, but at most 10 x 0.3 s
            await client.call_tool("tick", {"steps": 100_000, "interval": 0.02}, timeout=0.3)
        assert loop.time() - started == pytest.approx(3.0, abs=0.05)  # resets happened; the bound ended it


async def test_progress_callbacks_still_see_every_notification() -> None:
    seen: list[float] = []
    async with virtual_time(), Client(ticking_server(), ClientOptions(protocol_version=LEGACY)) as client:
        arguments = {"steps": 4, "interval": 0.05}
        result = await client.call_tool(
            "tick", arguments, timeout=0.2, reset_timeout_on_progress=True, on_progress=lambda p, t, m: seen.append(p)
        )
    assert result.content[0].text == "4 ticks"
    assert seen == [1, 2, 3, 4]


@pytest.mark.parametrize("bad", [0, -1, float("inf"), float("nan")])
async def test_a_bad_total_is_refused_where_it_is_given(bad: float) -> None:
    with pytest.raises(ValueError, match="timeout must be positive and finite"):
        ClientOptions(max_total_timeout=bad)
    with pytest.raises(ValueError, match="timeout must be positive and finite"):
        RequestOptions(max_total_timeout=bad)
    async with Client(ticking_server(), ClientOptions(protocol_version=MODERN)) as client:
        with pytest.raises(ValueError, match="timeout must be positive and finite"):
            await client.call_tool("tick", {"steps": 1, "interval": 0}, reset_timeout_on_progress=True, max_total_timeout=bad)
