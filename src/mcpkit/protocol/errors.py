"""Error codes, the exceptions users see, and text flattening (docs/errors.md).

Two kinds of failure are kept apart everywhere: a *failed operation* is a successful
response whose result says ``isError: true``; a *protocol error* is a JSON-RPC error
object, raised on the client as :class:`McpError`.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Final

__all__ = [
    "PARSE_ERROR",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "INVALID_PARAMS",
    "INTERNAL_ERROR",
    "REQUEST_TIMEOUT",
    "REQUEST_CANCELLED",
    "HEADER_MISMATCH",
    "MISSING_CLIENT_CAPABILITY",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "URL_ELICITATION_REQUIRED",
    "DEFAULT_MAX_ERROR_TEXT",
    "McpError",
    "RequestTimeout",
    "ConnectionClosed",
    "ToolError",
    "HttpError",
    "flatten_text",
    "MAX_ECHO",
    "echo",
    "quoted",
]

#: JSON-RPC -32700: the message is not JSON, not UTF-8, or nested too deeply (answered with ``id: null``).
PARSE_ERROR: Final = -32700
#: JSON-RPC -32600: not a valid request; in the legacy era also a request before ``initialize``.
INVALID_REQUEST: Final = -32600
#: JSON-RPC -32601: a method the peer does not have (or not in the request's era).
METHOD_NOT_FOUND: Final = -32601
#: JSON-RPC -32602: bad params: unknown tool, prompt or resource, arguments that break the schema, a bad cursor.
INVALID_PARAMS: Final = -32602
#: JSON-RPC -32603: the server failed; from a handler, ``data`` holds only a reference id into the server's log.
INTERNAL_ERROR: Final = -32603
#: -32001: the code of :class:`RequestTimeout`, raised locally when a request's deadline passes.
REQUEST_TIMEOUT: Final = -32001
#: -32800: the peer cancelled a request we sent it.
REQUEST_CANCELLED: Final = -32800
HEADER_MISMATCH: Final = -32020
#: The request needs a client capability the client did not declare (``data.requiredCapabilities``).
MISSING_CLIENT_CAPABILITY: Final = -32021
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022
#: The request cannot go on until the user completes the URL elicitations in ``data.elicitations``.
URL_ELICITATION_REQUIRED: Final = -32042

DEFAULT_MAX_ERROR_TEXT: Final = 1024
#: Bytes of client input an error message or error ``data`` may repeat (names, URIs, header values).
MAX_ECHO: Final = 256

_DEFAULT_STATUS = {METHOD_NOT_FOUND: 404, INTERNAL_ERROR: 500}


class McpError(Exception):
    """A JSON-RPC error: raised by the client for an error response, and raised by
    server code to answer with exactly this code, message and data.

    ``local`` is true only for errors that arose inside this process (a deadline, a
    closed connection) and were never sent by the peer: ``local=True`` marks one so
    (the subclasses that are always local, such as :class:`RequestTimeout` and
    :class:`ConnectionClosed`, say so on the class).
    """

    local: bool = False

    def __init__(
        self,
        code: int,
        message: str,
        data: Any = None,
        *,
        status: int | None = None,
        local: bool = False,
    ) -> None:
        if isinstance(code, bool) or not isinstance(code, int):
            raise TypeError(f"McpError code must be an int, not {type(code).__name__}")
        super().__init__(code, message)
        self.code = code
        self.message = message
        self.data = data
        self.status = status
        if local:  # else the class says (True for the local subclasses, False here)
            self.local = True

    @property
    def http_status(self) -> int:
        """The HTTP status a modern-era JSON response carries for this error."""
        if self.status is not None:
            return self.status
        return _DEFAULT_STATUS.get(self.code, 400)

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"

    def __repr__(self) -> str:
        extra = f", data={self.data!r}" if self.data is not None else ""
        return f"{type(self).__name__}({self.code}, {self.message!r}{extra})"

    def to_wire(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` member for this error."""
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err


class RequestTimeout(McpError):
    """A request's deadline passed before its response arrived (local, code -32001).

    The request may still have run on the server: treat a timed-out non-idempotent
    request as having an unknown outcome. ``message`` may say more than the default
    (what timed out, what to tune).
    """

    local = True

    def __init__(self, request_id: int | str | None = None, message: str = "Request timed out") -> None:
        super().__init__(REQUEST_TIMEOUT, message, {"id": request_id})


