"""Retrying what is safe to retry: :class:`RetryPolicy`, the loop that applies it, and
:class:`RetriesExhausted`, the error that lists every attempt (docs/timeouts-and-retries.md).

A request is retried only when two things hold. It is **idempotent**: ``server/discover``,
``ping``, the ``*/list`` requests, ``resources/read``, ``prompts/get``,
``completion/complete``, and ``tools/call`` for a tool whose annotations (from a
``tools/list`` the client has seen) say ``readOnlyHint`` or ``idempotentHint``, or
that the caller declares ``idempotent=True``. And it failed in a **transient** way:
its deadline passed (``RequestTimeout``), the connection was lost and is being (or
was) re-established (``ConnectionClosed`` over a supervised transport), or the HTTP
transport got 429, 502, 503 or 504 (``data["status"]``) — or a legacy server's -32029
("rate limited"). A ``Retry-After`` is honoured (instead of the back-off) up to
``max_retry_after``; a longer one ends the retries. Every other error is an answer,
raised at once.
"""

from __future__ import annotations

import asyncio
import dataclasses
import email.utils
import math
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, TypeVar

from ..protocol.errors import ConnectionClosed, McpError, RequestTimeout, flatten_text
from ..protocol.types import Tool
from .events import AttemptStarted, AttemptTimedOut, Events, RetryScheduled

__all__ = ["RetryPolicy", "RetriesExhausted", "IDEMPOTENT_METHODS", "transient", "with_retries", "tool_is_idempotent"]

T = TypeVar("T")

#: Requests that leave the server as it was, however often they run.
IDEMPOTENT_METHODS: Final = frozenset(
    {
        "server/discover",
        "ping",
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "prompts/list",
        "resources/read",
        "prompts/get",
        "completion/complete",
    }
)
#: HTTP statuses that say "not now": too many requests, a gateway or the service is down for a moment.
RETRY_STATUSES: Final = frozenset({429, 502, 503, 504})
#: The legacy-era code for HTTP 429 (an exception with that status, in mcpkit's mapping).
RATE_LIMITED: Final = -32029


def _check_seconds(name: str, value: float, *, zero: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number of seconds, not {value!r}")
    if value < 0 or (value == 0 and not zero):
        raise ValueError(f"{name} must be {'non-negative' if zero else 'positive'}, not {value!r}")


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """How idempotent requests are retried after a transient failure.

    ``max_attempts`` counts the first try (1: never retry). Before retry ``k`` (1-based)
    the client waits ``initial_delay * multiplier ** (k - 1)`` seconds, at most
    ``max_delay``, less a random part of up to ``jitter`` of it (0: exact delays; 1:
    "full jitter", anywhere between 0 and the delay) — or what the server's
    ``Retry-After`` asks, if it asks at most ``max_retry_after`` seconds. Each attempt
    has its own deadline (the call's timeout); ``total_timeout``, if given, bounds all
    of them and the waits between them. Raises ``ValueError`` for values out of range.

    Give one client-wide (``ClientOptions(retry=...)``) or per call (``retry=`` on the
    typed calls, ``RequestOptions(retry=...)``).
    """

    max_attempts: int
    initial_delay: float = 0.1
    multiplier: float = 2.0
    max_delay: float = 5.0
    jitter: float = 0.5
    total_timeout: float | None = None
    max_retry_after: float = 30.0

    def __post_init__(self) -> None:
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int) or self.max_attempts < 1:
            raise ValueError(f"max_attempts must be an integer of at least 1, not {self.max_attempts!r}")
        _check_seconds("initial_delay", self.initial_delay, zero=True)
        _check_seconds("max_delay", self.max_delay, zero=True)
        _check_seconds("max_retry_after", self.max_retry_after, zero=True)
        if self.total_timeout is not None:
            _check_seconds("total_timeout", self.total_timeout)
        if not (isinstance(self.multiplier, (int, float)) and math.isfinite(self.multiplier) and self.multiplier >= 1):
            raise ValueError(f"multiplier must be at least 1, not {self.multiplier!r}")
        if not (isinstance(self.jitter, (int, float)) and 0 <= self.jitter <= 1):
            raise ValueError(f"jitter must be between 0 and 1, not {self.jitter!r}")

    def backoff(self, retry: int, rand: Callable[[], float] = random.random) -> float:
        """The wait before retry number ``retry`` (1-based), jitter included."""
        delay = min(self.initial_delay * self.multiplier ** (retry - 1), self.max_delay)
        return float(delay * (1 - self.jitter * rand()))


