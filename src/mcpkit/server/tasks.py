"""Tasks on the server (docs/tasks.md): a ``tools/call`` that goes on in the background
while the client polls ``tasks/get``.

For a client that declared the tasks extension (2026-07-28 era), a tool registered with
``task=True`` (or ``"required"``) runs as a task: the :class:`TaskManager` writes the
task to the store, starts the handler on an asyncio task of its own and answers the call
with the task's handle at once. A tool registered with ``task="deferred"`` becomes one
part-way, when its handler calls ``await ctx.start_task()`` — after asking the client in
input rounds, say: its handler runs on an asyncio task of its own from the start, so the
call can be answered while it goes on. Other tools never pay for any of this.

From then on the handler's questions (``ctx.elicit``, ``ctx.sample``,
``ctx.list_roots``) wait for ``tasks/update`` (``interaction.TaskAsker``: the task is
``input_required`` and lists them while they wait), its log and progress notifications
go nowhere (a progress message becomes the task's status message), and its outcome is
written to the store: a result (``completed``, a tool error included), a protocol
error (``failed``) or ``cancelled``. Every change is saved as a new record and published
on the subscription bus, for the ``subscriptions/listen`` streams that asked for the task.
A task that outlives its time to live is cancelled and forgotten.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Literal

import msgspec

from ..auth.identity import CURRENT
from ..protocol.eras import MODERN
from ..protocol.errors import INTERNAL_ERROR, INVALID_PARAMS, McpError, flatten_text
from ..protocol.interactive import InputRequest
from ..protocol.tasks import TASK_RESULT, TERMINAL_STATUSES, Task, declares_tasks, missing_tasks_extension
from ..protocol.types import CallToolResult, Result
from ..protocol.wire_errors import bounded, internal_error
from ..runtime.outbound import DROP
from ..stores.tasks import TaskRecord, TaskStore, TaskStoreFull
from .changes import ChangeHub
from .interaction import TaskAsker

if TYPE_CHECKING:
    from .context import Context
    from .settings import Settings

__all__ = ["TaskManager", "TaskHook", "NoTask", "TaskMode", "task_mode", "MAX_WATCHED_TASKS"]

log = logging.getLogger("mcpkit.server")

#: How a tool runs for a client that declared the extension: as a task when it can
#: (``"optional"``), only as a task (``"required"``: -32021 for other clients), as a task
#: from the moment its handler calls ``ctx.start_task()`` (``"deferred"``), or never (None).
TaskMode = Literal["optional", "required", "deferred"] | None
#: How many task ids one ``subscriptions/listen`` may watch.
MAX_WATCHED_TASKS: Final = 1000
_encode = msgspec.json.Encoder().encode
_WAITING: Final = "Waiting for the client's input"


def task_mode(task: bool | str) -> TaskMode:
    """The :data:`TaskMode` of ``@server.tool(task=...)``: True is ``"optional"``.
    Raises ``ValueError`` for anything else than a bool, ``"optional"``, ``"required"``
    or ``"deferred"``."""
    if task is True or task == "optional":
        return "optional"
    if task == "required" or task == "deferred":
        return task
    if task is False:
        return None
    raise ValueError("task must be True, False, 'optional', 'required' or 'deferred'")


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _questions(requests: dict[str, Any] | None) -> dict[str, InputRequest] | None:
    return msgspec.convert(requests, dict[str, InputRequest]) if requests else None


def _full() -> McpError:
    return McpError(INTERNAL_ERROR, "Too many tasks in progress: try again later", status=503)


def _principal() -> str | None:
    identity = CURRENT.get()
    return identity.principal if identity is not None else None


class _Running:
    """A task whose handler runs in this process: its latest record, its handler's
    asyncio task, its questions, and the handler's context."""

    __slots__ = ("asker", "ctx", "record", "work")

    def questions_changed(self, manager: TaskManager) -> Callable[[dict[str, Any] | None], Awaitable[None]]:
        """What the task's :class:`TaskAsker` calls when its open questions change: the
        task is ``input_required`` with them, or ``working`` again without."""

        async def publish(questions: dict[str, Any] | None) -> None:
            if questions:
                await manager._commit(self, status="input_required", status_message=_WAITING, input_requests=questions)
            else:
                await manager._commit(self, status="working", status_message=None, input_requests=None)

        return publish

    def __init__(self, record: TaskRecord, ctx: Context) -> None:
        self.record = record
        self.ctx = ctx
        self.work: asyncio.Task[Any] | None = None
        self.asker: TaskAsker | None = None


class NoTask:
    """What a task tool's :class:`~mcpkit.Context` holds when the call cannot become a
    task (the client did not declare the extension, the store is full): ``error`` says
    why, to ``ctx.start_task(required=True)``."""

    task_id: None = None

    def __init__(self, error: McpError) -> None:
        self._error = error

    async def start(self, required: bool) -> bool:
        """False; with ``required``, raises the reason."""
        if required:
            raise self._error
        return False


