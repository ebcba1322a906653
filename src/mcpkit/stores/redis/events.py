"""Resumable SSE streams in Redis: :class:`RedisEventStore`, the
:class:`~mcpkit.stores.events.SharedEventStore` of a deployment of several nodes.

Each stream is a Redis stream under ``{prefix}:events:{stream_id}``, bounded to
``max_events`` entries (the oldest are trimmed) and expiring ``ttl`` seconds after its
last write. An event id is ``{stream_id}.{entry id}``, so any node finds the stream of
an id. Beyond the two methods of the event store protocol (``store_event``,
``replay_events_after``) it lets a node *follow* a stream that other nodes write — a
legacy session's GET stream, or a response stream resumed on another node than the one
running its handler — and end one: an end marker entry, written once. A small hash,
``{prefix}:stream:{stream_id}``, holds the JSON-RPC id of the request a response stream
answers (for the error a node writes when the stream's node died) and the end flag; the
set ``{prefix}:streams:{session_id}`` names a session's streams, dropped when it ends.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
from typing import TYPE_CHECKING, Any, Final

from ..errors import StoreUnavailable
from ..events import SendEvent, stream_owner
from .channels import FAILED, wrong_type

if TYPE_CHECKING:
    from . import RedisStore

__all__ = ["RedisEventStore"]

log = logging.getLogger("mcpkit.stores")

#: A Redis stream entry id: milliseconds, a dash, a sequence number.
_ENTRY_ID: Final = re.compile(r"[0-9]{1,20}-[0-9]{1,20}")
#: Adds the final message (if any) and the end marker, once: KEYS = stream, hash;
#: ARGV = ttl, maxlen, has-final, final.
_END: Final = """
if redis.call('HSETNX', KEYS[2], 'end', '1') == 0 then return 0 end
if ARGV[3] == '1' then redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[2], '*', 'd', ARGV[4]) end
redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[2], '*', 'e', '1')
redis.call('EXPIRE', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[1])
return 1
"""


def _unavailable(exc: BaseException) -> StoreUnavailable:
    return StoreUnavailable(f"the event store is unreachable: {exc}")


class RedisEventStore:
    """Legacy SSE events in Redis streams; made by :class:`~mcpkit.stores.redis.RedisStore`
    (``store.events``). Every coroutine raises :class:`StoreUnavailable` when Redis cannot
    be reached or fails the command (a key of another type where a stream belongs: a
    replay finds nothing to resume instead)."""

    def __init__(self, root: RedisStore, *, max_events: int, ttl: float) -> None:
        if max_events < 1 or not ttl > 0:
            raise ValueError("max_events_per_stream and event_ttl must be positive")
        self._root = root
        self._redis = root.redis
        self._prefix = root.prefix
        self.max_events = max_events
        self.ttl = max(1, math.ceil(ttl))
        self._end = self._redis.register_script(_END)
        #: How long one follow() call blocks waiting for new events (seconds).
        self.block = min(1.0, root.timeout / 2)

    def _key(self, stream_id: str) -> str:
        return f"{self._prefix}:events:{stream_id}"

    def _meta(self, stream_id: str) -> str:
        return f"{self._prefix}:stream:{stream_id}"

    def _index(self, session_id: str) -> str:
        return f"{self._prefix}:streams:{session_id}"

    async def store_event(self, stream_id: str, message: bytes) -> str:
        """Append one message (an empty one: a priming event) and return its event id."""
        key, index = self._key(stream_id), self._index(stream_owner(stream_id))
        try:
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.xadd(key, {"d": message}, maxlen=self.max_events, approximate=False)
                pipe.expire(key, self.ttl)
                pipe.sadd(index, key)
                pipe.expire(index, self.ttl)
                entry_id = (await pipe.execute())[0]
        except FAILED as exc:
            raise _unavailable(exc) from None
        return f"{stream_id}.{entry_id.decode()}"

    async def replay_events_after(self, last_event_id: str, send: SendEvent) -> str | None:
        """``await send(event_id, message)`` for each event after ``last_event_id``; the
        stream id, or None when the id is malformed, unknown or already trimmed (the app
        then answers 404 rather than replay with a gap)."""
        stream_id, _, entry = last_event_id.rpartition(".")
        if not stream_id or not _ENTRY_ID.fullmatch(entry):
            return None
        key = self._key(stream_id)
        try:
            if not await self._redis.xrange(key, entry, entry, count=1):
                return None
            entries: Any = await self._redis.xrange(key, f"({entry}", "+", count=self.max_events)
        except FAILED as exc:
            if wrong_type(exc):  # not a stream of ours: unknown
                return None
            raise _unavailable(exc) from None
        for entry_id, fields in entries or ():
            data = fields.get(b"d")
            if data:
                await send(f"{stream_id}.{entry_id.decode()}", data)
        return stream_id

    # --- following and ending (shared streams) ----------------------------------------------

    async def cursor(self, stream_id: str) -> str:
        """The entry id of the stream's newest entry ("0-0" if it has none): follow from
        there to get only what comes next."""
        try:
            newest: Any = await self._redis.xrevrange(self._key(stream_id), count=1)
        except FAILED as exc:
            raise _unavailable(exc) from None
        return newest[0][0].decode() if newest else "0-0"

    @staticmethod
    def entry_of(event_id: str) -> str | None:
        """The entry id in ``event_id`` (None if it has none)."""
        entry = event_id.rpartition(".")[2]
        return entry if _ENTRY_ID.fullmatch(entry) else None

    async def follow(self, stream_id: str, cursor: str) -> tuple[list[tuple[str, bytes]], str, bool]:
        """Wait up to :attr:`block` seconds for entries after ``cursor``: returns the
        events (event id, message; priming events left out), the new cursor, and whether
        the stream has ended. Cancellation is safe (the blocked connection is dropped)."""
        try:
            reply: Any = await self._redis.xread({self._key(stream_id): cursor}, count=100, block=round(self.block * 1000))
        except FAILED as exc:
            raise _unavailable(exc) from None
        events: list[tuple[str, bytes]] = []
        ended = False
        for _, entries in reply or ():
            for entry_id, fields in entries:
                cursor = entry_id.decode()
                if b"e" in fields:
                    ended = True
                    break
                data = fields.get(b"d")
                if data:
                    events.append((f"{stream_id}.{cursor}", data))
        return events, cursor, ended

    async def open_stream(self, stream_id: str, request_id: bytes) -> None:
        """Note that ``stream_id`` answers the request whose id is ``request_id`` (JSON)."""
        meta = self._meta(stream_id)
        try:
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.hset(meta, "rid", request_id)
                pipe.expire(meta, self.ttl)
                pipe.sadd(self._index(stream_owner(stream_id)), meta)
                await pipe.execute()
        except FAILED as exc:
            raise _unavailable(exc) from None

    async def request_of(self, stream_id: str) -> bytes | None:
        """The JSON id of the request ``stream_id`` answers, if it was noted."""
        try:
            rid = await self._redis.hget(self._meta(stream_id), "rid")
        except FAILED as exc:
            if wrong_type(exc):
                return None
            raise _unavailable(exc) from None
        return rid if isinstance(rid, bytes) else None

    async def end_stream(self, stream_id: str, final: bytes | None = None) -> bool:
        """End the stream, after ``final`` if given, unless it has ended already (then
        nothing is written). Returns whether this call ended it."""
        args = [self.ttl, self.max_events, "1" if final is not None else "0", final or b""]
        try:
            return bool(await self._end(keys=[self._key(stream_id), self._meta(stream_id)], args=args))
        except FAILED as exc:
            raise _unavailable(exc) from None

    async def touch_stream(self, stream_id: str) -> None:
        """Restart the stream's time to live (a follower keeps an idle stream alive)."""
        try:
            await self._redis.expire(self._key(stream_id), self.ttl)
        except FAILED as exc:
            raise _unavailable(exc) from None

    def discard_session(self, session_id: str) -> None:
        """Drop every stream of session ``session_id`` (it has ended), in the background."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._root.background(loop.create_task(self._discard(session_id)))

    async def _discard(self, session_id: str) -> None:
        index = self._index(session_id)
        try:
            keys = await self._redis.smembers(index)
            await self._redis.delete(index, *keys)
        except FAILED as exc:
            log.info("could not drop the streams of an ended session (they expire): %s", exc)
