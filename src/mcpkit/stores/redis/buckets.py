"""Token buckets in Redis: :class:`RedisBuckets`, the
:class:`~mcpkit.stores.buckets.BucketStore` of a deployment of several nodes, so that a
client's rate limit holds across all of them (docs/howto/middleware.md).

A bucket is a hash ``{prefix}:bucket:{key}`` of its tokens and the time it last changed,
which a Lua script refills and takes from atomically; it expires when it would be full
again, so idle buckets take no memory. The time is Redis's own (``TIME``), one clock for
every node, unless the caller gives one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from ..errors import StoreUnavailable
from .channels import FAILED

if TYPE_CHECKING:
    from . import RedisStore

__all__ = ["RedisBuckets"]

#: KEYS[1] the bucket; ARGV capacity, refill (a second), cost, now (negative: Redis's
#: TIME). Returns the seconds to wait, as a string ("0": taken).
_TAKE: Final = """
local capacity = tonumber(ARGV[1])
local refill = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local now = tonumber(ARGV[4])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then
  tokens = capacity
  at = now
end
if now > at then
  tokens = math.min(capacity, tokens + (now - at) * refill)
  at = now
end
local wait = 0
if tokens >= cost then
  tokens = tokens - cost
else
  wait = (cost - tokens) / refill
end
if tokens >= capacity then
  redis.call('DEL', KEYS[1])
else
  redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'at', string.format('%.17g', at))
  redis.call('PEXPIRE', KEYS[1], math.ceil((capacity - tokens) / refill * 1000) + 1000)
end
return string.format('%.17g', wait)
"""


class RedisBuckets:
    """Token buckets in Redis; made by :class:`~mcpkit.stores.redis.RedisStore`
    (``store.buckets``). Raises :class:`~mcpkit.StoreUnavailable` when Redis cannot be
    reached, answers too slowly or fails the script (a key of another type where a
    bucket belongs)."""

    def __init__(self, root: RedisStore) -> None:
        self._prefix = root.prefix
        self._take = root.redis.register_script(_TAKE)

    async def take(self, key: str, *, capacity: float, refill: float, cost: float, now: float | None = None) -> float:
        """See :meth:`~mcpkit.stores.buckets.BucketStore.take`."""
        args = [repr(float(capacity)), repr(float(refill)), repr(float(cost)), repr(-1.0 if now is None else float(now))]
        try:
            wait = await self._take(keys=[f"{self._prefix}:bucket:{key}"], args=args)
        except FAILED as exc:
            raise StoreUnavailable(f"the bucket store is unreachable: {exc}") from None
        return float(wait)
