"""What the client reports about its own resilience: typed events for
``ClientOptions(on_event=...)``, and the log records that go with them.

An application counts these to see how healthy its server is and to degrade
gracefully (turn a feature off, show cached content) instead of failing outright
(docs/timeouts-and-retries.md). Each event is also logged on the ``mcpkit.client``
logger: an attempt at DEBUG, a timeout, a retry and a reconnection at INFO, a lost
connection, a restart and a reconnection attempt at WARNING, a reconnection given up on
at ERROR.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import ClassVar

from ..protocol.errors import McpError

__all__ = [
    "ClientEvent",
    "AttemptStarted",
    "AttemptTimedOut",
    "RetryScheduled",
    "ConnectionLost",
    "ServerRestarted",
    "ReconnectScheduled",
    "Reconnected",
    "ReconnectFailed",
    "EventHandler",
    "Events",
]

logger = logging.getLogger("mcpkit.client")


@dataclasses.dataclass(frozen=True, slots=True)
class ClientEvent:
    """Base class of the client's events; ``kind`` names each kind in one word
    (``"attempt"``, ``"timeout"``, ``"retry"``, ``"disconnect"``, ``"restart"``,
    ``"reconnecting"``, ``"reconnect"``, ``"reconnect_failed"``), handy as a counter key."""

    kind: ClassVar[str] = "event"
    level: ClassVar[int] = logging.INFO

    def describe(self) -> str:
        """One line for the log."""
        return self.kind


@dataclasses.dataclass(frozen=True, slots=True)
class AttemptStarted(ClientEvent):
    """Attempt ``attempt`` (1-based) of a request ``method`` starts, with ``timeout``
    seconds (its own deadline). Reported only for calls that may be retried."""

    kind: ClassVar[str] = "attempt"
    level: ClassVar[int] = logging.DEBUG
    method: str
    attempt: int
    timeout: float

    def describe(self) -> str:
        """One line for the log."""
        return f"{self.method}: attempt {self.attempt} ({self.timeout:g} s)"


@dataclasses.dataclass(frozen=True, slots=True)
class AttemptTimedOut(ClientEvent):
    """A request ``method`` reached its deadline (``RequestTimeout``) on attempt
    ``attempt`` after ``timeout`` seconds; whether it is retried follows as a
    :class:`RetryScheduled`, or not."""

    kind: ClassVar[str] = "timeout"
    method: str
    attempt: int
    timeout: float

    def describe(self) -> str:
        """One line for the log."""
        return f"{self.method}: attempt {self.attempt} timed out after {self.timeout:g} s"


@dataclasses.dataclass(frozen=True, slots=True)
class RetryScheduled(ClientEvent):
    """Attempt ``attempt`` of ``method`` failed with ``error`` (transient); the next
    one starts after ``delay`` seconds."""

    kind: ClassVar[str] = "retry"
    method: str
    attempt: int
    delay: float
    error: McpError

    def describe(self) -> str:
        """One line for the log."""
        return f"{self.method}: attempt {self.attempt} failed ({self.error}); retrying in {self.delay:.2f} s"


@dataclasses.dataclass(frozen=True, slots=True)
class ConnectionLost(ClientEvent):
    """The connection ended on its own (``reason``); a restartable transport is about to
    be restarted, otherwise the client is closed."""

    kind: ClassVar[str] = "disconnect"
    level: ClassVar[int] = logging.WARNING
    reason: str

    def describe(self) -> str:
        """One line for the log."""
        return f"connection lost: {self.reason}"


@dataclasses.dataclass(frozen=True, slots=True)
class ServerRestarted(ClientEvent):
    """A supervised server is being started again: restart number ``restart`` (in all),
    after waiting ``delay`` seconds, because of ``reason``."""

    kind: ClassVar[str] = "restart"
    level: ClassVar[int] = logging.WARNING
    restart: int
    delay: float
    reason: str

    def describe(self) -> str:
        """One line for the log."""
        return f"restarting the server (restart {self.restart}) after {self.delay:.2f} s: {self.reason}"


@dataclasses.dataclass(frozen=True, slots=True)
class ReconnectScheduled(ClientEvent):
    """The client will try to reach a server it lost again (HTTP with ``reconnect``; a
    supervised stdio server reports :class:`ServerRestarted` instead): attempt
    ``attempt`` (1-based, counted from the loss) starts after ``delay`` seconds, because
    of ``reason`` (the loss, or how the previous attempt failed)."""

    kind: ClassVar[str] = "reconnecting"
    level: ClassVar[int] = logging.WARNING
    attempt: int
    delay: float
    reason: str

    def describe(self) -> str:
        """One line for the log."""
        return f"reconnecting (attempt {self.attempt}) in {self.delay:.2f} s: {self.reason}"


@dataclasses.dataclass(frozen=True, slots=True)
class Reconnected(ClientEvent):
    """The client is connected again: negotiated anew after a restart, or in a new
    session after the server forgot the old one (``reason``); its subscriptions are
    re-opened. ``downtime`` is how long calls could not be sent, in seconds."""

    kind: ClassVar[str] = "reconnect"
    reason: str
    downtime: float

    def describe(self) -> str:
        """One line for the log."""
        return f"reconnected ({self.reason}) after {self.downtime:.2f} s"


@dataclasses.dataclass(frozen=True, slots=True)
class ReconnectFailed(ClientEvent):
    """The client gave up reconnecting (``error`` says why): it is closed for good."""

    kind: ClassVar[str] = "reconnect_failed"
    level: ClassVar[int] = logging.ERROR
    error: McpError

    def describe(self) -> str:
        """One line for the log."""
        return f"gave up reconnecting: {self.error}"


#: ``on_event(event)``: called synchronously for each :class:`ClientEvent`; what it raises is logged and ignored.
EventHandler = Callable[[ClientEvent], None]


class Events:
    """Hands events to the application's handler and to the log."""

    __slots__ = ("_handler",)

    def __init__(self, handler: EventHandler | None) -> None:
        self._handler = handler

    def emit(self, event: ClientEvent) -> None:
        """Log ``event`` at its level and call the handler (its exceptions are logged)."""
        if logger.isEnabledFor(event.level):
            logger.log(event.level, "%s", event.describe())
        handler = self._handler
        if handler is not None:
            try:
                handler(event)
            except Exception:
                logger.exception("on_event handler failed for %s", event.kind)
