"""stores/redis/channels.py: closing never waits forever on a background task."""

from __future__ import annotations

import asyncio

from mcpkit.stores.redis.channels import cancel_all


async def test_a_task_that_swallows_its_cancellation_is_cancelled_again_until_it_ends() -> None:
    cancels = 0

    async def stubborn() -> None:
        nonlocal cancels
        while cancels < 3:  # as a library that catches the cancel and goes on would
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancels += 1

    async def failing() -> None:
        raise RuntimeError("already ended, with an error nobody retrieved")

    loop = asyncio.get_running_loop()
    tasks = [loop.create_task(stubborn()), loop.create_task(failing()), loop.create_task(asyncio.Event().wait())]
    await asyncio.sleep(0)
    await cancel_all(tasks)
    assert all(task.done() for task in tasks)
    assert cancels == 3
    assert tasks[2].cancelled()
    assert isinstance(tasks[1].exception(), RuntimeError)


async def test_nothing_to_cancel() -> None:
    await cancel_all([])
