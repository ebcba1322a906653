"""An mcpkit server for foreign clients (tests/interop/): one of everything a client lists,
calls, reads or gets, and one tool per way a call can fail.

``python tests/support/servers/interop_target.py`` serves stdio; ``... --http PORT [--error-status
400]`` serves 127.0.0.1:PORT/mcp (``asgi_app(error_status=...)``: docs/http.md). Both eras.

Tools: ``echo(text)``; ``whoami()`` ("<era> <revision> <client name>"); ``add(a, b)``
(structured output); ``chatty(steps)`` logs, then reports progress ``1..steps``;
``refuse(reason)`` raises ``ToolError`` (an ``isError`` result with exactly that text);
``crash()`` raises ``RuntimeError("the tool broke")`` (an ``isError`` result); ``deny()``
raises ``McpError(-32050, "Quota exhausted", {"retryAfter": 5})`` (a JSON-RPC error);
``explode()`` raises ``McpError(-32603, "Upstream failed")`` (a JSON-RPC internal error:
HTTP 500 in the modern era).
Resources: ``note://hello`` (text), ``note://{id}`` (a template), ``data://bytes`` (a
blob), ``note://broken`` (raises: -32603 with a reference). Prompt: ``greet(name,
style="plain")`` with completions for ``style``.
"""

from __future__ import annotations

import sys
from typing import Any, TypedDict

from mcpkit import Context, McpError, Server, ToolError

server = Server("interop", "1.2.3", instructions="A server for interop tests.")


class Sum(TypedDict):
    sum: int


@server.tool
def echo(text: str) -> str:
    """Return the text unchanged.

    Args:
        text: What to echo.
    """
    return text


@server.tool
def whoami(ctx: Context) -> str:
    """The era, revision and client name of this request, as the server sees them."""
    name = ctx.client_info.name if ctx.client_info is not None else "?"
    return f"{ctx.era} {ctx.protocol_version} {name}"


@server.tool
def add(a: int, b: int) -> Sum:
    """Add two integers.

    Args:
        a: The first.
        b: The second.
    """
    return {"sum": a + b}


@server.tool
async def chatty(steps: int, ctx: Context) -> str:
    """Log a message, then report progress ``steps`` times.

    Args:
        steps: How many progress notifications to send.
    """
    await ctx.info(f"chatty: {steps} steps")
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i}")
    return f"{steps} steps"


@server.tool
def refuse(reason: str) -> str:
    """Fail with a tool error worded for the model.

    Args:
        reason: The text of the error.
    """
    raise ToolError(reason)


@server.tool
def crash() -> str:
    """Fail with an ordinary exception."""
    raise RuntimeError("the tool broke")


@server.tool
def deny() -> str:
    """Fail with a deliberate JSON-RPC error."""
    raise McpError(-32050, "Quota exhausted", {"retryAfter": 5})


@server.tool
def explode() -> str:
    """Fail with a deliberate JSON-RPC internal error."""
    raise McpError(-32603, "Upstream failed")


@server.resource("note://hello")
def hello() -> str:
    """A fixed note."""
    return "Hello, interop!"


@server.resource("note://{id}")
def note(id: str) -> str:
    """A note by id."""
    return f"note {id}"


@server.resource("data://bytes", mime_type="application/octet-stream")
def raw_bytes() -> bytes:
    """Four bytes."""
    return b"\x00\x01\x02\xff"


@server.resource("note://broken")
def broken() -> str:
    """A resource whose handler fails."""
    raise OSError("disk on fire at /var/secret")


@server.prompt
def greet(name: str, style: str = "plain") -> str:
    """Greet someone.

    Args:
        name: Who to greet.
        style: plain, pirate or poet.
    """
    return f"Greet {name} in a {style} style."


@server.completion(prompt="greet")
def complete_style(argument: str, value: str, context: dict[str, str]) -> list[str]:
    return [style for style in ("plain", "pirate", "poet") if style.startswith(value)] if argument == "style" else []


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        options = dict(zip(sys.argv[3::2], sys.argv[4::2], strict=True))  # --error-status 400
        extra: dict[str, Any] = {"error_status": options["--error-status"]} if "--error-status" in options else {}
        server.run("http", host="127.0.0.1", port=int(sys.argv[2]), log_level="warning", **extra)
    else:
        server.run()
