"""An mcpkit server for the HTTP tests of tests/e2e/http/ (SSE polling, error statuses,
cancellation, shutdown).

``python tests/support/servers/polling_http.py PORT [GRACE]`` serves 127.0.0.1:PORT/mcp with
``Server.run(transport="http")``, giving requests in progress GRACE seconds at shutdown
(uvicorn's ``timeout_graceful_shutdown``; default 5). In-process tests import ``server``
and serve ``server.asgi_app(...)`` themselves.

Tools: ``echo(text)``; ``poll(before, after, pause)`` reports ``before`` progress
notifications, ends its SSE connection with ``ctx.close_sse_stream()``, waits ``pause``
seconds, reports ``after`` more and answers ``closed=<what close_sse_stream said>``;
``slow(seconds)`` sleeps, then answers; ``wait()`` blocks until cancelled; ``talk_then_wait()``
reports progress once, then blocks until cancelled; ``mcp_fail(code, status)`` raises
``McpError(code, ..., status=status or None)``; ``running()`` names the handlers of ``slow``,
``wait`` and ``talk_then_wait`` in progress (what tests wait for instead of sleeping; in
process, :data:`RUNNING` holds the same). Resource ``fail://internal`` raises an ordinary
exception (-32603).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections import Counter
from collections.abc import Iterator

from mcpkit import Context, McpError, Server

server = Server("polling-http", "1.0.0")

#: Handlers in progress, by tool name.
RUNNING: Counter[str] = Counter()


@contextlib.contextmanager
def _running(name: str) -> Iterator[None]:
    RUNNING[name] += 1
    try:
        yield
    finally:
        RUNNING[name] -= 1


@server.tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool
async def poll(ctx: Context, before: int = 0, after: int = 0, pause: float = 0.1) -> str:
    """Report progress, end the SSE connection, work on, report more, answer."""
    for i in range(before):
        await ctx.report_progress(i + 1, before + after)
    closed = await ctx.close_sse_stream()
    await asyncio.sleep(pause)
    for i in range(after):
        await ctx.report_progress(before + i + 1, before + after)
    return f"closed={closed}"


@server.tool
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    with _running("slow"):
        await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.tool
async def wait() -> str:
    """Block until cancelled."""
    with _running("wait"):
        await asyncio.Event().wait()
    return "unreachable"


@server.tool
async def talk_then_wait(ctx: Context) -> str:
    """Report progress once (the answer becomes an SSE stream), then block until cancelled."""
    with _running("talk_then_wait"):
        await ctx.report_progress(1, 2)
        await asyncio.Event().wait()
    return "unreachable"


@server.tool
def mcp_fail(code: int, status: int = 0) -> str:
    """Raise McpError(code) with HTTP status ``status`` (0: none of its own)."""
    raise McpError(code, f"failed with {code}", status=status or None)


@server.tool
def running() -> list[str]:
    """The tools whose handlers are in progress, sorted (a name once per call)."""
    return sorted(RUNNING.elements())


@server.resource("fail://internal")
def fail_internal() -> str:
    """Fail with an ordinary exception: -32603, its text not sent."""
    raise RuntimeError("the disk is on fire")


if __name__ == "__main__":
    grace = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    server.run("http", host="127.0.0.1", port=int(sys.argv[1]), uvicorn_options={"timeout_graceful_shutdown": grace})
