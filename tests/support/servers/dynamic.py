"""A server whose tools change what it offers while clients are connected.

``python tests/support/servers/dynamic.py`` serves stdio; ``... --http PORT`` serves
127.0.0.1:PORT/mcp. Used by tests/unit/server/test_subscriptions.py.
"""

from __future__ import annotations

import asyncio
import gc
import sys

from mcpkit import Server

server = Server("dynamic", "1.0.0", page_size=3)


@server.resource("note://{id}")
def note(id: str) -> str:
    """A note."""
    return f"note {id}"


@server.resource("doc://readme")
def readme() -> str:
    """The readme."""
    return "read me"


@server.prompt
def hello() -> str:
    """A prompt."""
    return "Hello"


@server.tool
def add_tools(count: int, prefix: str = "extra") -> str:
    """Register ``count`` tools at once (one list-changed notice)."""
    for i in range(count):

        def extra(i: int = i) -> str:
            return f"extra {i}"

        server.tool(name=f"{prefix}_{i}")(extra)
    return f"added {count}"


@server.tool
def remove_tools(count: int, prefix: str = "extra") -> str:
    """Remove the tools ``add_tools`` registered."""
    for i in range(count):
        server.remove_tool(f"{prefix}_{i}")
    return f"removed {count}"


@server.tool
def toggle(kind: str, key: str, enabled: bool) -> str:
    """Enable or disable a tool, resource, template or prompt."""
    (server.enable if enabled else server.disable)(kind, key)  # type: ignore[arg-type]
    return "ok"


@server.tool
async def touch(uris: list[str], times: int = 1) -> str:
    """Publish ``times`` updates of each of ``uris``, interleaved."""
    for _ in range(times):
        for uri in uris:
            await server.notify_resource_updated(uri)
    return f"touched {len(uris)} x {times}"


@server.tool
async def census() -> dict[str, int]:
    """How many subscribers and tasks this process has now (leak checks)."""
    gc.collect()
    await asyncio.sleep(0.05)
    return {"subscribers": len(server._registry.hub), "tasks": len(asyncio.all_tasks())}


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        server.run("http", host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    else:
        server.run()
