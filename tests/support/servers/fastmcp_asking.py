"""A FastMCP server (PyPI ``fastmcp``) that asks its client, over stdio, for
tests/interop/test_proxy_fastmcp.py.

FastMCP asks only over a legacy-era connection: on a 2026-07-28 one its ``ctx.elicit``
fails the tool ("server-initiated requests unavailable"). Tools: ``greet(ctx)`` elicits a
name (tagged ``people``) and greets it, or says what the user did instead; ``wipe()``
(tagged ``admin``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")  # no network from the tests (read on import)
os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")

from fastmcp import Context, FastMCP

mcp = FastMCP("fastmcp-asking")


@dataclass
class Name:
    name: str


@mcp.tool(tags={"people"})
async def greet(ctx: Context) -> str:
    """Greets whoever answers."""
    answer = await ctx.elicit("What is your name?", response_type=Name)
    if answer.action == "accept":
        return f"Hello, {answer.data.name}!"
    return f"no name: {answer.action}"


@mcp.tool(tags={"admin"})
def wipe() -> str:
    """Wipes everything."""
    return "wiped"


if __name__ == "__main__":
    mcp.run()
