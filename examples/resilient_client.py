"""A client that keeps its application going when the server does not: retries for
what is safe to repeat, a supervised server process, and event counters that decide
when to fall back to cached content (docs/timeouts-and-retries.md).

    python examples/resilient_client.py           # spawn this file as the server and walk through
    python examples/resilient_client.py server    # serve the market server over stdio

The walkthrough asks for a quote, places an order, and crashes the server while the
order is in flight: the client restarts the server, the order fails with
``ConnectionClosed`` (it is not idempotent, so it is not sent again) and quotes keep
working. When the server crashes again, too soon, the client gives up on it, and the
application turns to its cache instead of failing. It prints what it counted and exits 0.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections import Counter

from mcpkit import (
    Client,
    ClientEvent,
    ClientOptions,
    ConnectionClosed,
    Context,
    McpError,
    RestartPolicy,
    RetryPolicy,
    Server,
    StdioTransport,
    ToolAnnotations,
)

# --- the server ---------------------------------------------------------------------------

server = Server("market", "1.0.0")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def quote(symbol: str) -> str:
    """The latest price of ``symbol`` (read-only: safe to retry)."""
    return f"{symbol} 42.00"


@server.tool
async def place_order(symbol: str, ctx: Context) -> str:
    """Buy ``symbol`` (not idempotent: never sent twice). Takes its time."""
    await ctx.report_progress(0, None, "order accepted")
    await asyncio.sleep(3600)
    return f"bought {symbol}"


@server.tool
def crash() -> str:
    """Stand-in for a bug that kills the server process."""
    os._exit(1)


# --- the client ---------------------------------------------------------------------------


class Health:
    """Counts the client's events (``ClientOptions(on_event=...)``) and decides when the
    quote feed is down for good: then the application shows cached quotes instead."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.feed_down = False

    def __call__(self, event: ClientEvent) -> None:
        self.counts[event.kind] += 1
        if event.kind == "reconnect_failed" or self.counts["timeout"] >= 5:
            self.feed_down = True  # a feature toggle: stop asking, serve the cache


CACHE = {"ACME": "ACME 41.50"}


async def show_quote(client: Client, health: Health, label: str) -> None:
    if not health.feed_down:
        try:
            result = await client.call_tool("quote", {"symbol": "ACME"})
            print(f"{label}: {result.content[0].text}")
            return
        except McpError:  # RetriesExhausted, ConnectionClosed, ...: degrade, do not fail
            pass
    print(f"fallback: cached quote {CACHE['ACME']}")


async def main() -> None:
    health = Health()
    transport = StdioTransport(
        [sys.executable, __file__, "server"],
        stderr="devnull",
        restart=RestartPolicy(max_restarts=1, window=60.0, initial_delay=0.1),  # once a minute at most
    )
    options = ClientOptions(retry=RetryPolicy(3, initial_delay=0.1), on_event=health, request_timeout=5)
    async with Client(transport, options) as client:
        await client.list_tools()  # the client learns which tools are safe to retry
        await show_quote(client, health, "quote")

        accepted = asyncio.Event()
        order = asyncio.create_task(client.call_tool("place_order", {"symbol": "ACME"}, on_progress=lambda *_: accepted.set()))
        await accepted.wait()
        try:
            await client.call_tool("crash")
        except ConnectionClosed:
            pass
        try:
            await order
        except ConnectionClosed:
            print("order: ConnectionClosed, not sent again")  # its outcome is unknown: check before re-ordering

        await show_quote(client, health, "quote after the restart")  # waits for the restart, then goes on
        if health.counts["restart"] == 1 and health.counts["reconnect"] == 1:
            print("the feed crashed: the client restarted it")

        try:
            await client.call_tool("crash")  # again, within the minute: the client gives up on the server
        except ConnectionClosed:
            pass
        await show_quote(client, health, "quote")
    kinds = ("attempt", "disconnect", "restart", "reconnect", "reconnect_failed")
    print("events:", " ".join(f"{kind}={health.counts[kind]}" for kind in kinds))


if __name__ == "__main__":
    if sys.argv[1:] == ["server"]:
        server.run()
    else:
        asyncio.run(main())