class TaskHook:
    """What a task tool's :class:`~mcpkit.Context` holds when the client declared the
    extension: how the call becomes a task (:meth:`start`)."""

    def __init__(self, manager: TaskManager, ctx: Context) -> None:
        self._manager = manager
        self._ctx = ctx
        self.task_id: str | None = None
        #: Set once the call is a task: it can be answered with the task's handle.
        self.detached: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        #: The asyncio task running the handler, when it runs on one of its own.
        self.work: asyncio.Task[Any] | None = None
        self._running: _Running | None = None

    async def start(self, required: bool) -> bool:
        """Make the call a task (once): write it to the store, switch the handler's
        questions to ``tasks/update`` and its notifications off. Returns False if the
        store is full (the call goes on as a plain call); with ``required``, raises
        ``McpError(-32603)`` (HTTP 503) instead."""
        if self.task_id is not None:
            return True
        manager = self._manager
        record = manager._new_record()
        try:
            await manager.store.create(record)
        except TaskStoreFull as exc:
            log.warning("no task created: %s", exc)
            if required:
                raise _full() from None
            return False
        running = self._running = _Running(record, self._ctx)
        running.asker = TaskAsker(running.questions_changed(manager))
        self.task_id = record.task_id
        self._ctx._asker = running.asker
        self._ctx._outbound = DROP  # progress and log messages are not sent for tasks
        manager._running[record.task_id] = running
        if self.work is not None:
            self.adopt(self.work)
        if not self.detached.done():
            self.detached.set_result(None)
        return True

    def adopt(self, work: asyncio.Task[Any]) -> None:
        """The handler runs on ``work``: watch it until it ends."""
        self.work = work
        if self._running is not None and self._running.work is None:
            self._running.work = work
            self._manager._watch(self._running)

    def created(self) -> Task:
        """The ``CreateTaskResult`` answering the call."""
        assert self._running is not None
        return self._manager._view(self._running.record, TASK_RESULT)

    async def report(self, message: str) -> None:
        """The handler's progress: the task's status message."""
        running = self._running
        if running is not None and running.record.status == "working":
            await self._manager._commit(running, status_message=message)


