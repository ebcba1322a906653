"""The reserved ``_meta`` keys of the modern era (2026-07-28), in one place."""

from __future__ import annotations

from typing import Final

__all__ = ["PROTOCOL_VERSION", "CLIENT_CAPABILITIES", "CLIENT_INFO", "LOG_LEVEL", "SERVER_INFO", "PROGRESS_TOKEN"]

_PREFIX: Final = "io.modelcontextprotocol/"

#: The request's protocol revision; its presence is what makes a request modern.
PROTOCOL_VERSION: Final = _PREFIX + "protocolVersion"
#: The client's capabilities, on every modern request.
CLIENT_CAPABILITIES: Final = _PREFIX + "clientCapabilities"
#: The client's name and version, on every modern request.
CLIENT_INFO: Final = _PREFIX + "clientInfo"
#: The least severe log level the client wants for this request.
LOG_LEVEL: Final = _PREFIX + "logLevel"
#: The server's name and version, on every modern result.
SERVER_INFO: Final = _PREFIX + "serverInfo"
#: Not namespaced: the progress token of a request, in both eras.
PROGRESS_TOKEN: Final = "progressToken"
