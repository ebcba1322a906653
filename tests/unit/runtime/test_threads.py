"""Plain def handlers run on worker threads (src/mcpkit/runtime/threads.py): many finishing
together each get their own outcome, a cancelled one is dropped, and the pool goes on
answering."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from mcpkit.runtime.threads import run_sync
from support.waiting import until


def test_plain_def_calls_finishing_together_each_get_their_own_outcome() -> None:
    def work(i: int) -> int:
        if i % 7 == 0:
            raise ValueError(f"no {i}")
        return i * 2

    async def main() -> None:
        outcomes = await asyncio.wait_for(asyncio.gather(*(run_sync(work, i) for i in range(200)), return_exceptions=True), 30)
        for i, out in enumerate(outcomes):
            if i % 7 == 0:
                assert isinstance(out, ValueError)
                assert str(out) == f"no {i}"
            else:
                assert out == i * 2
        running = threading.Event()

        def slow_work() -> None:
            running.set()
            time.sleep(0.2)  # still running when it is cancelled: a plain def cannot be interrupted

        slow = asyncio.ensure_future(run_sync(slow_work))
        await until(running.is_set, what="the slow call runs on its thread")
        slow.cancel()
        with pytest.raises(asyncio.CancelledError):
            await slow
        assert await asyncio.wait_for(run_sync(work, 1), 5) == 2  # the pool still answers

    for _ in range(3):  # a fresh loop each time: each has its own delivery
        asyncio.run(main())
