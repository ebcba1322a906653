"""The channel a :class:`~mcpkit.runtime.peer.Peer` drives: the transport interface.

It is defined here, below the transports that implement it, so that the driver needs
nothing from them. A transport moves whole JSON-RPC messages and knows nothing of
their content: it is started with ``on_message(bytes)`` for each complete message and
``on_close(reason)`` (once, when the channel ends), and offers ``send`` (queue one
message, never blocks), ``drain`` (wait while the peer is slow to read) and
``close``. Messages cross this boundary unframed: a transport that needs delimiters
(stdio's newlines) adds and strips them itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

__all__ = ["Transport", "OnMessage", "OnClose"]

OnMessage = Callable[[bytes], None]
OnClose = Callable[[str | None], None]


class Transport(Protocol):
    """What the engine's driver needs from a channel."""

    async def start(self, on_message: OnMessage, on_close: OnClose) -> None: ...

    def send(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    async def close(self) -> None: ...
