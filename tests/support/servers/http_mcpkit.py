"""An mcpkit server over Streamable HTTP for the HTTP client tests.

``python tests/support/servers/http_mcpkit.py PORT [--json | --sse]`` serves 127.0.0.1:PORT/mcp
(JSON responses, SSE responses, or the default: SSE only when notifications come first).

Tools: ``echo(text)``; ``count(steps)`` reports progress 1..steps; ``block(seconds,
tag)`` sleeps and records that it started and whether it was cancelled; ``state(tag)``;
``settled(tag, timeout=10)`` waits until that call was cancelled or finished and returns
its state (as it is, if ``timeout`` seconds pass first);
``region(region, query)`` with ``region`` mirrored in ``Mcp-Param-Region``. Resource
``data://hello``.
"""

from __future__ import annotations

import asyncio
import sys
from collections import defaultdict
from typing import Any

from mcpkit import Context, Server

server = Server("mcpkit-http-test", "1.0.0")
_state: dict[str, str] = {}
_settled: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)  # set once a block call ends


@server.tool
def echo(text: str) -> str:
    """Return the text unchanged.

    Args:
        text: What to echo.
    """
    return text


@server.tool
async def count(steps: int, ctx: Context) -> str:
    """Report progress 1..steps.

    Args:
        steps: How many steps.
    """
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i}")
    return "counted"


@server.tool
async def block(seconds: float, tag: str) -> str:
    """Sleep, recording start and cancellation under ``tag``.

    Args:
        seconds: How long.
        tag: Where to record.
    """
    _state[tag] = "started"
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        _state[tag] = "cancelled"
        _settled[tag].set()
        raise
    _state[tag] = "finished"
    _settled[tag].set()
    return "finished"


@server.tool
def state(tag: str) -> str:
    """What became of the ``block`` call tagged ``tag``.

    Args:
        tag: The tag.
    """
    return _state.get(tag, "unknown")


@server.tool
async def settled(tag: str, timeout: float = 10.0) -> str:
    """Wait until the ``block`` call tagged ``tag`` was cancelled or finished; its state.

    Args:
        tag: The tag.
        timeout: Seconds to wait at most.
    """
    try:
        await asyncio.wait_for(_settled[tag].wait(), timeout)
    except TimeoutError:
        pass
    return _state.get(tag, "unknown")


def _region(arguments: dict[str, Any]) -> str:
    return f"{arguments['region']}|{arguments['query']}"


server.add_tool(
    "region",
    "Echo the region (mirrored in a header) and the query.",
    {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}, "query": {"type": "string"}},
        "required": ["region", "query"],
    },
    _region,
)


@server.resource("data://hello")
def hello() -> str:
    """A fixed text."""
    return "hello world"


if __name__ == "__main__":
    mode = sys.argv[2] if len(sys.argv) > 2 else ""
    json_response = {"--json": True, "--sse": False}.get(mode)
    server.run("http", host="127.0.0.1", port=int(sys.argv[1]), json_response=json_response)
