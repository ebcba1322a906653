"""The modern era (2026-07-28) over Streamable HTTP: serving a modern request statelessly.

A modern request names its protocol version in ``params._meta`` (its head's
``version``: the endpoint routes it here on that); its mirrored headers
(``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``) are checked
against the body as its head reads it, then it is run on its own and answered on its
POST's response. There is no session, no ``GET`` stream and no ``DELETE`` (docs/http.md,
"One endpoint, two eras").
"""

from __future__ import annotations

from typing import Final, Literal

import msgspec

from ....protocol.engine import Engine
from ....protocol.eras import MODERN
from ....protocol.errors import INVALID_PARAMS, McpError
from ....protocol.events import RequestReceived
from ....protocol.headers import check_request_headers
from ....protocol.versions import supports
from ...base import RequestHandler
from .asgi import Headers, Receive, Send, json_error, send_json
from .exchange import Exchange, LateWatches

__all__ = ["ErrorStatus", "ERROR_STATUSES", "ModernEndpoint"]

#: How a modern-era JSON-RPC error picks its HTTP status (docs/http.md, "HTTP status
#: codes"): ``"spec"``, the specification's and DESIGN's mapping (``-32603`` is 500), or
#: ``"400"``: a status the specification leaves to the server is 400, for clients that
#: read a JSON-RPC error body only on 400 (the TypeScript SDK's).
ErrorStatus = Literal["spec", "400"]
ERROR_STATUSES: Final = ("spec", "400")


class ModernEndpoint:
    """Serves modern requests: each POST stands alone, with fresh server-side state."""

    def __init__(self, handler: RequestHandler, *, json_response: bool | None, error_status: ErrorStatus = "spec") -> None:
        if error_status not in ERROR_STATUSES:
            raise ValueError(f"error_status must be one of {', '.join(map(repr, ERROR_STATUSES))}, not {error_status!r}")
        self._handler = handler
        self._json_response = json_response
        self._error_status = error_status
        #: Set by the app when its shutdown begins: requests cut then are answered (-32603).
        self.draining = False
        #: When the exchanges of slow handlers begin to watch for their client's disconnect.
        self._late = LateWatches()

    def status_of(self, error: McpError) -> int:
        """The HTTP status of a JSON response carrying ``error``: the handler's own
        (``McpError.status``), else the mapping (404 for -32601, 500 for -32603, 400
        otherwise); with ``error_status="400"`` a 5xx of the mapping becomes 400. The
        statuses the specification requires (400 for -32020..-32022, 404 for -32601)
        never change."""
        status = MODERN.error_status(error)
        if self._error_status == "400" and error.status is None and status >= 500:
            return 400
        return status

    async def request(self, receive: Receive, send: Send, headers: Headers, engine: Engine, request: RequestReceived) -> None:
        """Check the mirrored headers and run ``request`` (one whose head names a
        version), answering on ``send``.

        A header that disagrees with the body is answered with -32020 and HTTP 400. A
        version we do not speak is checked only when ``MCP-Protocol-Version`` differs
        from it (a mismatch wins); otherwise the dispatcher answers -32022, listing the
        versions we speak. Params the check cannot decode are answered with -32602 and
        HTTP 400. The handler is cancelled if the client disconnects.
        """
        head = request.head
        version = head.version
        known = isinstance(version, str) and supports(version, "request-meta")
        try:
            if known or headers.get("mcp-protocol-version") != version:
                try:
                    check_request_headers(headers, request, self._handler.header_rules)
                except (msgspec.MsgspecError, RecursionError, ValueError) as exc:
                    raise McpError(INVALID_PARAMS, "Invalid params: they cannot be decoded", status=400) from exc
        except McpError as err:
            await send_json(send, self.status_of(err), json_error(request.id, err))
            return
        exchange = Exchange(
            self._handler,
            engine,
            request,
            policy=MODERN,
            server_session=self._handler.new_session(),
            json_response=self._json_response,
            error_status=self.status_of,
            stopping=lambda: self.draining,
            late=self._late,
        )
        await exchange.run(receive, send)
