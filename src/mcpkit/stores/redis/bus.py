"""The subscription bus over Redis pub/sub: :class:`RedisBus`, the
:class:`~mcpkit.stores.bus.SubscriptionBus` of a deployment of several nodes.

``publish`` hands the change to this process's listeners at once and queues it for the
channel ``{prefix}:changes``, which a background task publishes in order; every other
node's :class:`RedisBus` hands what it receives to its own listeners (a node skips its
own messages: it has delivered them already). Delivery between nodes is at most once:
changes published while Redis is unreachable are dropped (logged), and a node that was
disconnected hands its listeners one change per list when it is back, since some may
have been missed (a change notice only says *that* something changed).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

import msgspec

from ..bus import Change, ChangeKind, Listener
from ..listeners import Listeners
from .channels import FAILED

if TYPE_CHECKING:
    from . import RedisStore

__all__ = ["RedisBus"]

log = logging.getLogger("mcpkit.stores")

#: Changes waiting to be published; past it the oldest are dropped (Redis is down).
MAX_QUEUED: Final = 10_000
_LISTS: Final[tuple[ChangeKind, ...]] = ("tools", "prompts", "resources")


class _Wire(msgspec.Struct, frozen=True):
    origin: str
    kind: ChangeKind
    uri: str | None = None
    payload: msgspec.Raw | None = None


_decode = msgspec.json.Decoder(_Wire).decode


class RedisBus:
    """Carries changes between nodes through Redis; made by :class:`~mcpkit.stores.redis.RedisStore`
    (``store.bus``). Safe to publish from worker threads."""

    def __init__(self, root: RedisStore) -> None:
        self._root = root
        self._channel = f"{root.prefix}:changes"
        self._listeners: Listeners[Change] = Listeners("a subscription listener")
        self._queue: deque[bytes] = deque(maxlen=MAX_QUEUED)
        self._wake: asyncio.Event | None = None
        self._sender: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.dropped = 0  # changes not published (the queue overflowed); for tests and logs
        root.channels.on(self._channel, self._received)
        root.channels.on_reconnect(self._resync)

    def publish(self, change: Change) -> None:
        self._deliver(change)
        payload = msgspec.Raw(change.payload) if change.payload is not None else None
        data = msgspec.json.encode(_Wire(self._root.node_id, change.kind, change.uri, payload))
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:  # a worker thread: hand over to the loop that sends
            loop = self._loop
            if loop is not None and not loop.is_closed():
                loop.call_soon_threadsafe(self._enqueue, data)
            return
        if self._loop is not running:
            self._start(running)
        self._enqueue(data)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        return self._listeners.add(listener)

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._wake = asyncio.Event()
        self._sender = loop.create_task(self._send(), name="mcpkit-redis-bus")
        self._root.background(self._sender)
        self._root.channels.start()

    def _enqueue(self, data: bytes) -> None:
        if len(self._queue) == self._queue.maxlen:
            self.dropped += 1
        self._queue.append(data)
        if self._wake is not None:
            self._wake.set()

    async def _send(self) -> None:
        assert self._wake is not None
        failing = False
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                try:
                    await self._root.redis.publish(self._channel, self._queue[0])
                except FAILED as exc:
                    if not failing:
                        log.warning("the subscription bus cannot reach the store: %s; changes are dropped meanwhile", exc)
                    failing = True
                    self.dropped += len(self._queue)
                    self._queue.clear()
                    break
                self._queue.popleft()
                failing = False

    def _received(self, data: bytes) -> None:
        try:
            wire = _decode(data)
        except msgspec.DecodeError:
            log.warning("ignoring a change message that is not valid")
            return
        if wire.origin == self._root.node_id:
            return
        payload = bytes(wire.payload) if wire.payload is not None else None
        self._deliver(Change(wire.kind, wire.uri, payload))

    def _resync(self) -> None:
        """After a reconnection: one change per list, for what may have been missed."""
        for kind in _LISTS:
            self._deliver(Change(kind))

    def _deliver(self, change: Change) -> None:
        self._listeners.notify(change)
