"""Run plain (non-async) handlers on worker threads, cheaply.

``loop.run_in_executor`` chains a ``concurrent.futures.Future`` to an asyncio future
and costs about twice as much per call as it needs to. This pool hands work to idle
threads over one ``SimpleQueue``; a finished job's outcome goes to its loop's
:class:`_Inbox`, and the loop is woken (``call_soon_threadsafe``: a write to its
self-pipe, and a wake-up) only when the inbox was empty, so results that finish together
complete their futures in one callback. Threads are started on demand, up to
``max_workers``, and are daemons: a handler stuck forever cannot keep the process alive
at exit.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import functools
import inspect
import os
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # loaded with the first worker thread (start-up cost): _Pool.submit
    import queue

__all__ = ["run_sync", "is_async_callable", "call_handler"]

_Job = tuple["_Inbox", "asyncio.Future[Any]", contextvars.Context, Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class _Inbox:
    """The outcomes of one event loop's jobs, delivered to it in batches.

    Workers :meth:`post`; the loop is woken only when no delivery is pending, and
    :meth:`deliver` completes every future that arrived by then. The flag is set before
    the outcome is looked at and cleared before the queue is read, so no outcome waits
    for a wake-up that never comes (at worst a delivery finds nothing to do)."""

    __slots__ = ("__weakref__", "_loop", "_outcomes", "_pending")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._outcomes: collections.deque[tuple[asyncio.Future[Any], bool, Any]] = collections.deque()
        self._pending = False

    def post(self, fut: asyncio.Future[Any], ok: bool, value: Any) -> None:
        """From a worker: hand over one outcome, waking the loop if it is not already
        due to deliver. A closed loop drops it (nobody waits any more)."""
        self._outcomes.append((fut, ok, value))
        if not self._pending:
            self._pending = True
            try:
                self._loop.call_soon_threadsafe(self.deliver)
            except RuntimeError:  # the loop is closed
                pass

    def deliver(self) -> None:
        """On the loop: complete the futures of every outcome posted so far (those
        already cancelled stay so)."""
        self._pending = False
        outcomes = self._outcomes
        while outcomes:
            fut, ok, value = outcomes.popleft()
            if not fut.done():
                if ok:
                    fut.set_result(value)
                else:
                    fut.set_exception(value)


_inboxes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Inbox] = weakref.WeakKeyDictionary()


_last: _Inbox | None = None  # the inbox asked for last: most programs run one loop


def _inbox(loop: asyncio.AbstractEventLoop) -> _Inbox:
    global _last
    inbox = _last
    if inbox is not None and inbox._loop is loop:
        return inbox
    inbox = _inboxes.get(loop)
    if inbox is None:
        inbox = _inboxes[loop] = _Inbox(loop)
    _last = inbox
    return inbox


class _Pool:
    #: The jobs waiting for an idle thread: made with the first thread, before any job
    #: can be put there (a job is queued only when a thread is idle).
    _jobs: queue.SimpleQueue[_Job]

    def __init__(self, max_workers: int) -> None:
        self.max_workers = max_workers
        self._lock = threading.Lock()
        self._idle = 0
        self._threads = 0

    def submit(self, job: _Job) -> None:
        with self._lock:
            spawn = self._idle == 0 and self._threads < self.max_workers
            if spawn:
                if not self._threads:
                    import queue  # with the first thread: start-up cost of the programs that never start one

                    self._jobs = queue.SimpleQueue()
                self._threads += 1
            else:
                self._idle -= 1  # reserve an idle thread for this job
        if spawn:
            threading.Thread(target=self._work, args=(job,), name="mcpkit-worker", daemon=True).start()
        else:
            self._jobs.put(job)

    def _work(self, job: _Job | None) -> None:
        while True:
            if job is None:
                job = self._jobs.get()
            inbox, fut, ctx, fn, args, kwargs = job
            job = None
            try:
                value = ctx.run(fn, *args, **kwargs)
            except BaseException as exc:
                ok = False
                value = exc
            else:
                ok = True
            with self._lock:
                self._idle += 1
            inbox.post(fut, ok, value)
            del inbox, fut, ctx, fn, args, kwargs, value  # an idle thread keeps nothing alive


_pool = _Pool(max_workers=min(32, (os.cpu_count() or 1) + 4))


async def run_sync(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """Run ``fn(*args, **kwargs)`` on a worker thread and return its result.

    Context variables are carried over; exceptions propagate. If the awaiting task is
    cancelled, ``CancelledError`` is raised at once while the thread runs to completion
    (threads cannot be interrupted) and its result is dropped.
    """
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[Any] = loop.create_future()
    _pool.submit((_inbox(loop), fut, contextvars.copy_context(), fn, args, kwargs))
    return await fut


def is_async_callable(fn: Any) -> bool:
    """Whether calling ``fn`` returns a coroutine: an ``async def`` function or method,
    a ``functools.partial`` of one, or an object whose ``__call__`` is ``async def``."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn):
        return True
    return not inspect.isroutine(fn) and callable(fn) and inspect.iscoroutinefunction(type(fn).__call__)


def call_handler(fn: Callable[..., Any], is_async: bool, /, *args: Any, **kwargs: Any) -> Awaitable[Any]:
    """Call user code the way its kind needs, returning what to await: ``fn(...)``
    itself when ``is_async`` (see :func:`is_async_callable`, decided once at
    registration), else :func:`run_sync` on a worker thread. Not a coroutine itself,
    so awaiting it adds no frame on the hot path. Exceptions propagate when awaited; on
    cancellation a thread runs on and its result is dropped."""
    if is_async:
        return fn(*args, **kwargs)  # type: ignore[no-any-return]
    return run_sync(fn, *args, **kwargs)
