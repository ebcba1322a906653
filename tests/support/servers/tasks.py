"""A server whose long tools run as tasks (the tasks extension, docs/tasks.md).

``python tests/support/servers/tasks.py`` serves stdio; ``... --http PORT`` serves
127.0.0.1:PORT/mcp. Used by tests/unit/server/test_tasks.py (also in memory, with ``load_server``).
``EVENTS`` records what the handlers saw (in this process).
"""

from __future__ import annotations

import asyncio
import sys

from mcpkit import Context, HttpError, McpError, Server, ToolError

server = Server("tasks", "1.0.0", task_poll_interval=0.02, state_key=b"a key every node shares, 32 b", ask_timeout=30)
#: What happened in the handlers: ("cancelled", label), ("finished", label), ...
EVENTS: list[tuple[str, str]] = []

_NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@server.tool(task=True)
async def work(ctx: Context, seconds: float, label: str = "") -> str:
    """Sleep ``seconds`` (reporting progress half-way), then answer."""
    try:
        await ctx.report_progress(1, 2, f"{label}: half way")
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        EVENTS.append(("cancelled", label))
        raise
    EVENTS.append(("finished", label))
    return f"{label} done in {seconds:g} s (task {ctx.task_id is not None})"


@server.tool(task="required")
async def only_as_task(n: int) -> str:
    """Only ever a task."""
    await asyncio.sleep(0.01)
    return str(n * 2)


@server.tool(task=True)
async def greet(ctx: Context) -> str:
    """Ask the user's name inside the task."""
    answer = await ctx.elicit("Who are you?", _NAME, key="who")
    return f"Hello, {(answer.content or {}).get('name')}!"


@server.tool(task=True)
async def two_questions(ctx: Context) -> str:
    """Two questions at once: the task waits for both."""
    first, second = await asyncio.gather(ctx.elicit("First?", _NAME, key="a"), ctx.elicit("Second?", _NAME, key="b"))
    return f"{(first.content or {}).get('name')} and {(second.content or {}).get('name')}"


@server.tool(task=True)
async def tool_error() -> str:
    """A tool that fails: the task completes with an error result."""
    raise ToolError("no luck")


@server.tool(task=True)
async def protocol_error() -> str:
    """A protocol error: the task fails with it."""
    await asyncio.sleep(0.01)
    raise McpError(-32000, "the backend refused")


@server.tool(task=True)
async def crash() -> str:
    """An upstream outage (an HTTP 503): the task fails with -32603 and a reference."""
    raise HttpError(503, "secret detail")


@server.tool(task="deferred")
async def ask_then_task(ctx: Context) -> str:
    """Ask in an input round, then become a task (if the client can take one)."""
    answer = await ctx.elicit("Name?", _NAME, key="name")
    became = await ctx.start_task()
    await asyncio.sleep(0.05)
    return f"{(answer.content or {}).get('name')} (as a task: {became})"


@server.tool
def quick() -> str:
    """Never a task."""
    return "quick"


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        server.run("http", host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    else:
        server.run()
