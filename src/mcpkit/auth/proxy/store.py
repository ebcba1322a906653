"""Where the OAuth proxy keeps its state (docs/auth.md, "An OAuth proxy"): the
:class:`ProxyStore` protocol and :class:`InMemoryProxyStore`.

Everything the proxy remembers is a small JSON record under a *kind* and a key, each with
its own time to live: the clients it registered (``client``), the logins under way
(``login``), its authorization codes (``code``), its refresh tokens (``refresh``, by
digest) and the marks of what was used or revoked (``used``, ``revoked``). Codes and
refresh tokens are *taken* — read and removed in one step — so that two requests with the
same one cannot both succeed. Each kind is bounded: a store full of live records refuses
another (:meth:`ProxyStore.put` returns False) rather than forget one early.
:class:`~mcpkit.auth.proxy.redis.RedisProxyStore` is the same over Redis, for several
nodes.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any, Final, Protocol, runtime_checkable

__all__ = ["ProxyStore", "InMemoryProxyStore", "DEFAULT_LIMITS", "RECORD_ID"]

#: What a key taken from a request (a ``client_id``, a login id) must look like before the
#: store is asked for it: what the proxy makes (``secrets.token_urlsafe``), nothing else.
RECORD_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,128}")

#: How many live records of each kind a store holds at most (others: ``default``).
#: The marks of what was used or revoked get more room than the records they protect: a
#: full ``used`` or ``revoked`` makes the token endpoint refuse rather than issue unguarded.
DEFAULT_LIMITS: Final[Mapping[str, int]] = {
    "client": 10_000, "login": 10_000, "code": 10_000, "used": 1_000_000, "revoked": 1_000_000, "default": 100_000,
}  # fmt: skip


@runtime_checkable
class ProxyStore(Protocol):
    """The proxy's records: JSON objects by (kind, key), each for ``ttl`` seconds. A store
    that cannot be reached raises :class:`~mcpkit.StoreUnavailable`."""

    async def put(self, kind: str, key: str, value: dict[str, Any], ttl: float) -> bool:
        """Keep ``value`` under ``(kind, key)`` for ``ttl`` seconds (replacing one that
        was there); False, and nothing kept, when the kind is full of live records."""
        ...

    async def get(self, kind: str, key: str) -> dict[str, Any] | None:
        """The live record under ``(kind, key)``, or None."""
        ...

    async def take(self, kind: str, key: str) -> dict[str, Any] | None:
        """The live record under ``(kind, key)``, removed in the same step: of two
        concurrent takes, one gets it and the other None."""
        ...

    async def delete(self, kind: str, key: str) -> None:
        """Forget the record under ``(kind, key)``, if any."""
        ...


class InMemoryProxyStore:
    """A :class:`ProxyStore` in this process's memory: one node, lost on restart.
    ``limits`` bounds the live records of each kind (:data:`DEFAULT_LIMITS`); expired
    records are dropped as new ones come. ``clock`` is ``time.monotonic`` unless given."""

    def __init__(self, *, limits: Mapping[str, int] | None = None, clock: Any = time.monotonic) -> None:
        self._limits = dict(DEFAULT_LIMITS if limits is None else {**DEFAULT_LIMITS, **limits})
        self._clock = clock
        self._kinds: dict[str, dict[str, tuple[float, dict[str, Any]]]] = {}

    def _records(self, kind: str) -> dict[str, tuple[float, dict[str, Any]]]:
        return self._kinds.setdefault(kind, {})

    def _limit(self, kind: str) -> int:
        return self._limits.get(kind, self._limits["default"])

    async def put(self, kind: str, key: str, value: dict[str, Any], ttl: float) -> bool:
        """See :meth:`ProxyStore.put`; expired records make room first."""
        records = self._records(kind)
        now = self._clock()
        records.pop(key, None)
        if len(records) >= self._limit(kind):
            for stale in [k for k, (until, _) in records.items() if until <= now]:
                del records[stale]
            if len(records) >= self._limit(kind):
                return False
        records[key] = (now + ttl, dict(value))
        return True

    async def get(self, kind: str, key: str) -> dict[str, Any] | None:
        """See :meth:`ProxyStore.get` (a copy: changing it changes nothing kept)."""
        records = self._records(kind)
        item = records.get(key)
        if item is None:
            return None
        if item[0] <= self._clock():
            del records[key]
            return None
        return dict(item[1])

    async def take(self, kind: str, key: str) -> dict[str, Any] | None:
        """See :meth:`ProxyStore.take` (one step: nothing awaits in between)."""
        value = await self.get(kind, key)
        self._records(kind).pop(key, None)
        return value

    async def delete(self, kind: str, key: str) -> None:
        """See :meth:`ProxyStore.delete`."""
        self._records(kind).pop(key, None)
