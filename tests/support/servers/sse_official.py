"""A server built with the official SDK (PyPI ``mcp``) over its deprecated HTTP+SSE
transport (``MCPServer.sse_app()``), for tests/interop/test_sse_interop.py.

``python tests/support/servers/sse_official.py PORT`` serves ``GET /sse`` and
``POST /messages/?session_id=...`` on 127.0.0.1:PORT.

Tools: ``echo(text)``; ``ask(question)`` asks the client to sample an answer (a
server-to-client request) and returns its text. Resource ``data://hello``.
"""

from __future__ import annotations

import argparse

import mcp_types as mt
from mcp.server.mcpserver import Context, MCPServer

parser = argparse.ArgumentParser()
parser.add_argument("port", type=int)
args = parser.parse_args()

mcp = MCPServer("official-sse-test", log_level="WARNING")


@mcp.tool()
def echo(text: str) -> str:
    """Echo the text."""
    return f"echo: {text}"


@mcp.tool()
async def ask(question: str, ctx: Context) -> str:
    """Ask the client's model."""
    message = mt.SamplingMessage(role="user", content=mt.TextContent(type="text", text=question))
    result = await ctx.session.create_message(messages=[message], max_tokens=50)
    content = result.content
    return content.text if isinstance(content, mt.TextContent) else "?"


@mcp.resource("data://hello")
def hello() -> str:
    """A greeting."""
    return "hello over SSE"


mcp.run(transport="sse", host="127.0.0.1", port=args.port)
