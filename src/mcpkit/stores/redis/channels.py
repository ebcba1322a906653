"""The nodes' pub/sub: one Redis connection per node that listens on the store's
channels and hands each message to its callback, kept up across Redis restarts; and the
node's heartbeat, by which the others know it is alive.

Redis pub/sub delivers at most once: what is published while a node is disconnected is
lost for it. After a reconnection the callbacks of ``on_reconnect`` run, so that the
store's parts can make up for what may have been missed.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable, Collection
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError, RedisError, ResponseError, TimeoutError as RedisTimeoutError

__all__ = ["Channels", "UNREACHABLE", "FAILED", "wrong_type", "cancel_all"]

log = logging.getLogger("mcpkit.stores")

#: What redis-py raises when Redis cannot be reached or answers too slowly.
UNREACHABLE = (RedisConnectionError, RedisTimeoutError, OSError)
#: What a Redis command can fail with: Redis unreachable or too slow, or refusing the
#: command (out of memory, read-only, a script error, a key of the wrong type). Each is
#: the store's fault, never the request's: the parts raise ``StoreUnavailable``.
FAILED = (RedisError, OSError)


def wrong_type(exc: BaseException) -> bool:
    """Whether ``exc`` is Redis refusing a command on a key that holds another type (a
    list where a record belongs): for a read of one record, the record is missing."""
    return isinstance(exc, ResponseError) and str(exc).startswith("WRONGTYPE")


Callback = Callable[[bytes], None]


async def cancel_all(tasks: Collection[asyncio.Task[None]]) -> None:
    """Cancel ``tasks`` and return once every one has ended.

    A task whose cancellation gets lost on its way out (a library under it that catches
    the cancel and answers as if its read had timed out, which the background loops treat
    as a lost store and go on) is cancelled again every second until it ends: closing a
    store never waits forever on its own background work. Their exceptions are retrieved
    (the loops log their own). If the caller is cancelled meanwhile, it stops waiting;
    the tasks stay cancelled.
    """
    pending = {task for task in tasks if not task.done()}
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=1.0)
    for task in tasks:
        if not task.cancelled():
            task.exception()


class Channels:
    """Subscriptions to named channels on one connection, and this node's heartbeat.

    ``on(channel, callback)`` adds a subscription (before or after :meth:`start`);
    callbacks run on the event loop and must not block. The heartbeat sets the key
    ``alive_key`` every ``heartbeat`` seconds, expiring after three beats.
    """

    def __init__(self, redis: Redis, *, alive_key: str, heartbeat: float) -> None:
        self._redis = redis
        self._alive_key = alive_key
        self.heartbeat = heartbeat
        self._callbacks: dict[str, Callback] = {}
        self._reconnected: list[Callable[[], None]] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._changed = asyncio.Event()
        self.connected = False

    @property
    def alive_ttl(self) -> int:
        """Seconds the heartbeat key lives without a beat (whole seconds, at least 2)."""
        return max(2, math.ceil(self.heartbeat * 3))

    def on(self, channel: str, callback: Callback) -> None:
        """Hand every message published on ``channel`` to ``callback``."""
        self._callbacks[channel] = callback
        self._changed.set()

    def on_reconnect(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` each time the subscription connection is back after a loss."""
        self._reconnected.append(callback)

    def start(self) -> None:
        """Start listening and beating, on the running loop; does nothing if started."""
        if self._tasks and not all(t.done() for t in self._tasks):
            return
        loop = asyncio.get_running_loop()
        self._changed = asyncio.Event()
        self._tasks = [loop.create_task(self._listen(), name="mcpkit-redis-pubsub"), loop.create_task(self._beat())]

    async def close(self) -> None:
        """Stop listening and beating, and remove the heartbeat key (the others see this
        node gone at once); Redis errors are ignored."""
        tasks, self._tasks = self._tasks, []
        await cancel_all(tasks)
        try:
            await self._redis.delete(self._alive_key)
        except FAILED:
            pass

    async def _beat(self) -> None:
        failed = False
        while True:
            try:
                await self._redis.set(self._alive_key, b"1", ex=self.alive_ttl)
                if failed:
                    log.info("heartbeat: the store is reachable again")
                failed = False
            except FAILED as exc:
                if not failed:
                    log.warning("heartbeat: the store is unreachable: %s", exc)
                failed = True
            await asyncio.sleep(self.heartbeat)

    async def _listen(self) -> None:
        """Subscribe and dispatch until cancelled; on a lost connection, subscribe again
        with a back-off from 0.1 s doubling to 2 s."""
        delay, lost = 0.1, False
        while True:
            pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
            try:
                subscribed = set(self._callbacks)
                await pubsub.subscribe(*subscribed)
                self.connected = True
                if lost:
                    log.info("pub/sub: reconnected to the store")
                    for callback in tuple(self._reconnected):
                        callback()
                delay, lost = 0.1, False
                while True:
                    if self._changed.is_set():
                        self._changed.clear()
                        added = set(self._callbacks) - subscribed
                        if added:
                            await pubsub.subscribe(*added)
                            subscribed |= added
                    message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=0.5)
                    if message is not None:
                        self._dispatch(message)
            except FAILED as exc:
                if not lost:
                    log.warning("pub/sub: lost the store (%s); reconnecting", exc)
                self.connected, lost = False, True
            finally:
                try:
                    await pubsub.aclose()  # type: ignore[no-untyped-call]
                except (*FAILED, RuntimeError):
                    pass
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)

    def _dispatch(self, message: dict[str, Any]) -> None:
        channel = message.get("channel")
        name = channel.decode() if isinstance(channel, bytes) else str(channel)
        callback = self._callbacks.get(name)
        data = message.get("data")
        if callback is None or not isinstance(data, bytes):
            return
        try:
            callback(data)
        except Exception:
            log.exception("a handler of channel %s failed", name)
