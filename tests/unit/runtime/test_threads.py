"""Plain def handlers run on worker threads (src/mcpkit/runtime/threads.py): many finishing
together each get their own outcome, a cancelled one is dropped, and the pool goes on
answering."""

from __future__ import annotations

import asyncio
import time

import pytest

from mcpkit.runtime.threads import run_sync


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
        slow = asyncio.ensure_future(run_sync(time.sleep, 0.2))
        await asyncio.sleep(0.01)
        slow.cancel()
        with pytest.raises(asyncio.CancelledError):
            await slow
        assert await asyncio.wait_for(run_sync(work, 1), 5) == 2  # the pool still answers

    for _ in range(3):  # a fresh loop each time: each has its own delivery
        asyncio.run(main())
