"""Client settings: :class:`ClientOptions` for the whole client, :class:`RequestOptions`
for one request."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

from .._version import __version__
from ..protocol.types import LOG_LEVELS, Implementation, LogLevel, Root
from ..protocol.versions import SUPPORTED_PROTOCOL_VERSIONS
from ..runtime.peer import ProgressCallback, check_timeout

__all__ = ["ClientOptions", "RequestOptions", "LogHandler", "NotificationCallback"]

LogHandler = Callable[[str, Any, str | None], Awaitable[None] | None]
NotificationCallback = Callable[[str, dict[str, Any]], None]


@dataclasses.dataclass(frozen=True)
class ClientOptions:
    """Client-wide settings.

    ``request_timeout`` (seconds, default 30) is every request's deadline unless a call
    gives its own; it must be positive and finite (``ValueError`` otherwise).
    ``protocol_version`` pins a revision (a modern one skips the handshake, a legacy one
    goes straight to ``initialize``); None probes with ``server/discover`` and falls
    back to ``initialize``. ``discover_timeout`` bounds that probe.
    """

    request_timeout: float = 30.0
    protocol_version: str | None = None
    client_info: Implementation = dataclasses.field(default_factory=lambda: Implementation(name="mcpkit", version=__version__))
    capabilities: dict[str, Any] = dataclasses.field(default_factory=dict)
    discover_timeout: float = 5.0
    log_level: LogLevel | None = None
    on_log: LogHandler | None = None
    on_notification: NotificationCallback | None = None
    roots: list[Root] | None = None
    max_error_text: int = 1024

    def __post_init__(self) -> None:
        check_timeout(self.request_timeout)
        check_timeout(self.discover_timeout)
        if self.max_error_text < 16:
            raise ValueError("max_error_text must be at least 16 bytes")
        if self.protocol_version is not None and self.protocol_version not in SUPPORTED_PROTOCOL_VERSIONS:
            raise ValueError(f"unsupported protocol version {self.protocol_version!r}")
        if self.log_level is not None and self.log_level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {self.log_level!r}")

    def capabilities_to_declare(self) -> dict[str, Any]:
        """The client capabilities to announce, in either era: ``capabilities`` plus
        ``roots`` when ``roots`` is set."""
        caps = dict(self.capabilities)
        if self.roots is not None:
            caps.setdefault("roots", {"listChanged": False})
        return caps


@dataclasses.dataclass(frozen=True)
class RequestOptions:
    """Per-request settings for :meth:`Client.send_request`: ``timeout`` in seconds
    (positive and finite, else ``ValueError``; None = the client's default) and an
    ``on_progress(progress, total, message)`` callback."""

    timeout: float | None = None
    on_progress: ProgressCallback | None = None

    def __post_init__(self) -> None:
        if self.timeout is not None:
            check_timeout(self.timeout)
