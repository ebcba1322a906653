"""The pieces of the mapping from a handler's exception to a JSON-RPC error
(docs/errors.md): the generic ``-32603`` with a reference id, the bounding of an
``McpError``'s message, and the two eras' tables for exceptions that carry an HTTP status.

The mapping itself is asked of the request's era policy
(:meth:`~mcpkit.protocol.eras.EraPolicy.wire_error`), which the server's dispatcher
calls for every exception that escapes a handler or middleware (tool exceptions have
already become ``isError`` results). Exception text from user code never reaches the
client unless the server opted in with ``expose_internal_errors``; the details are
logged under a reference id that the error's ``data`` carries. Nothing here knows the
eras' policies: they import these tables, not the other way round.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Final

from .errors import INTERNAL_ERROR, INVALID_PARAMS, McpError, flatten_text

__all__ = ["bounded", "internal_error", "has_status", "modern_status_error", "legacy_status_error"]

log = logging.getLogger("mcpkit.server")

#: Legacy era: HTTP status -> JSON-RPC code (the h3 table).
_H3_CODES: Final = {
    400: INVALID_PARAMS,
    422: INVALID_PARAMS,
    401: -32001,
    403: -32003,
    404: -32004,
    408: -32008,
    409: -32009,
    429: -32029,
}


def has_status(exc: BaseException) -> bool:
    """Whether ``exc`` carries an HTTP status (``HttpError`` or an int ``status_code``)."""
    code = getattr(exc, "status_code", None)
    return isinstance(code, int) and not isinstance(code, bool)


def bounded(exc: McpError, limit: int) -> McpError:
    """``exc`` with its message flattened and bounded."""
    message = flatten_text(exc.message, limit)
    if message == exc.message:
        return exc
    return McpError(exc.code, message, exc.data, status=exc.status)


def internal_error(exc: BaseException, what: str, *, expose: bool, limit: int) -> McpError:
    """-32603 with only a reference id in ``data``; the exception is logged under it.
    With ``expose`` the flattened exception text replaces ``"Internal error"``."""
    ref = os.urandom(6).hex()
    log.error("%s failed (reference %s)", what, ref, exc_info=exc)
    message = flatten_text(str(exc) or type(exc).__name__, limit) if expose else "Internal error"
    return McpError(INTERNAL_ERROR, message, {"reference": ref})


def modern_status_error(exc: BaseException, method: str, limit: int) -> McpError:
    """Modern era: 400/404/409/422 -> -32602 (HTTP 400), anything else -> -32603 (HTTP
    500) with only a reference; the message is collapsed either way."""
    status: int = exc.status_code  # type: ignore[attr-defined]
    if status in (400, 404, 409, 422):
        return McpError(INVALID_PARAMS, "Invalid params", status=400)
    error = internal_error(exc, f"handler for {method} (HTTP status {status})", expose=False, limit=limit)
    error.status = 500
    return error


def legacy_status_error(exc: BaseException, limit: int) -> McpError:
    """Legacy era: the h3 table (other 3xx/4xx -> -32000, 5xx -> -32603), the message
    kept (flattened and bounded)."""
    status: int = exc.status_code  # type: ignore[attr-defined]
    code = _H3_CODES.get(status) or (-32000 if 300 <= status < 500 else INTERNAL_ERROR)
    detail: Any = getattr(exc, "detail", None)  # Starlette's HTTPException keeps its text here
    text = detail if isinstance(detail, str) and detail else str(exc)
    if not text:
        from http import HTTPStatus

        try:
            text = HTTPStatus(status).phrase
        except ValueError:
            text = f"HTTP {status}"
    return McpError(code, flatten_text(text, limit))
