"""Change notifications: who hears which change, and how it reaches them
(docs/subscriptions.md).

The :class:`ChangeHub` publishes the server's changes on the subscription bus (a list
changed — coalesced, so a burst of registrations sends one notice per list — or a
resource was updated) and fans what the bus delivers out to its :class:`Subscriber`
objects: one per legacy connection (every list change, plus the resources it
subscribed to) and one per modern ``subscriptions/listen`` request (what its filter
names, task status changes included: ``notifications/tasks``). Each subscriber queues
its notifications and a task of its own writes them, so a slow client never holds up
the others. The queue is bounded: past
``max_pending`` it is collapsed to one notice per list and per resource — the notices
say only *that* something changed, so nothing a client needs is lost, and memory stays
bounded by what it subscribed to.

Every change is published on the bus, whether or not this process has subscribers of
its own: the clients that hear it may be connected to another node (or another worker
process). A change made on a worker thread (a plain ``def`` handler) is handed to the
event loop the server serves on — the hub learns it when serving starts and from every
request dispatched (:meth:`ChangeHub.serving`) — and published from there, as one made
on the loop is. Changes made before the server serves anything (registrations while it
is set up) are not published: nobody has heard the lists yet.
The hub also counts the open ``subscriptions/listen`` requests (:meth:`ChangeHub.admit`),
so that their number is bounded in all and per principal.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Collection
from typing import Any, Final, cast

import msgspec

from ..protocol.errors import INTERNAL_ERROR, McpError
from ..stores.bus import Change, ChangeKind, SubscriptionBus

__all__ = ["ChangeHub", "Subscriber", "LIST_METHODS", "notice"]

log = logging.getLogger("mcpkit.server")

#: The notification of each kind of change.
LIST_METHODS: Final = {
    "tools": "notifications/tools/list_changed",
    "prompts": "notifications/prompts/list_changed",
    "resources": "notifications/resources/list_changed",
    "resource": "notifications/resources/updated",
    "task": "notifications/tasks",
}

Emit = Callable[[str, dict[str, Any]], None]
#: Seconds during which list changes are gathered into one notice per list.
COALESCE_WINDOW: Final = 0.01
Drain = Callable[[], Awaitable[None]]


def _in_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def notice(change: Change) -> tuple[str, dict[str, Any]]:
    """The notification (method, params) of ``change``: a task's carries its whole state."""
    if change.kind == "task":
        return LIST_METHODS["task"], msgspec.json.decode(change.payload or b"{}")
    params: dict[str, Any] = {"uri": change.uri} if change.kind == "resource" else {}
    return LIST_METHODS[change.kind], params


