"""The tasks extension (SEP-2663, ``io.modelcontextprotocol/tasks``): its wire types, its
statuses, and the capability both sides declare (docs/tasks.md).

A server may answer a ``tools/call`` from a client that declared the extension with a
task handle instead of the result (``resultType: "task"``); the client then polls
``tasks/get`` until the task is terminal, answers the questions the task asks with
``tasks/update``, and may ``tasks/cancel`` it. The extension exists in the 2026-07-28
era only; the 2025-11-25 experimental tasks (``task`` on ``tools/call``, a nested
``task`` in the result, ``tasks/result``) are a different wire, read here by
:func:`legacy_task` for the client side.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

from .errors import MISSING_CLIENT_CAPABILITY, McpError
from .interactive import InputRequest
from .types import Params, Result

__all__ = [
    "TASKS_EXTENSION",
    "TASK_RESULT",
    "TASK_METHODS",
    "TERMINAL_STATUSES",
    "TaskStatus",
    "Task",
    "TaskIdParams",
    "UpdateTaskParams",
    "declares_tasks",
    "with_tasks_declared",
    "missing_tasks_extension",
    "legacy_task",
]

#: The extension's identifier, under ``capabilities.extensions`` on both sides.
TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
#: The ``resultType`` of a result that is a task handle (``CreateTaskResult``).
TASK_RESULT: Final = "task"
#: The extension's requests (``tasks/result`` and ``tasks/list`` do not exist in it).
TASK_METHODS: Final = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
#: Statuses a task never leaves.
TERMINAL_STATUSES: Final = frozenset({"completed", "failed", "cancelled"})


class Task(Result, kw_only=True):
    """A task as the server reports it (``tasks/get``; also the ``CreateTaskResult`` of
    the call that started it, and the params of ``notifications/tasks``).

    Attributes:
        task_id: The task's identifier: unguessable, and all a client needs to find it
            again, from any connection.
        status: ``"working"``, ``"input_required"``, ``"completed"``, ``"failed"`` or
            ``"cancelled"`` (the last three are terminal).
        status_message: What the task is doing, or why it ended, for people.
        created_at: When it was created (ISO 8601).
        last_updated_at: When its status last changed (ISO 8601).
        ttl_ms: How long after creation the server keeps it (milliseconds; None: no limit).
        poll_interval_ms: How often the server suggests polling (milliseconds).
        input_requests: While ``"input_required"``: the questions waiting for an answer,
            by key (answer them with ``tasks/update``).
        result: When ``"completed"``: what the call returned (a ``CallToolResult`` as a
            dict; a tool that failed says ``isError: true`` here).
        error: When ``"failed"``: the JSON-RPC error (``code``, ``message``, ``data``).
    """

    task_id: str
    status: str
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None
    status_message: str | None = None
    poll_interval_ms: int | None = None
    input_requests: dict[str, InputRequest] | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None

    @property
    def terminal(self) -> bool:
        """Whether the task has ended (completed, failed or cancelled)."""
        return self.status in TERMINAL_STATUSES


class TaskIdParams(Params, kw_only=True):
    """The params of ``tasks/get`` and ``tasks/cancel``."""

    task_id: str


class UpdateTaskParams(TaskIdParams, kw_only=True):
    """The params of ``tasks/update``: answers to the task's ``inputRequests``, by key."""

    input_responses: dict[str, Any] = msgspec.field(default_factory=dict)


def declares_tasks(capabilities: Any) -> bool:
    """Whether client (or server) ``capabilities`` declare the tasks extension."""
    if not isinstance(capabilities, dict):
        return False
    extensions = capabilities.get("extensions")
    return isinstance(extensions, dict) and isinstance(extensions.get(TASKS_EXTENSION), dict)


def with_tasks_declared(capabilities: dict[str, Any]) -> dict[str, Any]:
    """``capabilities`` with the tasks extension added (a copy; the rest kept)."""
    extensions = capabilities.get("extensions")
    merged = dict(extensions) if isinstance(extensions, dict) else {}
    merged.setdefault(TASKS_EXTENSION, {})
    return {**capabilities, "extensions": merged}


def missing_tasks_extension(what: str) -> McpError:
    """The -32021 error for a client that did not declare the extension (HTTP 400):
    ``what`` says what needed it."""
    return McpError(
        MISSING_CLIENT_CAPABILITY,
        f"Missing required client capability: {what} needs the {TASKS_EXTENSION} extension",
        {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
        status=400,
    )


class _LegacyTask(msgspec.Struct, kw_only=True, rename="camel"):
    """A task on the 2025-11-25 experimental wire (``ttl`` and ``pollInterval``)."""

    task_id: str
    status: str
    created_at: str = ""
    last_updated_at: str = ""
    ttl: int | None = None
    poll_interval: int | None = None
    status_message: str | None = None


def legacy_task(data: Any) -> Task:
    """A 2025-11-25 experimental task (a ``CreateTaskResult``'s ``task``, or the result of
    ``tasks/get``) as a :class:`Task`. Raises ``msgspec.ValidationError`` if ``data`` is
    not one."""
    old = msgspec.convert(data, _LegacyTask)
    return Task(
        task_id=old.task_id,
        status=old.status,
        created_at=old.created_at,
        last_updated_at=old.last_updated_at,
        ttl_ms=old.ttl,
        poll_interval_ms=old.poll_interval,
        status_message=old.status_message,
    )