class TaskManager:
    """A server's tasks: creating them, running their handlers, answering ``tasks/get``,
    ``tasks/update`` and ``tasks/cancel``, and telling listeners of every change.
    ``ttl`` and ``poll_interval`` (seconds) are what new tasks get."""

    def __init__(
        self, store: TaskStore, hub: ChangeHub, settings: Settings, *, ttl: float = 3600.0, poll_interval: float = 1.0
    ) -> None:
        self.store = store
        self.hub = hub
        self.settings = settings
        self.ttl = ttl
        self.poll_interval = poll_interval
        self._running: dict[str, _Running] = {}
        self._watching: set[asyncio.Task[None]] = set()

    @staticmethod
    def offered(ctx: Context) -> bool:
        """Whether this request may become a task: modern era, extension declared."""
        return ctx.era == "modern" and declares_tasks(ctx.client_capabilities)

    # --- creating and running --------------------------------------------------------------------

    async def call_tool(
        self, mode: TaskMode, name: str, ctx: Context, run: Callable[[], Coroutine[Any, Any, CallToolResult]]
    ) -> Result:
        """``tools/call`` of task tool ``name`` (``mode`` not None): ``run()`` runs it.
        Returns its result, or the task's handle when the call became a task. Raises
        -32021 for a ``"required"`` tool and a client that did not declare the extension,
        -32603 (HTTP 503) for one when the store is full."""
        if not self.offered(ctx):
            missing = missing_tasks_extension(f"tool {flatten_text(name, 256)!r}")
            if mode == "required":
                raise missing
            ctx._task_hook = NoTask(missing)
            return await run()
        hook = ctx._task_hook = TaskHook(self, ctx)
        if mode != "deferred":
            if not await hook.start(required=mode == "required"):
                ctx._task_hook = NoTask(_full())
                return await run()
            hook.adopt(asyncio.get_running_loop().create_task(run(), name="mcpkit-task"))
            return hook.created()
        work = hook.work = asyncio.get_running_loop().create_task(run(), name="mcpkit-tool")
        try:
            await asyncio.wait((work, hook.detached), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            if not hook.detached.done():  # cancelled before it became a task: the call is over
                work.cancel()
            raise
        if hook.detached.done():
            return hook.created()
        result: CallToolResult = work.result()
        return result

    def _new_record(self) -> TaskRecord:
        import secrets  # not at import time: it pulls in hashlib and random

        now = time.time()
        return TaskRecord(
            task_id=secrets.token_urlsafe(18),
            status="working",
            created_at=now,
            updated_at=now,
            ttl=self.ttl,
            poll_interval=self.poll_interval,
            owner=_principal(),
        )

    def _watch(self, running: _Running) -> None:
        task = asyncio.get_running_loop().create_task(self._supervise(running), name="mcpkit-task-supervisor")
        self._watching.add(task)
        task.add_done_callback(self._watching.discard)

    async def _supervise(self, running: _Running) -> None:
        """Wait for the handler (within the task's time to live), then record how it
        ended. Cancelled with the server: the handler is cancelled too."""
        work = running.work
        assert work is not None
        try:
            done, _ = await asyncio.wait({work}, timeout=max(running.record.expires_at - time.time(), 0.0))
            if not done:  # past its time to live: the store forgets it, nobody will ask
                log.info("task %s outlived its time to live and was cancelled", running.record.task_id)
                work.cancel()
                await asyncio.wait({work})
            await self._conclude(running, work)
        except asyncio.CancelledError:
            work.cancel()
            raise
        finally:
            self._running.pop(running.record.task_id, None)
            running.ctx._task_hook = None
            running.ctx._finish()

    async def _conclude(self, running: _Running, work: asyncio.Task[Any]) -> None:
        changes: dict[str, Any]
        if work.cancelled():
            changes = {"status": "cancelled", "status_message": "The task was cancelled"}
        elif (exc := work.exception()) is not None:
            error = self._error(exc)
            changes = {"status": "failed", "status_message": error.message, "error": error.to_wire()}
        else:
            result = work.result()
            if isinstance(result, Result):
                result = msgspec.structs.replace(result, result_type="complete")
            changes = {"status": "completed", "status_message": None, "result": msgspec.to_builtins(result)}
        await self._commit(running, input_requests=None, **changes)

    def _error(self, exc: BaseException) -> McpError:
        """The JSON-RPC error a task's handler ended with (as the dispatcher maps it)."""
        expose, limit = self.settings.expose_internal_errors, self.settings.max_error_text
        if isinstance(exc, McpError):
            if exc.local:
                return internal_error(exc, "task handler for tools/call", expose=expose, limit=limit)
            return bounded(exc, limit)
        return MODERN.wire_error(exc, "tools/call", expose=expose, limit=limit)

    async def _commit(self, running: _Running, **changes: Any) -> None:
        """Save a new record of ``running`` with ``changes`` and tell its listeners. A
        terminal record is never changed again."""
        old = running.record
        if old.status in TERMINAL_STATUSES:
            return
        running.record = record = msgspec.structs.replace(old, updated_at=time.time(), version=old.version + 1, **changes)
        await self.store.save(record)
        self.hub.task_changed(record.task_id, _encode(self._view(record)))

    # --- the extension's requests ------------------------------------------------------------

    async def _find(self, ctx: Context, task_id: str) -> TaskRecord:
        """The task ``task_id`` as its owner may see it. Raises -32021 for a client that
        did not declare the extension, -32602 for a task that is unknown, expired, or
        someone else's."""
        if not self.offered(ctx):
            raise missing_tasks_extension("tasks/*")
        record = await self.store.get(task_id)
        if record is None or record.owner != _principal():
            raise McpError(INVALID_PARAMS, "Failed to retrieve task: Task not found (or expired)", status=400)
        return record

    async def get(self, ctx: Context, task_id: str) -> Task:
        """``tasks/get``: the task's state, its questions, result or error inlined."""
        return self._view(await self._find(ctx, task_id))

    async def update(self, ctx: Context, task_id: str, responses: dict[str, Any]) -> None:
        """``tasks/update``: answers to the task's questions (see :meth:`TaskAsker.answer`).
        Answers to a task whose handler runs in another process are dropped."""
        await self._find(ctx, task_id)
        running = self._running.get(task_id)
        if running is not None and running.asker is not None:
            await running.asker.answer(responses)

    async def cancel(self, ctx: Context, task_id: str) -> None:
        """``tasks/cancel``: cancel the handler (it becomes ``cancelled`` when it stops);
        a terminal task is left as it is. A task no process runs any more (its handler
        was lost with a restarted server) is marked cancelled at once."""
        record = await self._find(ctx, task_id)
        running = self._running.get(task_id)
        if running is not None and running.work is not None:
            running.work.cancel()
        elif record.status not in TERMINAL_STATUSES and running is None:
            orphan = _Running(record, ctx)
            await self._commit(orphan, status="cancelled", status_message="The task was cancelled", input_requests=None)

    async def visible(self, ctx: Context, task_ids: Iterable[str]) -> list[str]:
        """The ids among ``task_ids`` of tasks this client may watch (known, its own)."""
        principal = _principal()
        found = []
        for task_id in dict.fromkeys(task_ids):
            record = await self.store.get(task_id)
            if record is not None and record.owner == principal:
                found.append(task_id)
        return found

    def _view(self, record: TaskRecord, result_type: str | None = None) -> Task:
        """``record`` as the wire's task (``result_type`` "task" for a ``CreateTaskResult``)."""
        inline = result_type is None
        return Task(
            result_type=result_type,
            task_id=record.task_id,
            status=record.status,
            status_message=record.status_message,
            created_at=_iso(record.created_at),
            last_updated_at=_iso(record.updated_at),
            ttl_ms=max(round(record.ttl * 1000), 1),
            poll_interval_ms=max(round(record.poll_interval * 1000), 1),
            input_requests=_questions(record.input_requests) if inline else None,
            result=record.result if inline else None,
            error=record.error if inline else None,
        )
