"""The task store: where a server keeps its tasks — status, questions, result — for as
long as their time to live (docs/tasks.md).

The server writes a task here before it answers the call that created it, and every
``tasks/get`` reads it from here, so a store shared by several nodes (Redis, in the
multi-node work) lets any of them answer for any task. A store implements the
:class:`TaskStore` protocol; :class:`InMemoryTaskStore`, the default, serves one
process. Records are values: the server saves a new one for every change, and a
store keeps the newest by ``version``.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from typing import Any, Protocol

import msgspec

__all__ = ["TaskRecord", "TaskStore", "TaskStoreFull", "InMemoryTaskStore"]


class TaskRecord(msgspec.Struct, kw_only=True, frozen=True):
    """One task as a store keeps it (times in seconds since the epoch).

    ``owner`` is the principal that created it (None without authorization): a task is
    visible only to its owner. ``input_requests`` maps each open question's key to its
    ``{"method", "params"}``; ``result`` and ``error`` are JSON objects.
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

    @property
    def expires_at(self) -> float:
        """When the task is forgotten: ``created_at + ttl``."""
        return self.created_at + self.ttl


class TaskStoreFull(Exception):
    """The store holds as many live tasks as it may (``max_tasks``)."""


class TaskStore(Protocol):
    """Keeps task records until they expire (``created_at + ttl``).

    ``create`` returns once the record is durably stored — a ``get`` on any node finds
    it — and raises :class:`TaskStoreFull` at the store's bound. ``get`` returns None for
    a task it does not know or that has expired. ``save`` replaces the record with the
    same ``task_id`` if it is newer (a higher ``version``) and still there; otherwise it
    does nothing. None of them may block the event loop.
    """

    async def create(self, record: TaskRecord) -> None:
        """Store a new task; return once any node's ``get`` finds it. Raises
        :class:`TaskStoreFull` at the store's bound."""
        ...

    async def get(self, task_id: str) -> TaskRecord | None:
        """The task's newest record; None if it is unknown or has expired."""
        ...

    async def save(self, record: TaskRecord) -> None:
        """Replace the task's record with ``record`` if it is newer (higher ``version``)
        and the task is still stored; otherwise do nothing."""
        ...


class InMemoryTaskStore:
    """The task store of a single process: at most ``max_tasks`` live tasks (default
    10,000); expired ones are forgotten as new ones come (and are never returned).
    ``clock`` gives the time in seconds (for tests)."""

    def __init__(self, *, max_tasks: int = 10_000, clock: Callable[[], float] = time.time) -> None:
        if max_tasks < 1:
            raise ValueError("max_tasks must be positive")
        self.max_tasks = max_tasks
        self._clock = clock
        self._records: dict[str, TaskRecord] = {}
        self._expiry: list[tuple[float, str]] = []  # a heap of (expires_at, task_id)

    def __len__(self) -> int:
        return len(self._records)

    async def create(self, record: TaskRecord) -> None:
        """Raises :class:`TaskStoreFull` when ``max_tasks`` live tasks are stored, and
        ``ValueError`` for a ``task_id`` already in use."""
        self._purge()
        if record.task_id in self._records:
            raise ValueError(f"task {record.task_id!r} exists")
        if len(self._records) >= self.max_tasks:
            raise TaskStoreFull(f"the task store is full ({self.max_tasks} tasks)")
        self._records[record.task_id] = record
        heapq.heappush(self._expiry, (record.expires_at, record.task_id))

    async def get(self, task_id: str) -> TaskRecord | None:
        """The task's record; None if it is unknown or has expired."""
        record = self._records.get(task_id)
        if record is None or record.expires_at <= self._clock():
            return None
        return record

    async def save(self, record: TaskRecord) -> None:
        """Keep ``record`` if it is newer than the stored one (and that one is there)."""
        stored = self._records.get(record.task_id)
        if stored is None or stored.version >= record.version:
            return
        self._records[record.task_id] = record
        if record.expires_at != stored.expires_at:  # a new time to live: its old entry goes stale
            heapq.heappush(self._expiry, (record.expires_at, record.task_id))

    def _purge(self) -> None:
        """Forget every expired task (amortized: each heap entry is popped once)."""
        now = self._clock()
        while self._expiry and self._expiry[0][0] <= now:
            _, task_id = heapq.heappop(self._expiry)
            record = self._records.get(task_id)
            if record is not None and record.expires_at <= now:
                del self._records[task_id]
