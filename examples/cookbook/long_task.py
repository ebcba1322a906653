"""A long tool call run as a task: progress while it works, the result when it is done.

    python examples/cookbook/long_task.py          # the demo: spawn this file as a server, drive it
    python examples/cookbook/long_task.py server   # serve over stdio, for an MCP host

``@server.tool(task=True)`` lets a client that speaks the tasks extension (the 2026-07-28
era; mcpkit's client by default) get a task handle at once instead of holding the request
open: it polls the task, shows its progress (each ``ctx.report_progress`` message
becomes the task's status message), fetches the result once it has completed, and may
cancel it. A client without the extension calls the same tool as a plain request and
gets progress notifications instead; ``reset_timeout_on_progress`` keeps such a call
alive past its timeout for as long as it reports progress.
"""

from __future__ import annotations

import asyncio
import sys

from mcpkit import (
    CallToolResult,
    Client,
    ClientOptions,
    Context,
    McpError,
    Server,
    StdioTransport,
    TaskHandle,
    TextContent,
    ToolError,
)

STEP = 0.3  # seconds of "work" per month: long enough to see each step

# --- the server ---------------------------------------------------------------------------

server = Server("reports", "1.0.0", task_poll_interval=0.05)  # clients poll every 50 ms


@server.tool(task=True)
async def build_report(ctx: Context, months: int) -> str:
    """Count the orders of the last few months, one month at a time (slow).

    Args:
        months: How many months, 1 to 24.
    """
    if not 1 <= months <= 24:
        raise ToolError(f"months must be between 1 and 24, not {months}.")
    orders = 0
    for month in range(1, months + 1):
        await ctx.report_progress(month - 1, months, f"crunching month {month} of {months}")
        await asyncio.sleep(STEP)  # the real work; cancelling the task cancels it here
        orders += 100 + month
    return f"{orders} orders in {months} months"


# --- the demo -------------------------------------------------------------------------------


def text_of(result: CallToolResult) -> str:
    """The text parts of a tool result (a result may also hold images, audio, links...)."""
    return " ".join(part.text for part in result.content if isinstance(part, TextContent))


async def follow(task: TaskHandle, stop_after: int | None = None) -> None:
    """Poll a task, printing each new status message, until it ends (or until
    ``stop_after`` messages were seen)."""
    seen: list[str] = []
    while not (state := await task.refresh()).terminal:
        if state.status_message and state.status_message not in seen:
            seen.append(state.status_message)
            print(f"    {state.status}: {state.status_message}")
            if len(seen) == stop_after:
                return
        await asyncio.sleep(0.05)


async def demo() -> None:
    command = [sys.executable, __file__, "server"]
    async with Client(StdioTransport(command, stderr="devnull")) as client:
        print(f"== a client with the tasks extension ({client.protocol_version}) ==")
        task = await client.start_task("build_report", {"months": 3})  # answered at once
        print(f"started a task: {task.status}")
        await follow(task)
        result = await task.wait(timeout=30)  # the task has ended: wait() returns its result
        print(f"result: {text_of(result)}")

        print("== cancelling a task ==")
        doomed = await client.start_task("build_report", {"months": 24})
        await follow(doomed, stop_after=1)
        await doomed.cancel()
        try:
            await doomed.wait(timeout=30)
        except McpError as err:  # a cancelled task raises -32800 (a failed one, its error)
            print(f"wait() raised McpError {err.code}: {err.message}")
        print(f"status now: {(await doomed.refresh()).status}")

        print("== a tool error in a task ==")
        failed = await client.call_tool("build_report", {"months": 99})  # call_tool follows the task itself
        print(f"is_error={failed.is_error}: {text_of(failed)}")

    print("== a client without the extension: a plain call with progress ==")
    options = ClientOptions(tasks=False)
    async with Client(StdioTransport(command, stderr="devnull"), options) as client:

        def on_progress(done: float, total: float | None, message: str | None) -> None:
            print(f"    progress {done:g}{f'/{total:g}' if total is not None else ''}: {message}")

        result = await client.call_tool(
            "build_report",
            {"months": 5},
            on_progress=on_progress,
            timeout=1.0,  # shorter than the whole call (1.5 s) ...
            reset_timeout_on_progress=True,  # ... but each progress report restarts it
            max_total_timeout=30,
        )
        print(f"result: {text_of(result)}")


if __name__ == "__main__":
    if sys.argv[1:] == ["server"]:
        server.run()
    else:
        asyncio.run(demo())
