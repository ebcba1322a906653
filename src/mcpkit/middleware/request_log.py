"""Structured request logging: :class:`RequestLog`, one ``logging`` record per request."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import msgspec

from ..protocol.errors import McpError, flatten_text
from ..server.context import Context
from ..server.registry import CallNext
from .outcome import Outcome, measured, principal_of, target

__all__ = ["RequestLog"]

#: The methods whose ``params.arguments`` :class:`RequestLog` logs when asked to.
_WITH_ARGUMENTS = frozenset({"tools/call", "prompts/get"})


class RequestLog:
    """Middleware that logs one record per request on ``logger`` (a name or a
    ``logging.Logger``; default ``mcpkit.requests``) when it ends: at ``level``, or
    ``error_level`` for an error response.

    The message reads ``tools/call echo: ok in 1.2 ms``; the record's ``mcp`` attribute
    holds the same as a dict, for structured handlers: ``method``, ``name`` (the tool or
    prompt name, the resource URI), ``duration_ms``, ``outcome`` (``ok``, ``tool_error``,
    ``error``, ``cancelled``), ``code`` (an error's JSON-RPC code), ``request_id``,
    ``session_id`` (:attr:`Context.session_id`), ``principal`` (the authenticated
    subject), ``client`` (the client's own ``clientInfo.name``, unverified) and ``era``.
    Argument values are left out unless ``arguments=True``: then a ``tools/call``'s or
    ``prompts/get``'s ``arguments`` are added as JSON, flattened and cut to
    ``max_arguments`` bytes. ``clock`` (seconds) times the request.

    Never changes the request's result or error; cancellation propagates (logged as
    ``cancelled``).
    """

    def __init__(
        self,
        logger: logging.Logger | str = "mcpkit.requests",
        *,
        level: int = logging.INFO,
        error_level: int = logging.WARNING,
        arguments: bool = False,
        max_arguments: int = 1024,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.logger = logger if isinstance(logger, logging.Logger) else logging.getLogger(logger)
        self.level = level
        self.error_level = error_level
        self.arguments = arguments
        self.max_arguments = max_arguments
        self._clock = clock

    async def __call__(self, ctx: Context, call_next: CallNext) -> Any:
        return await measured(call_next, self._clock, lambda outcome, seconds: self._log(ctx, outcome, seconds))

    def _log(self, ctx: Context, outcome: Outcome, seconds: float) -> None:
        level = self.error_level if outcome.kind == "error" else self.level
        if not self.logger.isEnabledFor(level):
            return
        name = target(ctx)
        fields: dict[str, Any] = {
            "method": ctx.method,
            "name": name,
            "duration_ms": round(seconds * 1000, 3),
            "outcome": outcome.kind,
            "code": outcome.code,
            "request_id": ctx.request_id,
            "session_id": ctx.session_id,
            "principal": principal_of(ctx),
            "client": ctx.client_info.name if ctx.client_info is not None else None,
            "era": ctx.era,
        }
        if self.arguments and ctx.method in _WITH_ARGUMENTS:
            fields["arguments"] = self._arguments(ctx)
        what = f"{ctx.method} {flatten_text(name, 256)}" if name is not None else ctx.method
        detail = outcome.kind if outcome.code is None else f"{outcome.kind} {outcome.code}"
        self.logger.log(level, "%s: %s in %.1f ms", what, detail, seconds * 1000, extra={"mcp": fields})

    def _arguments(self, ctx: Context) -> str | None:
        try:
            arguments = ctx.params.get("arguments")
        except McpError:
            return None
        if arguments is None:
            return None
        return flatten_text(msgspec.json.encode(arguments).decode(), self.max_arguments)
