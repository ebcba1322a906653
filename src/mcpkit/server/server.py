"""The :class:`Server` facade: options, what transports ask, and serving.

The work happens elsewhere in this package: :mod:`.registration` is the registration
API, the facade's base class; :mod:`.registry` keeps what is registered (the
definitions of :mod:`.definitions`) and :mod:`.settings` the options serving reads;
:mod:`.dispatch` serves each request in its era, with the request handlers per feature
of :mod:`.features`; :mod:`.context` is what handlers see.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from ..protocol.eras import MODERN
from ..protocol.errors import DEFAULT_MAX_ERROR_TEXT, INTERNAL_ERROR, McpError
from ..protocol.events import RequestId, RequestReceived
from ..protocol.headers import HeaderRules
from ..protocol.request_state import StateSealer
from ..protocol.types import Implementation, Tool
from ..protocol.versions import Era
from ..runtime.outbound import Outbound
from ..runtime.peer import Peer, check_timeout
from ..runtime.tracing import TracingOption, check_tracing, trace_server_requests
from ..stores.bus import Change, InMemoryBus, SubscriptionBus
from .changes import ChangeHub, Subscriber, notice
from .dispatch import Dispatcher
from .filters import Selection
from .injection import lifespan_state_type, providers
from .lifespan import Lifespan, LifespanError, LifespanRunner
from .registration import Registration
from .registry import CallNext, Middleware, Registry, TaskSetup
from .session import Session
from .settings import Setting, Settings, check_limit
from .stopping import SHUTDOWN_MESSAGE, StopSignals

if TYPE_CHECKING:  # the task store's module is loaded with the first task (registry.TaskSetup)
    from ..stores.tasks import TaskStore
    from ..transports.base import Transport
    from ..transports.http.app import StreamableHTTPApp

__all__ = ["Server", "Middleware", "CallNext"]

log = logging.getLogger("mcpkit.server")
#: What :meth:`Server.run` serves with when neither its call nor the environment says.
_RUN_DEFAULTS: dict[str, Any] = {"transport": "stdio", "host": "127.0.0.1", "port": 8000, "path": "/mcp", "log_level": "warning"}


_SCOPED_METHODS = frozenset({"tools/call", "prompts/get", "resources/read", "resources/subscribe"})


def _state_key(key: bytes | str | None) -> bytes:
    """The ``requestState`` signing key as bytes (a random one for None)."""
    if key is None:
        return os.urandom(32)
    return key.encode() if isinstance(key, str) else bytes(key)


class Server(Registration):
    """An MCP server serving both protocol eras from the same handlers.

    ``eras`` restricts it to ``"modern"`` or ``"legacy"`` clients (default: both).
    ``expose_internal_errors=True`` sends handler exception text instead of
    ``"Internal error"`` (for development); ``mask_tool_errors=True`` hides tool
    exception text behind a reference id. ``max_in_flight`` bounds the requests in progress
    on one stdio or in-memory connection: at the bound, reading it pauses until one is done.

    Asking the client (docs/interactive.md): ``ask_timeout`` (seconds, default 300) bounds
    the wait for an answer in the legacy era. In the modern era the answers so far travel
    in ``requestState``, signed with ``state_key`` (at least 16 bytes; default: random per
    process — give every node of a deployment the same key, e.g. from the environment) and
    valid for ``state_ttl`` seconds (default 600).

    Tracing (docs/tracing.md): ``tracing=None`` (default) makes an OpenTelemetry span per
    request when the application has set a tracer provider; True always (``ImportError``
    without ``mcpkit[otel]``); False never; a ``TracerProvider`` traces with that
    provider instead of the global one.

    Tasks (docs/tasks.md): tools registered with ``task=True`` run in the background for
    clients of the tasks extension. They are kept in ``task_store`` (default: an
    :class:`~mcpkit.InMemoryTaskStore` of at most 10,000 tasks) for ``task_ttl`` seconds
    from their creation (default 3600), and clients are told to poll every
    ``task_poll_interval`` seconds (default 1).

    Bounds on what one request may make the server hold (docs/limits.md): a URI a
    request names is at most ``max_uri_length`` characters (16,384); a
    ``subscriptions/listen``'s params at most ``max_listen_bytes`` (64 KiB); at most
    ``max_listens`` listens are open at once (1,000), ``max_listens_per_principal`` (32)
    of them by one authorized principal. Raises ``ValueError`` for a bound that is not
    positive.
    """

    eras = Setting[Literal["dual", "modern", "legacy"]]()
    expose_internal_errors = Setting[bool]()
    mask_tool_errors = Setting[bool]()
    max_error_text = Setting[int]()
    page_size = Setting[int]()
    cache_ttl_ms = Setting[int]()
    cache_scope = Setting[Literal["public", "private"]]()
    ask_timeout = Setting[float]()
    tool_timeout = Setting[float | None]()

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        instructions: str | None = None,
        title: str | None = None,
        website_url: str | None = None,
        eras: Literal["dual", "modern", "legacy"] = "dual",
        expose_internal_errors: bool = False,
        mask_tool_errors: bool = False,
        max_error_text: int = DEFAULT_MAX_ERROR_TEXT,
        page_size: int = 1000,
        max_message_size: int = 16 * 1024 * 1024,
        cache_ttl_ms: int = 0,
        cache_scope: Literal["public", "private"] = "private",
        shutdown_grace: float = 2.0,
        max_in_flight: int = 256,
        ask_timeout: float = 300.0,
        tool_timeout: float | None = None,
        state_key: bytes | str | None = None,
        state_ttl: float = 600.0,
        bus: SubscriptionBus | None = None,
        lifespan: Lifespan | None = None,
        tracing: TracingOption = None,
        task_store: TaskStore | None = None,
        task_ttl: float = 3600.0,
        task_poll_interval: float = 1.0,
        max_uri_length: int = 16_384,
        max_listen_bytes: int = 65_536,
        max_listens: int = 1000,
        max_listens_per_principal: int = 32,
    ) -> None:
        if eras not in ("dual", "modern", "legacy"):
            raise ValueError("eras must be 'dual', 'modern' or 'legacy'")
        if max_error_text < 16:
            raise ValueError("max_error_text must be at least 16 bytes")
        if page_size < 1:
            raise ValueError("page_size must be positive")
        if max_in_flight < 1:
            raise ValueError("max_in_flight must be positive")
        if min(max_uri_length, max_listen_bytes, max_listens, max_listens_per_principal) < 1:
            raise ValueError("max_uri_length, max_listen_bytes, max_listens and max_listens_per_principal must be positive")
        self.info = Implementation(name=name, version=version, title=title, website_url=website_url)
        self.instructions = instructions
        self.max_message_size = max_message_size
        self.shutdown_grace = shutdown_grace
        self.max_in_flight = max_in_flight
        settings = Settings(
            eras=eras,
            expose_internal_errors=expose_internal_errors,
            mask_tool_errors=mask_tool_errors,
            max_error_text=max_error_text,
            page_size=page_size,
            cache_ttl_ms=cache_ttl_ms,
            cache_scope=cache_scope,
            ask_timeout=check_timeout(ask_timeout),
            tool_timeout=check_limit(tool_timeout),
            state_sealer=StateSealer(_state_key(state_key), check_timeout(state_ttl)),
            max_uri_length=max_uri_length,
            max_listen_bytes=max_listen_bytes,
            max_listens=max_listens,
            max_listens_per_principal=max_listens_per_principal,
        )
        settings.hold(self)
        hub = ChangeHub(bus if bus is not None else InMemoryBus())
        tasks = TaskSetup(task_store, ttl=check_timeout(task_ttl), poll_interval=check_timeout(task_poll_interval))
        super().__init__(Registry(settings, hub, tasks), providers(lifespan_state_type(lifespan)))
        self._lifespan = LifespanRunner(self, lifespan)
        self._dispatcher = Dispatcher(self._registry, self.info, instructions, self._lifespan)
        if check_tracing(tracing) is not False:  # a span per request (docs/tracing.md)
            self._dispatcher.serve = trace_server_requests(  # type: ignore[method-assign,assignment]
                self._dispatcher.serve, tracing, lambda: MODERN in settings.policies
            )

    # --- composition (docs/howto/compose.md) --------------------------------------------

    def mount(
        self,
        server: Server,
        prefix: str | None = None,
        *,
        separator: str = "_",
        scopes: Sequence[str] = (),
        include: Iterable[str] | None = None,
        exclude: Iterable[str] = (),
        include_tags: Iterable[str] | None = None,
        exclude_tags: Iterable[str] = (),
    ) -> None:
        """Offer ``server``'s tools, prompts, resources and templates as this server's,
        live: what it registers or removes later is offered or withdrawn here too, and
        this server's clients are told. Under a ``prefix``, tools and prompts are named
        ``{prefix}{separator}{name}`` and URIs get the prefix as their first path
        segment (``notes://today`` -> ``notes://work/today``); without one they keep
        their names. This server's own features come first, then the most recently
        mounted server's. ``scopes`` are OAuth scopes every mounted feature requires
        besides its own. ``server``'s middleware runs inside this server's around the
        requests it serves, its lifespan within this one's, its tool time limit before
        this one's (docs/howto/compose.md says it all).

        ``include``, ``exclude``, ``include_tags`` and ``exclude_tags`` select which of
        ``server``'s features are offered — by the names ``server`` gives them or by their
        tags (:mod:`mcpkit.server.filters`: with an include, only what it names or tags;
        never what an exclude does); the others are neither listed nor served here.

        Raises ``ValueError`` for a prefix other than letters, digits, ``_``, ``-`` and
        ``.``, an empty separator, or a circle (``server`` is this one or has it
        mounted); ``RuntimeError`` for a ``server`` with a lifespan while this one is
        running (mount it before serving); ``TypeError`` for a selection or ``scopes``
        given as one string."""
        if not isinstance(server, Server):
            raise TypeError(f"mount() takes a Server, not {type(server).__name__}")
        selection = Selection(include=include, exclude=exclude, include_tags=include_tags, exclude_tags=exclude_tags)
        self._attach(server, server._registry, prefix, separator, scopes, selection)

    def import_server(
        self,
        server: Server,
        prefix: str | None = None,
        *,
        separator: str = "_",
        scopes: Sequence[str] = (),
        include: Iterable[str] | None = None,
        exclude: Iterable[str] = (),
        include_tags: Iterable[str] | None = None,
        exclude_tags: Iterable[str] = (),
    ) -> None:
        """Offer what ``server`` offers now, as :meth:`mount` would — the same names,
        selection, scopes, middleware, lifespan and order — but as a copy: what
        ``server`` registers, removes, disables or enables later does not change what
        this server offers (the servers mounted in ``server`` stay live, as the copy
        mounts them too). Raises what :meth:`mount` raises."""
        if not isinstance(server, Server):
            raise TypeError(f"import_server() takes a Server, not {type(server).__name__}")
        if server is self:
            raise ValueError("a server cannot be mounted in itself, nor in a server mounted in it")
        selection = Selection(include=include, exclude=exclude, include_tags=include_tags, exclude_tags=exclude_tags)
        self._attach(server, server._registry.snapshot(), prefix, separator, scopes, selection)

    def _attach(
        self,
        server: Server,
        registry: Registry,
        prefix: str | None,
        separator: str,
        scopes: Sequence[str],
        selection: Selection,
    ) -> None:
        """Mount ``registry`` (``server``'s, or a copy of it) here, with ``server``'s
        lifespan. Raises what :class:`Mount` and :meth:`Mount.attach` raise."""
        from .mount import Mount  # loaded with the first mounted server: start-up cost of the others

        Mount(
            self._registry,
            registry,
            server._lifespan,
            prefix=prefix,
            separator=separator,
            scopes=scopes,
            selection=selection,
        ).attach(self._lifespan)

    # --- authorization (docs/auth.md) --------------------------------------------------

    def scopes_for(self, method: str, raw_params: msgspec.Raw) -> tuple[str, ...]:
        """The scopes the tool, prompt or resource a request names requires (those given
        with ``scopes=`` when it was registered); empty otherwise."""
        return self.request_scopes(RequestReceived(0, method, raw_params))  # the id is not read

    def request_scopes(self, request: RequestReceived) -> tuple[str, ...]:
        """:meth:`scopes_for` of a received request, from its head (the transports' form:
        the ``RequestHandler`` protocol). Never raises."""
        if request.method not in _SCOPED_METHODS or not self._registry.has_scopes():
            return ()
        named = request.head.named()
        if named is None:
            return ()  # the dispatcher answers the malformed params
        return self._registry.scopes_for(request.method, {"name": named[0], "uri": named[1]})

    def all_scopes(self) -> set[str]:
        """Every scope some feature requires."""
        return self._registry.all_scopes()

    # --- what connections hear, and the lifespan (docs/subscriptions.md) -----------------

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell every client subscribed to ``uri`` — on this process and, through the
        subscription bus, on every other — that it changed (``notifications/resources/
        updated``). Returns at once; delivery is in the background, in order per client."""
        self._registry.resource_updated(uri)

    def describe_tool(self, name: str) -> Tool | None:
        """The tool ``name`` as this server offers it now (mounted, proxied and
        transformed tools included): its wire description, as ``tools/list`` gives it
        (schema, annotations); None if no such tool is offered. Never raises."""
        found = self._registry.describe("tool", name)
        return found[1] if found is not None and isinstance(found[1], Tool) else None

    def on_change(self, listener: Callable[[str, dict[str, Any]], None], *, at_once: bool = False) -> Callable[[], None]:
        """Call ``listener(method, params)`` with the notification of every change this
        server announces, made on this process or (through the subscription bus)
        another: a list changed (``notifications/tools/list_changed``, ``…/prompts/…``,
        ``…/resources/…``, params ``{}``), a resource updated
        (``notifications/resources/updated``, ``{"uri": …}``), a task's status
        (``notifications/tasks``). Returns what stops it. The listener is called where
        the bus delivers (the event loop, for the in-memory bus) and must not block;
        what it raises is logged and stops nothing. Changes made before the server
        serves anything are not announced (docs/subscriptions.md).

        With ``at_once``, the list changes and resource updates made on this process are
        also heard when they are made — before the coalesced notice goes out, so that
        a request that follows the change sees it (a cache, say) — and then heard again
        as announced."""
        hub = self._registry.hub

        def deliver(change: Change) -> None:
            listener(*notice(change))

        stop_bus = hub.bus.subscribe(deliver)
        if not at_once:
            return stop_bus
        stop_now = hub.watch(deliver)

        def stop() -> None:
            stop_now()
            stop_bus()

        return stop

    def connect(self, session: Session, outbound: Outbound) -> Callable[[], Awaitable[None]]:
        """A transport's legacy connection can carry server-initiated messages through
        ``outbound``: from now on (once ``session`` is initialized) it hears every list
        change and the updates of the resources it subscribes to, and ``session.log``
        reaches it. Returns the coroutine function that stops it."""
        hub = self._registry.hub
        subscriber = Subscriber(
            outbound.notify,
            lists=("tools", "prompts", "resources"),
            uris=session.resource_uris,
            drain=getattr(outbound, "drain", None),
            ready=lambda: session.initialized,
        )
        hub.add(subscriber)
        session.outbound = outbound

        async def stop() -> None:
            if session.outbound is outbound:
                session.outbound = None
            await hub.remove(subscriber)

        return stop

    def notified(self, session: Session, method: str) -> None:
        """The client of the legacy connection ``session`` sent the notification
        ``method``: ``notifications/roots/list_changed`` is passed on to the server behind
        a proxy (here or mounted), on the upstream session of that connection; the others
        need nothing. Never raises."""
        if method == "notifications/roots/list_changed":
            self._registry.roots_changed(session)
        elif method != "notifications/initialized":
            log.debug("ignored notification %s", method)

    def running(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """Hold this server's lifespan up for the duration (``async with
        server.running() as state:``): entered by the first user, exited after the last.
        ``serve``, ``run`` and the ASGI app's lifespan use it; use it yourself to run
        the lifespan around something else (a test, a host application). Raises
        :class:`LifespanError` if the lifespan fails to start."""
        return self._serving()

    @contextlib.asynccontextmanager
    async def _serving(self) -> AsyncIterator[Any]:
        """:meth:`running`: the lifespan held up, and the hub told where the server
        serves (from now on the changes made here are published)."""
        self._registry.hub.serving(asyncio.get_running_loop())
        async with self._lifespan.running() as state:
            yield state

    def shutdown(self) -> None:
        """End every open modern subscription gracefully (answered, then closed); the
        HTTP app calls it when its server stops."""
        self._registry.hub.close()

    # --- what transports ask (the RequestHandler protocol) ------------------------------------

    @property
    def capabilities(self) -> dict[str, Any]:
        """The capabilities this server announces, from what is registered."""
        return self._registry.capabilities

    def speaks(self, era: Era) -> bool:
        """Whether this server serves clients of ``era``."""
        return any(policy.name == era for policy in self._registry.settings.policies)

    def new_session(self) -> Session:
        """Fresh per-connection protocol state."""
        return Session()

    def header_rules(self, tool: str) -> HeaderRules:
        """The ``x-mcp-header`` annotations of a registered tool (empty if unknown)."""
        return self._registry.header_rules(tool)

    async def handle(
        self, request_id: RequestId, method: str, raw_params: msgspec.Raw, *, session: Any, outbound: Outbound
    ) -> Any:
        """Serve one request: returns the result or raises :class:`~mcpkit.McpError`.

        Every exception from user code is mapped to its wire outcome (docs/errors.md);
        only ``CancelledError`` propagates otherwise. ``session`` comes from
        :meth:`new_session`; notifications the handler sends go through ``outbound``.
        """
        request = RequestReceived(request_id, method, raw_params)
        return await self._dispatcher.serve(request, session=session, outbound=outbound)

    async def serve_request(self, request: RequestReceived, *, session: Any, outbound: Outbound) -> Any:
        """:meth:`handle` for a request a transport has received, whose head it may have
        read already (the ``RequestHandler`` protocol): its params are not decoded again.
        Raises as :meth:`handle` does; cancellation cancels the handler."""
        return await self._dispatcher.serve(request, session=session, outbound=outbound)

    # --- serving -----------------------------------------------------------------------------

    def run(
        self,
        transport: Literal["stdio", "http"] | None = None,
        *,
        host: str | None = None,
        port: int | None = None,
        path: str | None = None,
        log_level: str | None = None,
        uvicorn_options: Mapping[str, Any] | None = None,
        **http_options: Any,
    ) -> None:
        """Serve until stopped: ``"stdio"`` until stdin closes; ``"http"`` serves
        :meth:`asgi_app` with uvicorn on ``host``:``port`` (loopback by default), with
        header caps, deadlines for request heads and bodies, connection slots and a
        prompt shutdown (docs/limits.md). ``http_options`` go to :meth:`asgi_app`;
        ``uvicorn_options`` (``header_timeout``, ``body_timeout``, ``max_connections``,
        ``max_header_bytes``, ``max_headers``, or any ``uvicorn.Config`` argument) to the
        server.

        What this call leaves out, the ``MCPKIT_*`` environment variables may set: the
        transport, host, port, path and log level (else ``"stdio"``, ``127.0.0.1``,
        8000, ``/mcp``, ``"warning"``), and the server's era and limits, over what it
        was constructed with (docs/deploy.md#settings-from-the-environment).

        On either transport, SIGINT or SIGTERM stops the server gracefully: it reads no
        more requests, gives those in progress their grace (``shutdown_grace`` over stdio,
        ``timeout_graceful_shutdown`` over HTTP), answers the ones it then cancels with
        -32603 "Server shutting down: the request was cancelled", and returns (the process
        exits 0); a second signal forces the stop at once and exits 128 + its number (130
        for SIGINT, 143 for SIGTERM). A lifespan that fails to start exits 1 with one line
        on stderr, ``"<name>: the server's lifespan failed to start: ..."``, on either.
        Raises ``ImportError`` for HTTP if uvicorn is not installed (``pip install
        'mcpkit[http]'``), ``ValueError`` for another ``transport`` or for an
        ``MCPKIT_*`` variable whose value does not parse (naming it)."""
        from .environment import from_environment  # read when the server runs: start-up cost of the import

        env = from_environment()
        given = {"transport": transport, "host": host, "port": port, "path": path, "log_level": log_level}
        chosen = {**_RUN_DEFAULTS, **env.run, **{k: v for k, v in given.items() if v is not None}}
        if chosen["transport"] not in ("stdio", "http"):
            raise ValueError(f"unknown transport {chosen['transport']!r}")
        for option, value in env.server.items():
            setattr(self, option, value)
        if env.read:
            log.info("%s: settings from the environment: %s", self.info.name, ", ".join(env.read))
        try:
            if chosen["transport"] == "stdio":
                status = asyncio.run(self._run_stdio())
                if status:
                    raise SystemExit(status)
            else:
                from ..transports.http.server.uvicorn import run_uvicorn

                app = self.asgi_app(path=chosen["path"], **{**env.http, **http_options})
                run_uvicorn(
                    app,
                    host=chosen["host"],
                    port=chosen["port"],
                    log_level=chosen["log_level"],
                    **{**env.uvicorn, **(uvicorn_options or {})},
                )
        except LifespanError as exc:
            raise SystemExit(f"{self.info.name}: {exc}") from exc

    async def _run_stdio(self) -> int:
        """Serve stdin/stdout until stdin closes, or until SIGINT or SIGTERM (then as
        :meth:`run` says); the exit status. Raises :class:`LifespanError`."""
        main = asyncio.current_task()
        assert main is not None
        from ..transports.stdio.server import ServerStdio  # loaded when used, as the HTTP app is: start-up cost

        with StopSignals(asyncio.get_running_loop(), main.cancel) as signals:
            stdio = ServerStdio(max_message_size=self.max_message_size)
            try:
                await self._serve(stdio, signals.requested, stdio.stop_reading)
            except asyncio.CancelledError:
                if not signals.forced:
                    raise
        return signals.exit_status

    def asgi_app(self, path: str | None = "/mcp", **options: Any) -> StreamableHTTPApp:
        """This server as a plain ASGI application speaking Streamable HTTP (both eras)
        at ``path`` (None: any path, for mounting). Options: ``json_response``
        (None = JSON unless notifications come first, True, False), ``allowed_hosts``,
        ``allowed_origins``, ``dns_rebinding_protection`` (None = on when bound to a
        loopback address), ``max_body_size`` (4 MiB), ``event_store``,
        ``session_idle_timeout``, ``max_sessions``, ``max_session_requests`` (100),
        ``body_timeout`` (None), ``keepalive_interval``, ``retry_interval`` (1.0 s: the
        ``retry`` of legacy SSE streams), ``error_status`` (``"spec"``, or ``"400"`` for
        the TypeScript SDK's clients: docs/http.md), ``session_store`` (where legacy
        sessions live: this process by default; shared by several nodes with
        ``RedisStore.sessions``, with a shared ``event_store``: docs/deploy.md),
        ``health_path`` (None; ``"/healthz"`` serves liveness there and readiness at
        ``/healthz/ready``, under the ``Host``/``Origin`` rules of the endpoint),
        ``probe_hosts`` (None; hosts the probes may name besides: names, IP networks such
        as ``"10.0.0.0/8"``, or ``"*"``), ``sse_transport`` (False; True also serves the deprecated
        HTTP+SSE transport of 2024-11-05 at ``sse_path`` (``"/sse"``) and
        ``messages_path`` (``"/messages"``): docs/http.md). The limits are in
        docs/limits.md."""
        from ..transports.http.app import streamable_http_app

        return streamable_http_app(self, path=path, **options)

    async def serve_stdio(self) -> None:
        """Serve this process's stdin/stdout until stdin closes."""
        from ..transports.stdio.server import ServerStdio  # loaded when used, as the HTTP app is: start-up cost

        await self.serve(ServerStdio(max_message_size=self.max_message_size))

    async def serve(self, transport: Transport) -> None:
        """Serve one connection until it closes; then give in-flight handlers
        ``shutdown_grace`` seconds to answer before cancelling them. At most
        ``max_in_flight`` requests are worked on at once: reading pauses at the bound
        (on a transport that can pause). Cancelling this coroutine cancels every handler
        and closes the transport."""
        await self._serve(transport, None, None)

    async def _serve(
        self, transport: Transport, stop: asyncio.Future[int] | None, stop_reading: Callable[[], None] | None
    ) -> None:
        """:meth:`serve`, or until ``stop`` completes: then ``stop_reading`` is called, the
        handlers get their grace, and each one cancelled after it is answered -32603
        :data:`~.stopping.SHUTDOWN_MESSAGE`."""
        session = Session()
        loop = asyncio.get_running_loop()

        def on_request(ev: RequestReceived) -> Awaitable[Any]:
            # what the Peer awaits, inside its own error handling: no coroutine of our own per request
            # (and the loop given, not asked for: a system call per request on Python 3.11)
            return self._dispatcher.serve(ev, session=session, outbound=peer, loop=loop)

        def on_notification(method: str, params: msgspec.Raw) -> None:
            self.notified(session, method)

        peer = Peer(
            transport,
            on_request=on_request,
            on_notification=on_notification,
            max_error_text=self.max_error_text,
            max_message_size=self.max_message_size,
            max_in_flight=self.max_in_flight,
        )
        self._registry.hub.serving(loop)
        try:
            await self._lifespan.enter()
        except BaseException:
            await transport.close()
            raise
        try:
            await peer.start()
            disconnect = self.connect(session, peer)
            try:
                if stop is None:
                    await asyncio.shield(peer.closed)
                else:
                    await asyncio.wait((peer.closed, stop), return_when=asyncio.FIRST_COMPLETED)
                    if stop.done() and stop_reading is not None:
                        # the client can no longer send anything: every cancellation is the shutdown's
                        peer.answer_cancelled(McpError(INTERNAL_ERROR, SHUTDOWN_MESSAGE))
                        stop_reading()
                session.end()  # open subscriptions of this connection end now, not after the grace
                await disconnect()
                await peer.wait_handlers(self.shutdown_grace)
            finally:
                await peer.wait_handlers(0)
                await transport.close()
        finally:
            await self._lifespan.exit()
