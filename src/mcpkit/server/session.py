"""A connection's legacy-era state: what ``initialize`` established."""

from __future__ import annotations

from typing import Any

from ..protocol.types import Implementation

__all__ = ["Session"]


class Session:
    """Per-connection legacy-era state (a stdio process, an in-memory pair, an HTTP
    session). Modern requests get a fresh, never-initialized one."""

    __slots__ = ("client_capabilities", "client_info", "initialized", "log_level", "protocol_version")

    def __init__(self) -> None:
        self.initialized = False
        self.protocol_version = ""
        self.client_info: Implementation | None = None
        self.client_capabilities: dict[str, Any] = {}
        self.log_level: str | None = None
