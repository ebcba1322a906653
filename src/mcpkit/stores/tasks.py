"""The task store: where a server keeps its tasks — status, questions, result — for as
long as their time to live (docs/tasks.md).

The server writes a task here before it answers the call that created it, and every
``tasks/get`` reads it from here, so a store shared by several nodes (Redis, in the
multi-node work) lets any of them answer for any task. A store implements the
:class:`TaskStore` protocol; :class:`InMemoryTaskStore`, the default, serves one
process. Records are values: the server saves a new one for every change, and a
store keeps the newest by ``version``.

A store is bounded in tasks and in bytes — a task's record as JSON, plus what its
handler holds while it runs (``held_bytes``: its call's arguments) — in all and per
principal (the ``owner``), so that one client cannot fill it for everyone: a store
refuses a new task, or a record that would grow past a bound, with
:class:`TaskStoreFull` (the server then answers the call without a task, or fails the
task with an error that says why).
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from typing import Any, Final, Protocol

import msgspec

__all__ = ["TaskRecord", "TaskStore", "TaskStoreFull", "InMemoryTaskStore", "MIN_TASK_BYTES", "task_bytes", "per_principal"]


class TaskRecord(msgspec.Struct, kw_only=True, frozen=True):
    """One task as a store keeps it (times in seconds since the epoch).

    ``owner`` is the principal that created it (None without authorization): a task is
    visible only to its owner. ``input_requests`` maps each open question's key to its
    ``{"method", "params"}``; ``result`` and ``error`` are JSON objects. ``held_bytes``
    is what the task holds outside its record while its handler runs (the call's
    arguments, as JSON): a store counts it with the record against its byte bounds.
    """

    task_id: str
    status: str
    created_at: float
    updated_at: float
    ttl: float
    poll_interval: float
    status_message: str | None = None
    input_requests: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    owner: str | None = None
    #: Grows with every change; a store never replaces a record with an older one.
    version: int = 0
    held_bytes: int = 0

    @property
    def expires_at(self) -> float:
        """When the task is forgotten: ``created_at + ttl``."""
        return self.created_at + self.ttl


class TaskStoreFull(Exception):
    """The store cannot take a new task, or a record's growth: it is at one of its bounds
    (live tasks, bytes), in all or — ``per_principal`` — for the task's principal."""

    def __init__(self, message: str, *, per_principal: bool = False) -> None:
        super().__init__(message)
        self.per_principal = per_principal


#: Bytes every task counts at least, whatever its record: a record that small (a task
#: failed with a short error, say) can always replace the one stored.
MIN_TASK_BYTES: Final = 2048


def task_bytes(data: bytes, record: TaskRecord) -> int:
    """What a task counts against a store's byte bounds: its record as JSON (``data``)
    and what it holds while it runs, at least :data:`MIN_TASK_BYTES`."""
    return max(len(data) + max(record.held_bytes, 0), MIN_TASK_BYTES)


