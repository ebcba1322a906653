"""A server built with FastMCP (PyPI ``fastmcp``) for mcpkit's client
(tests/interop/test_fastmcp.py).

``python tests/support/servers/fastmcp_server.py`` serves stdio; ``... --http PORT`` serves
Streamable HTTP on 127.0.0.1:PORT/mcp. Lists come in pages of two.

Tools: ``echo(text)``; ``add(a, b)`` (structured: ``{"result": a + b}``); ``chatty(steps,
ctx)`` logs one info message, then reports progress ``1..steps``; ``refuse(reason)``
raises FastMCP's ``ToolError`` (an ``isError`` result with that text). Resources
``data://one``, ``data://two``, ``data://three``; template ``note://{id}``; prompt
``greet(name, style="plain")``.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")  # no network from the tests (read on import)
os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")

from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError

mcp = FastMCP("fastmcp-peer", list_page_size=2)


@mcp.tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool
async def chatty(steps: int, ctx: Context) -> str:
    """Log, then report progress ``steps`` times."""
    await ctx.info(f"chatty: {steps} steps")
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i}")
    return f"{steps} steps"


@mcp.tool
def refuse(reason: str) -> str:
    """Fail with a tool error."""
    raise ToolError(reason)


@mcp.resource("data://one")
def one() -> str:
    return "one"


@mcp.resource("data://two")
def two() -> str:
    return "two"


@mcp.resource("data://three")
def three() -> str:
    return "three"


@mcp.resource("note://{id}")
def note(id: str) -> str:
    """A note by id."""
    return f"note {id}"


@mcp.prompt
def greet(name: str, style: str = "plain") -> str:
    """Greet someone."""
    return f"Greet {name} in a {style} style."


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        mcp.run("http", host="127.0.0.1", port=int(sys.argv[2]), path="/mcp", log_level="warning")
    else:
        mcp.run()
