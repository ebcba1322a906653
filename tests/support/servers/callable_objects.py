"""A server whose handlers are objects with ``async def __call__`` (and one plain
callable object), registered as every kind of handler: ``python tests/support/servers/callable_objects.py``.

Also a ``capabilities`` tool that returns the client capabilities the server sees, as
JSON text.
"""

from __future__ import annotations

import json

from mcpkit import Context, Server

server = Server("callables", "1.0.0")


class Greeter:
    """Greet someone.

    Args:
        name: Who to greet.
    """

    def __init__(self, greeting: str) -> None:
        self.greeting = greeting

    async def __call__(self, name: str, ctx: Context) -> str:
        await ctx.info(f"greeting {name}")
        return f"{self.greeting}, {name} ({ctx.era})"


class Shouter:
    """A plain (sync) callable object: runs on a worker thread."""

    def __call__(self, text: str) -> str:
        return text.upper()


class Document:
    async def __call__(self) -> str:
        return "the document"


class Page:
    async def __call__(self, number: str, ctx: Context) -> str:
        return f"page {number} via {ctx.method}"


class Ask:
    """Ask about a topic.

    Args:
        topic: The topic.
    """

    async def __call__(self, topic: str) -> str:
        return f"Tell me about {topic}"


class Topics:
    async def __call__(self, argument: str, value: str, context: dict[str, str]) -> list[str]:
        return [t for t in ("alpha", "alps", "beta") if t.startswith(value)]


server.tool(name="greet")(Greeter("Hello"))
server.tool(name="shout")(Shouter())
server.resource("doc://main", name="main")(Document())
server.resource("doc://pages/{number}", name="page")(Page())
server.prompt(name="ask")(Ask())
server.completion(prompt="ask")(Topics())


@server.tool
def capabilities(ctx: Context) -> str:
    """The client capabilities this request carries (or the session declared)."""
    return json.dumps(ctx.client_capabilities, sort_keys=True)


if __name__ == "__main__":
    server.run()
