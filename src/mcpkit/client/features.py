"""The typed requests of a server's features — tools, resources and their templates,
prompts, completions, and the whole lists page by page — as the base the
:class:`~mcpkit.Client` facade builds on. Each is one typed call of the call core it is
given (:class:`FeatureCore`): a deadline, retries, input rounds.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol, TypeVar

from ..protocol.errors import INTERNAL_ERROR, McpError
from ..protocol.types import (
    CallToolResult,
    CompleteResult,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    Tool,
)
from ..runtime.peer import ProgressCallback
from .retry import RetryPolicy

__all__ = ["FeatureCore", "FeatureRequests", "all_pages"]

T = TypeVar("T")


class FeatureCore(Protocol):
    """What the feature requests need of the client's call core."""

    async def call(
        self,
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
        """One typed call (see :meth:`~.core.CallCore.call`)."""
        ...

    def remember_tools(self, tools: Iterable[Tool]) -> None:
        """Note which of ``tools`` say they are read-only or idempotent (for retries of
        ``tools/call``)."""
        ...


class FeatureRequests:
    """The requests for tools, resources, prompts and completions, made through the
    call core given."""

    def __init__(self, core: FeatureCore) -> None:
        self._calls = core

    async def list_tools(
        self, cursor: str | None = None, *, timeout: float | None = None, retry: RetryPolicy | None = None
    ) -> ListToolsResult:
        """``tools/list``: one page of the server's tools (pass ``next_cursor`` back as
        ``cursor`` for the next). The client remembers which tools say they are
        read-only or idempotent, for retries of ``call_tool``.

        Raises :class:`McpError` for an error response, :class:`RequestTimeout` at the
        deadline (``timeout``, else the client's ``request_timeout``) and
        :class:`ConnectionClosed`; cancelling the caller cancels the request on the
        wire. ``retry`` (else the client's policy) retries transient failures."""
        result = await self._calls.call("tools/list", _cursor(cursor), ListToolsResult, timeout, retry=retry)
        self._calls.remember_tools(result.tools)
        return result

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        meta: dict[str, Any] | None = None,
        retry: RetryPolicy | None = None,
        idempotent: bool | None = None,
        reset_timeout_on_progress: bool | None = None,
        max_total_timeout: float | None = None,
    ) -> CallToolResult:
        """Call a tool. A failed tool returns a result with ``is_error=True`` (not
        raised); protocol errors raise :class:`McpError`. A server may run the call as a
        task (2026-07-28, docs/tasks.md): the client then polls it to its end within
        ``timeout`` and returns its result, and cancels it if the call is given up on.

        ``retry`` (else the client's policy) retries the call after a transient failure
        only if it is idempotent: ``idempotent=True``, or (unless ``idempotent=False``)
        the tool's annotations say ``readOnlyHint`` or ``idempotentHint`` in a
        ``list_tools`` result this client has seen. ``reset_timeout_on_progress`` (else
        the client's setting) restarts the ``timeout`` on each progress notification,
        for at most ``max_total_timeout`` seconds in all (else the client's, else ten
        times the timeout)."""
        params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
        if meta:
            params["_meta"] = meta
        return await self._calls.call(
            "tools/call",
            params,
            CallToolResult,
            timeout,
            on_progress,
            retry=retry,
            idempotent=idempotent,
            reset=reset_timeout_on_progress,
            max_total=max_total_timeout,
        )

    async def list_resources(
        self, cursor: str | None = None, *, timeout: float | None = None, retry: RetryPolicy | None = None
    ) -> ListResourcesResult:
        """``resources/list``: one page of the server's resources.

        Raises :class:`McpError` for an error response, :class:`RequestTimeout` at the
        deadline (``timeout``, else the client's ``request_timeout``) and
        :class:`ConnectionClosed`; cancelling the caller cancels the request on the wire."""
        return await self._calls.call("resources/list", _cursor(cursor), ListResourcesResult, timeout, retry=retry)

    async def list_resource_templates(
        self, cursor: str | None = None, *, timeout: float | None = None, retry: RetryPolicy | None = None
    ) -> ListResourceTemplatesResult:
        """``resources/templates/list``: one page of the server's resource templates.

        Raises :class:`McpError` for an error response, :class:`RequestTimeout` at the
        deadline (``timeout``, else the client's ``request_timeout``) and
        :class:`ConnectionClosed`; cancelling the caller cancels the request on the wire."""
        return await self._calls.call(
            "resources/templates/list", _cursor(cursor), ListResourceTemplatesResult, timeout, retry=retry
        )

    async def read_resource(
        self, uri: str, *, timeout: float | None = None, retry: RetryPolicy | None = None
    ) -> ReadResourceResult:
        """``resources/read``: the contents of the resource at ``uri``. An unknown URI
        is an :class:`McpError` (``-32602``; servers of other SDKs may send ``-32002``).

        Raises :class:`McpError` for an error response, :class:`RequestTimeout` at the
        deadline (``timeout``, else the client's ``request_timeout``) and
        :class:`ConnectionClosed`; cancelling the caller cancels the request on the wire."""
        return await self._calls.call("resources/read", {"uri": uri}, ReadResourceResult, timeout, retry=retry)

    async def list_prompts(
        self, cursor: str | None = None, *, timeout: float | None = None, retry: RetryPolicy | None = None
    ) -> ListPromptsResult:
        """``prompts/list``: one page of the server's prompts.

        Raises :class:`McpError` for an error response, :class:`RequestTimeout` at the
        deadline (``timeout``, else the client's ``request_timeout``) and
        :class:`ConnectionClosed`; cancelling the caller cancels the request on the wire."""
        return await self._calls.call("prompts/list", _cursor(cursor), ListPromptsResult, timeout, retry=retry)

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, str] | None = None,
        *,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
    ) -> GetPromptResult:
        """``prompts/get``: the prompt ``name`` filled in with ``arguments`` (strings).

        Raises :class:`McpError` for an error response, :class:`RequestTimeout` at the
        deadline (``timeout``, else the client's ``request_timeout``) and
        :class:`ConnectionClosed`; cancelling the caller cancels the request on the wire."""
        params: dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = arguments
        return await self._calls.call("prompts/get", params, GetPromptResult, timeout, retry=retry)

    async def complete(
        self,
        ref: dict[str, str],
        argument: str,
        value: str,
        *,
        context: dict[str, str] | None = None,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
    ) -> CompleteResult:
        """``completion/complete`` for ``ref`` (``{"type": "ref/prompt", "name": …}`` or
        ``{"type": "ref/resource", "uri": …}``)."""
        params: dict[str, Any] = {"ref": ref, "argument": {"name": argument, "value": value}}
        if context:
            params["context"] = {"arguments": context}
        return await self._calls.call("completion/complete", params, CompleteResult, timeout, retry=retry)

    async def list_all_tools(self, *, max_pages: int = 100) -> list[Tool]:
        """Every tool, following ``nextCursor``. Raises a local :class:`McpError` past
        ``max_pages`` pages (a server that never ends its list)."""
        return await all_pages(self.list_tools, "tools", max_pages)

    async def list_all_resources(self, *, max_pages: int = 100) -> list[Resource]:
        """Every resource, following ``nextCursor`` (at most ``max_pages`` pages)."""
        return await all_pages(self.list_resources, "resources", max_pages)

    async def list_all_resource_templates(self, *, max_pages: int = 100) -> list[ResourceTemplate]:
        """Every resource template, following ``nextCursor`` (at most ``max_pages`` pages)."""
        return await all_pages(self.list_resource_templates, "resource_templates", max_pages)

    async def list_all_prompts(self, *, max_pages: int = 100) -> list[Prompt]:
        """Every prompt, following ``nextCursor`` (at most ``max_pages`` pages)."""
        return await all_pages(self.list_prompts, "prompts", max_pages)


def _cursor(cursor: str | None) -> dict[str, Any] | None:
    return {"cursor": cursor} if cursor is not None else None


async def all_pages(list_page: Callable[[str | None], Awaitable[Any]], field: str, max_pages: int) -> list[Any]:
    """The items under ``field`` of every page ``list_page(cursor)`` returns, following
    ``next_cursor``. Raises a local ``McpError`` past ``max_pages`` pages, and what
    ``list_page`` raises."""
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(max_pages):
        page = await list_page(cursor)
        items.extend(getattr(page, field))
        cursor = page.next_cursor
        if not cursor:
            return items
    raise McpError(INTERNAL_ERROR, f"The server's list has more than {max_pages} pages", local=True)
