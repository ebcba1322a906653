"""One typed call: its deadline and progress rules (the call's own, else the client's),
retries when it is idempotent, and — in the modern era — what the result's kind calls for.

:func:`typed_call` is the call core's ``call``. Each attempt sends the request through
the core's ``request``. On ``tools/call``, ``prompts/get`` and ``resources/read`` in the
modern era a result is dispatched on its kind, here and nowhere else: ``complete`` is
decoded as the type the caller wants, ``input_required`` is answered and sent again
(:mod:`.rounds`), and a ``tools/call`` that became a ``task`` is followed to its end
(:mod:`.tasks`) — all within the attempt's deadline. A retry (:mod:`.retry`) repeats the
whole attempt, input rounds included. Whether a tool the client has not listed may be
retried is learned when it first matters: at its first transient failure the client lists
the tools and reads the tool's annotations.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

import msgspec

from ..protocol.errors import McpError, RequestTimeout
from ..protocol.interactive import MRTR_METHODS
from ..runtime.peer import ProgressCallback, check_timeout
from .core import CallCore, in_handshake
from .events import AttemptTimedOut, Events
from .results import UnexpectedResultType, decode_result
from .retry import IDEMPOTENT_METHODS, RetryPolicy, with_retries
from .rounds import next_attempt, result_kind, too_many_rounds
from .tasks import follow_task

__all__ = ["Calling", "typed_call", "is_idempotent"]

T = TypeVar("T")


class Calling(CallCore, Protocol):
    """What a typed call needs beyond the :class:`~.core.CallCore`."""

    @property
    def events(self) -> Events:
        """Where the attempts' timeouts and retries are reported."""
        ...

    @property
    def idempotent_tools(self) -> dict[str, bool]:
        """Whether each tool the client has listed says it is read-only or idempotent."""
        ...

    def recoverable(self) -> bool:
        """Whether a lost connection is coming back (or already has)."""
        ...

    async def learn_tools(self) -> None:
        """List every tool, to learn which say they are read-only or idempotent. Raises
        as every typed call does."""
        ...


async def typed_call(
    core: Calling,
    method: str,
    params: dict[str, Any] | None,
    tp: type[T],
    timeout: float | None,
    on_progress: ProgressCallback | None = None,
    *,
    retry: RetryPolicy | None = None,
    idempotent: bool | None = None,
    reset: bool | None = None,
    max_total: float | None = None,
    rounds: bool = True,
) -> T:
    """Send ``method`` and decode its result as ``tp``. ``None`` settings fall back on the
    client's options; ``rounds`` lets the modern era's input rounds and tasks run (the
    typed calls). Raises what :func:`~.retry.with_retries` raises (``McpError``,
    ``RequestTimeout``, ``ConnectionClosed``, ``RetriesExhausted``), ``ValueError`` for
    a bad timeout; cancelling the caller cancels the request on the wire."""
    options = core.options
    wait = options.request_timeout if timeout is None else check_timeout(timeout)
    reset_on = options.reset_timeout_on_progress if reset is None else reset
    total = options.max_total_timeout if max_total is None else check_timeout(max_total)
    policy = options.retry if retry is None else retry
    known = False if in_handshake() else is_idempotent(core, method, params, idempotent)
    if known is False:
        policy = None

    if policy is None:  # the common case, without the retry loop's machinery
        try:
            return await _attempt(core, method, params, tp, wait, on_progress, reset_on, total, rounds)
        except RequestTimeout:
            core.events.emit(AttemptTimedOut(method, 1, wait))
            raise

    def attempt(limit: float) -> Awaitable[T]:
        return _attempt(core, method, params, tp, limit, on_progress, reset_on, total, rounds)

    return await with_retries(
        attempt,
        method=method,
        timeout=wait,
        policy=policy,
        events=core.events,
        recoverable=core.recoverable,
        may_retry=None if known else _learned(core, params),
    )


def _learned(core: Calling, params: dict[str, Any] | None) -> Callable[[], Awaitable[bool]]:
    """For a tool the client has not listed: whether it may be retried, learned from a
    listing of the tools the first time the question comes up (a transient failure). A
    listing that fails says no."""
    name = params.get("name") if params else None

    async def may_retry() -> bool:
        try:
            await core.learn_tools()
        except McpError:
            return False
        return isinstance(name, str) and core.idempotent_tools.get(name, False)

    return may_retry


async def _attempt(
    core: CallCore,
    method: str,
    params: dict[str, Any] | None,
    tp: type[T],
    timeout: float,
    on_progress: ProgressCallback | None,
    reset: bool,
    max_total: float | None,
    rounds: bool,
) -> T:
    """One attempt: the request and, where the modern era allows them, its input rounds
    and its task, until a complete result. Raises a local ``McpError`` after
    ``max_input_rounds`` rounds, :class:`UnexpectedResultType` for a kind this client does
    not know, and what the request, the callbacks and the task raise."""
    if not (rounds and core.policy.stateless and method in MRTR_METHODS):
        return decode_result(await core.request(method, params, timeout, on_progress, reset=reset, max_total=max_total), tp)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    first = params or {}
    sent = first
    limit = core.options.max_input_rounds
    for _ in range(limit + 1):
        raw = await core.request(method, sent, max(deadline - loop.time(), 0.001), on_progress, reset=reset, max_total=max_total)
        kind = result_kind(raw)
        if kind.complete:
            return decode_result(raw, tp)
        if kind.task and method == "tools/call":  # the call became a task
            if tp is msgspec.Raw:
                return raw  # type: ignore[return-value]  # the caller takes the task itself (start_task)
            return await follow_task(core, raw, tp, deadline)
        if not kind.input_required:
            raise UnexpectedResultType(str(kind.result_type))
        sent = await next_attempt(core.inbound, first, kind, deadline)
    raise too_many_rounds(limit)


def is_idempotent(core: Calling, method: str, params: dict[str, Any] | None, declared: bool | None) -> bool | None:
    """Whether a request may run more than once: as the caller ``declared``, else by its
    method (a tool: by its annotations, as the client last listed them; None for a tool
    it has not listed, which the client learns when it needs to know)."""
    if declared is not None:
        return declared
    if method == "tools/call":
        name = params.get("name") if params else None
        if not isinstance(name, str):
            return False
        return core.idempotent_tools.get(name)
    return method in IDEMPOTENT_METHODS