def per_principal(bound: int | None, overall: int) -> int:
    """A per-principal bound: the one given, else a tenth of the overall one (at least 1).
    Raises ``ValueError`` for one that is not positive."""
    if bound is None:
        return max(1, overall // 10)
    if bound < 1:
        raise ValueError("per-principal bounds must be positive")
    return bound


class TaskStore(Protocol):
    """Keeps task records until they expire (``created_at + ttl``).

    ``create`` returns once the record is durably stored — a ``get`` on any node finds
    it — and raises :class:`TaskStoreFull` at the store's bounds. ``get`` returns None
    for a task it does not know or that has expired. ``save`` replaces the record with
    the same ``task_id`` if it is newer (a higher ``version``) and still there; otherwise
    it does nothing; it raises :class:`TaskStoreFull` (and keeps the stored record) when
    the new record would take the store past a byte bound. None of them may block the
    event loop; a shared store raises :class:`~mcpkit.StoreUnavailable` when it cannot be
    reached (or answers with something that is not ours).
    """

    async def create(self, record: TaskRecord) -> None:
        """Store a new task; return once any node's ``get`` finds it. Raises
        :class:`TaskStoreFull` at the store's bounds."""
        ...

    async def get(self, task_id: str) -> TaskRecord | None:
        """The task's newest record; None if it is unknown or has expired."""
        ...

    async def save(self, record: TaskRecord) -> None:
        """Replace the task's record with ``record`` if it is newer (higher ``version``)
        and the task is still stored; otherwise do nothing. Raises :class:`TaskStoreFull`
        when the record would grow past a byte bound (the stored one is kept)."""
        ...


def _encoded(record: TaskRecord) -> bytes:
    """``record`` as JSON, in a block of its own size (the encoder's may be half as big
    again: kept for an hour, that would cost more than is counted)."""
    return bytes(memoryview(msgspec.json.encode(record)))


class _Kept:
    """A stored task: its record as JSON, and what the bounds count of it."""

    __slots__ = ("bytes", "data", "expires_at", "owner", "version")

    def __init__(self, data: bytes, record: TaskRecord) -> None:
        self.data = data
        self.owner = record.owner
        self.expires_at = record.expires_at
        self.version = record.version
        self.bytes = task_bytes(data, record)


_decode: Final = msgspec.json.Decoder(TaskRecord).decode


class InMemoryTaskStore:
    """The task store of a single process: at most ``max_tasks`` live tasks (default
    10,000) holding at most ``max_bytes`` (default 256 MiB; see :class:`TaskRecord`'s
    ``held_bytes``), and for one principal at most ``max_tasks_per_principal`` and
    ``max_bytes_per_principal`` (default: a tenth of each; tasks without an owner — no
    authorization — count only in all). Records are kept as JSON, so what they cost is
    what is counted. Expired tasks are forgotten as new ones come (and are never
    returned). ``clock`` gives the time in seconds (for tests). Raises ``ValueError``
    for a bound that is not positive."""

    def __init__(
        self,
        *,
        max_tasks: int = 10_000,
        max_bytes: int = 256 * 1024 * 1024,
        max_tasks_per_principal: int | None = None,
        max_bytes_per_principal: int | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if max_tasks < 1 or max_bytes < 1:
            raise ValueError("max_tasks and max_bytes must be positive")
        self.max_tasks = max_tasks
        self.max_bytes = max_bytes
        self.max_tasks_per_principal = per_principal(max_tasks_per_principal, max_tasks)
        self.max_bytes_per_principal = per_principal(max_bytes_per_principal, max_bytes)
        self._clock = clock
        self._records: dict[str, _Kept] = {}
        self._expiry: list[tuple[float, str]] = []  # a heap of (expires_at, task_id)
        self._bytes = 0
        self._tasks_of: dict[str, int] = {}  # live tasks per owner
        self._bytes_of: dict[str, int] = {}  # their bytes

    def __len__(self) -> int:
        return len(self._records)

    @property
    def bytes(self) -> int:
        """What the live tasks count against ``max_bytes``."""
        return self._bytes

    async def create(self, record: TaskRecord) -> None:
        """Raises :class:`TaskStoreFull` at ``max_tasks`` live tasks or when the task
        would take the store past ``max_bytes`` (``per_principal`` when the bound is the
        owner's), and ``ValueError`` for a ``task_id`` already in use."""
        self._purge()
        if record.task_id in self._records:
            raise ValueError(f"task {record.task_id!r} exists")
        kept = _Kept(_encoded(record), record)
        owner = kept.owner
        if len(self._records) >= self.max_tasks:
            raise TaskStoreFull(f"the task store is full ({self.max_tasks} tasks)")
        if owner is not None and self._tasks_of.get(owner, 0) >= self.max_tasks_per_principal:
            raise TaskStoreFull(f"this principal has {self.max_tasks_per_principal} tasks, its bound", per_principal=True)
        self._check_growth(owner, kept.bytes)
        self._records[record.task_id] = kept
        heapq.heappush(self._expiry, (kept.expires_at, record.task_id))
        self._count(owner, 1, kept.bytes)

    async def get(self, task_id: str) -> TaskRecord | None:
        """The task's record; None if it is unknown or has expired."""
        kept = self._records.get(task_id)
        if kept is None or kept.expires_at <= self._clock():
            return None
        return _decode(kept.data)

    async def save(self, record: TaskRecord) -> None:
        """Keep ``record`` if it is newer than the stored one (and that one is there).
        Raises :class:`TaskStoreFull` (the stored record stays) when it would take the
        store, or its owner's tasks, past a byte bound."""
        self._purge()
        stored = self._records.get(record.task_id)
        if stored is None or stored.version >= record.version:
            return
        kept = _Kept(_encoded(record), record)
        kept.owner = stored.owner  # a task's owner never changes
        growth = kept.bytes - stored.bytes
        if growth > 0:
            self._check_growth(kept.owner, growth)
        self._records[record.task_id] = kept
        self._count(kept.owner, 0, growth)
        if kept.expires_at != stored.expires_at:  # a new time to live: its old entry goes stale
            heapq.heappush(self._expiry, (kept.expires_at, record.task_id))

    def _check_growth(self, owner: str | None, growth: int) -> None:
        """Raises :class:`TaskStoreFull` if ``growth`` more bytes would pass a bound."""
        if self._bytes + growth > self.max_bytes:
            raise TaskStoreFull(f"the task store is full ({self.max_bytes} bytes)")
        if owner is not None and self._bytes_of.get(owner, 0) + growth > self.max_bytes_per_principal:
            bound = self.max_bytes_per_principal
            raise TaskStoreFull(f"this principal's tasks would hold more than {bound} bytes, their bound", per_principal=True)

    def _count(self, owner: str | None, tasks: int, size: int) -> None:
        self._bytes += size
        if owner is None:
            return
        left = self._tasks_of.get(owner, 0) + tasks
        if left:
            self._tasks_of[owner] = left
            self._bytes_of[owner] = self._bytes_of.get(owner, 0) + size
        else:
            self._tasks_of.pop(owner, None)
            self._bytes_of.pop(owner, None)

    def _purge(self) -> None:
        """Forget every expired task (amortized: each heap entry is popped once)."""
        now = self._clock()
        while self._expiry and self._expiry[0][0] <= now:
            _, task_id = heapq.heappop(self._expiry)
            kept = self._records.get(task_id)
            if kept is not None and kept.expires_at <= now:
                del self._records[task_id]
                self._count(kept.owner, -1, -kept.bytes)
