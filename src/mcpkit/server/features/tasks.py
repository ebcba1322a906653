"""The tasks extension's requests (docs/tasks.md): ``tasks/get``, ``tasks/update`` and
``tasks/cancel``, served by the server's :class:`~mcpkit.server.tasks.TaskManager`.

They exist in the 2026-07-28 era only (the legacy era's policy answers them -32601:
this server does not offer the 2025-11-25 experimental tasks), and only for a client that declared the extension
(-32021 otherwise). An unknown, expired or foreign task id is -32602. The acknowledgements
of ``tasks/update`` and ``tasks/cancel`` are empty results.
"""

from __future__ import annotations

from ...protocol.tasks import Task, TaskIdParams, UpdateTaskParams
from ...protocol.types import EmptyResult
from ..context import Call, Context
from ..registry import Registry

__all__ = ["get_task", "update_task", "cancel_task"]


async def get_task(reg: Registry, ctx: Context, call: Call, params: TaskIdParams) -> Task:
    """``tasks/get``: the task's status; its questions, result or error inlined."""
    return await reg.tasks.get(ctx, call, params.task_id)


async def update_task(reg: Registry, ctx: Context, call: Call, params: UpdateTaskParams) -> EmptyResult:
    """``tasks/update``: answers to the task's questions; unknown keys are ignored."""
    await reg.tasks.update(ctx, call, params.task_id, params.input_responses)
    return EmptyResult()


async def cancel_task(reg: Registry, ctx: Context, call: Call, params: TaskIdParams) -> EmptyResult:
    """``tasks/cancel``: cooperative; acknowledged at once, terminal tasks included."""
    await reg.tasks.cancel(ctx, call, params.task_id)
    return EmptyResult()
