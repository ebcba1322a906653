"""The ``tools/list`` and ``tools/call`` requests. A registered tool and calling it are
:mod:`mcpkit.server.definitions.tool_def`'s; a task tool's call is handed to the
server's task manager (:mod:`mcpkit.server.tasks`)."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from ...protocol.errors import INVALID_PARAMS, McpError, flatten_text
from ...protocol.types import CallToolParams, CallToolResult, CursorParams, ListToolsResult, Result
from ..context import Call, Context
from ..registry import Registry

__all__ = ["list_tools", "call_tool"]


async def list_tools(reg: Registry, ctx: Context, call: Call, params: CursorParams) -> ListToolsResult:
    """One page of the enabled tools. Raises -32602 for a cursor that is not ours."""
    page, nxt = reg.page([t.tool for t in reg.tools.values()], params.cursor)
    return ListToolsResult(tools=page, next_cursor=nxt)


async def call_tool(reg: Registry, ctx: Context, call: Call, params: CallToolParams) -> Result:
    """Call a tool: its result (a tool error included), or the task's handle when the
    call became a task. Raises -32602 for an unknown tool or invalid arguments, and
    what the tool raised on purpose (``McpError``, an HTTP status). Cancellation
    cancels the tool (not a task it became: ``tasks/cancel`` does that)."""
    td = reg.tools.get(params.name)
    if td is None:
        raise McpError(INVALID_PARAMS, f"Unknown tool: {flatten_text(params.name, 256)}")
    settings = reg.settings

    def run() -> Coroutine[Any, Any, CallToolResult]:
        return td.call(
            params.arguments or {},
            ctx,
            mask=settings.mask_tool_errors,
            limit=settings.max_error_text,
            timeout=settings.tool_timeout,
        )

    if td.task is not None:  # it may run as a task (server/tasks.py): bad arguments fail the call, not a task
        td.check_arguments(params.arguments or {}, settings.max_error_text)
        return await reg.tasks.call_tool(td.task, td.name, ctx, call, run)
    return await run()
