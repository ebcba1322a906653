"""Token buckets for rate limiting (docs/howto/middleware.md): the :class:`BucketStore`
protocol that :class:`~mcpkit.middleware.RateLimit` takes its tokens from, and
:class:`InMemoryBuckets`, the store of one process. A deployment of several nodes shares
its buckets in Redis (:class:`~mcpkit.stores.redis.buckets.RedisBuckets`).

A bucket holds at most ``capacity`` tokens and gains ``refill`` tokens a second; a
request takes ``cost`` tokens, or, when the bucket holds fewer, takes none and learns
how long until it would hold enough. A bucket nobody took from is full.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol

__all__ = ["BucketStore", "InMemoryBuckets", "check_bucket"]


def check_bucket(capacity: float, refill: float, cost: float) -> None:
    """Raises ``ValueError`` unless ``capacity`` and ``refill`` are positive and ``cost``
    is positive and at most ``capacity`` (a cost above it could never be paid)."""
    if not (capacity > 0 and refill > 0 and 0 < cost <= capacity):
        raise ValueError("capacity and refill must be positive, and cost positive and at most capacity")


class BucketStore(Protocol):
    """Where the token buckets live."""

    async def take(self, key: str, *, capacity: float, refill: float, cost: float, now: float | None = None) -> float:
        """Take ``cost`` tokens from the bucket ``key`` (``capacity`` tokens at most, ``refill``
        a second): 0.0 when they were taken, else the seconds until the bucket holds
        ``cost`` (nothing taken). ``now`` is the time in seconds on the clock the
        store's callers share (None: the store's own). Raises
        :class:`~mcpkit.StoreUnavailable` when a shared store cannot answer. On
        cancellation nothing or everything was taken."""
        ...


class InMemoryBuckets:
    """The buckets of one process, at most ``max_keys`` of them: past it the bucket used
    least recently is forgotten (it counts as full again). ``clock`` (seconds,
    monotonic) is the time when a caller gives none. Raises ``ValueError`` for a
    ``max_keys`` below 1."""

    def __init__(self, *, max_keys: int = 100_000, clock: Callable[[], float] = time.monotonic) -> None:
        if max_keys < 1:
            raise ValueError("max_keys must be at least 1")
        self.max_keys = max_keys
        self._clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tokens, at)

    def __len__(self) -> int:
        return len(self._buckets)

    async def take(self, key: str, *, capacity: float, refill: float, cost: float, now: float | None = None) -> float:
        """See :meth:`BucketStore.take`; never raises."""
        at = self._clock() if now is None else now
        tokens, then = self._buckets.pop(key, (capacity, at))
        if at > then:
            tokens, then = min(capacity, tokens + (at - then) * refill), at
        wait = 0.0
        if tokens >= cost:
            tokens -= cost
        else:
            wait = (cost - tokens) / refill
        if tokens < capacity:  # a full bucket is the same as none
            self._buckets[key] = (tokens, then)
            if len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)
        return wait
