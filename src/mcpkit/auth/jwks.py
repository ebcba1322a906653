"""The key set a :class:`~mcpkit.auth.verifiers.JWTVerifier` checks signatures with,
fetched from the authorization server's JWKS endpoint and kept through its outages
(docs/auth.md, "When the key set cannot be fetched").

:class:`KeySetCache` decides when to fetch and what to answer meanwhile; the verifier
gives it the coroutine that fetches and parses (``load``). The rules:

* **one fetch at a time.** Every request that needs the key set waits for the same
  fetch, and that fetch has one deadline (``timeout``): N requests arriving while the
  endpoint hangs all get their answer when it passes, not one after another. A waiter
  that is cancelled leaves the fetch running for the others.
* **fresh, then stale-while-revalidate.** A key set is fresh for ``cache_ttl`` seconds.
  After that the first request starts a refresh in the background and is served with
  the keys already held, as is every request until the refresh ends.
* **the last good key set, for a bounded time.** While refreshing fails, the last key
  set that was fetched keeps serving for at most ``max_stale`` seconds past its
  ``cache_ttl``. Past that, nothing is accepted until a fetch succeeds (503: it fails
  closed).
* **a negative cache with back-off.** After a failed fetch no other starts for a while
  — 1 s, doubling with each failure in a row up to ``max_backoff`` — and a request that
  needs keys it cannot have meanwhile is refused at once (:class:`KeySetUnavailable`
  with the seconds left as its ``retry_after``), without touching the endpoint. A
  success resets it.
* **rotation.** A token naming a key id the set lacks waits for a refetch — at most one
  every ``min_refetch`` seconds, never during the back-off; otherwise the key is unknown
  (None), or, while the endpoint is failing, not knowable now (:class:`KeySetUnavailable`).

The verifier turns these into ``InvalidToken`` (401) and ``VerifierUnavailable`` (503).
Times are monotonic. Nothing here sees a token.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["KeySetCache", "KeySetUnavailable", "Keys"]

log = logging.getLogger("mcpkit.auth")

#: A fetched key set: the keys by key id, and the key for tokens that name none (the
#: only key of a one-key set, else None).
Keys = tuple[dict[str, Any], Any]


class KeySetUnavailable(Exception):
    """No usable key set can be had now: the message says why; ``retry_after`` is the
    seconds until the next fetch may start. ``load`` may raise it too, to say in its
    message what went wrong (any other exception is named by its type)."""

    def __init__(self, message: str, retry_after: float = 0.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class KeySetCache:
    """When to fetch the key set ``load`` fetches, and which keys to answer with (the
    rules are in the module's docstring). ``load()`` returns :data:`Keys` or raises
    (any exception is a failed fetch); ``url`` is only for the log."""

    def __init__(
        self,
        load: Callable[[], Awaitable[Keys]],
        *,
        url: str,
        cache_ttl: float,
        max_stale: float,
        min_refetch: float,
        max_backoff: float,
        timeout: float,
    ) -> None:
        self._load = load
        self.url = url
        self.cache_ttl = cache_ttl
        self.max_stale = max_stale
        self.min_refetch = min_refetch
        self.max_backoff = max_backoff
        self.timeout = timeout
        self._keys: dict[str, Any] | None = None  # None: never fetched
        self._default: Any = None
        self._fetched_at = 0.0
        self._attempted_at = -1e18
        self._failures = 0
        self._retry_at = -1e18
        self._last_error = ""
        self._inflight: asyncio.Task[None] | None = None

    async def key(self, kid: str | None) -> Any:
        """The key for a token naming ``kid`` (None: the set's only key, if it has only
        one); None when the set has no such key (after a refetch, if one is allowed now).
        Raises :class:`KeySetUnavailable` when no usable key set can be had now.
        Cancellation abandons the wait, not the fetch."""
        now = time.monotonic()
        keys = self._usable(now)
        if keys is None:
            await self._wait_for_fetch()
            keys = self._keys  # just fetched: usable whatever cache_ttl says
            assert keys is not None
        elif now - self._fetched_at > self.cache_ttl:
            self._refresh_in_background()
        if kid is None:
            return self._default
        key = keys.get(kid)
        if key is not None:
            return key
        if self._failures:
            raise KeySetUnavailable(f"the key set cannot be refetched: {self._last_error}", self._wait_left())
        if time.monotonic() - self._attempted_at >= self.min_refetch or self._running() is not None:
            await self._wait_for_fetch()  # maybe the key set was rotated
            return (self._keys or {}).get(kid)
        return None

    # -- the pieces ------------------------------------------------------------------

    def _usable(self, now: float) -> dict[str, Any] | None:
        """The keys held, unless there are none or they are older than the staleness bound."""
        if self._keys is None or now - self._fetched_at > self.cache_ttl + self.max_stale:
            return None
        return self._keys

    def _wait_left(self) -> float:
        return max(0.0, self._retry_at - time.monotonic())

    def _running(self) -> asyncio.Task[None] | None:
        """The fetch in flight, if it runs on this event loop (one left behind by a loop
        that was closed does not count)."""
        task = self._inflight
        if task is None or task.done() or task.get_loop() is not asyncio.get_running_loop():
            return None
        return task

    async def _wait_for_fetch(self) -> None:
        """Wait for the fetch in flight, or start one. Raises :class:`KeySetUnavailable`
        when it fails, or at once while the back-off lasts."""
        task = self._running()
        if task is None:
            if time.monotonic() < self._retry_at:
                raise KeySetUnavailable(f"cannot fetch the key set: {self._last_error}", self._wait_left())
            task = self._start()
        await asyncio.shield(task)

    def _refresh_in_background(self) -> None:
        """Start a refresh unless one runs or the back-off forbids it; do not wait."""
        if self._running() is None and time.monotonic() >= self._retry_at:
            self._start()

    def _start(self) -> asyncio.Task[None]:
        task = asyncio.ensure_future(self._fetch())
        task.add_done_callback(_retrieve)
        self._inflight = task
        return task

    async def _fetch(self) -> None:
        """One fetch, within ``timeout``. Raises :class:`KeySetUnavailable` if it fails."""
        self._attempted_at = time.monotonic()
        try:
            async with asyncio.timeout(self.timeout):
                keys, default = await self._load()
        except Exception as exc:
            reason = f"no answer within {self.timeout:g} s" if isinstance(exc, TimeoutError) else _reason(exc)
            self._failed(reason)
            raise KeySetUnavailable(f"cannot fetch the key set: {reason}", self._wait_left()) from None
        finally:
            self._inflight = None
        if self._failures:
            log.warning("fetched the key set from %s again after %d failed attempts", self.url, self._failures)
        self._keys, self._default = keys, default
        self._fetched_at = time.monotonic()
        self._failures = 0
        self._retry_at = -1e18
        self._last_error = ""

    def _failed(self, reason: str) -> None:
        self._failures += 1
        backoff = min(self.max_backoff, 2.0 ** (self._failures - 1))
        self._retry_at = time.monotonic() + backoff
        self._last_error = reason
        if self._keys is not None and self._usable(time.monotonic()) is not None:
            age = time.monotonic() - self._fetched_at
            log.warning(
                "cannot fetch the key set from %s (%s); the one fetched %.0f s ago serves at most %.0f s more; next try in %g s",
                self.url,
                reason,
                age,
                self.cache_ttl + self.max_stale - age,
                backoff,
            )
        else:
            log.warning(
                "cannot fetch the key set from %s (%s): tokens are refused (503); next try in %g s", self.url, reason, backoff
            )


def _reason(exc: BaseException) -> str:
    """What went wrong, for the log and the error: the message of a
    :class:`KeySetUnavailable` that ``load`` raised, else the exception's type."""
    return str(exc) if isinstance(exc, KeySetUnavailable) else type(exc).__name__


def _retrieve(task: asyncio.Task[None]) -> None:
    """Mark a finished fetch's exception as seen (its waiters, if any, got it)."""
    with contextlib.suppress(asyncio.CancelledError):
        task.exception()
