"""Bounding the calls in flight: :class:`ConcurrencyLimit`, per tool (or per method)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from typing import Any, Final, Literal

from ..protocol.errors import INTERNAL_ERROR, McpError, flatten_text
from ..server.context import Context
from ..server.registry import CallNext
from .outcome import target

__all__ = ["ConcurrencyLimit"]

#: Requests never counted: what a client needs to stay connected.
_EXEMPT: Final = frozenset({"ping", "server/discover"})


class _Slots:
    __slots__ = ("free", "users")

    def __init__(self, limit: int) -> None:
        self.free = asyncio.Semaphore(limit)
        self.users = 0  # requests holding or waiting for a slot: the entry goes at 0


class ConcurrencyLimit:
    """Middleware that lets at most ``limit`` requests run at once per tool (``per="tool"``:
    each ``tools/call``'s tool counted apart; other methods pass), per method
    (``per="method"``), or per key a function of the Context returns (None: not
    counted). ``limits`` gives some tools (or methods, or keys) a limit of their own.
    ``methods`` restricts ``per="method"`` and functions to those methods (default:
    all but ``ping`` and ``server/discover``).

    A request past the limit waits up to ``wait`` seconds for a slot (default 0: not at
    all), in the order they came, then is refused with ``McpError(-32603, "Too many
    calls in progress …")`` and HTTP status 429 (over HTTP, ``Retry-After: 1``): its
    handler does not run. Cancelled while waiting, it leaves the queue; the slot of a
    request that ends in any way, cancellation included, is freed at once. Raises
    ``ValueError`` at construction for a limit below 1, a negative ``wait`` or an
    unknown ``per``.
    """

    def __init__(
        self,
        limit: int,
        *,
        per: Literal["tool", "method"] | Callable[[Context], str | None] = "tool",
        limits: dict[str, int] | None = None,
        methods: Collection[str] | None = None,
        wait: float = 0.0,
    ) -> None:
        if limit < 1 or any(n < 1 for n in (limits or {}).values()):
            raise ValueError("limits must be at least 1")
        if not wait >= 0:
            raise ValueError("wait must be 0 or more seconds")
        if not callable(per) and per not in ("tool", "method"):
            raise ValueError(f"per must be 'tool', 'method' or a function, not {per!r}")
        self.limit = limit
        self.limits = dict(limits or {})
        self.wait = wait
        self.methods = frozenset(methods) if methods is not None else None
        self._per = per
        self._slots: dict[str, _Slots] = {}

    def key_of(self, ctx: Context) -> str | None:
        """What the request ``ctx`` is counted under (None: not counted)."""
        if self._per == "tool":
            return target(ctx) if ctx.method == "tools/call" else None
        if (ctx.method not in self.methods) if self.methods is not None else (ctx.method in _EXEMPT):
            return None
        return ctx.method if self._per == "method" else self._per(ctx)

    def in_flight(self, key: str) -> int:
        """How many requests under ``key`` run or wait now."""
        slots = self._slots.get(key)
        return 0 if slots is None else slots.users

    async def __call__(self, ctx: Context, call_next: CallNext) -> Any:
        key = self.key_of(ctx)
        if key is None:
            return await call_next()
        limit = self.limits.get(key, self.limit)
        slots = self._slots.get(key)
        if slots is None:
            slots = self._slots[key] = _Slots(limit)
        slots.users += 1
        try:
            if slots.free.locked():
                if not self.wait:
                    raise _refusal(key, limit)
                try:
                    await asyncio.wait_for(slots.free.acquire(), self.wait)
                except TimeoutError:
                    raise _refusal(key, limit) from None
            else:
                await slots.free.acquire()
            try:
                return await call_next()
            finally:
                slots.free.release()
        finally:
            slots.users -= 1
            if not slots.users:
                del self._slots[key]


def _refusal(key: str, limit: int) -> McpError:
    return McpError(
        INTERNAL_ERROR,
        f"Too many calls in progress: at most {limit} at once for {flatten_text(key, 128)}",
        {"retryAfter": 1, "limit": limit},
        status=429,
    )
