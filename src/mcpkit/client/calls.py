"""How one typed call runs: its deadline and progress rules (the call's own, else the
client's), the modern era's input rounds, and retries when it is idempotent; and
following a list's pages."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..protocol.errors import INTERNAL_ERROR, McpError, RequestTimeout
from ..protocol.interactive import MRTR_METHODS
from ..runtime.peer import ProgressCallback, check_timeout
from .events import AttemptTimedOut
from .link import in_handshake
from .results import decode_result
from .retry import IDEMPOTENT_METHODS, RetryPolicy, with_retries
from .rounds import with_input_rounds

if TYPE_CHECKING:
    from .client import Client

__all__ = ["typed_call", "is_idempotent", "all_pages"]

T = TypeVar("T")


async def typed_call(
    client: Client,
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
    client's options; ``rounds`` lets the modern era's input rounds run (the typed calls).
    Raises what :func:`~.retry.with_retries` raises; ``ValueError`` for a bad timeout."""
    options = client.options
    wait = options.request_timeout if timeout is None else check_timeout(timeout)
    reset_on = options.reset_timeout_on_progress if reset is None else reset
    total = options.max_total_timeout if max_total is None else check_timeout(max_total)
    policy = options.retry if retry is None else retry
    if policy is not None and (in_handshake() or not is_idempotent(client, method, params, idempotent)):
        policy = None

    if policy is None:  # the common case, without the retry loop's machinery
        try:
            return await _once(client, method, params, tp, wait, on_progress, reset_on, total, rounds)
        except RequestTimeout:
            client._events.emit(AttemptTimedOut(method, 1, wait))
            raise

    def attempt(limit: float) -> Awaitable[T]:
        return _once(client, method, params, tp, limit, on_progress, reset_on, total, rounds)

    link = client._link
    return await with_retries(
        attempt, method=method, timeout=wait, policy=policy, events=client._events, recoverable=link.recoverable
    )


async def _once(
    client: Client,
    method: str,
    params: dict[str, Any] | None,
    tp: type[T],
    timeout: float,
    on_progress: ProgressCallback | None,
    reset: bool,
    max_total: float | None,
    rounds: bool,
) -> T:
    """One attempt: the request (and, in the modern era, its input rounds)."""
    if rounds and client._policy.stateless and method in MRTR_METHODS:
        return await with_input_rounds(client, method, params or {}, tp, timeout, on_progress, reset, max_total)
    return decode_result(await client._request(method, params, timeout, on_progress, reset=reset, max_total=max_total), tp)


def is_idempotent(client: Client, method: str, params: dict[str, Any] | None, declared: bool | None) -> bool:
    """Whether a request may run more than once: as the caller ``declared``, else by its
    method (a tool: by its annotations, as the client last listed them)."""
    if declared is not None:
        return declared
    if method == "tools/call":
        name = params.get("name") if params else None
        return isinstance(name, str) and client._idempotent_tools.get(name, False)
    return method in IDEMPOTENT_METHODS


async def all_pages(list_page: Callable[[str | None], Awaitable[Any]], field: str, max_pages: int) -> list[Any]:
    """The items under ``field`` of every page ``list_page(cursor)`` returns, following
    ``next_cursor``. Raises a local ``McpError`` past ``max_pages`` pages."""
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(max_pages):
        page = await list_page(cursor)
        items.extend(getattr(page, field))
        cursor = page.next_cursor
        if not cursor:
            return items
    err = McpError(INTERNAL_ERROR, f"The server's list has more than {max_pages} pages")
    err.local = True
    raise err
