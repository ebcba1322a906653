"""A legacy session's change notifications on its GET stream: connecting the server's
changes to the stream (:func:`connect_changes`), and the notices that catch a client up
when the stream moves to this node (:func:`resync`). :mod:`.cluster` decides which node
delivers them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ....runtime.outbound import Notifier
from ...base import RequestHandler
from .sessions import HttpSession

__all__ = ["connect_changes", "resync"]


def connect_changes(handler: RequestHandler, session: HttpSession) -> Callable[[], Awaitable[None]]:
    """Deliver the server's change notifications to ``session``'s GET stream (stored, so
    a client that opens or resumes the stream later gets them); returns what stops it."""

    def put(method: str, params: Any) -> None:
        if not session.closed:
            session.standalone_stream().put(session.engine.notification(method, params))

    return handler.connect(session.server_session, Notifier(put, drain=lambda: session.standalone_stream().drain()))


_LIST_CHANGES = ("notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed")


def resync(session: HttpSession) -> None:
    """Queue one notice per list and per subscribed resource on ``session``'s GET stream:
    its stream moves to this node, and changes made while it moved may not have been
    delivered (a notice says only that something changed: one too many costs a re-read)."""
    stream = session.standalone_stream()
    for method in _LIST_CHANGES:
        stream.put(session.engine.notification(method))
    for uri in sorted(getattr(session.server_session, "resource_uris", ())):
        stream.put(session.engine.notification("notifications/resources/updated", {"uri": uri}))
