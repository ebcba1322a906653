"""A server for tests/hostile/test_codec_attacks.py: tools whose arguments are decoded
and bound (an ``int`` parameter, an ``x-mcp-header`` integer), a resource, a template,
a prompt and a middleware that reads ``ctx.params``, so that hostile params reach every
decoder.

``python tests/support/servers/hostile_codec.py stdio`` serves stdin/stdout;
``python tests/support/servers/hostile_codec.py http PORT`` serves 127.0.0.1:PORT/mcp.
"""

from __future__ import annotations

import sys
from typing import Any

from mcpkit import Context, Server

server = Server("hostile-codec", "1.0.0")


@server.tool
def count(n: int) -> str:
    """Echo an integer.

    Args:
        n: Any integer.
    """
    return str(n)


def _region(arguments: dict[str, Any]) -> str:
    return f"region {arguments.get('region')}"


server.add_tool(
    "region",
    "A tool whose integer argument is mirrored into the Mcp-Param-Region header.",
    {"type": "object", "properties": {"region": {"type": "integer", "x-mcp-header": "Region"}}},
    _region,
)


@server.resource("mem://known")
def known() -> str:
    return "known"


@server.resource("file:///{name}")
def file(name: str) -> str:
    return f"file {name}"


@server.use
async def read_params(ctx: Context, call_next: Any) -> Any:
    """Middleware that reads every member of ``prompts/list`` params (``ctx.params``)."""
    if ctx.method == "prompts/list":
        ctx.state["params"] = ctx.params
    return await call_next()


@server.prompt
def greet(name: str) -> str:
    return f"Hello {name}"


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run(transport="http", host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    else:
        server.run()