class ConnectionClosed(McpError):
    """The transport ended (process exited, connection refused or reset) before a
    response arrived.

    Local: code -32000 (JSON-RPC's generic server error) is only a label here; the
    peer never sent it, and ``local`` is true.
    """

    local = True

    def __init__(self, reason: str = "Connection closed") -> None:
        super().__init__(-32000, reason)


class ToolError(Exception):
    """Raise from a tool handler to fail the call with exactly this text as an
    ``isError`` result. The text is never masked (it is still flattened and bounded)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class HttpError(Exception):
    """An exception that carries an HTTP status, raised by handler code.

    It maps to a JSON-RPC error per era (docs/errors.md, "Exceptions that carry an HTTP status"); any exception with an integer
    ``status_code`` attribute (Starlette's ``HTTPException``, for one) maps the same way.
    """

    def __init__(self, status_code: int, message: str = "") -> None:
        super().__init__(status_code, message)
        self.status_code = status_code
        self.message = message

    def __str__(self) -> str:
        return self.message or f"HTTP {self.status_code}"


@functools.cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """C0 controls, DEL, C1 controls, LINE SEPARATOR and PARAGRAPH SEPARATOR (-> space);
    lone surrogates, which cannot be encoded as UTF-8 (-> U+FFFD). Compiled at the first
    use, not at import: a class with characters past U+00FF costs `re` about 2.3 million
    instructions to compile, which every program importing mcpkit would pay."""
    return re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]"), re.compile("[\ud800-\udfff]")


_ELLIPSIS = "…"
_ELLIPSIS_BYTES = len(_ELLIPSIS.encode())


def flatten_text(text: str | bytes, limit: int = DEFAULT_MAX_ERROR_TEXT) -> str:
    """Make ``text`` safe to put in an error message or a tool error text.

    Control characters (C0, C1, DEL) and U+2028/U+2029 become a space, invalid UTF-8
    becomes U+FFFD, and the result is at most ``limit`` bytes of UTF-8, cut on a
    character boundary with ``"…"`` appended when cut (the ellipsis counts toward
    the limit).

    Raises ``ValueError`` if ``limit`` is smaller than 4 bytes.
    """
    if limit < 4:
        raise ValueError("limit must be at least 4 bytes")
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if text.isascii() and text.isprintable():  # fast path: no control character, no surrogate
        return text if len(text) <= limit else text[: limit - _ELLIPSIS_BYTES] + _ELLIPSIS
    control, surrogate = _patterns()
    text = control.sub(" ", text)
    if surrogate.search(text):
        text = surrogate.sub("\ufffd", text)
    if len(text) * 4 <= limit:  # fast path: cannot be over the limit
        return text
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    return encoded[: limit - _ELLIPSIS_BYTES].decode("utf-8", "ignore") + _ELLIPSIS


def echo(value: Any, limit: int = MAX_ECHO) -> Any:
    """Client input as an error's ``data`` may repeat it: a string flattened and bounded
    to ``limit`` bytes, ``None``, a boolean, a float or a 64-bit integer as it is, and
    anything else (a container, a huge integer) as its ``repr``, flattened and bounded.
    Never raises (``ValueError`` for a ``limit`` under 4 bytes aside)."""
    if isinstance(value, str):
        return flatten_text(value[: limit + 1], limit)
    if value is None or isinstance(value, (bool, float)) or (isinstance(value, int) and -(2**63) <= value < 2**64):
        return value
    return quoted(value, limit)


def quoted(value: Any, limit: int = MAX_ECHO) -> str:
    """``repr(value)`` for an error message, flattened and bounded to ``limit`` bytes
    (a long string is cut before it is quoted). Never raises (``ValueError`` for a
    ``limit`` under 4 bytes aside)."""
    if isinstance(value, str):
        value = value[: limit + 1]
    try:
        text = repr(value)
    except (RecursionError, ValueError):  # nested too deeply; an integer with too many digits
        text = f"<{type(value).__name__}>"
    return flatten_text(text, limit)
