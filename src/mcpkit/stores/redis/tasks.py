"""Tasks in Redis: :class:`RedisTaskStore`, the :class:`~mcpkit.stores.tasks.TaskStore`
of a deployment of several nodes (docs/tasks.md), so that ``tasks/get`` on any node
finds a task another node created.

A record is a JSON string under ``{prefix}:task:{id}`` that expires with the task; a
sorted set ``{prefix}:tasks`` (task ids by expiry) bounds the live tasks. Creating and
saving are Lua scripts: a create is refused at the bound or for an id in use, and a
save keeps the stored record unless the new one has a higher ``version``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

import msgspec

from ..sessions import StoreUnavailable
from ..tasks import TaskRecord, TaskStoreFull
from .channels import UNREACHABLE

if TYPE_CHECKING:
    from . import RedisStore

__all__ = ["RedisTaskStore"]

_decode = msgspec.json.Decoder(TaskRecord).decode

#: KEYS = record, index; ARGV = json, ttl ms, expires at, now, max tasks, task id.
_CREATE: Final = """
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[4])
if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[6])
return 1
"""
#: KEYS = record, index; ARGV = json, version, ttl ms, expires at, task id.
_SAVE: Final = """
local stored = redis.call('GET', KEYS[1])
if not stored then return 0 end
if tonumber(cjson.decode(stored)['version']) >= tonumber(ARGV[2]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[5])
return 1
"""


class RedisTaskStore:
    """Task records in Redis; made by :class:`~mcpkit.stores.redis.RedisStore`
    (``store.tasks``). At most ``max_tasks`` live tasks (default 100,000); ``clock`` gives
    the time in seconds since the epoch (every node's clock should agree). Every
    coroutine raises :class:`~mcpkit.StoreUnavailable` when Redis cannot be reached."""

    def __init__(self, root: RedisStore, *, max_tasks: int = 100_000, clock: Callable[[], float] = time.time) -> None:
        if max_tasks < 1:
            raise ValueError("max_tasks must be positive")
        self._redis = root.redis
        self._prefix = root.prefix
        self.max_tasks = max_tasks
        self._clock = clock
        self._create = self._redis.register_script(_CREATE)
        self._save = self._redis.register_script(_SAVE)

    def _keys(self, task_id: str) -> list[str]:
        return [f"{self._prefix}:task:{task_id}", f"{self._prefix}:tasks"]

    def _ttl_ms(self, record: TaskRecord) -> int:
        return max(1, math.ceil((record.expires_at - self._clock()) * 1000))

    async def create(self, record: TaskRecord) -> None:
        """Raises :class:`TaskStoreFull` at ``max_tasks`` live tasks and ``ValueError``
        for a ``task_id`` in use."""
        args: list[bytes | str | int | float] = [
            msgspec.json.encode(record), self._ttl_ms(record), record.expires_at, self._clock(), self.max_tasks, record.task_id
        ]
        try:
            created = await self._create(keys=self._keys(record.task_id), args=args)
        except UNREACHABLE as exc:
            raise StoreUnavailable(f"the task store is unreachable: {exc}") from None
        if created == -1:
            raise ValueError(f"task {record.task_id!r} exists")
        if created == 0:
            raise TaskStoreFull(f"the task store is full ({self.max_tasks} tasks)")

    async def get(self, task_id: str) -> TaskRecord | None:
        try:
            data = await self._redis.get(self._keys(task_id)[0])
        except UNREACHABLE as exc:
            raise StoreUnavailable(f"the task store is unreachable: {exc}") from None
        if not isinstance(data, bytes):
            return None
        try:
            record = _decode(data)
        except msgspec.DecodeError:
            return None
        return record if record.expires_at > self._clock() else None

    async def save(self, record: TaskRecord) -> None:
        args: list[bytes | str | int | float] = [
            msgspec.json.encode(record), record.version, self._ttl_ms(record), record.expires_at, record.task_id
        ]
        try:
            await self._save(keys=self._keys(record.task_id), args=args)
        except UNREACHABLE as exc:
            raise StoreUnavailable(f"the task store is unreachable: {exc}") from None
