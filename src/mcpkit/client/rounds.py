"""The modern era's multi-round-trip requests, on the client side (docs/interactive.md).

A ``tools/call``, ``prompts/get`` or ``resources/read`` may be answered with
``resultType: "input_required"``: the client answers the questions with its callbacks
and sends the request again, under a fresh id, with ``inputResponses`` and the
``requestState`` echoed unchanged. :func:`result_kind` reads what kind a modern result
is, and :func:`next_attempt` makes the params of the next round; the loop that sends the
rounds, within the call's deadline, is the typed call's (:mod:`.calls`), which also
follows a call that became a task. Each round starts from the caller's own params, so a
retry of the whole call (``RetryPolicy``) never replays the answers of an earlier attempt.
"""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec

from ..protocol.errors import INTERNAL_ERROR, McpError, RequestTimeout
from ..protocol.interactive import INPUT_REQUIRED, InputRequest
from ..protocol.tasks import TASK_RESULT
from .handlers import ServerMessages
from .results import decode_result

__all__ = ["ResultKind", "result_kind", "next_attempt", "too_many_rounds"]


class ResultKind(msgspec.Struct, kw_only=True, rename="camel"):
    """What kind of result a modern response is, and its input round if any."""

    result_type: str | msgspec.UnsetType = msgspec.UNSET
    input_requests: dict[str, InputRequest] | None = None
    request_state: Any = None

    @property
    def complete(self) -> bool:
        """The result is final (``complete``, or no ``resultType`` at all)."""
        return self.result_type is msgspec.UNSET or self.result_type == "complete"

    @property
    def input_required(self) -> bool:
        """The server asks questions before it answers."""
        return self.result_type == INPUT_REQUIRED

    @property
    def task(self) -> bool:
        """The call became a task (the tasks extension)."""
        return self.result_type == TASK_RESULT


def result_kind(raw: msgspec.Raw) -> ResultKind:
    """What kind of result ``raw`` is. Raises a local ``McpError(-32603)`` if it is not a
    JSON object of that shape."""
    return decode_result(raw, ResultKind)


async def next_attempt(inbound: ServerMessages, params: dict[str, Any], kind: ResultKind, deadline: float) -> dict[str, Any]:
    """The params of the round after ``kind`` (an ``input_required`` result): the
    caller's ``params`` with the questions answered by the callbacks (``inputResponses``)
    and the ``requestState`` echoed. Raises :class:`RequestTimeout` if the answers are not
    ready by ``deadline`` (the loop's clock), a local :class:`McpError` for a question
    this client cannot answer, and what a callback raises; cancellation cancels the
    callbacks."""
    attempt = dict(params)
    if kind.input_requests:
        try:
            async with asyncio.timeout_at(deadline):
                attempt["inputResponses"] = await inbound.answer_all(kind.input_requests)
        except TimeoutError:
            raise RequestTimeout(None) from None
    if isinstance(kind.request_state, str):
        attempt["requestState"] = kind.request_state
    return attempt


def too_many_rounds(rounds: int) -> McpError:
    """The local error for a server that still asks after ``rounds`` rounds."""
    return McpError(INTERNAL_ERROR, f"The server asked for input more than {rounds} times", local=True)
