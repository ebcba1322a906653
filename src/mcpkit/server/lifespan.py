"""The server's lifespan: what a process sets up before serving and tears down after
(docs/lifespan.md).

``Server(lifespan=fn)`` takes a function of the server returning an async context
manager (``@contextlib.asynccontextmanager`` over an ``async def`` that yields once).
It is entered once per process before the first connection is served — stdio, an
in-memory client, or the ASGI app's lifespan startup — and exited after the last one
ends: a count of users keeps it up while several connections share the process. What
it yields is the state handlers reach as ``ctx.lifespan`` (or by annotating a parameter
with its type).

The lifespans of the servers mounted in this one (server/mount.py) are *nested* in
its own: entered after it, in the order they were mounted, and exited before it, in
the reverse order. Each is counted as one more user of that server's own runner, so a
server both mounted and served on its own enters its lifespan once.
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
        self._started = False
        self._entered: list[LifespanRunner] = []
        #: The runners of the servers mounted in this one, entered within it.
        self.nested: list[LifespanRunner] = []
        #: What the lifespan yielded (None without one, or before it runs).
        self.state: Any = None

    @property
    def active(self) -> bool:
        return self._users > 0

    @property
    def has_lifespan(self) -> bool:
        """Whether entering this runner enters any lifespan (its own or a nested one)."""
        return self._lifespan is not None or any(runner.has_lifespan for runner in self.nested)

    def nest(self, runner: LifespanRunner) -> None:
        """Enter ``runner`` (a mounted server's) within this one from now on. Raises
        ``RuntimeError`` if this one is running and ``runner`` has a lifespan to enter:
        mount such a server before serving."""
        if self.active and runner.has_lifespan:
            raise RuntimeError("a server with a lifespan is mounted before the server it is mounted in serves")
        self.nested.append(runner)

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
        """One more user; the first enters the lifespan, then the nested ones. Raises
        :class:`LifespanError` (a nested one's as it is), leaving nothing entered."""
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
        if not self.has_lifespan:
            return
        self._ready = asyncio.get_running_loop().create_future()
        try:
            cm, state, entered = await self._start()
        except BaseException as exc:
            self._users -= 1
            ready, self._ready = self._ready, None
            if isinstance(exc, asyncio.CancelledError):
                ready.cancel()
                raise
            error = exc if isinstance(exc, LifespanError) else _failed(exc)
            ready.set_exception(error)
            ready.exception()  # retrieved: the waiters re-raise it themselves
            if error is exc:
                raise
            raise error from exc
        self._cm, self.state, self._started, self._entered = cm, state, True, entered
        self._ready.set_result(state)

    async def _start(self) -> tuple[AbstractAsyncContextManager[Any] | None, Any, list[LifespanRunner]]:
        """Its own lifespan entered, then the nested runners; what failed is undone."""
        cm, state = None, None
        if self._lifespan is not None:
            cm = self._lifespan(self._server)
            state = await cm.__aenter__()
        entered: list[LifespanRunner] = []
        try:
            for runner in self.nested:
                await runner.enter()
                entered.append(runner)
        except BaseException:
            for runner in reversed(entered):
                await runner.exit()
            if cm is not None:
                await _exit_quietly(cm)
            raise
        return cm, state, entered

    async def exit(self) -> None:
        """One user fewer; the last exits the nested lifespans (the last mounted
        first), then its own (errors are logged)."""
        self._users -= 1
        if self._users > 0 or not self._started:
            return
        cm, self._cm, self._ready, self._started = self._cm, None, None, False
        entered, self._entered = self._entered, []
        try:
            for runner in reversed(entered):
                await runner.exit()
            if cm is not None:
                await _exit_quietly(cm)
        finally:
            self.state = None


async def _exit_quietly(cm: AbstractAsyncContextManager[Any]) -> None:
    try:
        await cm.__aexit__(None, None, None)
    except Exception:
        log.exception("the server's lifespan failed while shutting down")


def _failed(exc: BaseException) -> LifespanError:
    return LifespanError(f"the server's lifespan failed to start: {type(exc).__name__}: {exc}")
