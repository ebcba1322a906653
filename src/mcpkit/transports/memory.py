"""An in-memory pair of transports: both ends in one process, for tests and for
``Client(server)``."""

from __future__ import annotations

import asyncio
import logging
from collections import deque

from .base import OnClose, OnMessage, Servable

__all__ = ["memory_pair", "ServerInMemory"]

logger = logging.getLogger("mcpkit")


class _MemoryEnd:
    """One end of an in-memory pair; messages reach the other end on the next loop turn.

    While paused (:meth:`pause_reading`) an end holds what reaches it, in order, and
    hands it on after :meth:`resume_reading`. Both sides are in this process, so what
    is held is the sender's own making; the sender is not slowed down.
    """

    def __init__(self) -> None:
        self.other: _MemoryEnd | None = None
        self._on_message: OnMessage | None = None
        self._on_close: OnClose | None = None
        self._closed = False
        self._paused = False
        self._backlog: deque[bytes] = deque()  # received before start, or while paused

    async def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        self._on_message = on_message
        self._on_close = on_close
        self._release()

    def _deliver(self, data: bytes) -> None:
        if self._closed:
            return
        if self._on_message is None or self._paused or self._backlog:
            self._backlog.append(data)
        else:
            self._on_message(data)

    def _release(self) -> None:
        backlog, on_message = self._backlog, self._on_message
        while backlog and on_message is not None and not self._paused and not self._closed:
            on_message(backlog.popleft())

    def pause_reading(self) -> None:
        """Hold what arrives until :meth:`resume_reading`. Never raises."""
        self._paused = True

    def resume_reading(self) -> None:
        """Hand on what is held (on the next loop turn), then deliver as before. Never
        raises."""
        if self._paused:
            self._paused = False
            if self._backlog:
                asyncio.get_running_loop().call_soon(self._release)

    def send(self, data: bytes) -> None:
        other = self.other
        if other is not None and not self._closed:
            asyncio.get_running_loop().call_soon(other._deliver, data)

    async def drain(self) -> None:
        return None

    def _end(self, reason: str) -> None:
        if not self._closed:
            self._closed = True
            if self._on_close is not None:
                self._on_close(reason)

    async def close(self) -> None:
        other = self.other
        self._end("closed")
        if other is not None:
            asyncio.get_running_loop().call_soon(other._end, "peer closed the connection")


def memory_pair() -> tuple[_MemoryEnd, _MemoryEnd]:
    """Two connected in-memory transports (client end, server end)."""
    a, b = _MemoryEnd(), _MemoryEnd()
    a.other, b.other = b, a
    return a, b


class ServerInMemory:
    """The client's transport to a server in this process: starting it starts the
    server's side of an in-memory pair; closing it closes the pair and waits (up to
    ``shutdown_timeout`` seconds) for the server to finish the connection."""

    def __init__(self, server: Servable, *, shutdown_timeout: float = 5.0) -> None:
        self.server = server
        self.shutdown_timeout = shutdown_timeout
        self._end, self._server_end = memory_pair()
        self._serving: asyncio.Task[None] | None = None

    async def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        self._serving = asyncio.get_running_loop().create_task(self.server.serve(self._server_end))
        await self._end.start(on_message, on_close)

    def send(self, data: bytes) -> None:
        self._end.send(data)

    async def drain(self) -> None:
        return None

    async def close(self) -> None:
        """Close the connection and wait for the server's side to wind down; never
        raises for a server that failed (except ``CancelledError`` of the caller)."""
        await self._end.close()
        task, self._serving = self._serving, None
        if task is not None:
            done, _ = await asyncio.wait({task}, timeout=self.shutdown_timeout)
            if not done:
                task.cancel()
            elif not task.cancelled() and task.exception() is not None:
                logger.error("the in-memory server failed", exc_info=task.exception())