class RetriesExhausted(McpError):
    """A request failed in a transient way on every attempt the :class:`RetryPolicy`
    allowed (local). ``attempts`` holds each attempt's error, in order; ``code`` is the
    last one's, ``method`` the request, ``reason`` why the retrying stopped (no attempts
    left, the ``total_timeout``, a ``Retry-After`` over ``max_retry_after``). The last
    error is also the ``__cause__``."""

    local = True

    def __init__(self, method: str, attempts: Sequence[McpError], reason: str) -> None:
        self.method = method
        self.attempts = tuple(attempts)
        self.reason = reason
        summary = "; ".join(f"attempt {i}: {flatten_text(str(err), 200)}" for i, err in enumerate(self.attempts, 1))
        n = len(self.attempts)
        message = f"{method} failed after {n} attempt{'s' if n != 1 else ''} ({reason}): {summary}"
        data = {"attempts": [{"code": err.code, "message": err.message} for err in self.attempts]}
        super().__init__(self.attempts[-1].code, message, data)


def retry_after(value: Any) -> float | None:
    """Seconds from a ``Retry-After`` value (delay-seconds or an HTTP date), or None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) if math.isfinite(value) and value >= 0 else None
    if not isinstance(value, str):
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        return max(when.timestamp() - time.time(), 0.0)
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def transient(exc: McpError) -> tuple[str, float | None] | None:
    """Whether ``exc`` is worth another attempt: (what happened, the server's
    ``Retry-After`` in seconds if any), or None. A ``ConnectionClosed`` counts only if
    the connection comes back (the caller checks)."""
    if isinstance(exc, RequestTimeout):
        return "timed out", None
    if isinstance(exc, ConnectionClosed):
        return "connection closed", None
    if exc.local:
        return None
    data = exc.data if isinstance(exc.data, dict) else {}
    status = data.get("status")
    if type(status) is int and status in RETRY_STATUSES:
        return f"HTTP {status}", retry_after(data.get("retryAfter"))
    if exc.code == RATE_LIMITED:
        return "rate limited", retry_after(data.get("retryAfter"))
    return None


def tool_is_idempotent(tool: Tool) -> bool:
    """Whether ``tool``'s annotations say it is read-only or idempotent."""
    hints = tool.annotations
    return bool(hints is not None and (hints.read_only_hint or hints.idempotent_hint))


async def with_retries(
    attempt: Callable[[float], Awaitable[T]],
    *,
    method: str,
    timeout: float,
    policy: RetryPolicy | None,
    events: Events,
    recoverable: Callable[[], bool],
    may_retry: Callable[[], Awaitable[bool]] | None = None,
) -> T:
    """Run ``attempt(timeout)`` under ``policy`` (None: once). ``recoverable()`` says
    whether a lost connection is coming back; ``may_retry()``, if given, is asked once,
    at the first transient failure, whether the request may run again at all (False:
    that failure is raised as it is). Raises the first error unchanged when no retry
    follows it; after retries, :class:`RetriesExhausted` for a transient failure, or the
    non-transient error itself with a note per earlier attempt. Cancellation propagates
    at once (during a wait as well)."""
    if policy is None or policy.max_attempts == 1:
        try:
            return await attempt(timeout)
        except RequestTimeout:
            events.emit(AttemptTimedOut(method, 1, timeout))
            raise
    loop = asyncio.get_running_loop()
    end = loop.time() + policy.total_timeout if policy.total_timeout is not None else math.inf
    failures: list[McpError] = []
    number = 0
    while True:
        number += 1
        wait = min(timeout, end - loop.time())
        events.emit(AttemptStarted(method, number, wait))
        try:
            return await attempt(wait)
        except McpError as exc:
            failures.append(exc)
            if isinstance(exc, RequestTimeout):
                events.emit(AttemptTimedOut(method, number, wait))
            verdict = transient(exc)
            if verdict is None or (isinstance(exc, ConnectionClosed) and not recoverable()):
                for i, earlier in enumerate(failures[:-1], 1):
                    exc.add_note(f"attempt {i}: {flatten_text(str(earlier), 200)}")
                raise
            if may_retry is not None:
                allowed, may_retry = await may_retry(), None
                if not allowed:
                    raise
            delay, stop = _next_wait(policy, number, verdict[1], end - loop.time())
            if stop is not None:
                raise RetriesExhausted(method, failures, stop) from exc
            events.emit(RetryScheduled(method, number, delay, exc))
        await asyncio.sleep(delay)


def _next_wait(policy: RetryPolicy, number: int, asked: float | None, left: float) -> tuple[float, str | None]:
    """The wait before the attempt after attempt ``number``, or why there is none."""
    if number >= policy.max_attempts:
        return 0.0, f"{number} attempt{'s' if number != 1 else ''} allowed"
    if asked is not None and asked > policy.max_retry_after:
        return 0.0, f"the server asked to wait {asked:g} s, more than max_retry_after={policy.max_retry_after:g}"
    delay = asked if asked is not None else policy.backoff(number)
    if delay >= left:
        return 0.0, f"total_timeout={policy.total_timeout:g} s would pass"
    return delay, None
