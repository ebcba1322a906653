"""Rate limiting: :class:`RateLimit`, a token bucket per principal, session, client or
key of your own, in one process (:class:`~mcpkit.stores.buckets.InMemoryBuckets`) or
shared by several nodes (:class:`~mcpkit.stores.redis.buckets.RedisBuckets`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from typing import Any, Final, Literal

from ..protocol.errors import McpError
from ..server.context import Context
from ..server.registry import CallNext
from ..stores.buckets import BucketStore, InMemoryBuckets, check_bucket
from .outcome import principal_of

__all__ = ["RateLimit", "RATE_LIMITED", "KeyRule"]

#: The JSON-RPC code of a request refused by a rate limit: the code the legacy era gives
#: HTTP 429 (docs/errors.md), which mcpkit's client retries after ``data.retryAfter``.
RATE_LIMITED: Final = -32029
#: What a request is counted under: ``principal`` (the authenticated subject), ``session``
#: (:attr:`Context.session_id`), ``client`` (the client's ``clientInfo.name``), or a
#: function of the request's Context returning the key (None: not limited).
KeyRule = Literal["principal", "session", "client"] | Callable[[Context], str | None]
#: Requests never limited: what a client needs to stay connected and learn the server.
_EXEMPT: Final = frozenset({"ping", "server/discover"})


class RateLimit:
    """Middleware that lets each key make ``capacity`` requests at once and ``refill``
    more a second (a token bucket: bursts up to ``capacity``, ``refill`` a second on
    average), each request costing ``cost`` tokens.

    ``key`` chooses the bucket (:data:`KeyRule`); a request without one — no
    authenticated principal, no legacy session (the modern era has none), no
    ``clientInfo`` — is counted in one bucket shared by all such requests (``"-"``),
    unless a function returns None for it, which leaves it unlimited. ``methods``
    limits only those methods (default: every method but ``ping`` and
    ``server/discover``). ``store`` holds the buckets (default: this process's
    :class:`~mcpkit.stores.buckets.InMemoryBuckets`; ``RedisStore(...).buckets`` for
    several nodes); ``prefix`` starts each bucket's name, so that several limits can
    share a store. ``clock`` (seconds) gives the time; None leaves it to the store (a
    monotonic clock, or Redis's own).

    A request over the limit is refused with ``McpError(-32029, "Rate limit exceeded
    …", {"retryAfter": seconds})`` — the whole seconds until the bucket holds ``cost``
    again, rounded up — and HTTP status 429 (over HTTP, ``Retry-After`` says the same):
    the handler does not run. Raises
    :class:`~mcpkit.StoreUnavailable` (answered 503) when a shared store cannot answer.
    Raises ``ValueError`` at construction for a non-positive ``capacity`` or
    ``refill``, a ``cost`` outside (0, ``capacity``], or an unknown ``key``. Cancelled
    while taking from a shared store, the request took nothing or its whole cost; the
    ``CancelledError`` propagates.
    """

    def __init__(
        self,
        capacity: float,
        refill: float,
        *,
        key: KeyRule = "principal",
        methods: Collection[str] | None = None,
        cost: float = 1.0,
        store: BucketStore | None = None,
        prefix: str = "rate",
        clock: Callable[[], float] | None = None,
    ) -> None:
        check_bucket(capacity, refill, cost)
        if not callable(key) and key not in ("principal", "session", "client"):
            raise ValueError(f"key must be 'principal', 'session', 'client' or a function, not {key!r}")
        self.capacity = capacity
        self.refill = refill
        self.cost = cost
        self.methods = frozenset(methods) if methods is not None else None
        self.store: BucketStore = store if store is not None else InMemoryBuckets()
        self._key = key
        self._prefix = prefix
        self._clock = clock

    def key_of(self, ctx: Context) -> str | None:
        """The bucket the request ``ctx`` is counted in (None: not limited)."""
        if self.methods is not None:
            if ctx.method not in self.methods:
                return None
        elif ctx.method in _EXEMPT:
            return None
        rule = self._key
        if callable(rule):
            found = rule(ctx)
            return None if found is None else f"{self._prefix}:fn:{found}"
        if rule == "principal":
            value = principal_of(ctx)
        elif rule == "session":
            value = ctx.session_id
        else:
            value = ctx.client_info.name if ctx.client_info is not None else None
        return f"{self._prefix}:{rule}:" + ("-" if value is None else "+" + value)

    async def __call__(self, ctx: Context, call_next: CallNext) -> Any:
        key = self.key_of(ctx)
        if key is not None:
            now = self._clock() if self._clock is not None else None
            wait = await self.store.take(key, capacity=self.capacity, refill=self.refill, cost=self.cost, now=now)
            if wait > 0:
                seconds = max(1, math.ceil(wait))  # whole seconds, as Retry-After gives them
                raise McpError(
                    RATE_LIMITED,
                    f"Rate limit exceeded: try again in {seconds:g} s",
                    {"retryAfter": seconds},
                    status=429,
                )
        return await call_next()
