"""Tasks in Redis: :class:`RedisTaskStore`, the :class:`~mcpkit.stores.tasks.TaskStore`
of a deployment of several nodes (docs/tasks.md), so that ``tasks/get`` on any node
finds a task another node created.

A record is a JSON string under ``{prefix}:task:{id}`` that expires with the task; a
sorted set ``{prefix}:tasks`` (task ids by expiry) bounds the live tasks, a hash
``{prefix}:taskinfo`` keeps each live task's version, size and owner, and a hash
``{prefix}:taskusage`` what they add up to (bytes in all; tasks and bytes per owner),
so that the store is bounded in bytes too, in all and per principal. Creating and
saving are Lua scripts, each of which first forgets (a bounded number of) expired
tasks: a create is refused at a bound or for an id in use, and a save keeps the stored
record unless the new one has a higher ``version`` and fits.

Anything Redis answers with that is not ours — a key of the wrong type where a record
belongs, say — is a missing task when reading one, and a store fault otherwise
(:class:`~mcpkit.StoreUnavailable`), never an error of the request.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

import msgspec

from ..errors import StoreUnavailable
from ..tasks import TaskRecord, TaskStoreFull, per_principal, task_bytes
from .channels import FAILED, wrong_type

if TYPE_CHECKING:
    from . import RedisStore

__all__ = ["RedisTaskStore"]

_decode = msgspec.json.Decoder(TaskRecord).decode

#: Forgets up to 1,000 expired tasks, their info and their share of the usage:
#: KEYS[2] = index, KEYS[3] = info, KEYS[4] = usage; ``now`` the time. Owners are
#: "-" (none) or "+" and the principal.
_PURGE: Final = """
local function purge(now)
  local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, 1000)
  for _, id in ipairs(expired) do
    local info = redis.call('HGET', KEYS[3], id)
    if info then
      local _, size, owner = string.match(info, '^(%d+) (%d+) (.*)$')
      redis.call('HINCRBY', KEYS[4], 'bytes', -tonumber(size))
      if owner ~= '-' then
        if redis.call('HINCRBY', KEYS[4], 't' .. owner, -1) <= 0 then
          redis.call('HDEL', KEYS[4], 't' .. owner, 'b' .. owner)
        else
          redis.call('HINCRBY', KEYS[4], 'b' .. owner, -tonumber(size))
        end
      end
      redis.call('HDEL', KEYS[3], id)
    end
    redis.call('ZREM', KEYS[2], id)
  end
end
local function used(field)
  return tonumber(redis.call('HGET', KEYS[4], field) or '0')
end
"""
#: KEYS = record, index, info, usage; ARGV = json, ttl ms, expires at, now, task id,
#: version, bytes, owner, max tasks, max bytes, max tasks per owner, max bytes per owner.
#: Returns 1 (created), -1 (id in use), 0 (full: tasks), -2 (owner's tasks), -3 (full:
#: bytes), -4 (owner's bytes).
_CREATE: Final = (
    _PURGE
    + """
purge(ARGV[4])
if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[9]) then return 0 end
local size, owner = tonumber(ARGV[7]), ARGV[8]
if owner ~= '-' and used('t' .. owner) >= tonumber(ARGV[11]) then return -2 end
if used('bytes') + size > tonumber(ARGV[10]) then return -3 end
if owner ~= '-' and used('b' .. owner) + size > tonumber(ARGV[12]) then return -4 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[5])
redis.call('HSET', KEYS[3], ARGV[5], ARGV[6] .. ' ' .. size .. ' ' .. owner)
redis.call('HINCRBY', KEYS[4], 'bytes', size)
if owner ~= '-' then
  redis.call('HINCRBY', KEYS[4], 't' .. owner, 1)
  redis.call('HINCRBY', KEYS[4], 'b' .. owner, size)
end
return 1
"""
)
#: KEYS = record, index, info, usage; ARGV = json, version, ttl ms, expires at, task id,
#: bytes, now, max bytes, max bytes per owner. Returns 1 (saved), 0 (not newer, or
#: gone), -3 (full: bytes), -4 (owner's bytes).
_SAVE: Final = (
    _PURGE
    + """
purge(ARGV[7])
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local info = redis.call('HGET', KEYS[3], ARGV[5])
local version, stored, owner
if info then
  version, stored, owner = string.match(info, '^(%d+) (%d+) (.*)$')
  stored = tonumber(stored)
else  -- a record written without its info (by an older mcpkit): counted from now on
  version = cjson.decode(redis.call('GET', KEYS[1]))['version']
  stored, owner = 0, '-'
end
if tonumber(version) >= tonumber(ARGV[2]) then return 0 end
local size = tonumber(ARGV[6])
local growth = size - stored
if growth > 0 then
  if used('bytes') + growth > tonumber(ARGV[8]) then return -3 end
  if owner ~= '-' and used('b' .. owner) + growth > tonumber(ARGV[9]) then return -4 end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[5])
