"""The OAuth proxy's records in Redis: :class:`RedisProxyStore`, the
:class:`~mcpkit.auth.proxy.store.ProxyStore` of a deployment of several nodes, so that a
login begun on one node can end on another and a code or refresh token is used once
across all of them (docs/auth.md, "An OAuth proxy"; the ``redis`` extra).

A record is a string ``{prefix}:oauth:{kind}:{key}`` holding its JSON, with its time to
live as the key's expiry. The kind's live records are counted in a sorted set
``{prefix}:oauth-index:{kind}`` (member the key, score its expiry on Redis's clock; a name
no record's can be) that a Lua script prunes and checks before it writes, so a kind is
bounded across every node; the set's own expiry is only ever pushed later, past its
longest-lived member.
Taking is ``GETDEL``: atomic, so one of two concurrent takes wins.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from ...stores.errors import StoreUnavailable
from ...stores.redis.channels import FAILED
from .store import DEFAULT_LIMITS

if TYPE_CHECKING:
    from ...stores.redis import RedisStore

__all__ = ["RedisProxyStore"]

#: KEYS[1] the record, KEYS[2] the kind's index; ARGV the JSON, the TTL (ms), the limit,
#: the record's name in the index. Returns 1 when written, 0 when the kind is full.
_PUT: Final = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZREM', KEYS[2], ARGV[4])
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
redis.call('ZADD', KEYS[2], now + ttl, ARGV[4])
if redis.call('PTTL', KEYS[2]) < ttl + 1000 then
  redis.call('PEXPIRE', KEYS[2], ttl + 1000)
end
return 1
"""


class RedisProxyStore:
    """A :class:`~mcpkit.auth.proxy.store.ProxyStore` in the Redis of ``store`` (a
    :class:`~mcpkit.stores.redis.RedisStore`: its connection, prefix and timeout).
    ``limits`` bounds the live records of each kind, in all nodes together
    (:data:`~mcpkit.auth.proxy.store.DEFAULT_LIMITS`). Raises
    :class:`~mcpkit.StoreUnavailable` when Redis cannot be reached, answers too slowly or
    refuses a command."""

    def __init__(self, store: RedisStore, *, limits: Mapping[str, int] | None = None) -> None:
        self._redis = store.redis
        self._prefix = f"{store.prefix}:oauth"
        self._limits = dict(DEFAULT_LIMITS if limits is None else {**DEFAULT_LIMITS, **limits})
        self._put = store.redis.register_script(_PUT)

    def _key(self, kind: str, key: str) -> str:
        return f"{self._prefix}:{kind}:{key}"

    def _index(self, kind: str) -> str:
        return f"{self._prefix}-index:{kind}"

    async def put(self, kind: str, key: str, value: dict[str, Any], ttl: float) -> bool:
        """See :meth:`~mcpkit.auth.proxy.store.ProxyStore.put`: the kind's bound checked by the script."""
        limit = self._limits.get(kind, self._limits["default"])
        args = [json.dumps(value), str(max(1, int(ttl * 1000))), str(limit), key]
        try:
            written = await self._put(keys=[self._key(kind, key), self._index(kind)], args=args)
        except FAILED as exc:
            raise StoreUnavailable(f"the OAuth proxy's store is unreachable: {exc}") from None
        return bool(int(written))

    def _decoded(self, raw: Any) -> dict[str, Any] | None:
        if raw is None:
            return None
        try:
            value = json.loads(raw)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    async def get(self, kind: str, key: str) -> dict[str, Any] | None:
        """See :meth:`~mcpkit.auth.proxy.store.ProxyStore.get` (a record that is not JSON reads as none)."""
        try:
            raw = await self._redis.get(self._key(kind, key))
        except FAILED as exc:
            raise StoreUnavailable(f"the OAuth proxy's store is unreachable: {exc}") from None
        return self._decoded(raw)

    async def take(self, kind: str, key: str) -> dict[str, Any] | None:
        """See :meth:`~mcpkit.auth.proxy.store.ProxyStore.take`: ``GETDEL``."""
        try:
            raw = await self._redis.getdel(self._key(kind, key))
            await self._redis.zrem(self._index(kind), key)
        except FAILED as exc:
            raise StoreUnavailable(f"the OAuth proxy's store is unreachable: {exc}") from None
        return self._decoded(raw)

    async def delete(self, kind: str, key: str) -> None:
        """See :meth:`~mcpkit.auth.proxy.store.ProxyStore.delete`."""
        try:
            await self._redis.delete(self._key(kind, key))
            await self._redis.zrem(self._index(kind), key)
        except FAILED as exc:
            raise StoreUnavailable(f"the OAuth proxy's store is unreachable: {exc}") from None
