"""The modern era's multi-round-trip requests, on the client side (docs/interactive.md).

A ``tools/call``, ``prompts/get`` or ``resources/read`` may be answered with
``resultType: "input_required"``: the client answers the questions with its callbacks
and sends the request again, under a fresh id, with ``inputResponses`` and the
``requestState`` echoed unchanged. Each call of :func:`with_input_rounds` starts from
the caller's own params, so a retry of the whole call (``RetryPolicy``) never replays
the answers of an earlier attempt.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from ..protocol.errors import INTERNAL_ERROR, McpError, RequestTimeout
from ..protocol.interactive import INPUT_REQUIRED, InputRequest, UrlElicitationRequired
from ..protocol.tasks import TASK_RESULT
from ..runtime.peer import ProgressCallback
from .results import UnexpectedResultType, decode_result

if TYPE_CHECKING:
    from .client import Client

__all__ = ["with_input_rounds", "url_elicitation_required"]

T = TypeVar("T")


class _ResultKind(msgspec.Struct, kw_only=True, rename="camel"):
    """What kind of result a modern response is, and its input round if any."""

    result_type: str | msgspec.UnsetType = msgspec.UNSET
    input_requests: dict[str, InputRequest] | None = None
    request_state: Any = None


async def with_input_rounds(
    client: Client,
    method: str,
    params: dict[str, Any],
    tp: type[T],
    timeout: float,
    on_progress: ProgressCallback | None,
    reset: bool = False,
    max_total: float | None = None,
) -> T:
    """Send the request; while the server answers ``input_required``, answer its
    questions with the callbacks and retry with ``inputResponses`` and the
    ``requestState`` echoed unchanged, under a fresh id — all within ``timeout``.
    Raises :class:`RequestTimeout` when it runs out, a local :class:`McpError` after
    ``max_input_rounds`` retries or for a question this client cannot answer,
    :class:`UnexpectedResultType` for an unknown ``resultType``, and what a callback
    raises."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    attempt = params
    rounds = client.options.max_input_rounds
    for _ in range(rounds + 1):
        raw = await client._request(
            method, attempt, max(deadline - loop.time(), 0.001), on_progress, reset=reset, max_total=max_total
        )
        kind = decode_result(raw, _ResultKind)
        if kind.result_type is msgspec.UNSET or kind.result_type == "complete":
            return decode_result(raw, tp)
        if kind.result_type == TASK_RESULT and method == "tools/call":  # the call became a task
            from .tasks import follow_task  # here: client/tasks.py imports calls, which imports this

            return await follow_task(client, raw, tp, deadline)
        if kind.result_type != INPUT_REQUIRED:
            raise UnexpectedResultType(str(kind.result_type))
        attempt = dict(params)
        if kind.input_requests:
            try:
                async with asyncio.timeout_at(deadline):
                    attempt["inputResponses"] = await client._inbound.answer_all(kind.input_requests)
            except TimeoutError:
                raise RequestTimeout(None) from None
        if isinstance(kind.request_state, str):
            attempt["requestState"] = kind.request_state
    err = McpError(INTERNAL_ERROR, f"The server asked for input more than {rounds} times")
    err.local = True
    raise err


def url_elicitation_required(exc: McpError) -> McpError:
    """A server's -32042 as :class:`UrlElicitationRequired` (as it came, if its data
    does not list the elicitations properly)."""
    items = exc.data.get("elicitations") if isinstance(exc.data, dict) else None
    try:
        return UrlElicitationRequired(items if isinstance(items, list) else [], exc.message)
    except ValueError:
        return exc
