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

The store is bounded (docs/limits.md): a call that would take it past a bound, in all or
for its principal, is not made a task (a ``task="required"`` tool's call gets -32603
with HTTP status 503, or 429 for the principal's own bound); a result the store cannot
take fails its task with -32603 saying so. A store that cannot be reached is the
dispatcher's 503.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Iterable
from datetime import UTC, datetime
from typing import Any, Final

import msgspec

from ..auth.identity import CURRENT
from ..protocol.errors import INTERNAL_ERROR, INVALID_PARAMS, McpError, flatten_text
from ..protocol.interactive import InputRequest
from ..protocol.tasks import TASK_RESULT, TERMINAL_STATUSES, Task, declares_tasks, missing_tasks_extension
from ..protocol.types import CallToolResult, Result
from ..protocol.wire_errors import bounded, internal_error
from ..stores.errors import StoreUnavailable
from ..stores.tasks import TaskRecord, TaskStore, TaskStoreFull
from .changes import ChangeHub
from .context import Call, Context
from .definitions.options import TaskMode
from .interaction import Asker, TaskAsker
from .settings import Settings

__all__ = ["TaskManager", "TaskOffer", "NoTask", "RunningTask"]

log = logging.getLogger("mcpkit.server")

_encode = msgspec.json.Encoder().encode
_WAITING: Final = "Waiting for the client's input"


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _questions(requests: dict[str, Any] | None) -> dict[str, InputRequest] | None:
    return msgspec.convert(requests, dict[str, InputRequest]) if requests else None


def _full(exc: TaskStoreFull | None = None) -> McpError:
    """The error of a call that must be a task and cannot: HTTP 429 when the bound is the
    principal's own, else 503."""
    if exc is None:
        return McpError(INTERNAL_ERROR, "Too many tasks in progress: try again later", status=503)
    status = 429 if exc.per_principal else 503
    return McpError(INTERNAL_ERROR, f"Too many tasks in progress: {exc}; try again later", status=status)


def _principal() -> str | None:
    identity = CURRENT.get()
    return identity.principal if identity is not None else None


class RunningTask:
    """A task whose record this process writes: its latest record, and — when its
    handler runs here — the call it serves, the handler's asyncio task and the asker of
    its questions (whose changes make the task ``input_required`` or ``working``)."""

    __slots__ = ("asker", "call", "manager", "record", "work")

    def __init__(self, manager: TaskManager, record: TaskRecord, call: Call | None) -> None:
        self.manager = manager
        self.record = record
        self.call = call
        self.work: asyncio.Task[Any] | None = None
        self.asker = TaskAsker(self._questions_changed)

    @property
    def task_id(self) -> str:
        return self.record.task_id

    async def _questions_changed(self, questions: dict[str, Any] | None) -> None:
        if questions:
            await self.manager.commit(self, status="input_required", status_message=_WAITING, input_requests=questions)
        else:
            await self.manager.commit(self, status="working", status_message=None, input_requests=None)


class NoTask:
    """The :class:`~mcpkit.server.context.TaskHook` of a task tool's call that cannot
    become a task (the client did not declare the extension, the store is full):
    ``error`` says why, to ``ctx.start_task(required=True)``."""

    task_id: None = None

    def __init__(self, error: McpError) -> None:
        self._error = error

    async def start(self, required: bool) -> Asker | None:
        """None; with ``required``, raises the reason."""
        if required:
            raise self._error
        return None

    async def report(self, message: str) -> None:
        """Nothing: there is no task to report to."""


class TaskOffer:
    """The :class:`~mcpkit.server.context.TaskHook` of a task tool's call when the
    client declared the extension: how the call becomes a task (:meth:`start`), and
    what the manager waits on meanwhile (``detached``, ``work``)."""

    def __init__(self, manager: TaskManager, call: Call) -> None:
        self._manager = manager
        self._call = call
        self.task_id: str | None = None
        #: Why the store refused the task (None: it did not).
        self.refused: TaskStoreFull | None = None
        #: Set once the call is a task: it can be answered with the task's handle.
        self.detached: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        #: The asyncio task running the handler, when it runs on one of its own.
        self.work: asyncio.Task[Any] | None = None
        self._running: RunningTask | None = None

    async def start(self, required: bool) -> Asker | None:
        """Make the call a task (once): write it to the store and return the asker of
        its questions (``tasks/update``). Returns None if the store is full (the call
        goes on as a plain call); with ``required``, raises ``McpError(-32603)`` (HTTP
        503, or 429 at the principal's own bound) instead. Raises
        :class:`~mcpkit.StoreUnavailable` when the store cannot be reached. Cancelled
        while the store writes, the call stays a plain call."""
        if self._running is not None:
            return self._running.asker
        try:
            running = await self._manager.open(self._call)
        except TaskStoreFull as exc:
            log.warning("no task created: %s", exc)
            self.refused = exc
            if required:
                raise _full(exc) from None
            return None
        self._running = running
        self.task_id = running.task_id
        if self.work is not None:
            self.adopt(self.work)
        if not self.detached.done():
            self.detached.set_result(None)
        return running.asker

    def adopt(self, work: asyncio.Task[Any]) -> None:
        """The handler runs on ``work``: once the call is a task, watch it until it ends."""
        self.work = work
        running = self._running
        if running is not None and running.work is None:
            running.work = work
            self._manager.watch(running)

    def created(self) -> Task:
        """The ``CreateTaskResult`` answering the call."""
        assert self._running is not None
        return self._manager.view(self._running.record, TASK_RESULT)

    async def report(self, message: str) -> None:
        """The handler's progress: the task's status message."""
        running = self._running
        if running is not None and running.record.status == "working":
            try:
                await self._manager.commit(running, status_message=message)
            except TaskStoreFull as exc:  # the message is dropped, the task goes on
                log.info("task %s: a status message was not kept: %s", running.task_id, exc)


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
        self._running: dict[str, RunningTask] = {}
        self._watching: set[asyncio.Task[None]] = set()

    @staticmethod
    def offered(ctx: Context, call: Call) -> bool:
        """Whether this request may become a task: its era has the extension, and the
        client declared it."""
        return call.policy.tasks_extension and declares_tasks(ctx.client_capabilities)

    # --- creating and running --------------------------------------------------------------------

    async def call_tool(
        self, mode: TaskMode, name: str, ctx: Context, call: Call, run: Callable[[], Coroutine[Any, Any, CallToolResult]]
    ) -> Result:
        """``tools/call`` of task tool ``name`` (``mode`` not None): ``run()`` runs it.
        Returns its result, or the task's handle when the call became a task. Raises
        -32021 for a ``"required"`` tool and a client that did not declare the extension,
        -32603 (HTTP 503) for one when the store is full. Cancelled before the call
        became a task, the handler is cancelled; after, it goes on (``tasks/cancel``
        stops it)."""
        if not self.offered(ctx, call):
            missing = missing_tasks_extension(f"tool {flatten_text(name, 256)!r}")
            if mode == "required":
                raise missing
            call.task = NoTask(missing)
            return await run()
        offer = TaskOffer(self, call)
        call.task = offer
        if mode != "deferred":
            if not await ctx.start_task(required=mode == "required"):
                call.task = NoTask(_full(offer.refused))
                return await run()
            offer.adopt(asyncio.get_running_loop().create_task(run(), name="mcpkit-task"))
            return offer.created()
        work = offer.work = asyncio.get_running_loop().create_task(run(), name="mcpkit-tool")
        try:
            await asyncio.wait((work, offer.detached), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            if not offer.detached.done():  # cancelled before it became a task: the call is over
                work.cancel()
            raise
        if offer.detached.done():
            return offer.created()
        result: CallToolResult = work.result()
        return result

    async def open(self, call: Call) -> RunningTask:
        """A new task for ``call``, written to the store and known here as running; it
        counts the call's params against the store's byte bounds while it runs. Raises
        :class:`~mcpkit.stores.tasks.TaskStoreFull` at the store's bounds."""
        import secrets  # not at import time: it pulls in hashlib and random

        now = time.time()
        record = TaskRecord(
            task_id=secrets.token_urlsafe(18),
            status="working",
            created_at=now,
            updated_at=now,
            ttl=self.ttl,
            poll_interval=self.poll_interval,
            owner=_principal(),
            held_bytes=call.params_size,
        )
        await self.store.create(record)
        running = self._running[record.task_id] = RunningTask(self, record, call)
        return running

    def watch(self, running: RunningTask) -> None:
        """Supervise ``running``'s handler (its ``work``) on a task of its own, until it ends."""
        task = asyncio.get_running_loop().create_task(self._supervise(running), name="mcpkit-task-supervisor")
        self._watching.add(task)
        task.add_done_callback(self._watching.discard)

    async def _supervise(self, running: RunningTask) -> None:
        """Wait for the handler (within the task's time to live), then record how it
        ended (a store that cannot be reached, or cannot take even the failure, then
        leaves the task as it was stored: logged). Cancelled with the server: the handler is cancelled too."""
        work = running.work
        assert work is not None
        try:
            done, _ = await asyncio.wait({work}, timeout=max(running.record.expires_at - time.time(), 0.0))
            if not done:  # past its time to live: the store forgets it, nobody will ask
                log.info("task %s outlived its time to live and was cancelled", running.task_id)
                work.cancel()
                await asyncio.wait({work})
            await self._conclude(running, work)
        except asyncio.CancelledError:
            work.cancel()
            raise
        except (StoreUnavailable, TaskStoreFull) as exc:
            log.warning("task %s: how it ended could not be stored: %s", running.task_id, exc)
        finally:
            self._running.pop(running.task_id, None)
            if running.call is not None:
                running.call.end_task()

    async def _conclude(self, running: RunningTask, work: asyncio.Task[Any]) -> None:
        changes: dict[str, Any]
        if work.cancelled():
            changes = {"status": "cancelled", "status_message": "The task was cancelled"}
        elif (exc := work.exception()) is not None:
            error = self._error(exc, running)
            changes = {"status": "failed", "status_message": error.message, "error": error.to_wire()}
        else:
            result = work.result()
            if isinstance(result, Result):
                result = msgspec.structs.replace(result, result_type="complete")
            changes = {"status": "completed", "status_message": None, "result": msgspec.to_builtins(result)}
        try:
            await self.commit(running, input_requests=None, held_bytes=0, **changes)
        except TaskStoreFull as exc:  # its result does not fit: the task fails, saying why
            log.warning("task %s: its outcome could not be kept: %s", running.task_id, exc)
            error = McpError(INTERNAL_ERROR, f"The task's {changes['status']} result could not be kept: {exc}")
            failed = {"status": "failed", "status_message": error.message, "error": error.to_wire()}
            await self.commit(running, input_requests=None, held_bytes=0, **failed)

    def _error(self, exc: BaseException, running: RunningTask) -> McpError:
        """The JSON-RPC error a task's handler ended with (as the dispatcher maps it)."""
        expose, limit = self.settings.expose_internal_errors, self.settings.max_error_text
        if isinstance(exc, McpError):
            if exc.local:
                return internal_error(exc, "task handler for tools/call", expose=expose, limit=limit)
            return bounded(exc, limit)
        assert running.call is not None  # a handler that ran here
        return running.call.policy.wire_error(exc, "tools/call", expose=expose, limit=limit)

    async def commit(self, running: RunningTask, **changes: Any) -> None:
        """Save a new record of ``running`` with ``changes`` and tell its listeners. A
        terminal record is never changed again. Raises what the store raises
        (:class:`~mcpkit.stores.tasks.TaskStoreFull` for a record that does not fit,
        :class:`~mcpkit.StoreUnavailable`); then the record stays what it was, unless
        another change came meanwhile."""
        old = running.record
        if old.status in TERMINAL_STATUSES:
            return
        running.record = record = msgspec.structs.replace(old, updated_at=time.time(), version=old.version + 1, **changes)
        try:
            await self.store.save(record)
        except BaseException:
            if running.record is record:
                running.record = old
            raise
        self.hub.task_changed(record.task_id, _encode(self.view(record)))

    # --- the extension's requests ------------------------------------------------------------

    async def _find(self, ctx: Context, call: Call, task_id: str) -> TaskRecord:
        """The task ``task_id`` as its owner may see it. Raises -32021 for a client that
        did not declare the extension, -32602 for a task that is unknown, expired, or
        someone else's."""
        if not self.offered(ctx, call):
            raise missing_tasks_extension("tasks/*")
        record = await self.store.get(task_id)
        if record is None or record.owner != _principal():
            raise McpError(INVALID_PARAMS, "Failed to retrieve task: Task not found (or expired)", status=400)
        return record

    async def get(self, ctx: Context, call: Call, task_id: str) -> Task:
        """``tasks/get``: the task's state, its questions, result or error inlined.
        Raises as :meth:`_find` does."""
        return self.view(await self._find(ctx, call, task_id))

    async def update(self, ctx: Context, call: Call, task_id: str, responses: dict[str, Any]) -> None:
        """``tasks/update``: answers to the task's questions (see :meth:`TaskAsker.answer`).
        Answers to a task whose handler runs in another process are dropped. Raises as
        :meth:`_find` does, and -32602 for an answer of the wrong shape."""
        await self._find(ctx, call, task_id)
        running = self._running.get(task_id)
        if running is not None:
            await running.asker.answer(responses)

    async def cancel(self, ctx: Context, call: Call, task_id: str) -> None:
        """``tasks/cancel``: cancel the handler (it becomes ``cancelled`` when it stops);
        a terminal task is left as it is. A task no process runs any more (its handler
        was lost with a restarted server) is marked cancelled at once. Raises as
        :meth:`_find` does."""
        record = await self._find(ctx, call, task_id)
        running = self._running.get(task_id)
        if running is not None and running.work is not None:
            running.work.cancel()
        elif record.status not in TERMINAL_STATUSES and running is None:
            orphan = RunningTask(self, record, None)
            await self.commit(orphan, status="cancelled", status_message="The task was cancelled", input_requests=None)

    async def visible(self, task_ids: Iterable[str]) -> list[str]:
        """The ids among ``task_ids`` of tasks this client may watch (known, its own)."""
        principal = _principal()
        found = []
        for task_id in dict.fromkeys(task_ids):
            record = await self.store.get(task_id)
            if record is not None and record.owner == principal:
                found.append(task_id)
        return found

    def view(self, record: TaskRecord, result_type: str | None = None) -> Task:
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
