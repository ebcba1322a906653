"""The :class:`Client`: typed requests with deadlines and cancellation, over any
transport. Era negotiation lives in :mod:`.negotiation`, the server's own messages in
:mod:`.handlers`, settings in :mod:`.options`."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection
from types import TracebackType
from typing import Any, Literal, TypeVar

import msgspec

from ..protocol import meta as meta_keys
from ..protocol.eras import LEGACY, EraPolicy
from ..protocol.errors import INTERNAL_ERROR, URL_ELICITATION_REQUIRED, ConnectionClosed, McpError, RequestTimeout
from ..protocol.events import RequestId
from ..protocol.interactive import INPUT_REQUIRED, MRTR_METHODS, InputRequest, UrlElicitationRequired
from ..protocol.types import (
    LOG_LEVELS,
    CallToolResult,
    CompleteResult,
    DiscoverResult,
    EmptyResult,
    GetPromptResult,
    Implementation,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    Root,
    Tool,
)
from ..runtime.peer import Peer, ProgressCallback, check_timeout
from ..transports.base import Servable, Transport
from .handlers import ServerMessages
from .negotiation import negotiate
from .options import ClientOptions, RequestOptions
from .results import UnexpectedResultType, decode_result
from .subscriptions import Subscription

__all__ = ["Client"]

T = TypeVar("T")


class Client:
    """An MCP client over one transport (or straight to a :class:`~mcpkit.Server` in
    memory).

    Use as ``async with Client(transport) as client: ...``. Every request has a
    deadline; errors are raised as :class:`~mcpkit.McpError` (``RequestTimeout`` and
    ``ConnectionClosed`` are local); a tool result with ``is_error`` is returned.
    """

    def __init__(self, transport: Transport | Servable, options: ClientOptions | None = None) -> None:
        self.options = options or ClientOptions()
        if isinstance(transport, Servable):
            from ..transports.memory import ServerInMemory

            self.transport: Transport = ServerInMemory(transport)
        else:
            self.transport = transport
        self._peer: Peer | None = None
        self._inbound = ServerMessages(self.options)
        self._policy: EraPolicy = LEGACY
        self.era: Literal["modern", "legacy"] | None = None
        self.protocol_version: str | None = None
        self.server_info: Implementation | None = None
        self.server_capabilities: dict[str, Any] = {}
        self.instructions: str | None = None
        self._meta: dict[str, Any] = {}

    # --- lifecycle -----------------------------------------------------------------------

    async def __aenter__(self) -> Client:
        await self.connect()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    async def connect(self) -> None:
        """Open the transport and agree on a protocol era and version.

        Raises ``OSError`` if the transport cannot start, :class:`McpError` if the
        server refuses every version we speak, :class:`ConnectionClosed` if it goes
        away, :class:`RequestTimeout` if it does not answer the handshake in time.
        On failure or cancellation the transport is closed before the exception
        propagates.
        """
        if self._peer is not None:
            raise RuntimeError("the client is already connected")
        self._peer = Peer(
            self.transport,
            on_request=self._inbound.on_request,
            on_notification=self._inbound.on_notification,
            max_error_text=self.options.max_error_text,
        )
        try:
            await self._peer.start()
            await negotiate(self)
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """Close the transport (for a spawned server: close stdin, wait, SIGTERM,
        SIGKILL). Pending requests fail with :class:`ConnectionClosed`. Idempotent."""
        if self._peer is not None:
            await self._peer.close()
        else:
            await self.transport.close()

    def _agree(self, policy: EraPolicy, version: str, meta: dict[str, Any]) -> None:
        """Adopt an era (called by negotiation only)."""
        self._policy = policy
        self.era = policy.name
        self.protocol_version = version
        self._meta = meta

    # --- requests ------------------------------------------------------------------------

    def _timeout(self, timeout: float | None) -> float:
        return self.options.request_timeout if timeout is None else check_timeout(timeout)

    async def _request(
        self,
        method: str,
        params: dict[str, Any] | None,
        timeout: float,
        on_progress: ProgressCallback | None,
        on_start: Callable[[RequestId], None] | None = None,
    ) -> msgspec.Raw:
        peer = self._peer
        if peer is None:
            raise RuntimeError("the client is not connected; use 'async with Client(...)' or await connect()")
        if self._meta:
            params = dict(params) if params else {}
            extra = params.get("_meta")
            params["_meta"] = {**self._meta, **extra} if isinstance(extra, dict) else self._meta
        try:
            return await peer.request(method, params, timeout=timeout, on_progress=on_progress, on_start=on_start)
        except McpError as exc:
            if exc.code == URL_ELICITATION_REQUIRED and not exc.local:
                raise _url_elicitation_required(exc) from None
            raise

    def _notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification as it is (dropped if the connection is gone)."""
        if self._peer is not None:
            self._peer.notify(method, params)

    async def send_request(
        self, method: str, params: dict[str, Any] | None = None, options: RequestOptions | None = None
    ) -> dict[str, Any]:
        """Send any request and return its result as a dict.

        Raises :class:`McpError` for an error response, :class:`RequestTimeout` and
        :class:`ConnectionClosed` (local) as described in the class docs. Cancelling
        the calling task sends ``notifications/cancelled`` and re-raises.
        """
        options = options or RequestOptions()
        timeout = options.timeout if options.timeout is not None else self.options.request_timeout
        raw = await self._request(method, params, timeout, options.on_progress)
        return decode_result(raw, dict[str, Any])

    async def send_notification(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification. Raises :class:`ConnectionClosed` if the connection is gone."""
        peer = self._peer
        if peer is None or peer.is_closed:
            raise ConnectionClosed()
        if self._meta:
            params = dict(params) if params else {}
            params.setdefault("_meta", self._meta)
        peer.notify(method, params)

    async def _typed(
        self,
        method: str,
        params: dict[str, Any] | None,
        tp: type[T],
        timeout: float | None,
        on_progress: ProgressCallback | None = None,
    ) -> T:
        wait = self._timeout(timeout)
        if self._policy.stateless and method in MRTR_METHODS:
            return await self._with_input_rounds(method, params or {}, tp, wait, on_progress)
        return decode_result(await self._request(method, params, wait, on_progress), tp)

    async def _with_input_rounds(
        self, method: str, params: dict[str, Any], tp: type[T], timeout: float, on_progress: ProgressCallback | None
    ) -> T:
        """Modern era: send the request; while the server answers ``input_required``,
        answer its questions with the callbacks and retry with ``inputResponses`` and
        the ``requestState`` echoed unchanged, under a fresh id — all within
        ``timeout``. Raises :class:`RequestTimeout` when it runs out, a local
        :class:`McpError` after ``max_input_rounds`` retries or for a question this
        client cannot answer, :class:`UnexpectedResultType` for an unknown
        ``resultType``, and what a callback raises."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        attempt = params
        for _ in range(self.options.max_input_rounds + 1):
            raw = await self._request(method, attempt, max(deadline - loop.time(), 0.001), on_progress)
            kind = decode_result(raw, _ResultKind)
            if kind.result_type is msgspec.UNSET or kind.result_type == "complete":
                return decode_result(raw, tp)
            if kind.result_type != INPUT_REQUIRED:
                raise UnexpectedResultType(str(kind.result_type))
            attempt = dict(params)
            if kind.input_requests:
                try:
                    async with asyncio.timeout_at(deadline):
                        attempt["inputResponses"] = await self._inbound.answer_all(kind.input_requests)
                except TimeoutError:
                    raise RequestTimeout(None) from None
            if isinstance(kind.request_state, str):
                attempt["requestState"] = kind.request_state
        err = McpError(INTERNAL_ERROR, f"The server asked for input more than {self.options.max_input_rounds} times")
        err.local = True
        raise err

    async def set_roots(self, roots: list[Root]) -> None:
        """Change the roots this client offers; a legacy-era server is told with
        ``notifications/roots/list_changed`` (a modern one asks again when it needs
        them). Raises ``RuntimeError`` unless the client was created with ``roots``."""
        if self._inbound.roots is None:
            raise RuntimeError("set_roots needs a client created with ClientOptions(roots=...)")
        self._inbound.roots = list(roots)
        if not self._policy.stateless:
            self._notify("notifications/roots/list_changed")

    async def ping(self, *, timeout: float | None = None) -> None:
        """Check that the server answers: ``ping`` in the legacy era; in the modern era,
        which removed ``ping``, a ``server/discover`` round trip."""
        await self._typed(self._policy.ping_method, None, dict[str, Any], timeout)

    async def discover(self, *, timeout: float | None = None) -> DiscoverResult:
        """``server/discover``: the server's versions, capabilities and identity."""
        return await self._typed("server/discover", None, DiscoverResult, timeout)

    async def list_tools(self, cursor: str | None = None, *, timeout: float | None = None) -> ListToolsResult:
        """``tools/list``: one page of the server's tools (pass ``next_cursor`` back as
        ``cursor`` for the next).

        Raises :class:`McpError` for an error response, :class:`RequestTimeout` at the
        deadline (``timeout``, else the client's ``request_timeout``) and
        :class:`ConnectionClosed`; cancelling the caller cancels the request on the wire."""
        return await self._typed("tools/list", _cursor(cursor), ListToolsResult, timeout)

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        meta: dict[str, Any] | None = None,
    ) -> CallToolResult:
        """Call a tool. A failed tool returns a result with ``is_error=True`` (not
        raised); protocol errors raise :class:`McpError`."""
        params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
        if meta:
            params["_meta"] = meta
        return await self._typed("tools/call", params, CallToolResult, timeout, on_progress)

    async def list_resources(self, cursor: str | None = None, *, timeout: float | None = None) -> ListResourcesResult:
        """``resources/list``: one page of the server's resources.

        Raises :class:`McpError` for an error response, :class:`RequestTimeout` at the
        deadline (``timeout``, else the client's ``request_timeout``) and
        :class:`ConnectionClosed`; cancelling the caller cancels the request on the wire."""
        return await self._typed("resources/list", _cursor(cursor), ListResourcesResult, timeout)

    async def list_resource_templates(
        self, cursor: str | None = None, *, timeout: float | None = None
    ) -> ListResourceTemplatesResult:
        """``resources/templates/list``: one page of the server's resource templates.

        Raises :class:`McpError` for an error response, :class:`RequestTimeout` at the
        deadline (``timeout``, else the client's ``request_timeout``) and
        :class:`ConnectionClosed`; cancelling the caller cancels the request on the wire."""
        return await self._typed("resources/templates/list", _cursor(cursor), ListResourceTemplatesResult, timeout)

    async def read_resource(self, uri: str, *, timeout: float | None = None) -> ReadResourceResult:
        """``resources/read``: the contents of the resource at ``uri``. An unknown URI
        is an :class:`McpError` (``-32602``; servers of other SDKs may send ``-32002``).

        Raises :class:`McpError` for an error response, :class:`RequestTimeout` at the
        deadline (``timeout``, else the client's ``request_timeout``) and
        :class:`ConnectionClosed`; cancelling the caller cancels the request on the wire."""
        return await self._typed("resources/read", {"uri": uri}, ReadResourceResult, timeout)

    async def list_prompts(self, cursor: str | None = None, *, timeout: float | None = None) -> ListPromptsResult:
        """``prompts/list``: one page of the server's prompts.

        Raises :class:`McpError` for an error response, :class:`RequestTimeout` at the
        deadline (``timeout``, else the client's ``request_timeout``) and
        :class:`ConnectionClosed`; cancelling the caller cancels the request on the wire."""
        return await self._typed("prompts/list", _cursor(cursor), ListPromptsResult, timeout)

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, *, timeout: float | None = None
    ) -> GetPromptResult:
        """``prompts/get``: the prompt ``name`` filled in with ``arguments`` (strings).

        Raises :class:`McpError` for an error response, :class:`RequestTimeout` at the
        deadline (``timeout``, else the client's ``request_timeout``) and
        :class:`ConnectionClosed`; cancelling the caller cancels the request on the wire."""
        params: dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = arguments
        return await self._typed("prompts/get", params, GetPromptResult, timeout)

    async def complete(
        self,
        ref: dict[str, str],
        argument: str,
        value: str,
        *,
        context: dict[str, str] | None = None,
        timeout: float | None = None,
    ) -> CompleteResult:
        """``completion/complete`` for ``ref`` (``{"type": "ref/prompt", "name": …}`` or
        ``{"type": "ref/resource", "uri": …}``)."""
        params: dict[str, Any] = {"ref": ref, "argument": {"name": argument, "value": value}}
        if context:
            params["context"] = {"arguments": context}
        return await self._typed("completion/complete", params, CompleteResult, timeout)

    # --- changes and pagination (docs/subscriptions.md) -------------------------------------

    @property
    def is_connected(self) -> bool:
        """Whether the connection is open."""
        return self._peer is not None and not self._peer.is_closed

    def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Collection[str] = (),
    ) -> Subscription:
        """Subscribe to changes, in either era: ``async with client.listen(tools=True)
        as changes: async for change in changes: ...`` yields a
        :class:`SubscriptionEvent` per change — re-list (``kind`` ``"tools"``,
        ``"prompts"``, ``"resources"``) or re-read (``"resource"``, ``uri``). Modern era:
        one ``subscriptions/listen`` request, acknowledged before ``async with`` returns,
        cancelled on exit, reopened if the connection drops it. Legacy era:
        ``resources/subscribe`` for each URI (undone on exit) and the session's list
        notifications. Entering raises :class:`McpError` if the server refuses."""
        lists = [kind for kind, wanted in (("tools", tools), ("prompts", prompts), ("resources", resources)) if wanted]
        return Subscription(self, lists=lists, uris=resource_uris)

    async def subscribe_resource(self, uri: str, *, timeout: float | None = None) -> None:
        """Legacy era: ``resources/subscribe`` (the modern era has :meth:`listen` only).
        Raises :class:`McpError` (-32002 for an unknown resource)."""
        await self._typed("resources/subscribe", {"uri": uri}, dict[str, Any], timeout)

    async def unsubscribe_resource(self, uri: str, *, timeout: float | None = None) -> None:
        """Legacy era: ``resources/unsubscribe``."""
        await self._typed("resources/unsubscribe", {"uri": uri}, dict[str, Any], timeout)

    async def _all_pages(self, list_page: Callable[[str | None], Awaitable[Any]], field: str, max_pages: int) -> list[Any]:
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

    async def list_all_tools(self, *, max_pages: int = 100) -> list[Tool]:
        """Every tool, following ``nextCursor``. Raises a local :class:`McpError` past
        ``max_pages`` pages (a server that never ends its list)."""
        return await self._all_pages(self.list_tools, "tools", max_pages)

    async def list_all_resources(self, *, max_pages: int = 100) -> list[Resource]:
        """Every resource, following ``nextCursor`` (at most ``max_pages`` pages)."""
        return await self._all_pages(self.list_resources, "resources", max_pages)

    async def list_all_resource_templates(self, *, max_pages: int = 100) -> list[ResourceTemplate]:
        """Every resource template, following ``nextCursor`` (at most ``max_pages`` pages)."""
        return await self._all_pages(self.list_resource_templates, "resource_templates", max_pages)

    async def list_all_prompts(self, *, max_pages: int = 100) -> list[Prompt]:
        """Every prompt, following ``nextCursor`` (at most ``max_pages`` pages)."""
        return await self._all_pages(self.list_prompts, "prompts", max_pages)

    async def set_logging_level(self, level: str, *, timeout: float | None = None) -> None:
        """Legacy era: ``logging/setLevel``. Modern era: sets the per-request
        ``logLevel`` sent from now on."""
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}")
        if self._policy.stateless:
            self._meta = {**self._meta, meta_keys.LOG_LEVEL: level}
            return
        await self._typed("logging/setLevel", {"level": level}, EmptyResult, timeout)


class _ResultKind(msgspec.Struct, kw_only=True, rename="camel"):
    """What kind of result a modern response is, and its input round if any."""

    result_type: str | msgspec.UnsetType = msgspec.UNSET
    input_requests: dict[str, InputRequest] | None = None
    request_state: Any = None


def _url_elicitation_required(exc: McpError) -> McpError:
    """A server's -32042 as :class:`UrlElicitationRequired` (as it came, if its data
    does not list the elicitations properly)."""
    items = exc.data.get("elicitations") if isinstance(exc.data, dict) else None
    try:
        return UrlElicitationRequired(items if isinstance(items, list) else [], exc.message)
    except ValueError:
        return exc


def _cursor(cursor: str | None) -> dict[str, Any] | None:
    return {"cursor": cursor} if cursor is not None else None
