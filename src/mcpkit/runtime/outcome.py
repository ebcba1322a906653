"""How a handler's outcome becomes the response bytes of an inbound request, and how
a response wakes the caller of an outbound one — the same on every transport."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import msgspec

from ..protocol.engine import Engine
from ..protocol.errors import INTERNAL_ERROR, McpError
from ..protocol.events import Outgoing, RequestId, ResponseReceived

__all__ = ["run_request", "respond", "respond_failure", "deliver", "fail_waiters"]

logger = logging.getLogger("mcpkit")


def respond(engine: Engine, rid: RequestId, method: str, result: Any) -> tuple[bytes | None, McpError | None]:
    """The response bytes for a handler's ``result`` (None if the peer withdrew the
    request), and the error sent instead if the result cannot be encoded (-32603,
    logged)."""
    try:
        return engine.respond(rid, result), None
    except (TypeError, ValueError, msgspec.EncodeError):
        logger.exception("result of %s could not be encoded", method)
        error = McpError(INTERNAL_ERROR, "Internal error")
        return engine.respond_error(rid, error), error


def respond_failure(engine: Engine, rid: RequestId, method: str, exc: BaseException) -> tuple[bytes | None, McpError]:
    """The error response for a handler that raised ``exc``: an :class:`McpError` is sent
    as it is; anything else becomes -32603 "Internal error" (logged)."""
    if isinstance(exc, McpError):
        return engine.respond_error(rid, exc), exc
    logger.error("request handler for %s failed", method, exc_info=exc)
    error = McpError(INTERNAL_ERROR, "Internal error")
    return engine.respond_error(rid, error), error


async def run_request(
    engine: Engine, rid: RequestId, method: str, pending: Awaitable[Any]
) -> tuple[bytes | None, McpError | None]:
    """Await the handler's ``pending`` outcome and build the response to inbound
    request ``rid`` (:func:`respond`, :func:`respond_failure`): the bytes (None if the
    peer withdrew the request meanwhile) and, when it failed, the error sent. On
    cancellation the request is abandoned (no response) and ``CancelledError``
    propagates."""
    try:
        result = await pending
    except asyncio.CancelledError:
        engine.abandon(rid)  # cancelled by the peer or by shutdown: no response
        raise
    except BaseException as exc:  # of any type: only this request fails
        return respond_failure(engine, rid, method, exc)
    return respond(engine, rid, method, result)


def deliver(ev: ResponseReceived) -> None:
    """Wake whoever awaits the request ``ev`` answers (its ``waiter`` future)."""
    fut = ev.request.waiter
    if fut is not None and not fut.done():
        if ev.error is not None:
            fut.set_exception(ev.error)
        else:
            fut.set_result(ev.result)


def fail_waiters(requests: Iterable[Outgoing], error: Callable[[], BaseException]) -> None:
    """Fail every caller still awaiting one of ``requests`` with a fresh ``error()``
    (the connection or session is gone)."""
    for out in requests:
        fut = out.waiter
        if fut is not None and not fut.done():
            fut.set_exception(error())
