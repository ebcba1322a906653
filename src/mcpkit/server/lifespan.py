"""The server's lifespan: what a process sets up before serving and tears down after
(docs/lifespan.md).

``Server(lifespan=fn)`` takes a function of the server returning an async context
manager (``@contextlib.asynccontextmanager`` over an ``async def`` that yields once).
It is entered once per process before the first connection is served — stdio, an
in-memory client, or the ASGI app's lifespan startup — and exited after the last one
ends: a count of users keeps it up while several connections share the process. What
it yields is the state handlers reach as ``ctx.lifespan`` (or by annotating a parameter
with its type).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

__all__ = ["Lifespan", "LifespanRunner", "LifespanError"]

log = logging.getLogger("mcpkit.server")

Lifespan = Callable[[Any], AbstractAsyncContextManager[Any]]


class LifespanError(RuntimeError):
    """Entering the lifespan failed: the server cannot serve. The cause is chained."""


class LifespanRunner:
    """Runs one server's lifespan, shared by everything that serves it."""

    def __init__(self, server: Any, lifespan: Lifespan | None) -> None:
        self._server = server
        self._lifespan = lifespan
        self._users = 0
        self._ready: asyncio.Future[Any] | None = None
        self._cm: AbstractAsyncContextManager[Any] | None = None
        #: What the lifespan yielded (None without one, or before it runs).
        self.state: Any = None

    @property
    def active(self) -> bool:
        return self._users > 0

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Any]:
        """Hold the lifespan up for the duration; yields its state. Raises
        :class:`LifespanError` if entering it failed (for every waiter). Cancellation
        while entering leaves it not entered."""
        await self.enter()
        try:
            yield self.state
        finally:
            await self.exit()

    async def enter(self) -> None:
        """One more user; the first enters the lifespan. Raises :class:`LifespanError`."""
        self._users += 1
        if self._users > 1:
            ready = self._ready
            if ready is not None:
                try:
                    await asyncio.shield(ready)
                except BaseException:
                    self._users -= 1
                    raise
            return
        if self._lifespan is None:
            return
        self._ready = asyncio.get_running_loop().create_future()
        try:
            cm = self._lifespan(self._server)
            state = await cm.__aenter__()
        except BaseException as exc:
            self._users -= 1
            ready, self._ready = self._ready, None
            if isinstance(exc, asyncio.CancelledError):
                ready.cancel()
                raise
            error = _failed(exc)
            ready.set_exception(error)
            ready.exception()  # retrieved: the waiters re-raise it themselves
            raise error from exc
        self._cm, self.state = cm, state
        self._ready.set_result(state)

    async def exit(self) -> None:
        """One user fewer; the last exits the lifespan (its errors are logged)."""
        self._users -= 1
        if self._users > 0 or self._cm is None:
            return
        cm, self._cm, self._ready = self._cm, None, None
        try:
            await cm.__aexit__(None, None, None)
        except Exception:
            log.exception("the server's lifespan failed while shutting down")
        finally:
            self.state = None


def _failed(exc: BaseException) -> LifespanError:
    return LifespanError(f"the server's lifespan failed to start: {type(exc).__name__}: {exc}")