class Subscriber:
    """One client's interest — the lists it hears about, the resource URIs and the task
    ids it watches — and the notifications waiting for it. ``emit`` sends one; ``drain``
    (if given) waits until the connection has taken what was sent; ``ready`` says
    whether notices may flow yet (a legacy connection: once initialized)."""

    def __init__(
        self,
        emit: Emit,
        *,
        lists: Collection[str],
        uris: set[str],
        drain: Drain | None = None,
        ready: Callable[[], bool] | None = None,
        max_pending: int = 10_000,
        tasks: Collection[str] = (),
    ) -> None:
        self._emit = emit
        self._drain = drain
        self._ready = ready
        self.lists = frozenset(lists)
        #: The resource URIs watched; the owner may add and remove while it runs.
        self.uris = uris
        #: The task ids whose status changes it hears (``notifications/tasks``).
        self.tasks = frozenset(tasks)
        self.max_pending = max_pending
        self._pending: deque[Change] = deque()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.collapsed = 0  # how many times the queue was collapsed (for tests and logs)

    def wants(self, change: Change) -> bool:
        if self._ready is not None and not self._ready():
            return False
        if change.kind == "resource":
            return change.uri in self.uris
        if change.kind == "task":
            return change.uri in self.tasks
        return change.kind in self.lists

    def offer(self, change: Change) -> None:
        """Queue ``change`` if this subscriber wants it (never blocks; from any thread)."""
        loop = self._loop
        if loop is not None and not _in_loop(loop):
            if not loop.is_closed():
                loop.call_soon_threadsafe(self.offer, change)
            return
        if not self.wants(change):
            return
        self._pending.append(change)
        if len(self._pending) > self.max_pending:
            self._collapse()
        self._wake.set()

    def _collapse(self) -> None:
        """Keep one notice per list, resource and task, each at its last position (a
        task's, the latest state)."""
        last = {c: i for i, c in enumerate(self._pending)}
        self._pending = deque(c for i, c in enumerate(self._pending) if last[c] == i)
        self.collapsed += 1
        log.warning("a subscriber fell behind; %d pending notices collapsed to one per list and resource", self.max_pending)

    @property
    def pending(self) -> int:
        return len(self._pending)

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = self._loop.create_task(self._pump(), name="mcpkit-subscriber")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _pump(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                method, params = notice(self._pending.popleft())
                try:
                    self._emit(method, params)
                    if self._drain is not None:
                        await self._drain()
                except asyncio.CancelledError:
                    raise
                except Exception:  # the connection is going: its owner removes us
                    log.debug("could not deliver %s", method, exc_info=True)
                    return


class ChangeHub:
    """Publishes this server's changes on ``bus`` and fans the bus's changes out to
    the subscribers of this process."""

    def __init__(self, bus: SubscriptionBus) -> None:
        self.bus = bus
        self._subscribers: set[Subscriber] = set()
        self._coalescing: set[str] = set()
        self._stop_listening = bus.subscribe(self._fan_out)
        self._closing: set[asyncio.Future[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None  # where the server serves (last seen)
        self._listens = 0
        self._listens_of: dict[str, int] = {}  # open listens per authorized principal
        self._at_once: list[Callable[[Change], None]] = []  # told of this process's changes as they are made

    def __len__(self) -> int:
        return len(self._subscribers)

    def serving(self, loop: asyncio.AbstractEventLoop) -> None:
        """The server serves on ``loop`` (the dispatcher says so for every request):
        changes made on worker threads are published from there."""
        self._loop = loop

    # --- publishing -------------------------------------------------------------------------

    def list_changed(self, kind: str) -> None:
        """A list (``tools``, ``prompts``, ``resources``) changed: published on the bus
        for every node's subscribers, this one's included, whether or not it has any.
        Changes within :data:`COALESCE_WINDOW` of the first send one notice per list;
        the listeners of :meth:`watch` hear each change at once, on the serving loop.
        Safe to call from a worker thread (a plain ``def`` handler): the change goes to
        the loop the server serves on. Before the server serves anything (registrations
        while it is set up) there is nobody to tell: nothing is sent."""
        known = self._loop
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a worker thread (a plain def handler)
            if known is not None and not known.is_closed():
                known.call_soon_threadsafe(self.list_changed, kind)
                return
            loop = None
        self._tell(Change(cast(ChangeKind, kind)))
        if known is None or loop is None:
            return
        if not self._coalescing:
            loop.call_later(COALESCE_WINDOW, self._flush)
        self._coalescing.add(kind)

    def watch(self, listener: Callable[[Change], None]) -> Callable[[], None]:
        """Call ``listener(change)`` for each list change and resource update made on
        this process, when it is made (before the coalesced notice goes out, and before
        the bus delivers it); on the serving loop, or where the change is made before
        serving starts. What it raises is logged. Returns what stops it (idempotent)."""
        self._at_once.append(listener)

        def stop() -> None:
            if listener in self._at_once:
                self._at_once.remove(listener)

        return stop

    def _tell(self, change: Change) -> None:
        for listener in tuple(self._at_once):
            try:
                listener(change)
            except Exception:
                log.exception("a change listener failed")

    def _flush(self) -> None:
        kinds, self._coalescing = self._coalescing, set()
        for kind in ("tools", "prompts", "resources"):
            if kind in kinds:
                self.bus.publish(Change(kind))

    def task_changed(self, task_id: str, state: bytes) -> None:
        """Task ``task_id`` changed; ``state`` is what ``tasks/get`` would answer now
        (JSON). Its listeners are told, in order. Safe to call from a worker thread."""
        self._publish(Change("task", task_id, state))

    def resource_updated(self, uri: str) -> None:
        """Resource ``uri`` changed: its subscribers are told, in order, and the
        listeners of :meth:`watch` at once. Safe to call from a worker thread."""
        known = self._loop
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            if known is not None and not known.is_closed():
                known.call_soon_threadsafe(self.resource_updated, uri)
                return
        self._tell(Change("resource", uri))
        self._publish(Change("resource", uri))

    def _publish(self, change: Change) -> None:
        """On the bus; from a worker thread, by way of the serving loop when it is known."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            known = self._loop
            if known is not None and not known.is_closed():
                known.call_soon_threadsafe(self.bus.publish, change)
                return
        self.bus.publish(change)

    # --- listens ----------------------------------------------------------------------------

    def admit(self, principal: str | None, *, limit: int, per_principal: int) -> Callable[[], None]:
        """Count one more open ``subscriptions/listen`` (of ``principal``, None without
        authorization: then only ``limit`` applies); returns what ends it (idempotent).
        Raises ``McpError(-32603)`` with HTTP status 429 at ``limit`` listens in all or
        ``per_principal`` for the principal."""
        if self._listens >= limit:
            raise McpError(INTERNAL_ERROR, f"Too many subscriptions open: this server holds at most {limit} at once", status=429)
        if principal is not None and self._listens_of.get(principal, 0) >= per_principal:
            raise McpError(
                INTERNAL_ERROR, f"Too many subscriptions open: at most {per_principal} per principal at once", status=429
            )
        self._listens += 1
        if principal is not None:
            self._listens_of[principal] = self._listens_of.get(principal, 0) + 1
        ended = False

        def end() -> None:
            nonlocal ended
            if ended:
                return
            ended = True
            self._listens -= 1
            if principal is not None:
                left = self._listens_of[principal] - 1
                if left:
                    self._listens_of[principal] = left
                else:
                    del self._listens_of[principal]

        return end

    @property
    def listens(self) -> int:
        """How many ``subscriptions/listen`` are open."""
        return self._listens

    # --- subscribers ------------------------------------------------------------------------

    def _fan_out(self, change: Change) -> None:
        for subscriber in tuple(self._subscribers):
            subscriber.offer(change)

    def add(self, subscriber: Subscriber) -> None:
        """Start delivering to ``subscriber`` (needs a running loop)."""
        self._loop = asyncio.get_running_loop()
        self._subscribers.add(subscriber)
        subscriber.start()

    async def remove(self, subscriber: Subscriber) -> None:
        """Stop delivering to ``subscriber``; its pending notices are dropped."""
        self._subscribers.discard(subscriber)
        await subscriber.stop()

    async def wait_closing(self) -> None:
        """Return when :meth:`close` is called (the server is stopping)."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._closing.add(fut)
        try:
            await fut
        finally:
            self._closing.discard(fut)

    def close(self) -> None:
        """End every open ``subscriptions/listen`` gracefully (the server is stopping).
        Safe to call from any thread."""
        for fut in tuple(self._closing):
            fut.get_loop().call_soon_threadsafe(_resolve, fut)


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
