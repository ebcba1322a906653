"""What the middleware of this package read of a request and its end: the name it
targets (:func:`target`), who sends it (:func:`principal_of`), and how it ended
(:class:`Outcome`, :func:`outcome_of`), and how long it took (:func:`measured`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

from ..protocol.errors import INTERNAL_ERROR, McpError
from ..protocol.types import CallToolResult
from ..server.context import Context
from ..server.registry import CallNext

__all__ = ["Outcome", "OutcomeKind", "target", "principal_of", "outcome_of", "measured", "OK"]

#: ``ok``; ``tool_error`` (a ``tools/call`` whose result says ``isError``); ``error`` (an
#: error response); ``cancelled`` (the request was cancelled).
OutcomeKind = Literal["ok", "tool_error", "error", "cancelled"]

#: The methods whose ``params.name`` names what they target; the others' ``params.uri``.
_NAMED: Final = frozenset({"tools/call", "prompts/get"})
_BY_URI: Final = frozenset({"resources/read", "resources/subscribe", "resources/unsubscribe"})


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a request ended: ``kind``, and for an ``error`` the JSON-RPC ``code`` the
    client gets (-32603 for an exception that is not an ``McpError``: what the
    server answers for it, unless it carries an HTTP status)."""

    kind: OutcomeKind
    code: int | None = None


OK: Final = Outcome("ok")


def target(ctx: Context) -> str | None:
    """The tool or prompt name of a ``tools/call`` or ``prompts/get``, the URI of a
    ``resources/read`` or ``resources/(un)subscribe``; None for other methods, or when
    the params do not say (a string, else None). Never raises: params that cannot be
    decoded have no target."""
    if ctx.method in _NAMED:
        member = "name"
    elif ctx.method in _BY_URI:
        member = "uri"
    else:
        return None
    try:
        value = ctx.params.get(member)
    except McpError:
        return None
    return value if isinstance(value, str) else None


def principal_of(ctx: Context) -> str | None:
    """The authenticated principal of the request (``ctx.identity.principal``), None
    without authorization."""
    identity = ctx.identity
    return identity.principal if identity is not None else None


def outcome_of(result: Any = None, exc: BaseException | None = None) -> Outcome:
    """The outcome of a request that returned ``result`` or raised ``exc``."""
    if exc is None:
        return Outcome("tool_error") if isinstance(result, CallToolResult) and result.is_error else OK
    if isinstance(exc, asyncio.CancelledError):
        return Outcome("cancelled")
    if isinstance(exc, McpError):
        return Outcome("error", exc.code)
    return Outcome("error", INTERNAL_ERROR)


async def measured(call_next: CallNext, clock: Callable[[], float], report: Callable[[Outcome, float], None]) -> Any:
    """``call_next()``'s result, after telling ``report`` how it ended and in how many
    seconds of ``clock``; what it raises (cancellation included) is reported, then
    raised again."""
    started = clock()
    try:
        result = await call_next()
    except BaseException as exc:
        report(outcome_of(exc=exc), clock() - started)
        raise
    report(outcome_of(result), clock() - started)
    return result
