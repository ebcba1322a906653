"""DPoP proof identifiers in Redis: :class:`RedisReplayCache`, the replay cache
(``mcpkit.auth.DPoPChecker(replay_cache=...)``) that every node of a deployment shares,
so a proof accepted by one node is refused when replayed to another (docs/auth.md).

Each ``jti`` is a key ``{prefix}:dpop:{jti}`` set with ``SET NX PXAT``: Redis says
atomically whether it was new, and forgets it when the proof's window has passed, so
the cache holds only live proofs and needs no sweeping.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..errors import StoreUnavailable
from .channels import FAILED

if TYPE_CHECKING:
    from . import RedisStore

__all__ = ["RedisReplayCache"]


class RedisReplayCache:
    """Remembers accepted proofs' ``jti`` in Redis; made by
    :class:`~mcpkit.stores.redis.RedisStore` (``store.replay``)."""

    def __init__(self, root: RedisStore) -> None:
        self._root = root
        self._prefix = f"{root.prefix}:dpop:"

    async def first_use(self, jti: str, until: float) -> bool:
        """Remember ``jti`` until ``until`` (epoch seconds); True if no node had seen it.

        Raises :class:`~mcpkit.StoreUnavailable` when Redis cannot be reached or refuses
        the write (full, read-only): the proof can then be neither accepted nor refused
        as a replay, and the resource server answers 503. Cancellation is safe: the key
        is set or not, atomically."""
        at_ms = max(1, math.ceil(until * 1000))
        try:
            created = await self._root.redis.set(self._prefix + jti, b"1", nx=True, pxat=at_ms)
        except FAILED as exc:
            raise StoreUnavailable(f"the DPoP replay cache is unreachable: {exc}") from None
        return bool(created)
