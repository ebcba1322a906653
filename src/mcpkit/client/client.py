"""The :class:`Client`: typed requests with deadlines and cancellation, over any
transport. The feature requests (tools, resources, prompts, completions) are the
mixin of :mod:`.features`; era negotiation lives in :mod:`.negotiation`, the server's
own messages in :mod:`.handlers`, settings in :mod:`.options`, retries in
:mod:`.retry`, the connection and its recovery in :mod:`.link`, the modern era's input
rounds in :mod:`.rounds`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from types import TracebackType
from typing import Any, Literal, TypeVar

import msgspec

from ..protocol import meta as meta_keys
from ..protocol.eras import LEGACY, EraPolicy
from ..protocol.errors import URL_ELICITATION_REQUIRED, ConnectionClosed, McpError
from ..protocol.events import RequestId
from ..protocol.tasks import Task
from ..protocol.types import (
    LOG_LEVELS,
    DiscoverResult,
    EmptyResult,
    Implementation,
    Root,
)
from ..runtime.peer import Peer, ProgressCallback, check_timeout
from ..runtime.tracing import trace_client_requests
from ..transports.base import Servable, Transport
from .calls import typed_call
from .events import Events
from .features import FeatureRequests
from .handlers import ServerMessages
from .link import Link, in_handshake
from .negotiation import adopt_offered_version
from .options import ClientOptions, RequestOptions
from .retry import RetryPolicy
from .rounds import url_elicitation_required
from .subscriptions import Subscription
from .tasks import TaskHandle, cancel_task, get_task, start_task, update_task

__all__ = ["Client"]

T = TypeVar("T")


class Client(FeatureRequests):
    """An MCP client over one transport (or straight to a :class:`~mcpkit.Server` in
    memory).

    Use as ``async with Client(transport) as client: ...``. Every request has a
    deadline; errors are raised as :class:`~mcpkit.McpError` (``RequestTimeout`` and
    ``ConnectionClosed`` are local); a tool result with ``is_error`` is returned.

    Resilience (docs/timeouts-and-retries.md): with a :class:`~mcpkit.RetryPolicy`
    (client-wide, or ``retry=`` per call) idempotent calls are retried after transient
    failures; ``call_tool`` counts as idempotent when the tool's annotations, from a
    ``list_tools`` this client has seen, say ``readOnlyHint`` or ``idempotentHint``,
    or when the caller passes ``idempotent=True``. Over a transport that restarts
    (``StdioTransport(..., restart=True)``) the client reconnects by itself.
    """

    def __init__(self, transport: Transport | Servable, options: ClientOptions | None = None) -> None:
        self.options = options or ClientOptions()
        if isinstance(transport, Servable):
            from ..transports.memory import ServerInMemory

            self.transport: Transport = ServerInMemory(transport)
        else:
            self.transport = transport
        self._link = Link(self)
        self._events = Events(self.options.on_event)
        self._inbound = ServerMessages(self.options)
        self._idempotent_tools: dict[str, bool] = {}  # learned from tools/list results
        self._subscriptions: set[Subscription] = set()  # open ones, re-opened after a reconnection
        self._log_level: str | None = None  # set by set_logging_level, restored after a reconnection
        self._policy: EraPolicy = LEGACY
        self.era: Literal["modern", "legacy"] | None = None
        self.protocol_version: str | None = None
        self.server_info: Implementation | None = None
        self.server_capabilities: dict[str, Any] = {}
        self.instructions: str | None = None
        self._meta: dict[str, Any] = {}
        if self.options.tracing is not False:  # a span per request (docs/tracing.md)
            self._request = trace_client_requests(self._request, self.options.tracing, self)  # type: ignore[method-assign,assignment]

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
        if self._link.peer is not None:
            raise RuntimeError("the client is already connected")
        try:
            await self._link.open()
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """Close the transport (for a spawned server: close stdin, wait, SIGTERM,
        SIGKILL) and stop any reconnection. Pending requests fail with
        :class:`ConnectionClosed`. Idempotent."""
        await self._link.close()

    @property
    def _peer(self) -> Peer | None:
        return self._link.peer

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
        *,
        reset: bool = False,
        max_total: float | None = None,
    ) -> msgspec.Raw:
        link = self._link
        peer = link.peer
        if peer is None:
            raise RuntimeError("the client is not connected; use 'async with Client(...)' or await connect()")
        if (link.recovery is not None or link.failed is not None) and not in_handshake():
            peer, timeout = await link.ready(timeout)  # reconnecting: wait for it, within the deadline
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        retried = False
        while True:  # at most twice: a modern revision refused mid-session is retried once (negotiation.py)
            try:
                return await peer.request(
                    method,
                    self._with_meta(params),
                    timeout=timeout,
                    on_progress=on_progress,
                    on_start=on_start,
                    reset_on_progress=reset,
                    max_total=max_total,
                )
            except McpError as exc:
                if exc.code == URL_ELICITATION_REQUIRED and not exc.local:
                    raise url_elicitation_required(exc) from None
                if retried or not adopt_offered_version(self, exc):
                    raise
            retried = True
            timeout = max(deadline - loop.time(), 0.001)

    def _with_meta(self, params: dict[str, Any] | None) -> dict[str, Any] | None:
        """``params`` with the modern era's ``_meta`` added (members the caller gave win)."""
        if not self._meta:
            return params
        params = dict(params) if params else {}
        extra = params.get("_meta")
        params["_meta"] = {**self._meta, **extra} if isinstance(extra, dict) else self._meta
        return params

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
        the calling task sends ``notifications/cancelled`` and re-raises. With a retry
        policy (``options.retry``, else the client's) it is retried as the typed calls
        are, when ``method`` is idempotent or ``options.idempotent`` says so.
        """
        options = options or RequestOptions()
        return await typed_call(
            self,
            method,
            params,
            dict[str, Any],
            options.timeout,
            options.on_progress,
            retry=options.retry,
            idempotent=options.idempotent,
            reset=options.reset_timeout_on_progress,
            max_total=options.max_total_timeout,
            rounds=False,
        )

    async def send_notification(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification. Raises :class:`ConnectionClosed` if the connection is gone."""
        peer = self._peer
        if peer is None or peer.is_closed:
            raise ConnectionClosed()
        if self._meta:
            params = dict(params) if params else {}
            params.setdefault("_meta", self._meta)
        peer.notify(method, params)

    async def set_roots(self, roots: list[Root]) -> None:
        """Change the roots this client offers; a legacy-era server is told with
        ``notifications/roots/list_changed`` (a modern one asks again when it needs
        them). Raises ``RuntimeError`` unless the client was created with ``roots``."""
        if self._inbound.roots is None:
            raise RuntimeError("set_roots needs a client created with ClientOptions(roots=...)")
        self._inbound.roots = list(roots)
        if not self._policy.stateless:
            self._notify("notifications/roots/list_changed")

    async def ping(self, *, timeout: float | None = None, retry: RetryPolicy | None = None) -> None:
        """Check that the server answers: ``ping`` in the legacy era; in the modern era,
        which removed ``ping``, a ``server/discover`` round trip."""
        await typed_call(self, self._policy.ping_method, None, dict[str, Any], timeout, retry=retry)

    async def discover(self, *, timeout: float | None = None, retry: RetryPolicy | None = None) -> DiscoverResult:
        """``server/discover``: the server's versions, capabilities and identity."""
        return await typed_call(self, "server/discover", None, DiscoverResult, timeout, retry=retry)

    # --- tasks (docs/tasks.md) ------------------------------------------------------------------

    async def start_task(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        meta: dict[str, Any] | None = None,
        ttl: float | None = None,
    ) -> TaskHandle:
        """Call a tool as a task and return its :class:`TaskHandle` as soon as the server
        has created it (``await handle.wait()`` for the result). 2026-07-28: the call
        declares the tasks extension and the server decides — a call it answers at once
        gives a handle without a ``task_id`` whose ``wait()`` returns that result.
        2025-11-25: the call asks for a task (``ttl``: how long the server should keep it,
        in seconds). Raises as :meth:`call_tool` does (-32021 from a server that cannot)."""
        return await start_task(self, name, arguments, timeout=timeout, meta=meta, ttl=ttl)

    def task(self, task_id: str) -> TaskHandle:
        """A handle for the task ``task_id``, started earlier, maybe on another connection
        (nothing is sent until it is used)."""
        return TaskHandle(self, task_id)

    async def get_task(self, task_id: str, *, timeout: float | None = None) -> Task:
        """``tasks/get``: the task's state (its result or error once it has ended). Raises
        ``McpError(-32602)`` for a task the server does not know (or no longer: expired)."""
        return await get_task(self, task_id, timeout=timeout)

    async def update_task(self, task_id: str, input_responses: dict[str, Any], *, timeout: float | None = None) -> None:
        """``tasks/update``: answers to the task's ``input_requests``, by key (2026-07-28)."""
        await update_task(self, task_id, input_responses, timeout=timeout)

    async def cancel_task(self, task_id: str, *, timeout: float | None = None) -> None:
        """``tasks/cancel``: ask the server to stop the task (cooperative; ``get_task``
        tells how it ended)."""
        await cancel_task(self, task_id, timeout=timeout)

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
        await typed_call(self, "resources/subscribe", {"uri": uri}, dict[str, Any], timeout)

    async def unsubscribe_resource(self, uri: str, *, timeout: float | None = None) -> None:
        """Legacy era: ``resources/unsubscribe``."""
        await typed_call(self, "resources/unsubscribe", {"uri": uri}, dict[str, Any], timeout)

    async def set_logging_level(self, level: str, *, timeout: float | None = None) -> None:
        """Legacy era: ``logging/setLevel``. Modern era: sets the per-request
        ``logLevel`` sent from now on."""
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}")
        self._log_level = level
        if self._policy.stateless:
            self._meta = {**self._meta, meta_keys.LOG_LEVEL: level}
            return
        await typed_call(self, "logging/setLevel", {"level": level}, EmptyResult, timeout)