redis.call('HSET', KEYS[3], ARGV[5], ARGV[2] .. ' ' .. size .. ' ' .. owner)
redis.call('HINCRBY', KEYS[4], 'bytes', growth)
if owner ~= '-' then redis.call('HINCRBY', KEYS[4], 'b' .. owner, growth) end
return 1
"""
)


def _owner(record: TaskRecord) -> str:
    return "-" if record.owner is None else "+" + record.owner


class RedisTaskStore:
    """Task records in Redis; made by :class:`~mcpkit.stores.redis.RedisStore`
    (``store.tasks``). At most ``max_tasks`` live tasks (default 100,000) holding at most
    ``max_bytes`` (default 1 GiB), and for one principal at most
    ``max_tasks_per_principal`` and ``max_bytes_per_principal`` (default: a tenth of
    each), counted as :class:`~mcpkit.InMemoryTaskStore` counts them. ``clock`` gives the
    time in seconds since the epoch (every node's clock should agree). Every coroutine
    raises :class:`~mcpkit.StoreUnavailable` when Redis cannot be reached or fails the
    command."""

    def __init__(
        self,
        root: RedisStore,
        *,
        max_tasks: int = 100_000,
        max_bytes: int = 1024 * 1024 * 1024,
        max_tasks_per_principal: int | None = None,
        max_bytes_per_principal: int | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if max_tasks < 1 or max_bytes < 1:
            raise ValueError("max_tasks and max_task_bytes must be positive")
        self._redis = root.redis
        self._prefix = root.prefix
        self.max_tasks = max_tasks
        self.max_bytes = max_bytes
        self.max_tasks_per_principal = per_principal(max_tasks_per_principal, max_tasks)
        self.max_bytes_per_principal = per_principal(max_bytes_per_principal, max_bytes)
        self._clock = clock
        self._create = self._redis.register_script(_CREATE)
        self._save = self._redis.register_script(_SAVE)

    def _keys(self, task_id: str) -> list[str]:
        p = self._prefix
        return [f"{p}:task:{task_id}", f"{p}:tasks", f"{p}:taskinfo", f"{p}:taskusage"]

    def _ttl_ms(self, record: TaskRecord) -> int:
        return max(1, math.ceil((record.expires_at - self._clock()) * 1000))

    async def create(self, record: TaskRecord) -> None:
        """Raises :class:`TaskStoreFull` at a bound (``per_principal`` when it is the
        owner's) and ``ValueError`` for a ``task_id`` in use."""
        data = msgspec.json.encode(record)
        args: list[bytes | str | int | float] = [
            data, self._ttl_ms(record), record.expires_at, self._clock(), record.task_id, record.version,
            task_bytes(data, record), _owner(record), self.max_tasks, self.max_bytes,
            self.max_tasks_per_principal, self.max_bytes_per_principal,
        ]  # fmt: skip
        try:
            created = await self._create(keys=self._keys(record.task_id), args=args)
        except FAILED as exc:
            raise StoreUnavailable(f"the task store failed: {exc}") from None
        if created == -1:
            raise ValueError(f"task {record.task_id!r} exists")
        if created == 0:
            raise TaskStoreFull(f"the task store is full ({self.max_tasks} tasks)")
        if created == -2:
            raise TaskStoreFull(f"this principal has {self.max_tasks_per_principal} tasks, its bound", per_principal=True)
        self._refused(created)

    def _refused(self, code: object) -> None:
        """Raises the :class:`TaskStoreFull` of a script's byte refusal (-3, -4)."""
        if code == -3:
            raise TaskStoreFull(f"the task store is full ({self.max_bytes} bytes)")
        if code == -4:
            bound = self.max_bytes_per_principal
            raise TaskStoreFull(f"this principal's tasks would hold more than {bound} bytes, their bound", per_principal=True)

    async def get(self, task_id: str) -> TaskRecord | None:
        """The task's record; None if it is unknown, has expired, or what is stored
        under its key is not a task record."""
        try:
            data = await self._redis.get(self._keys(task_id)[0])
        except FAILED as exc:
            if wrong_type(exc):
                return None
            raise StoreUnavailable(f"the task store failed: {exc}") from None
        if not isinstance(data, bytes):
            return None
        try:
            record = _decode(data)
        except msgspec.DecodeError:
            return None
        return record if record.expires_at > self._clock() else None

    async def save(self, record: TaskRecord) -> None:
        """Raises :class:`TaskStoreFull` when the record would grow past a byte bound
        (the stored one is kept)."""
        data = msgspec.json.encode(record)
        args: list[bytes | str | int | float] = [
            data, record.version, self._ttl_ms(record), record.expires_at, record.task_id,
            task_bytes(data, record), self._clock(), self.max_bytes, self.max_bytes_per_principal,
        ]  # fmt: skip
        try:
            saved = await self._save(keys=self._keys(record.task_id), args=args)
        except FAILED as exc:
            raise StoreUnavailable(f"the task store failed: {exc}") from None
        self._refused(saved)
