"""One node of a multi-node deployment, for tests/nodes/test_load_balanced_nodes.py (and deploy/ examples).

``python tests/support/servers/node_app.py PORT REDIS_URL LABEL`` serves 127.0.0.1:PORT/mcp with
``run_uvicorn``: legacy sessions, SSE streams and change notifications shared through
the Redis at REDIS_URL (``RedisStore``), the same ``state_key`` as every other node,
``/healthz`` and ``/healthz/ready``. LABEL names the node in the tools' answers.

Tools: ``add(a, b)`` answers ``"{a+b} {LABEL}"``; ``touch(uri)`` announces that resource
``uri`` changed and answers LABEL; ``ask()`` elicits ``{"word": str}`` and answers
``"{word} {LABEL}"``; ``slow(seconds)`` sleeps, then answers LABEL; ``steps(n, pause)``
reports ``n`` progress notifications ``pause`` seconds apart, then answers LABEL;
``running()`` says how many ``slow`` calls run on this node (what tests wait for).
Resource template ``note://{name}`` reads ``"note {name}"``. NODE_GRACE (environment, default
3) is uvicorn's graceful-shutdown grace in seconds.
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcpkit import Context, Server
from mcpkit.stores.redis import RedisStore
from mcpkit.transports.http.server.uvicorn import run_uvicorn

PORT, REDIS_URL, LABEL = int(sys.argv[1]), sys.argv[2], sys.argv[3]

store = RedisStore(REDIS_URL, heartbeat=0.5, prefix="nodes-test")
server = Server("nodes", "1.0.0", state_key="the same key on every node of the test", bus=store.bus, task_store=store.tasks)


@server.tool
def add(a: int, b: int) -> str:
    """Add two numbers; say which node did."""
    return f"{a + b} {LABEL}"


@server.tool
async def touch(uri: str) -> str:
    """Tell every subscriber of ``uri``, on every node, that it changed."""
    await server.notify_resource_updated(uri)
    return LABEL


@server.tool
async def ask(ctx: Context) -> str:
    """Ask the client for a word."""
    answer = await ctx.elicit("A word?", {"type": "object", "properties": {"word": {"type": "string"}}}, key="word")
    word = (answer.content or {}).get("word", "") if answer.accepted else answer.action
    return f"{word} {LABEL}"


RUNNING = 0


@server.tool
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    global RUNNING
    RUNNING += 1
    try:
        await asyncio.sleep(seconds)
    finally:
        RUNNING -= 1
    return LABEL


@server.tool
def running() -> int:
    """How many ``slow`` calls run on this node."""
    return RUNNING


@server.tool
async def steps(ctx: Context, n: int, pause: float) -> str:
    """Report progress ``n`` times, ``pause`` seconds apart."""
    for i in range(n):
        await ctx.report_progress(i + 1, n)
        await asyncio.sleep(pause)
    return LABEL


@server.resource("note://{name}")
def note(name: str) -> str:
    return f"note {name}"


app = server.asgi_app(
    session_store=store.sessions,
    event_store=store.events,
    health_path="/healthz",
    keepalive_interval=2.0,
    retry_interval=0.2,
)

if __name__ == "__main__":
    grace = float(os.environ.get("NODE_GRACE", "3"))
    run_uvicorn(app, host="127.0.0.1", port=PORT, log_level="warning", timeout_graceful_shutdown=grace)
