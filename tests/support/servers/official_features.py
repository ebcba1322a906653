"""A server built with the official SDK (PyPI ``mcp``) for mcpkit's client to list, call,
read and get from, in both eras (tests/interop/test_official_sdk.py).

``python tests/support/servers/official_features.py`` serves stdio; ``... --http PORT`` serves
Streamable HTTP on 127.0.0.1:PORT/mcp (stateful, SSE responses: the SDK's defaults).

Tools: ``echo(text)``; ``add(a, b)`` (structured: ``{"result": a + b}``); ``fail(message)``
raises (an ``isError`` result); ``grow(name)`` registers a tool ``name`` and announces
the change (2026-07-28: to ``subscriptions/listen`` streams; earlier: to the session);
``touch(uri)`` announces that ``uri`` was updated, the same way.
Resource ``data://hello``; template ``note://{id}``; prompt ``greet(name, style="plain")``
with completions for ``style``.
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import Completion, CompletionArgument, CompletionContext, PromptReference, ResourceTemplateReference

mcp = MCPServer("official-features", log_level="WARNING")


@mcp.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool()
def fail(message: str) -> str:
    """Raise an exception."""
    raise RuntimeError(message)


@mcp.tool()
async def grow(name: str, ctx: Context) -> str:
    """Register a tool called ``name`` and tell the client that the list changed."""
    mcp.add_tool(lambda: f"I am {name}", name=name, description="A grown tool.")
    if ctx.protocol_version == "2026-07-28":
        await ctx.notify_tools_changed()
    else:
        await ctx.session.send_tool_list_changed()
    return f"grew {name}"


@mcp.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Announce that ``uri`` changed (2026-07-28: to ``subscriptions/listen`` streams;
    earlier: to the session, which has no ``resources/subscribe`` to ask for it)."""
    if ctx.protocol_version == "2026-07-28":
        await ctx.notify_resource_updated(uri)
    else:
        await ctx.session.send_resource_updated(uri)
    return f"touched {uri}"


@mcp.resource("data://hello")
def hello() -> str:
    """A fixed text."""
    return "hello world"


@mcp.resource("note://{id}")
def note(id: str) -> str:
    """A note by id."""
    return f"note {id}"


@mcp.prompt()
def greet(name: str, style: str = "plain") -> str:
    """Greet someone."""
    return f"Greet {name} in a {style} style."


@mcp.completion()  # type: ignore[no-untyped-call, untyped-decorator]
async def complete(
    ref: PromptReference | ResourceTemplateReference, argument: CompletionArgument, context: CompletionContext | None
) -> Completion | None:
    if isinstance(ref, PromptReference) and argument.name == "style":
        return Completion(values=[s for s in ("plain", "pirate", "poet") if s.startswith(argument.value)])
    return None


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        mcp.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]), streamable_http_path="/mcp")
    else:
        mcp.run()
