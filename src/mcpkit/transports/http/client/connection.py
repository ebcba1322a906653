"""The life of one client connection: its callbacks, its tasks, and how it ends.

Every HTTP exchange runs in a task of its own, spawned here so that :meth:`Connection.lost`
and the transport's ``close`` can cancel them all. The connection ends once, by either
route: ``close`` (reason ``"closed"``) or a server that cannot be reached (the reason
names the failure); ``on_close`` is reported exactly once. After it was lost it may be
started again (:meth:`Connection.restart`): a new connection, with new callbacks, once
the old one's tasks are gone.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from ....runtime.channel import OnClose, OnMessage

__all__ = ["Connection"]

logger = logging.getLogger("mcpkit.http")


class Connection:
    """Callbacks, state flags and in-flight tasks shared by the transport's parts."""

    def __init__(self) -> None:
        self._on_message: OnMessage | None = None
        self._on_close: OnClose | None = None
        self.closed = False  # close() was called
        self.dead = False  # the server is unreachable
        self._reported = False  # on_close was called
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        """Install the callbacks the transport was started with."""
        self._on_message = on_message
        self._on_close = on_close

    @property
    def started(self) -> bool:
        """Whether :meth:`start` was called (the connection is, or was, open)."""
        return self._on_message is not None

    async def restart(self, grace: float) -> None:
        """Before starting again: cancel every task of the old connection and wait (at
        most ``grace`` seconds) until they are gone, so that none of them reports to
        the new callbacks; then forget that it ended. Cancellation propagates (the
        tasks are cancelled all the same)."""
        tasks = self.cancel_others()
        if tasks:
            await asyncio.wait(tasks, timeout=grace)
        self._on_message = self._on_close = None
        self.closed = self.dead = self._reported = False

    @property
    def sending(self) -> bool:
        """Whether outbound messages are still taken: started, not closed, not lost."""
        return self._on_message is not None and not self.closed and not self.dead

    @property
    def live(self) -> bool:
        """Neither closed nor lost."""
        return not self.closed and not self.dead

    def spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run ``coro`` in a task that ``close`` and :meth:`lost` will cancel."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def cancel_others(self) -> list[asyncio.Task[None]]:
        """Cancel every task but the current one; returns the tasks cancelled."""
        current = asyncio.current_task()
        tasks = [t for t in self._tasks if t is not current]
        for task in tasks:
            task.cancel()
        return tasks

    def emit(self, data: bytes) -> None:
        """Hand one inbound message to ``on_message`` (dropped once closed)."""
        if self._on_message is not None and not self.closed:
            self._on_message(data)

    def report(self, reason: str) -> None:
        """Report ``on_close(reason)``, the first time only."""
        if not self._reported:
            self._reported = True
            if self._on_close is not None:
                self._on_close(reason)

    def lost(self, reason: str) -> None:
        """The server is unreachable: stop everything and report the connection closed.
        Does nothing once closed or already lost."""
        if self.dead or self.closed:
            return
        self.dead = True
        logger.info("HTTP connection lost: %s", reason)
        self.cancel_others()
        self.report(reason)
