"""How the client commands reach a server: a TARGET (a command line or a URL) becomes
a transport, the options become a ``ClientOptions``, and every way a session can end
becomes one of the documented exit codes (docs/cli.md)."""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import shutil
import sys
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any, Final, Literal

from ..client.client import Client
from ..client.options import ClientOptions
from ..client.skills import SkillVerificationError
from ..protocol.errors import INTERNAL_ERROR, ConnectionClosed, McpError, RequestTimeout
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
    "UNVERIFIED",
    "UNAVAILABLE",
    "CANT_WRITE",
    "INTERRUPTED",
    "Target",
    "parse_target",
    "run_session",
    "report_failure",
    "path_hint",
    "ErrorReport",
    "without_inline_tail",
]

#: Exit codes scripts can rely on.
OK = 0
TOOL_ERROR = 1  # the tool ran and failed (a result with isError)
PROTOCOL_ERROR = 2  # the server answered with a JSON-RPC error
TIMEOUT = 3  # no answer within --timeout
CONNECTION = 4  # the server could not be started or reached, or went away
USAGE = 64  # a bad option or argument (sysexits EX_USAGE; click's own 2 would read as a protocol error)
UNVERIFIED = 65  # `mcpkit skills read`: the server's content failed verification against its entry (EX_DATAERR)
UNAVAILABLE = 69  # `mcpkit dev`: no MCP Inspector; `mcpkit skills read`: no PyYAML (EX_UNAVAILABLE)
CANT_WRITE = 74  # `mcpkit install`: the host's configuration cannot be read or written (EX_IOERR)
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
    not be reached or failed with an internal error, and a hint for an HTTP URL that
    misses the endpoint's path) rather than raised."""
    transport = target.transport()
    try:
        async with Client(transport, options) as client:
            return await action(client)
    except (McpError, OSError) as exc:  # the client is closed: a spawned server's stderr is all read
        return report_failure(exc, options, report, stderr=_stderr_lines(transport), url=target.url)


def report_failure(
    exc: McpError | OSError, options: ClientOptions, report: ErrorReport, *, stderr: list[str], url: str | None
) -> int:
    """Hand ``exc`` to ``report`` as the documented exit code and kind (docs/cli.md), and
    return the code. ``stderr``: the last lines the server wrote there, shown when it
    could not be reached or failed with an internal error; ``url``: the HTTP URL it was
    reached at, for the hint when it answered 307 or 404."""
    if isinstance(exc, RequestTimeout):
        default = exc.message == "Request timed out"
        report(TIMEOUT, "timeout", exc.code, f"no answer within {options.request_timeout:g} s" if default else exc.message, None)
        return TIMEOUT
    if isinstance(exc, ConnectionClosed):
        report(CONNECTION, "connection", None, _with_stderr(exc.message, stderr[-15:]), None)
        return CONNECTION
    if isinstance(exc, OSError):
        report(CONNECTION, "connection", None, _with_stderr(f"cannot start or reach the server: {exc}", stderr[-15:]), None)
        return CONNECTION
    if isinstance(exc, SkillVerificationError):
        report(UNVERIFIED, "verification", exc.code, exc.message, exc.data)
        return UNVERIFIED
    data = exc.data if isinstance(exc.data, dict) else None
    if data is not None and isinstance(data.get("status"), int) and "body" in data:
        # an HTTP refusal (wrong path, unauthorized, ...), not an answer of the protocol
        report(CONNECTION, "connection", exc.code, exc.message + path_hint(url, data["status"]), exc.data)
        return CONNECTION
    message = exc.message
    if exc.code == INTERNAL_ERROR and not exc.local:
        reference = data.get("reference") if data is not None else None
        message = _with_stderr(message, _about(stderr, reference if isinstance(reference, str) else None))
    report(PROTOCOL_ERROR, "protocol", exc.code, message, exc.data)
    return PROTOCOL_ERROR


def _about(stderr: list[str], reference: str | None, lines: int = 15, most: int = 40) -> list[str]:
    """What of a server's stderr explains a failure: from the line that names the error's
    ``reference`` (an mcpkit server logs the exception under it) to the end, at most
    ``most`` lines; else the last ``lines``."""
    if reference:
        for i in range(len(stderr) - 1, -1, -1):
            if reference in stderr[i]:
                return stderr[i : i + most]
    return stderr[-lines:]


def path_hint(url: str | None, status: int) -> str:
    """For an HTTP URL answered with a redirect or a 404, a hint at the endpoint's usual
    path (``/mcp``) — "" when there is nothing to say."""
    if url is None or status not in (301, 302, 307, 308, 404):
        return ""
    parts = urllib.parse.urlsplit(url)
    path = parts.path
    if path.endswith("/") and path.rstrip("/"):
        better = parts._replace(path=path.rstrip("/")).geturl()
        return f"\nhint: the server redirects or does not know {path!r}; try without the trailing slash: {better}"
    if path.rstrip("/").endswith("/mcp"):
        return ""
    base = path.rstrip("/")
    better = parts._replace(path=f"{base}/mcp", query="", fragment="").geturl()
    if base:
        root = parts._replace(path="/mcp", query="", fragment="").geturl()
        return f"\nhint: nothing serves MCP at {path!r}; Streamable HTTP endpoints are usually at /mcp: try {better} or {root}"
    return f"\nhint: nothing serves MCP at the server's root; Streamable HTTP endpoints are usually at /mcp: try {better}"


def _stderr_lines(transport: Transport) -> list[str]:
    """The lines a spawned server wrote to its stderr (what was kept of them), if any."""
    if isinstance(transport, StdioTransport):
        return transport.stderr_output.decode(errors="replace").strip().splitlines()
    return []


def without_inline_tail(message: str) -> str:
    """``message`` without the one-line stderr tail a spawned server's reason ends with."""
    return _INLINE_TAIL.sub("", message)


def _with_stderr(message: str, tail: list[str]) -> str:
    """``message``, with the last lines the spawned server wrote to stderr, if any (then
    without the one-line tail the transport's reason carries)."""
    if tail:
        return _INLINE_TAIL.sub("", message) + "\nthe server's stderr:\n  " + "\n  ".join(tail)
    return message


#: The tail a spawned server's reason ends with (``StdioTransport``), before a closing parenthesis if any.
_INLINE_TAIL: Final = re.compile(r"; stderr: .*?(?=\)?$)", re.DOTALL)
