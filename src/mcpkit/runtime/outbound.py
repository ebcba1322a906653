"""The outbound channel: how a handler talks back to the peer whose request it serves.

Today a handler can only send notifications (log messages, progress); requests to the
peer will be added here. A :class:`~mcpkit.runtime.peer.Peer` is one (stdio, memory);
the HTTP app hands each request a :class:`Notifier` bound to that request's response
stream.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Protocol

__all__ = ["Outbound", "Notifier", "DROP"]


class Outbound(Protocol):
    """Messages from a handler to its peer."""

    def notify(self, method: str, params: Any = None) -> None:
        """Send a notification; never blocks, never raises (dropped if it cannot go)."""
        ...


class Notifier:
    """An :class:`Outbound` whose notifications go to a callback."""

    __slots__ = ("_send",)

    def __init__(self, send: Callable[[str, Any], None]) -> None:
        self._send = send

    def notify(self, method: str, params: Any = None) -> None:
        self._send(method, params)


def _drop(method: str, params: Any) -> None:
    return None


#: An :class:`Outbound` that drops everything (a request that has nowhere to stream).
DROP: Final = Notifier(_drop)
