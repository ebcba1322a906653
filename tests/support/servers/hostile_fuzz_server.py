"""The server the fuzz test (tests/hostile/test_fuzz.py) and the soak (benchmarks/soak/soak.py) attack.

    python tests/support/servers/hostile_fuzz_server.py            # stdio
    python tests/support/servers/hostile_fuzz_server.py PORT       # Streamable HTTP on 127.0.0.1:PORT/mcp

Every handler answers at once (nothing sleeps unless asked to, and then briefly), so a
fuzz case is over as soon as its response is written. It has the features a fuzzed
request can reach: tools (one with an ``x-mcp-header`` parameter), a resource and a
resource template, and a prompt.
"""

from __future__ import annotations

import asyncio
import sys

from mcpkit import Context, Server

server = Server("hostile-fuzz", "1.0.0")


@server.tool
def echo(text: str) -> str:
    """Return the text unchanged.

    Args:
        text: What to echo.
    """
    return text


@server.tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


@server.tool
async def pause(ms: int, ctx: Context) -> str:
    """Sleep ``ms`` milliseconds (at most 200), reporting progress once.

    Args:
        ms: How long to sleep.
    """
    await ctx.report_progress(1, 1, "pausing")
    await asyncio.sleep(min(max(ms, 0), 200) / 1000)
    return "paused"


server.add_tool(
    "region",
    "Echo the region (mirrored in the Mcp-Param-Region header) and the query.",
    {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}, "query": {"type": "string"}},
        "required": ["region", "query"],
    },
    lambda args: f"{args['region']}|{args['query']}",
)


@server.resource("data://hello")
def hello() -> str:
    """A fixed text."""
    return "hello world"


@server.resource("item://{name}")
def item(name: str) -> str:
    """An item by name."""
    return f"item {name}"


@server.prompt
def greet(name: str) -> str:
    """Greet someone."""
    return f"Hello, {name}!"


if __name__ == "__main__":
    if len(sys.argv) > 1:
        server.run(transport="http", host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
    else:
        server.run()
