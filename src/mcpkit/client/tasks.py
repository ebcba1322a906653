"""Tasks on the client (docs/tasks.md): a tool call that the server runs in the
background, started, polled, answered, waited for and cancelled — in either era.

**2026-07-28** (the tasks extension, SEP-2663). The client declares the extension on its
requests (``ClientOptions(tasks=True)``, the default), so a server may answer any
``tools/call`` with a task's handle (``resultType: "task"``). ``call_tool`` then follows
the task to its end by itself (:func:`follow_task`) and returns the result as if the call
had waited; :meth:`Client.start_task` hands the task to the caller instead, as a
:class:`TaskHandle`. Waiting polls ``tasks/get`` at the server's ``pollIntervalMs``;
the task's questions (``input_required``) are answered with the client's callbacks and
sent with ``tasks/update``, each key once.

**2025-11-25** (experimental tasks, as ``@modelcontextprotocol/server-everything`` has
them). :meth:`Client.start_task` asks for a task with ``task`` on ``tools/call``;
waiting polls ``tasks/get`` and then fetches the result with ``tasks/result``, on which
the server sends the task's questions as ordinary requests (answered with the same
callbacks).

A task is found by its id alone, from any connection: :meth:`Client.task` makes a handle
for an id kept from an earlier one.

The two wires are two strategies behind one protocol (:class:`_TaskWire`): the
extension's (:data:`_EXTENSION`) and the experimental one (:data:`_EXPERIMENTAL`), chosen
from the era's policy in one place (:func:`_wire`) each time a handle speaks, since a
handle may be made before the client has agreed on an era. Handles and requests work on
the client's call core (:class:`~.core.CallCore`), which :class:`~mcpkit.Client` hands
them.
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Any, Final, Protocol, TypeAlias, TypeVar

import msgspec

from ..protocol import meta as meta_keys
from ..protocol.errors import REQUEST_CANCELLED, McpError, RequestTimeout, flatten_text
from ..protocol.tasks import TASK_RESULT, Task, legacy_task, with_tasks_declared
from ..protocol.types import CallToolResult
from ..runtime.peer import ProgressCallback
from .core import CallCore
from .results import decode_result

__all__ = ["TaskHandle", "follow_task", "start_task", "get_task", "cancel_task", "update_task"]

T = TypeVar("T")
log = logging.getLogger("mcpkit.client")

#: What a handle works through: the client's call core, which ``Client.task`` and
#: ``Client.start_task`` hand over. Named so because it is what the public signature
#: ``TaskHandle(client, task_id, ...)`` has always said.
Client: TypeAlias = CallCore

#: Bounds on the poll interval a server suggests (seconds), and the default without one.
_MIN_POLL: Final = 0.01
_MAX_POLL: Final = 30.0
_DEFAULT_POLL: Final = 1.0
#: A request with no deadline of its own (a legacy ``tasks/result`` waited for without one).
_FOREVER: Final = 10 * 365 * 86400.0
#: Cancellations sent for calls given up on, kept until they are done.
_abandoned: set[asyncio.Task[None]] = set()


class _Kind(msgspec.Struct, kw_only=True, rename="camel"):
    """Which shape a ``tools/call`` result has."""

    result_type: str | None = None
    task: Any = None  # the 2025-11-25 CreateTaskResult nests it here


class TaskHandle:
    """A tool call that the server runs as a task: from :meth:`Client.start_task`, or
    :meth:`Client.task` for an id kept from before (any connection will do).

    ``task`` is its state as last seen (None until fetched); ``task_id`` is None when the
    server chose to answer at once — :meth:`wait` then returns that result.
    """

    def __init__(self, client: Client, task_id: str | None, task: Task | None = None, result: CallToolResult | None = None):
        self._core = client
        self.task_id = task_id
        self.task = task
        self._result = result
        self._answered: set[str] = set()

    def __repr__(self) -> str:
        return f"<TaskHandle {self.task_id!r} {self.status}>"

    @property
    def status(self) -> str:
        """The last status seen (``"completed"`` for a call answered at once, ``"unknown"``
        before the first fetch)."""
        if self._result is not None:
            return "completed"
        return self.task.status if self.task is not None else "unknown"

    async def refresh(self, *, timeout: float | None = None) -> Task:
        """Fetch the task's state (``tasks/get``). Raises ``McpError(-32602)`` once the
        server no longer knows it (expired), and as every request does."""
        if self.task_id is None:
            raise RuntimeError("the server answered this call at once: there is no task to fetch")
        self.task = await get_task(self._core, self.task_id, timeout=timeout)
        return self.task

    async def respond(self, input_responses: dict[str, Any], *, timeout: float | None = None) -> None:
        """Answer the task's questions yourself (``tasks/update``): ``{key: answer}`` for
        keys of ``task.input_requests`` (an answer is what the question's callback would
        return, as a dict). Only in the 2026-07-28 era (``RuntimeError`` otherwise)."""
        if self.task_id is None:
            raise RuntimeError("the server answered this call at once: there is no task to answer")
        await update_task(self._core, self.task_id, input_responses, timeout=timeout)
        self._answered.update(input_responses)

    async def cancel(self, *, timeout: float | None = None) -> None:
        """Ask the server to cancel the task (``tasks/cancel``). It is cooperative: the task
        may still end otherwise; :meth:`refresh` tells."""
        if self.task_id is not None:
            await cancel_task(self._core, self.task_id, timeout=timeout)

    async def wait(self, *, timeout: float | None = None) -> CallToolResult:
        """Wait for the task to end and return the tool's result (``is_error`` set for a
        tool that failed). Polls at the server's interval; questions the task asks are
        answered with the client's callbacks (``on_elicit``, ``on_sample``, ``roots``).

        ``timeout`` bounds the whole wait (None: until the task ends; each poll has the
        client's ``request_timeout``). Raises :class:`RequestTimeout` when it runs out
        (the task goes on: wait again, or cancel it), :class:`McpError` with the task's
        error when it failed, ``McpError(-32800)`` when it was cancelled, -32602 when the
        server no longer knows it, and what a callback raises. Cancelling the caller
        cancels the request in flight; the task goes on."""
        if self._result is not None:
            return self._result
        loop = asyncio.get_running_loop()
        deadline = math.inf if timeout is None else loop.time() + timeout
        return await _wire(self._core).wait(self, deadline)

    def _remaining(self, deadline: float) -> float | None:
        """Seconds left before ``deadline`` (None: no deadline). Raises RequestTimeout."""
        if deadline == math.inf:
            return None
        left = deadline - asyncio.get_running_loop().time()
        if left <= 0:
            raise RequestTimeout(None)
        return min(left, self._core.options.request_timeout)

    async def _pause(self, deadline: float) -> None:
        task = self.task
        interval = task.poll_interval_ms / 1000 if task is not None and task.poll_interval_ms else _DEFAULT_POLL
        interval = min(max(interval, _MIN_POLL), _MAX_POLL)
        left = deadline - asyncio.get_running_loop().time()
        if left <= interval:
            await asyncio.sleep(max(left, 0))
            raise RequestTimeout(None)
        await asyncio.sleep(interval)

    async def _current(self, deadline: float) -> Task:
        """The task's state: as last seen, else fetched."""
        return self.task if self.task is not None else await self.refresh(timeout=self._remaining(deadline))


def _outcome(task: Task) -> CallToolResult:
    """A terminal task's result; raises its error (failed) or -32800 (cancelled)."""
    if task.status == "completed":
        try:
            return msgspec.convert(task.result or {}, CallToolResult)
        except msgspec.ValidationError as exc:
            raise _invalid(exc) from None
    if task.status == "failed":
        error = task.error or {}
        code, message = error.get("code"), error.get("message")
        raise McpError(
            code if isinstance(code, int) and not isinstance(code, bool) else -32603,
            message if isinstance(message, str) else (task.status_message or "The task failed"),
            error.get("data"),
        )
    raise McpError(REQUEST_CANCELLED, task.status_message or "The task was cancelled", {"taskId": task.task_id})


def _invalid(exc: msgspec.ValidationError) -> McpError:
    """The local error for a task the server described wrongly."""
    return McpError(-32603, f"Invalid result from server: {flatten_text(str(exc), 512)}", local=True)


# --- the two wires -----------------------------------------------------------------------------


class _TaskWire(Protocol):
    """How tasks are asked for, named, read and waited for in one era."""

    def call_params(self, core: CallCore, params: dict[str, Any], ttl: float | None) -> dict[str, Any]:
        """The params of a ``tools/call`` that asks for a task."""
        ...

    def about(self, core: CallCore, task_id: str) -> dict[str, Any]:
        """The params of a request about the task ``task_id``."""
        ...

    def update(self, core: CallCore, task_id: str, input_responses: dict[str, Any]) -> dict[str, Any]:
        """The params of ``tasks/update``; ``RuntimeError`` where there is none."""
        ...

    def task(self, raw: msgspec.Raw) -> Task:
        """A ``tasks/get`` result. Raises a local ``McpError(-32603)`` if malformed."""
        ...

    async def wait(self, handle: TaskHandle, deadline: float) -> CallToolResult:
        """Wait for ``handle``'s task to end (see :meth:`TaskHandle.wait`)."""
        ...


def _declared(core: CallCore, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with the tasks extension declared in this request's capabilities."""
    caps = core.meta.get(meta_keys.CLIENT_CAPABILITIES)
    extra = dict(params.get("_meta") or {})
    extra[meta_keys.CLIENT_CAPABILITIES] = with_tasks_declared(caps if isinstance(caps, dict) else {})
    return {**params, "_meta": extra}


class _Extension:
    """2026-07-28, the tasks extension: declared on each request about a task; the task's
    questions come back in its state and are answered with ``tasks/update``."""

    def call_params(self, core: CallCore, params: dict[str, Any], ttl: float | None) -> dict[str, Any]:
        return _declared(core, params)  # the server decides, and how long it keeps the task

    def about(self, core: CallCore, task_id: str) -> dict[str, Any]:
        return _declared(core, {"taskId": task_id})  # whatever the client declares on its other requests

    def update(self, core: CallCore, task_id: str, input_responses: dict[str, Any]) -> dict[str, Any]:
        return {**self.about(core, task_id), "inputResponses": input_responses}

    def task(self, raw: msgspec.Raw) -> Task:
        return decode_result(raw, Task)

    async def wait(self, handle: TaskHandle, deadline: float) -> CallToolResult:
        task = await handle._current(deadline)
        while True:
            if task.terminal:
                return _outcome(task)
            questions = {k: q for k, q in (task.input_requests or {}).items() if k not in handle._answered}
            if task.status == "input_required" and questions:
                left = deadline - asyncio.get_running_loop().time()
                try:
                    async with asyncio.timeout(None if left == math.inf else left):
                        answers = await handle._core.inbound.answer_all(questions)
                except TimeoutError:
                    raise RequestTimeout(None) from None
                await handle.respond(answers, timeout=handle._remaining(deadline))
            else:
                await handle._pause(deadline)
            task = await handle.refresh(timeout=handle._remaining(deadline))


class _Experimental:
    """2025-11-25, experimental tasks: ``task`` on ``tools/call``; waiting polls until the
    task needs input or has ended, then ``tasks/result``, on which the server asks its
    questions as ordinary requests."""

    def call_params(self, core: CallCore, params: dict[str, Any], ttl: float | None) -> dict[str, Any]:
        return {**params, "task": {"ttl": max(round(ttl * 1000), 1)} if ttl is not None else {}}

    def about(self, core: CallCore, task_id: str) -> dict[str, Any]:
        return {"taskId": task_id}

    def update(self, core: CallCore, task_id: str, input_responses: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("tasks/update is part of the 2026-07-28 tasks extension; a 2025-11-25 task asks on tasks/result")

    def task(self, raw: msgspec.Raw) -> Task:
        try:
            return legacy_task(decode_result(raw, dict[str, Any]))
        except msgspec.ValidationError as exc:
            raise _invalid(exc) from None

    async def wait(self, handle: TaskHandle, deadline: float) -> CallToolResult:
        task = await handle._current(deadline)
        while task.status == "working":
            await handle._pause(deadline)
            task = await handle.refresh(timeout=handle._remaining(deadline))
        if task.status == "cancelled":
            return _outcome(task)
        assert handle.task_id is not None
        left = _FOREVER if deadline == math.inf else deadline - asyncio.get_running_loop().time()
        if left <= 0:
            raise RequestTimeout(None)
        params = {"taskId": handle.task_id}
        result = await handle._core.call("tasks/result", params, CallToolResult, left, idempotent=True)
        handle._result = result
        return result


_EXTENSION: Final = _Extension()
_EXPERIMENTAL: Final = _Experimental()


def _wire(core: CallCore) -> _TaskWire:
    """The task wire of the era agreed on: the extension where requests are stateless
    (2026-07-28), else the session era's experimental tasks."""
    return _EXTENSION if core.policy.stateless else _EXPERIMENTAL


# --- the requests ------------------------------------------------------------------------------


async def start_task(
    core: CallCore,
    name: str,
    arguments: dict[str, Any] | None,
    *,
    timeout: float | None,
    meta: dict[str, Any] | None,
    ttl: float | None,
    on_progress: ProgressCallback | None = None,
) -> TaskHandle:
    """``tools/call`` asking for a task (see :meth:`Client.start_task`). Raises as
    ``call_tool`` does, and a local ``McpError(-32603)`` for a malformed task."""
    params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
    if meta:
        params["_meta"] = meta
    params = _wire(core).call_params(core, params, ttl)
    raw = await core.call("tools/call", params, msgspec.Raw, timeout, on_progress, idempotent=False)
    kind = decode_result(raw, _Kind)
    if kind.result_type == TASK_RESULT:
        task = decode_result(raw, Task)
        return TaskHandle(core, task.task_id, task)
    if isinstance(kind.task, dict):  # 2025-11-25: {"task": {...}}
        try:
            task = legacy_task(kind.task)
        except msgspec.ValidationError as exc:
            raise _invalid(exc) from None
        return TaskHandle(core, task.task_id, task)
    return TaskHandle(core, None, result=decode_result(raw, CallToolResult))


async def get_task(core: CallCore, task_id: str, *, timeout: float | None = None) -> Task:
    """``tasks/get`` (either era's wire). Raises as every request does."""
    wire = _wire(core)
    raw = await core.call("tasks/get", wire.about(core, task_id), msgspec.Raw, timeout, idempotent=True, rounds=False)
    return wire.task(raw)


async def cancel_task(core: CallCore, task_id: str, *, timeout: float | None = None) -> None:
    """``tasks/cancel``. Raises as every request does."""
    params = _wire(core).about(core, task_id)
    await core.call("tasks/cancel", params, dict[str, Any], timeout, idempotent=True, rounds=False)


async def update_task(core: CallCore, task_id: str, input_responses: dict[str, Any], *, timeout: float | None = None) -> None:
    """``tasks/update`` (2026-07-28 only: ``RuntimeError`` in the legacy era)."""
    params = _wire(core).update(core, task_id, input_responses)
    await core.call("tasks/update", params, dict[str, Any], timeout, idempotent=True, rounds=False)


async def follow_task(core: CallCore, raw: msgspec.Raw, tp: type[T], deadline: float) -> T:
    """A ``tools/call`` answered with a task (2026-07-28): wait for it until ``deadline``
    (the loop's clock) and return its result as ``tp``. A call given up on (its deadline,
    an error, cancellation) cancels the task on the server, in the background. Raises
    what :meth:`TaskHandle.wait` raises."""
    task = decode_result(raw, Task)
    handle = TaskHandle(core, task.task_id, task)
    try:
        result = await handle.wait(timeout=max(deadline - asyncio.get_running_loop().time(), 0.001))
    except BaseException:
        if handle.task is None or not handle.task.terminal:
            _abandon(core, task.task_id)
        raise
    if tp is CallToolResult:
        return result  # type: ignore[return-value]
    return msgspec.convert(msgspec.to_builtins(result), tp)


def _abandon(core: CallCore, task_id: str) -> None:
    """Cancel a task nobody waits for any more, in the background (errors logged)."""

    async def cancel() -> None:
        try:
            await cancel_task(core, task_id)
        except Exception as exc:  # the connection is going, the task has ended: nothing to do
            log.debug("could not cancel abandoned task %s: %s", task_id, exc)

    if core.connected:
        job = asyncio.get_running_loop().create_task(cancel(), name="mcpkit-cancel-task")
        _abandoned.add(job)
        job.add_done_callback(_abandoned.discard)
