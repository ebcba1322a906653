"""Waiting for something to become true, with a generous deadline, instead of sleeping.

A test that sleeps "long enough" for something to happen passes on a quiet machine and fails
on a loaded one; one that polls the condition it needs returns as soon as it holds, and the
deadline (10 s unless a test says otherwise) only decides when to give up.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

#: How long a wait may take before the test fails: far beyond what a loaded machine needs.
DEADLINE = 10.0


def wait_until(condition: Callable[[], T], *, timeout: float = DEADLINE, interval: float = 0.01, what: str = "") -> T:
    """Call ``condition`` until it returns something true, and return that; fail the test
    after ``timeout`` seconds, naming ``what`` was awaited."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not true after {timeout:g} s: {what or getattr(condition, '__name__', condition)}")
        time.sleep(interval)


async def until(
    condition: Callable[[], T | Awaitable[T]], *, timeout: float = DEADLINE, interval: float = 0.01, what: str = ""
) -> T:
    """:func:`wait_until` for a test's event loop: ``condition`` may be a plain or an async
    function; the loop goes on running in between."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value  # type: ignore[return-value]
        if time.monotonic() > deadline:
            raise AssertionError(f"not true after {timeout:g} s: {what or getattr(condition, '__name__', condition)}")
        await asyncio.sleep(interval)
