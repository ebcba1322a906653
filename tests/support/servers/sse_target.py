"""An mcpkit server with the deprecated HTTP+SSE transport on (``asgi_app(sse_transport=True)``).

``python tests/support/servers/sse_target.py --http PORT [--auth] [--max-sessions N]`` serves
127.0.0.1:PORT: ``GET /sse`` and ``POST /messages`` (and Streamable HTTP at ``/mcp``),
with a 64 KiB body limit and a keep-alive comment every 0.5 s. ``--auth`` requires a
bearer token with scope ``mcp``: ``alice-token`` and ``bob-token`` (two subjects) have it,
``weak-token`` (carol) and ``alice-weak-token`` (alice) have not, and the tool ``secret``
needs scope ``admin`` (``admin-token``, alice's).
Used by tests/e2e/sse/test_server.py and tests/interop/test_official_sse_client.py.

Tools: ``echo(text)``; ``chatty(steps)`` logs ``step i`` (info) then answers ``done``;
``ask_name()`` elicits a name; ``ask_model(question)`` samples; ``roots()`` lists the
client's roots; ``hang()`` waits until cancelled; ``cancelled()`` how many
``hang`` calls were cancelled so far; ``add_tool(name)`` registers a tool (a list change);
``secret()``. Resource ``note://hello``.
"""

from __future__ import annotations

import asyncio
import sys

from mcpkit import Context, Server

server = Server("sse-target", "1.0.0", ask_timeout=20)
CANCELLED = 0
HANGING = 0


@server.tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool
async def chatty(ctx: Context, steps: int = 2) -> str:
    """Log ``steps`` messages, then answer."""
    for i in range(steps):
        await ctx.info(f"step {i + 1}")
    return "done"


@server.tool
async def ask_name(ctx: Context) -> str:
    """Ask the client for a name (elicitation)."""
    answer = await ctx.elicit(
        "What is your name?", {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    )
    if answer.action != "accept":
        return f"no name ({answer.action})"
    return f"Hello, {(answer.content or {}).get('name')}!"


@server.tool
async def ask_model(ctx: Context, question: str) -> str:
    """Sampling: what the client's model says."""
    result = await ctx.sample(question, 100)
    return f"{result.model}: {result.text}"


@server.tool
async def roots(ctx: Context) -> str:
    """The client's roots."""
    return ",".join(root.uri for root in await ctx.list_roots())


@server.tool
async def hang() -> str:
    """Wait until cancelled (counted, as its start is)."""
    global CANCELLED, HANGING
    HANGING += 1
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        CANCELLED += 1
        raise
    return "never"


@server.tool
def cancelled() -> int:
    """How many ``hang`` calls were cancelled."""
    return CANCELLED


@server.tool
def hanging() -> int:
    """How many ``hang`` calls have started (what a test waits for before cancelling one)."""
    return HANGING


@server.tool
def add_tool(name: str) -> str:
    """Register a tool named ``name`` (the connected clients hear of the change)."""

    def extra() -> str:
        return name

    server.tool(name=name)(extra)
    return f"added {name}"


@server.tool(scopes=["admin"])
def secret() -> str:
    """Only for tokens with scope ``admin``."""
    return "the secret"


@server.resource("note://hello")
def hello() -> str:
    """A note."""
    return "Hello, SSE!"


def _auth(port: int) -> object:
    from mcpkit.auth.server import ResourceServer
    from mcpkit.auth.verifiers import FunctionVerifier

    tokens = {
        "alice-token": {"active": True, "sub": "alice", "scope": "mcp"},
        "bob-token": {"active": True, "sub": "bob", "scope": "mcp"},
        "weak-token": {"active": True, "sub": "carol", "scope": "other"},
        "admin-token": {"active": True, "sub": "alice", "scope": "mcp admin"},
        "alice-weak-token": {"active": True, "sub": "alice", "scope": "other"},
    }
    return ResourceServer(
        f"http://127.0.0.1:{port}/mcp", ["https://as.example"], FunctionVerifier(tokens.get), required_scopes=["mcp"]
    )


if __name__ == "__main__":
    port = int(sys.argv[sys.argv.index("--http") + 1])
    options: dict[str, object] = {"sse_transport": True, "max_body_size": 64 * 1024, "keepalive_interval": 0.5}
    if "--auth" in sys.argv:
        options["auth"] = _auth(port)
    if "--max-sessions" in sys.argv:
        options["max_sessions"] = int(sys.argv[sys.argv.index("--max-sessions") + 1])
    server.run("http", host="127.0.0.1", port=port, log_level="warning", **options)
