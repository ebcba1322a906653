"""A virtual clock for the test's event loop: its time stands still while code runs, and
whenever the loop has nothing ready to run it jumps to its next timer. Deadlines,
back-offs and ``asyncio.sleep`` in handlers then fire in the order their times say, at
once, whatever the machine's speed (a loaded machine makes the test slower, never
another order) — for
tests where two of them race (a timeout against progress every so often, a back-off
against a bound), in memory only: a thread or a socket the loop waits for would see the
clock run ahead of it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any


@contextlib.asynccontextmanager
async def virtual_time() -> AsyncIterator[Any]:
    """Run the rest of the block on virtual time (the running loop's ``time()``); yields
    the loop, whose ``time()`` the test may read."""
    loop: Any = asyncio.get_running_loop()
    if not hasattr(loop, "_run_once"):  # pragma: no cover - asyncio's own loop only
        raise RuntimeError(f"virtual_time needs asyncio's event loop, not {type(loop).__name__}")
    real_run_once = loop._run_once
    now = float(loop.time())

    def time() -> float:
        return now

    def run_once() -> None:
        nonlocal now
        if not loop._ready and loop._scheduled:
            now = max(now, loop._scheduled[0]._when)  # nothing to do until then: be there now
        real_run_once()

    loop.time, loop._run_once = time, run_once
    try:
        yield loop
    finally:
        del loop.time, loop._run_once


def on_virtual_time(test: Any) -> Any:
    """Decorate an async test to run its body on :func:`virtual_time`."""
    import functools

    @functools.wraps(test)
    async def run(*args: Any, **kwargs: Any) -> Any:
        async with virtual_time():
            return await test(*args, **kwargs)

    return run
