"""The ``tools/list`` and ``tools/call`` requests. A registered tool and calling it are
:mod:`mcpkit.server.definitions.tool_def`'s; a task tool's call is handed to the
server's task manager (:mod:`mcpkit.server.tasks`). A tool of a mounted server is
called by the same code on that server's registry (:mod:`mcpkit.server.mount`), its
task kept by the task manager of the server the request came to."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

import msgspec

from ...protocol.errors import INVALID_PARAMS, McpError, flatten_text
from ...protocol.types import CallToolParams, CallToolResult, CursorParams, ListToolsResult, Result
from ..context import Call, Context, mounted_context
from ..registry import Registry

__all__ = ["list_tools", "call_tool"]


async def list_tools(reg: Registry, ctx: Context, call: Call, params: CursorParams) -> ListToolsResult:
    """One page of the enabled tools. Raises -32602 for a cursor that is not ours."""
    page, nxt = reg.page(reg.listed("tool"), params.cursor)
    return ListToolsResult(tools=page, next_cursor=nxt)


def call_tool(reg: Registry, ctx: Context, call: Call, params: CallToolParams) -> Coroutine[Any, Any, Result]:
    """Call a tool: its result (a tool error included), or the task's handle when the
    call became a task. Raises -32602 for an unknown tool or invalid arguments, and
    what the tool raised on purpose (``McpError``, an HTTP status). Cancellation
    cancels the tool (not a task it became: ``tasks/cancel`` does that)."""
    settings = reg.settings
    # not a coroutine itself, nor are _call and ToolDef.call on the way to the tool: each
    # returns the next one's, so that a call goes through one coroutine frame fewer per layer
    # ``reg`` twice: the second is where a task is kept (its manager made at the first task)
    return _call(reg, reg, settings.tool_timeout, settings.mask_tool_errors, ctx, call, params)


def _call(
    reg: Registry,
    root: Registry,
    timeout: float | None,
    mask: bool,
    ctx: Context,
    call: Call,
    params: CallToolParams,
) -> Coroutine[Any, Any, Result]:
    """:func:`call_tool` on ``reg``, a tool of a mounted server on its registry:
    ``timeout`` and ``mask`` are what the servers it was mounted in say, ``root`` is the
    registry of the server the request came to (whose task manager keeps the tasks). A transformed
    tool (server/transform.py) is called through its transformation."""
    transforms = reg.transforms
    if transforms:
        transform = transforms.named(params.name)
        if transform is not None:
            source = reg.describe_untransformed("tool", transform.source)
            if source is None:
                raise _unknown(params.name)

            def forward(arguments: dict[str, Any]) -> Coroutine[Any, Any, Result]:
                # the source's handler and middleware see the request as the source takes it
                renamed = {"name": transform.source, "arguments": arguments}
                named = msgspec.structs.replace(params, name=transform.source, arguments=arguments)
                return _source(reg, root, timeout, mask, mounted_context(ctx, renamed, ctx.lifespan), call, named)

            limit = reg.settings.max_error_text
            return transform.call(source[1], params.arguments or {}, ctx, forward, mask=mask, limit=limit)
        if transforms.hides(params.name):
            raise _unknown(params.name)
    return _source(reg, root, timeout, mask, ctx, call, params)


async def _source(
    reg: Registry,
    root: Registry,
    timeout: float | None,
    mask: bool,
    ctx: Context,
    call: Call,
    params: CallToolParams,
) -> Result:
    """:func:`_call` of a tool that is not transformed in ``reg``: its own, a mounted
    server's, or the remote server's."""
    td = reg.tools.get(params.name)
    settings = reg.settings
    if td is None:
        routed = reg.route("tool", params.name) if reg.mounts else None
        if routed is None:
            remote = reg.remote
            if remote is not None and remote.serves("tool", params.name):  # a proxy's (remote.py)

                def forward() -> Coroutine[Any, Any, CallToolResult]:
                    return remote.forward(ctx, call, "tools/call", params)

                if remote.runs_tasks and root.tasks.offered(ctx, call):  # a task upstream becomes one here
                    return await root.tasks.call_tool("deferred", params.name, ctx, call, forward)
                return await forward()
            raise _unknown(params.name)
        mount, name = routed
        inner, local = mount.registry, msgspec.structs.replace(params, name=name)
        nearest = inner.settings.tool_timeout if inner.settings.tool_timeout is not None else timeout
        masked = mask or inner.settings.mask_tool_errors
        return await mount.run(ctx, {"name": name}, lambda c: _call(inner, root, nearest, masked, c, call, local))

    if td.task is None:
        return await td.call(params.arguments or {}, ctx, mask=mask, limit=settings.max_error_text, timeout=timeout)

    def run() -> Coroutine[Any, Any, CallToolResult]:
        return td.call(params.arguments or {}, ctx, mask=mask, limit=settings.max_error_text, timeout=timeout)

    # it may run as a task (server/tasks.py): bad arguments fail the call, not a task
    td.check_arguments(params.arguments or {}, settings.max_error_text)
    return await root.tasks.call_tool(td.task, td.name, ctx, call, run)


def _unknown(name: str) -> McpError:
    """The -32602 of a call to a tool that is not offered."""
    return McpError(INVALID_PARAMS, f"Unknown tool: {flatten_text(name, 256)}")
