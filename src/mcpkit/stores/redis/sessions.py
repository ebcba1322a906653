"""Legacy sessions in Redis: :class:`RedisSessionStore` (the
:class:`~mcpkit.stores.sessions.SessionStore` of a deployment of several nodes).

A record is a JSON string under ``{prefix}:session:{id}`` whose expiry is the session's
idle timeout, restarted by every load. Messages between nodes go over pub/sub: to one
node on ``{prefix}:node:{id}``, to all on ``{prefix}:nodes``. A node is alive while its
heartbeat key ``{prefix}:alive:{id}`` exists (see :mod:`.channels`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec

from ..errors import StoreUnavailable
from ..listeners import Listeners
from ..sessions import NodeListener, NodeMessage, SessionRecord
from .channels import FAILED, wrong_type

if TYPE_CHECKING:
    from . import RedisStore

__all__ = ["RedisSessionStore"]

log = logging.getLogger("mcpkit.stores")

_encode = msgspec.json.encode
_decode_record = msgspec.json.Decoder(SessionRecord).decode
_decode_message = msgspec.json.Decoder(NodeMessage).decode


def _seconds(ttl: float) -> int:
    return max(1, math.ceil(ttl))


class RedisSessionStore:
    """Session records and node messages in Redis; made by :class:`~mcpkit.stores.redis.RedisStore`
    (``store.sessions``). Raises :class:`StoreUnavailable` where the protocol says: when
    Redis cannot be reached, or fails the command."""

    shared = True

    def __init__(self, root: RedisStore) -> None:
        self._root = root
        self._redis = root.redis
        self.node_id = root.node_id
        self._prefix = root.prefix
        self._listeners: Listeners[NodeMessage] = Listeners("a node listener")
        channels = root.channels
        channels.on(self._node_channel(self.node_id), self._received)
        channels.on(f"{self._prefix}:nodes", self._received)

    def _key(self, session_id: str) -> str:
        return f"{self._prefix}:session:{session_id}"

    def _node_channel(self, node_id: str) -> str:
        return f"{self._prefix}:node:{node_id}"

    async def start(self) -> None:
        await self._root.start()

    async def close(self) -> None:
        await self._root.aclose()

    async def check(self) -> None:
        try:
            await self._redis.ping()
        except FAILED as exc:
            raise StoreUnavailable(f"the session store is unreachable: {exc}") from None

    async def create(self, record: SessionRecord, ttl: float) -> None:
        """Raises ``ValueError`` for a session id in use, :class:`StoreUnavailable`."""
        try:
            created = await self._redis.set(self._key(record.session_id), _encode(record), ex=_seconds(ttl), nx=True)
        except FAILED as exc:
            raise StoreUnavailable(f"the session store is unreachable: {exc}") from None
        if not created:
            raise ValueError(f"session {record.session_id!r} exists")

    async def load(self, session_id: str, ttl: float) -> SessionRecord | None:
        """The record; None (and the key deleted) when what is stored under the
        session's key is not a session record: a key of another type, or bytes that do
        not decode."""
        try:
            data = await self._redis.getex(self._key(session_id), ex=_seconds(ttl))
        except FAILED as exc:
            if not wrong_type(exc):
                raise StoreUnavailable(f"the session store is unreachable: {exc}") from None
            data = b""
        if not isinstance(data, bytes):
            return None
        try:
            return _decode_record(data)
        except msgspec.DecodeError:
            log.error("session %s: the stored record is not valid; ending the session", session_id[:12])
            await self.delete(session_id)
            return None

    async def save(self, record: SessionRecord, ttl: float) -> None:
        try:
            await self._redis.set(self._key(record.session_id), _encode(record), ex=_seconds(ttl), xx=True)
        except FAILED as exc:
            raise StoreUnavailable(f"the session store is unreachable: {exc}") from None

    async def delete(self, session_id: str) -> None:
        try:
            await self._redis.delete(self._key(session_id))
        except FAILED as exc:
            raise StoreUnavailable(f"the session store is unreachable: {exc}") from None

    async def send(self, node_id: str, message: NodeMessage) -> None:
        await self._publish(self._node_channel(node_id), message)

    async def broadcast(self, message: NodeMessage) -> None:
        await self._publish(f"{self._prefix}:nodes", message)

    async def _publish(self, channel: str, message: NodeMessage) -> None:
        await self._root.start()
        try:
            await self._redis.publish(channel, _encode(message))
        except FAILED as exc:
            raise StoreUnavailable(f"the session store is unreachable: {exc}") from None

    def listen(self, listener: NodeListener) -> Callable[[], None]:
        return self._listeners.add(listener)

    def _received(self, data: bytes) -> None:
        try:
            message = _decode_message(data)
        except msgspec.DecodeError:
            log.warning("ignoring a node message that is not valid")
            return
        self._listeners.notify(message)

    async def node_alive(self, node_id: str) -> bool:
        """Whether ``node_id``'s heartbeat key exists; True when the store cannot say
        (unreachable: better wait than declare a live node dead)."""
        if node_id == self.node_id:
            return True
        try:
            return bool(await self._redis.exists(f"{self._prefix}:alive:{node_id}"))
        except FAILED:
            return True
