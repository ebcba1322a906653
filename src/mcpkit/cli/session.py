"""How the client commands reach a server: a TARGET (a command line or a URL) becomes
a transport, the options become a ``ClientOptions``, and every way a session can end
becomes one of the documented exit codes (docs/cli.md)."""

from __future__ import annotations

import dataclasses
import os
import shlex
import shutil
import sys
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from ..client.client import Client
from ..client.options import ClientOptions
from ..protocol.errors import ConnectionClosed, McpError, RequestTimeout
from ..protocol.versions import LEGACY_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from ..transports.base import Transport
from ..transports.stdio.process import StdioTransport

__all__ = [
    "OK",
    "TOOL_ERROR",
    "PROTOCOL_ERROR",
    "TIMEOUT",
    "CONNECTION",
    "USAGE",
    "UNAVAILABLE",
    "INTERRUPTED",
    "Target",
    "parse_target",
    "run_session",
]

#: Exit codes scripts can rely on.
OK = 0
TOOL_ERROR = 1  # the tool ran and failed (a result with isError)
PROTOCOL_ERROR = 2  # the server answered with a JSON-RPC error
TIMEOUT = 3  # no answer within --timeout
CONNECTION = 4  # the server could not be started or reached, or went away
USAGE = 64  # a bad option or argument (sysexits EX_USAGE; click's own 2 would read as a protocol error)
UNAVAILABLE = 69  # `mcpkit dev`: the MCP Inspector cannot be found or installed (EX_UNAVAILABLE)
INTERRUPTED = 130  # Ctrl-C

Era = Literal["auto", "modern", "legacy"]

#: The revision each --era asks for: the newest of that era.
_VERSIONS: dict[str, str | None] = {"auto": None, "modern": MODERN_PROTOCOL_VERSIONS[0], "legacy": LEGACY_PROTOCOL_VERSIONS[0]}


@dataclasses.dataclass(frozen=True)
class Target:
    """Where the server is: a command to spawn (stdio) or a Streamable HTTP URL."""

    command: list[str] | None = None
    url: str | None = None
    headers: dict[str, str] = dataclasses.field(default_factory=dict)

    def transport(self) -> Transport:
        """A fresh transport to the target (the server's stderr is kept, to explain a failure)."""
        if self.url is not None:
            from ..transports.http.transport import HttpTransport

            return HttpTransport(self.url, headers=self.headers or None)
        assert self.command is not None
        return StdioTransport(self.command, stderr="capture")


def parse_target(text: str, headers: dict[str, str] | None = None) -> Target:
    """A TARGET argument: ``http(s)://…`` is a URL; anything else a command line, split
    as a POSIX shell would. A command whose first word is ``python`` or ``python3``, or
    names a ``.py`` file, runs with the interpreter running mcpkit (so the server sees
    the same environment). Raises ``ValueError`` for an empty or unbalanced command."""
    stripped = text.strip()
    if stripped.startswith(("http://", "https://")):
        return Target(url=stripped, headers=dict(headers or {}))
    words = shlex.split(stripped, posix=os.name != "nt")
    if not words:
        raise ValueError("the target is empty: give a server command or an http(s):// URL")
    if words[0] in ("python", "python3"):
        words[0] = sys.executable
    elif words[0].endswith(".py") and not shutil.which(words[0]):
        words.insert(0, sys.executable)
    return Target(command=words)


def client_options(
    era: Era, timeout: float, on_log: Callable[[str, Any, str | None], None] | None, log_level: str | None
) -> ClientOptions:
    """The options of a command's client. Raises ``ValueError`` for a bad timeout."""
    return ClientOptions(
        request_timeout=timeout,
        discover_timeout=min(5.0, timeout),
        protocol_version=_VERSIONS[era],
        on_log=on_log if log_level else None,
        log_level=log_level,  # type: ignore[arg-type]  # checked by ClientOptions
    )


#: Reports a failure: (exit code, kind, the error's code or None, message, data or None).
ErrorReport = Callable[[int, str, int | None, str, Any], None]


async def run_session(
    target: Target, options: ClientOptions, action: Callable[[Client], Awaitable[int]], report: ErrorReport
) -> int:
    """Connect, run ``action(client)`` and close; the exit code of how it went. Failures
    are handed to ``report`` (with the tail of a spawned server's stderr when it could
    not be reached) rather than raised."""
    transport = target.transport()
    try:
        async with Client(transport, options) as client:
            return await action(client)
    except RequestTimeout as exc:
        report(TIMEOUT, "timeout", exc.code, f"no answer within {options.request_timeout:g} s", None)
        return TIMEOUT
    except ConnectionClosed as exc:
        report(CONNECTION, "connection", None, _why(exc.message, transport), None)
        return CONNECTION
    except McpError as exc:
        if isinstance(exc.data, dict) and isinstance(exc.data.get("status"), int) and "body" in exc.data:
            # an HTTP refusal (wrong path, unauthorized, ...), not an answer of the protocol
            report(CONNECTION, "connection", exc.code, exc.message, exc.data)
            return CONNECTION
        report(PROTOCOL_ERROR, "protocol", exc.code, exc.message, exc.data)
        return PROTOCOL_ERROR
    except OSError as exc:
        report(CONNECTION, "connection", None, _why(f"cannot start or reach the server: {exc}", transport), None)
        return CONNECTION


def _why(message: str, transport: Transport) -> str:
    """``message``, with the last lines the spawned server wrote to stderr, if any."""
    if isinstance(transport, StdioTransport):
        tail = transport.stderr_output.decode(errors="replace").strip().splitlines()[-15:]
        if tail:
            return message + "\nthe server's stderr:\n  " + "\n  ".join(tail)
    return message
