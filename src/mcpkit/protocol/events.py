"""What the JSON-RPC engine reports: one event per received message, and the record
of a request we sent."""

from __future__ import annotations

from typing import Any

import msgspec

from .errors import McpError
from .head import RequestHead, read_head

__all__ = [
    "RequestId",
    "Outgoing",
    "RequestReceived",
    "NotificationReceived",
    "ResponseReceived",
    "ProgressReceived",
    "CancelReceived",
    "Reply",
    "Event",
]

RequestId = int | str


class Outgoing:
    """A request we sent (or are about to send) and whose response we await: its id,
    method and ``params`` as the caller built them (``data`` is all three, encoded)."""

    __slots__ = ("data", "deadline", "id", "method", "params", "progress_token", "sent", "waiter")

    def __init__(self, rid: RequestId, method: str, data: bytes, deadline: float, params: Any = None) -> None:
        self.id = rid
        self.method = method
        self.params = params
        self.data = data
        self.deadline = deadline
        self.sent = False
        self.progress_token: RequestId | None = None
        #: Whatever the driver uses to wake the caller (an asyncio future, say).
        self.waiter: Any = None


class RequestReceived:
    __slots__ = ("_head", "id", "method", "params")

    def __init__(self, rid: RequestId, method: str, params: msgspec.Raw, head: RequestHead | None = None) -> None:
        """``head``: what :func:`~.head.read_head` made of ``params`` already (None: it is
        read on first use)."""
        self.id = rid
        self.method = method
        #: The raw JSON of ``params`` (empty when absent): :attr:`head` is what it says.
        self.params = params
        self._head = head

    @property
    def head(self) -> RequestHead:
        """What the request's params say, for every layer that serves it: decoded on
        first use, once (:mod:`.head`). Never raises."""
        head = self._head
        if head is None:
            head = self._head = read_head(self.params)
        return head


class NotificationReceived:
    __slots__ = ("method", "params")

    def __init__(self, method: str, params: msgspec.Raw) -> None:
        self.method = method
        self.params = params


class ResponseReceived:
    """The response to one of our requests: ``result`` (raw JSON) or ``error``."""

    __slots__ = ("error", "request", "result")

    def __init__(self, request: Outgoing, result: msgspec.Raw | None, error: McpError | None) -> None:
        self.request = request
        self.result = result
        self.error = error


class ProgressReceived:
    __slots__ = ("message", "progress", "request", "total")

    def __init__(self, request: Outgoing, progress: float, total: float | None, message: str | None) -> None:
        self.request = request
        self.progress = progress
        self.total = total
        self.message = message


class CancelReceived:
    """The peer cancelled a request it sent us that we are still working on. The
    request is forgotten (it will get no response); ``handle`` is what the driver
    registered for it (its task), to stop the work."""

    __slots__ = ("id", "reason", "handle")

    def __init__(self, rid: RequestId, reason: str | None, handle: Any = None) -> None:
        self.id = rid
        self.reason = reason
        self.handle = handle


class Reply:
    """Bytes to send back at once (an error answer to a malformed message)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


Event = RequestReceived | NotificationReceived | ResponseReceived | ProgressReceived | CancelReceived | Reply
