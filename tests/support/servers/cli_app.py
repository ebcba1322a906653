"""The server the ``mcpkit`` command is tested against (tests/e2e/cli/test_commands.py):
``python tests/support/servers/cli_app.py`` serves stdio, ``... http PORT`` Streamable HTTP;
``mcpkit run tests/support/servers/cli_app.py`` finds ``server`` in it.

Tools: ``echo(text)``; ``fail(message)`` (an ``isError`` result); ``steps(count,
delay)`` reports progress ``1..count`` of ``count`` and returns ``"done N"``;
``sleep(seconds)``; ``squares(n) -> list[int]`` (structured output); ``whoami()``
(``"<era> <protocol version>"``). A resource ``cli://note``, a template
``cli://items/{item}``, a prompt ``greet(name)``.
"""

from __future__ import annotations

import asyncio
import sys

from mcpkit import Context, Server, ToolError

server = Server("cli-app", "1.2.3")


@server.tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool
def fail(message: str) -> str:
    """Fail with the message (an isError result)."""
    raise ToolError(message)


@server.tool
async def steps(count: int, delay: float, ctx: Context) -> str:
    """Report progress count times, delay seconds apart."""
    for i in range(1, count + 1):
        await asyncio.sleep(delay)
        await ctx.report_progress(i, count, f"step {i}")
    return f"done {count}"


@server.tool
async def sleep(seconds: float) -> str:
    """Sleep."""
    await asyncio.sleep(seconds)
    return "slept"


@server.tool
def squares(n: int) -> list[int]:
    """The first n squares."""
    return [i * i for i in range(n)]


@server.tool
def whoami(ctx: Context) -> str:
    """The era and revision of the request."""
    return f"{ctx.era} {ctx.protocol_version}"


@server.resource("cli://note", mime_type="text/plain")
def note() -> str:
    """A short note."""
    return "remember the milk"


@server.resource("cli://items/{item}")
def item(item: str) -> str:
    """One item."""
    return f"item {item}"


@server.prompt
def greet(name: str) -> str:
    """Greet someone."""
    return f"Say hello to {name}"


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("http", port=int(sys.argv[2]))
    else:
        server.run()
