"""The answer a request still in progress gets when the ASGI server stops (docs/http.md,
"Limits and shutdown").

uvicorn cancels the requests still running when its graceful-shutdown grace runs out.
The responses of the MCP endpoint (:mod:`.exchange`, and a stream resumed in
:mod:`.legacy`) and of the deprecated HTTP+SSE transport
(:mod:`mcpkit.transports.http.sse.server`) catch that cancellation: each request in progress is answered with -32603
:data:`SHUTDOWN_MESSAGE` (its handler is cancelled), the response is ended properly
within :data:`LAST_WORDS_TIMEOUT`, and it returns — so that the server sees a complete
response, not an exception (no 500, no "Exception in ASGI application").
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import Final

from ....protocol.engine import Engine
from ....protocol.errors import INTERNAL_ERROR, McpError
from ....protocol.events import RequestId
from ....protocol.sse import encode_event
from .asgi import Send, end_body, send_json, start_sse

__all__ = ["SHUTDOWN_MESSAGE", "LAST_WORDS_TIMEOUT", "shutdown_error", "answer_in", "last_words", "write_answer"]

#: The -32603 message of a request whose handler the server's shutdown cancelled.
SHUTDOWN_MESSAGE: Final = "Server shutting down: the request was cancelled"

#: Seconds a response cut short at shutdown may take to write its last frames.
LAST_WORDS_TIMEOUT: Final = 1.0


def shutdown_error() -> McpError:
    """The -32603 answer; as a JSON response in the modern era its status is 503 (the
    server is going away: a client may retry elsewhere), in the legacy era 200."""
    return McpError(INTERNAL_ERROR, SHUTDOWN_MESSAGE, status=503)


def answer_in(engine: Engine, request_id: RequestId | None) -> bytes | None:
    """The shutdown answer of ``request_id`` if it is still in progress in ``engine``
    (it is answered there, and its handler's task cancelled); None otherwise."""
    if request_id is None or request_id not in engine.incoming:
        return None
    handle = engine.incoming[request_id]
    message = engine.respond_error(request_id, shutdown_error())
    if isinstance(handle, asyncio.Task):
        handle.cancel()
    return message


async def last_words(write: Awaitable[None]) -> None:
    """Complete a response whose task has just been cancelled by the server's stop: the
    cancellation is taken as handled, and ``write`` runs in this task at once (the
    server exits as soon as its lifespan has ended), for at most
    :data:`LAST_WORDS_TIMEOUT` seconds. A further cancellation propagates."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(LAST_WORDS_TIMEOUT):
            await write


async def write_answer(
    send: Send, messages: list[bytes], status: int, *, started: bool, json: bool, pending: bytes = b""
) -> None:
    """End a response with ``messages``: if it has not ``started`` and ``messages`` is
    one lone answer that may go out as ``json``, as a JSON response with ``status``;
    else as the last events of an SSE stream (started here if need be), after
    ``pending`` (frames the stream still owed this connection), and the body ends."""
    if not started:
        if len(messages) == 1 and json:
            await send_json(send, status, messages[0])
            return
        await start_sse(send)
    await end_body(send, pending + b"".join(encode_event(message) for message in messages))
