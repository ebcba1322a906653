"""The :class:`Server`: registration, the dual-era dispatcher, and the error contract.

One dispatcher serves both protocol eras on every transport. A request whose
``params._meta`` carries ``io.modelcontextprotocol/protocolVersion`` is served
statelessly (modern era, 2026-07-28); otherwise the connection must have completed
the ``initialize`` handshake (legacy era, 2025-11-25 back to 2024-11-05).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

import msgspec

from ._context import Context
from ._errors import (
    DEFAULT_MAX_ERROR_TEXT,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
    McpError,
    flatten_text,
)
from ._jsonrpc import RequestReceived
from ._peer import Peer
from ._resources import PromptDef, ResourceDef, TemplateDef, is_valid_uri, to_contents, to_prompt_result
from ._threads import run_sync
from ._tools import ToolDef, tool_from_function, tool_from_schema
from ._transport import ServerStdio, Transport
from ._wire_errors import bounded, decode_cursor, encode_cursor, internal_error, to_wire_error

if TYPE_CHECKING:
    from ._http_server import StreamableHTTPApp

from ._types import (
    LEGACY_PROTOCOL_VERSIONS,
    LOG_LEVELS,
    MODERN_PROTOCOL_VERSIONS,
    SUPPORTED_PROTOCOL_VERSIONS,
    CallToolParams,
    CallToolResult,
    CompleteParams,
    CompleteResult,
    Completion,
    CursorParams,
    DiscoverResult,
    EmptyResult,
    GetPromptParams,
    Implementation,
    InitializeParams,
    InitializeResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    ReadResourceParams,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    SetLevelParams,
    ToolAnnotations,
    _Cacheable,
    _Params,
    _Result,
)

__all__ = ["Server", "Middleware", "CallNext"]

log = logging.getLogger("mcpkit.server")

F = TypeVar("F", bound=Callable[..., Any])
CallNext = Callable[[], Awaitable[Any]]
Middleware = Callable[[Context, CallNext], Awaitable[Any]]
Era = Literal["modern", "legacy"]

_META_VERSION = "io.modelcontextprotocol/protocolVersion"
_META_CAPS = "io.modelcontextprotocol/clientCapabilities"
_META_INFO = "io.modelcontextprotocol/clientInfo"
_META_LEVEL = "io.modelcontextprotocol/logLevel"
_SERVER_INFO = "io.modelcontextprotocol/serverInfo"


_decode_meta = msgspec.json.Decoder(_Params).decode
_decoders: dict[type, Any] = {}


def _decode(raw: msgspec.Raw, tp: type[Any]) -> Any:
    dec = _decoders.get(tp)
    if dec is None:
        dec = _decoders[tp] = msgspec.json.Decoder(tp)
    try:
        return dec.decode(raw if raw else b"{}")
    except msgspec.ValidationError as exc:
        raise McpError(INVALID_PARAMS, f"Invalid params: {flatten_text(str(exc), 512)}") from None


class _Session:
    """Per-connection legacy-era state (a stdio process, an in-memory pair)."""

    __slots__ = ("client_capabilities", "client_info", "initialized", "log_level", "protocol_version")

    def __init__(self) -> None:
        self.initialized = False
        self.protocol_version = ""
        self.client_info: Implementation | None = None
        self.client_capabilities: dict[str, Any] = {}
        self.log_level: str | None = None


class Server:
    """An MCP server serving both protocol eras from the same handlers.

    ``eras`` restricts it to ``"modern"`` or ``"legacy"`` clients (default: both).
    ``expose_internal_errors=True`` sends handler exception text instead of
    ``"Internal error"`` (for development); ``mask_tool_errors=True`` hides tool
    exception text behind a reference id.
    """

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
    ) -> None:
        if eras not in ("dual", "modern", "legacy"):
            raise ValueError("eras must be 'dual', 'modern' or 'legacy'")
        if max_error_text < 16:
            raise ValueError("max_error_text must be at least 16 bytes")
        if page_size < 1:
            raise ValueError("page_size must be positive")
        self.info = Implementation(name=name, version=version, title=title, website_url=website_url)
        self.instructions = instructions
        self.eras = eras
        self.expose_internal_errors = expose_internal_errors
        self.mask_tool_errors = mask_tool_errors
        self.max_error_text = max_error_text
        self.page_size = page_size
        self.max_message_size = max_message_size
        self.cache_ttl_ms = cache_ttl_ms
        self.cache_scope = cache_scope
        self.shutdown_grace = shutdown_grace
        self._tools: dict[str, ToolDef] = {}
        self._resources: dict[str, ResourceDef] = {}
        self._templates: list[TemplateDef] = []
        self._prompts: dict[str, PromptDef] = {}
        self._completions: dict[tuple[str, str], Callable[..., Any]] = {}
        self._middleware: list[Middleware] = []
        self._server_meta = {_SERVER_INFO: {"name": name, "version": version}}
        self._methods: dict[str, tuple[type[Any], Callable[[Context, Any], Awaitable[Any]], tuple[Era, ...]]] = {
            "ping": (_Params, self._ping, ("legacy",)),  # removed in 2026-07-28
            "server/discover": (_Params, self._discover, ("modern",)),
            "tools/list": (CursorParams, self._list_tools, ("modern", "legacy")),
            "tools/call": (CallToolParams, self._call_tool, ("modern", "legacy")),
            "resources/list": (CursorParams, self._list_resources, ("modern", "legacy")),
            "resources/templates/list": (CursorParams, self._list_templates, ("modern", "legacy")),
            "resources/read": (ReadResourceParams, self._read_resource, ("modern", "legacy")),
            "prompts/list": (CursorParams, self._list_prompts, ("modern", "legacy")),
            "prompts/get": (GetPromptParams, self._get_prompt, ("modern", "legacy")),
            "completion/complete": (CompleteParams, self._complete, ("modern", "legacy")),
            "logging/setLevel": (SetLevelParams, self._set_level, ("legacy",)),
        }

    # --- registration --------------------------------------------------------------------

    @overload
    def tool(self, fn: F, /) -> F: ...

    @overload
    def tool(
        self,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | Mapping[str, Any] | None = None,
        structured_output: bool | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        fn: F | None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | Mapping[str, Any] | None = None,
        structured_output: bool | None = None,
        meta: dict[str, Any] | None = None,
    ) -> F | Callable[[F], F]:
        """Register a function as a tool (``@server.tool`` or ``@server.tool(...)``).

        Raises ``TypeError`` if the signature cannot be described as JSON Schema and
        ``ValueError`` if a tool of that name exists.
        """

        def register(f: F) -> F:
            self._add(
                tool_from_function(
                    f,
                    name=name,
                    title=title,
                    description=description,
                    annotations=annotations,
                    structured_output=structured_output,
                    meta=meta,
                )
            )
            return f

        return register(fn) if fn is not None else register

    def add_tool(
        self,
        name: str,
        description: str | None,
        input_schema: Mapping[str, Any],
        handler: Callable[..., Any],
        *,
        title: str | None = None,
        output_schema: Mapping[str, Any] | None = None,
        annotations: ToolAnnotations | Mapping[str, Any] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        """Register a tool from a raw JSON Schema (2020-12 unless ``$schema`` says
        otherwise). ``handler(arguments)`` or ``handler(arguments, ctx)`` receives the
        validated arguments dict. Raises ``ValueError`` for an invalid schema or a
        duplicate name."""
        self._add(
            tool_from_schema(
                name,
                description,
                input_schema,
                handler,
                title=title,
                output_schema=output_schema,
                annotations=annotations,
                meta=meta,
            )
        )

    def _add(self, td: ToolDef) -> None:
        if td.name in self._tools:
            raise ValueError(f"a tool named {td.name!r} is already registered")
        if "x-mcp-header" in msgspec.json.encode(td.tool.input_schema).decode():
            from ._http_headers import x_mcp_header_map

            try:
                x_mcp_header_map(td.tool.input_schema)
            except ValueError as exc:
                raise ValueError(f"tool {td.name!r}: {exc}") from None
        self._tools[td.name] = td

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Callable[[F], F]:
        """Register a resource; a ``uri`` with ``{placeholders}`` registers an RFC 6570
        resource template whose variables are passed as keyword arguments.

        The handler returns ``str`` (text), ``bytes`` (binary), ``ResourceContents`` or
        a list of them, or any JSON-able value (sent as JSON text).
        """

        def register(fn: F) -> F:
            from ._schema import parse_docstring

            summary, _ = parse_docstring(fn.__doc__)
            desc = description if description is not None else summary
            if "{" in uri:
                tpl = ResourceTemplate(
                    uri_template=uri, name=name or fn.__name__, title=title, description=desc, mime_type=mime_type, meta=meta
                )
                self._templates.append(TemplateDef(tpl, fn))
            else:
                if not is_valid_uri(uri):
                    raise ValueError(f"invalid resource URI {uri!r}")
                if uri in self._resources:
                    raise ValueError(f"a resource with URI {uri!r} is already registered")
                res = Resource(
                    uri=uri, name=name or fn.__name__, title=title, description=desc, mime_type=mime_type, size=size, meta=meta
                )
                self._resources[uri] = ResourceDef(res, fn)
            return fn

        return register

    @overload
    def prompt(self, fn: F, /) -> F: ...

    @overload
    def prompt(
        self,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Callable[[F], F]: ...

    def prompt(
        self,
        fn: F | None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> F | Callable[[F], F]:
        """Register a prompt. Its arguments are the function's parameters (strings);
        it returns a string (one user message), messages, or a ``GetPromptResult``."""

        def register(f: F) -> F:
            pd = PromptDef(f, name=name, title=title, description=description, meta=meta)
            if pd.prompt.name in self._prompts:
                raise ValueError(f"a prompt named {pd.prompt.name!r} is already registered")
            self._prompts[pd.prompt.name] = pd
            return f

        return register(fn) if fn is not None else register

    def completion(self, *, prompt: str | None = None, resource_template: str | None = None) -> Callable[[F], F]:
        """Register argument completion for a prompt or a resource template:
        ``handler(argument, value, context_arguments)`` returns a list of strings or a
        ``Completion``."""
        if (prompt is None) == (resource_template is None):
            raise ValueError("give exactly one of prompt= or resource_template=")
        key = ("ref/prompt", prompt) if prompt is not None else ("ref/resource", resource_template or "")

        def register(fn: F) -> F:
            self._completions[key] = fn
            return fn

        return register

    def use(self, middleware: Middleware) -> Middleware:
        """Add middleware ``async def mw(ctx, call_next)``; the first added is the
        outermost. Returns it, so it also works as a decorator."""
        self._middleware.append(middleware)
        return middleware

    # --- capabilities --------------------------------------------------------------------

    @property
    def capabilities(self) -> dict[str, Any]:
        caps: dict[str, Any] = {"logging": {}}
        if self._tools:
            caps["tools"] = {"listChanged": False}
        if self._resources or self._templates:
            caps["resources"] = {"subscribe": False, "listChanged": False}
        if self._prompts:
            caps["prompts"] = {"listChanged": False}
        if self._completions or self._prompts or self._templates:
            caps["completions"] = {}
        return caps

    # --- serving -------------------------------------------------------------------------

    def run(
        self,
        transport: Literal["stdio", "http"] = "stdio",
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        path: str = "/mcp",
        log_level: str = "warning",
        **http_options: Any,
    ) -> None:
        """Serve until stopped: ``"stdio"`` until stdin closes; ``"http"`` serves
        :meth:`asgi_app` with uvicorn on ``host``:``port`` (loopback by default) until
        interrupted. ``http_options`` go to :meth:`asgi_app`. Raises ``ImportError`` for
        HTTP if uvicorn is not installed (``pip install 'mcpkit[http]'``)."""
        if transport == "stdio":
            asyncio.run(self.serve_stdio())
        elif transport == "http":
            import uvicorn

            uvicorn.run(self.asgi_app(path=path, **http_options), host=host, port=port, log_level=log_level, lifespan="on")
        else:
            raise ValueError(f"unknown transport {transport!r}")

    def asgi_app(self, path: str | None = "/mcp", **options: Any) -> StreamableHTTPApp:
        """This server as a plain ASGI application speaking Streamable HTTP (both eras)
        at ``path`` (None: any path, for mounting). Options: ``json_response``
        (None = JSON unless notifications come first, True, False), ``allowed_hosts``,
        ``allowed_origins``, ``dns_rebinding_protection`` (None = on when bound to a
        loopback address), ``max_body_size`` (4 MiB), ``event_store``,
        ``session_idle_timeout``, ``max_sessions``, ``keepalive_interval``."""
        from ._http_server import StreamableHTTPApp

        return StreamableHTTPApp(self, path=path, **options)

    async def serve_stdio(self) -> None:
        """Serve this process's stdin/stdout until stdin closes."""
        await self.serve(ServerStdio(max_message_size=self.max_message_size))

    async def serve(self, transport: Transport) -> None:
        """Serve one connection until it closes; then give in-flight handlers
        ``shutdown_grace`` seconds to answer before cancelling them. Cancelling this
        coroutine cancels every handler and closes the transport."""
        session = _Session()

        async def on_request(ev: RequestReceived) -> Any:
            return await self.handle(ev.id, ev.method, ev.params, session=session, notify=peer.notify)

        def on_notification(method: str, params: msgspec.Raw) -> None:
            if method == "notifications/initialized":
                return
            log.debug("ignored notification %s", method)

        peer = Peer(
            transport,
            on_request=on_request,
            on_notification=on_notification,
            max_error_text=self.max_error_text,
            max_message_size=self.max_message_size,
        )
        await peer.start()
        try:
            await asyncio.shield(peer.closed)
            await peer.wait_handlers(self.shutdown_grace)
        finally:
            await peer.wait_handlers(0)
            await transport.close()

    # --- dispatch ------------------------------------------------------------------------

    async def handle(
        self,
        request_id: int | str,
        method: str,
        raw_params: msgspec.Raw,
        *,
        session: _Session,
        notify: Callable[[str, Any], None],
    ) -> Any:
        """Serve one request; returns the result or raises :class:`McpError`.

        Every exception from user code is mapped here to its wire outcome (DESIGN.md
        §2); only ``CancelledError`` propagates otherwise.
        """
        try:
            meta = _decode_meta(raw_params).meta if raw_params else None
        except msgspec.ValidationError:
            raise McpError(INVALID_PARAMS, "Invalid params: _meta must be an object") from None
        meta = meta if isinstance(meta, dict) else {}
        era, version, caps, info, level = self._resolve_era(method, meta, raw_params, session)
        if method == "initialize" and era == "legacy":
            return self._initialize(raw_params, session)
        spec = self._methods.get(method)
        if spec is None or era not in spec[2]:
            raise McpError(METHOD_NOT_FOUND, f"Method not found: {flatten_text(method, 256)}")
        params_type, handler, _ = spec
        params = _decode(raw_params, params_type)
        ctx = Context(
            self,
            request_id=request_id,
            method=method,
            era=era,
            protocol_version=version,
            client_info=info,
            client_capabilities=caps,
            meta=meta,
            raw_params=raw_params,
            notify=notify,
            log_level=level,
        )
        ctx._session = session
        try:
            if self._middleware:
                result = await self._through_middleware(ctx, lambda: handler(ctx, params))
            else:
                result = await handler(ctx, params)
        except asyncio.CancelledError:
            raise
        except McpError as exc:
            if exc.local:  # e.g. a RequestTimeout from a client the handler used: not ours to forward
                raise internal_error(
                    exc, f"handler for {method}", expose=self.expose_internal_errors, limit=self.max_error_text
                ) from None
            raise bounded(exc, self.max_error_text) from None
        except BaseException as exc:  # of any type: only this request fails
            raise to_wire_error(exc, era, method, expose=self.expose_internal_errors, limit=self.max_error_text) from None
        finally:
            ctx._finish()
        if era == "modern":
            return self._modern_result(result)
        return result

    async def _through_middleware(self, ctx: Context, innermost: CallNext) -> Any:
        chain = innermost
        for mw in reversed(self._middleware):
            chain = _bind_middleware(mw, ctx, chain)
        return await chain()

    def _resolve_era(
        self, method: str, meta: dict[str, Any], raw: msgspec.Raw, session: _Session
    ) -> tuple[Era, str, dict[str, Any], Implementation | None, str | None]:
        version = meta.get(_META_VERSION)
        if version is not None and self.eras != "legacy":  # modern _meta: even initialize is modern (-32601)
            if version not in MODERN_PROTOCOL_VERSIONS:
                raise McpError(
                    UNSUPPORTED_PROTOCOL_VERSION,
                    "Unsupported protocol version",
                    {"supported": self._supported_versions(), "requested": version},
                )
            caps = meta.get(_META_CAPS)
            if not isinstance(caps, dict):
                raise McpError(INVALID_PARAMS, f"Invalid params: _meta is missing required field {_META_CAPS}")
            level = meta.get(_META_LEVEL)
            if level is not None and level not in LOG_LEVELS:
                raise McpError(INVALID_PARAMS, f"Invalid params: unknown log level in {_META_LEVEL}")
            info = meta.get(_META_INFO)
            try:
                client = msgspec.convert(info, Implementation) if isinstance(info, dict) else None
            except msgspec.ValidationError:
                client = None
            return "modern", version, caps, client, level if level in LOG_LEVELS else None
        if method == "initialize":
            return "legacy", "", {}, None, None
        if session.initialized and self.eras != "modern":
            return "legacy", session.protocol_version, session.client_capabilities, session.client_info, session.log_level
        if method == "ping" and self.eras != "modern":
            return "legacy", "", {}, None, None
        spec = self._methods.get(method)
        if self.eras == "modern" or (spec is not None and spec[2] == ("modern",)):
            # only a modern request can mean this: it lacks its required _meta field
            raise McpError(INVALID_PARAMS, f"Invalid params: _meta is missing required field {_META_VERSION}")
        raise McpError(
            INVALID_REQUEST,
            "Invalid Request: received a request before initialization "
            f"(send initialize first, or put {_META_VERSION} in params._meta)",
        )

    def _supported_versions(self) -> list[str]:
        if self.eras == "modern":
            return list(MODERN_PROTOCOL_VERSIONS)
        if self.eras == "legacy":
            return list(LEGACY_PROTOCOL_VERSIONS)
        return list(SUPPORTED_PROTOCOL_VERSIONS)

    def _initialize(self, raw: msgspec.Raw, session: _Session) -> InitializeResult:
        params = _decode(raw, InitializeParams)
        if self.eras == "modern":
            raise McpError(
                UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version: this server speaks only " + ", ".join(MODERN_PROTOCOL_VERSIONS),
                {"supported": list(MODERN_PROTOCOL_VERSIONS), "requested": params.protocol_version},
            )
        if session.initialized:
            raise McpError(INVALID_REQUEST, "Invalid Request: the session is already initialized")
        requested = params.protocol_version
        version = requested if requested in LEGACY_PROTOCOL_VERSIONS else LEGACY_PROTOCOL_VERSIONS[0]
        session.initialized = True
        session.protocol_version = version
        session.client_info = params.client_info
        session.client_capabilities = params.capabilities
        return InitializeResult(
            protocol_version=version, capabilities=self.capabilities, server_info=self.info, instructions=self.instructions
        )

    def _modern_result(self, result: Any) -> Any:
        if isinstance(result, _Result):
            meta = {**result.meta, **self._server_meta} if result.meta else self._server_meta
            if isinstance(result, _Cacheable):
                return msgspec.structs.replace(
                    result,
                    result_type="complete",
                    meta=meta,
                    ttl_ms=self.cache_ttl_ms if result.ttl_ms is msgspec.UNSET else result.ttl_ms,
                    cache_scope=self.cache_scope if result.cache_scope is msgspec.UNSET else result.cache_scope,
                )
            return msgspec.structs.replace(result, result_type="complete", meta=meta)
        if isinstance(result, dict):
            out = dict(result)
            out.setdefault("resultType", "complete")
            out["_meta"] = {**out.get("_meta", {}), **self._server_meta}
            return out
        return result

    def _page(self, items: list[Any], cursor: str | None) -> tuple[list[Any], str | None]:
        start = decode_cursor(cursor, len(items)) if cursor is not None else 0
        end = start + self.page_size
        return items[start:end], encode_cursor(end) if end < len(items) else None

    # --- method handlers -----------------------------------------------------------------

    async def _ping(self, ctx: Context, params: Any) -> EmptyResult:
        return EmptyResult()

    async def _discover(self, ctx: Context, params: Any) -> DiscoverResult:
        return DiscoverResult(
            supported_versions=self._supported_versions(), capabilities=self.capabilities, instructions=self.instructions
        )

    async def _set_level(self, ctx: Context, params: SetLevelParams) -> EmptyResult:
        session = _session_of(ctx)
        if session is not None:
            session.log_level = params.level
        return EmptyResult()

    async def _list_tools(self, ctx: Context, params: CursorParams) -> ListToolsResult:
        page, nxt = self._page([t.tool for t in self._tools.values()], params.cursor)
        return ListToolsResult(tools=page, next_cursor=nxt)

    async def _call_tool(self, ctx: Context, params: CallToolParams) -> CallToolResult:
        td = self._tools.get(params.name)
        if td is None:
            raise McpError(INVALID_PARAMS, f"Unknown tool: {flatten_text(params.name, 256)}")
        return await td.call(params.arguments or {}, ctx, mask=self.mask_tool_errors, limit=self.max_error_text)

    async def _list_resources(self, ctx: Context, params: CursorParams) -> ListResourcesResult:
        page, nxt = self._page([r.resource for r in self._resources.values()], params.cursor)
        return ListResourcesResult(resources=page, next_cursor=nxt)

    async def _list_templates(self, ctx: Context, params: CursorParams) -> ListResourceTemplatesResult:
        page, nxt = self._page([t.template for t in self._templates], params.cursor)
        return ListResourceTemplatesResult(resource_templates=page, next_cursor=nxt)

    async def _read_resource(self, ctx: Context, params: ReadResourceParams) -> ReadResourceResult:
        uri = params.uri
        if not is_valid_uri(uri):
            raise McpError(INVALID_PARAMS, f"Invalid URI: {flatten_text(uri, 256)}", {"uri": flatten_text(uri, 256)})
        rd = self._resources.get(uri)
        if rd is not None:
            handler, kwargs, mime = rd.handler, {}, rd.resource.mime_type
        else:
            for td in self._templates:
                found = td.uri_template.match(uri)
                if found is not None:
                    handler, kwargs, mime = td.handler, found, td.template.mime_type
                    break
            else:
                # -32602 in both eras: 2026-07-28 requires it, and the conformance suite
                # grades the legacy -32002 as a warning for every revision (DESIGN.md §2).
                raise McpError(INVALID_PARAMS, "Resource not found", {"uri": uri})
        value = await handler(ctx, dict(kwargs))
        return ReadResourceResult(contents=to_contents(value, uri, mime))

    async def _list_prompts(self, ctx: Context, params: CursorParams) -> ListPromptsResult:
        page, nxt = self._page([p.prompt for p in self._prompts.values()], params.cursor)
        return ListPromptsResult(prompts=page, next_cursor=nxt)

    async def _get_prompt(self, ctx: Context, params: GetPromptParams) -> Any:
        pd = self._prompts.get(params.name)
        if pd is None:
            raise McpError(INVALID_PARAMS, f"Unknown prompt: {flatten_text(params.name, 256)}")
        args = params.arguments or {}
        missing = [a for a in pd.required if a not in args]
        if missing:
            raise McpError(
                INVALID_PARAMS,
                f"Invalid arguments for prompt {flatten_text(params.name, 256)}: missing required argument '{missing[0]}'",
            )
        value = await pd.handler(ctx, dict(args))
        return to_prompt_result(value, pd.prompt.description)

    async def _complete(self, ctx: Context, params: CompleteParams) -> CompleteResult:
        ref = params.ref
        if ref.type == "ref/prompt":
            key = ("ref/prompt", ref.name or "")
            if key[1] not in self._prompts:
                raise McpError(INVALID_PARAMS, f"Unknown prompt: {flatten_text(key[1], 256)}")
        elif ref.type == "ref/resource":
            key = ("ref/resource", ref.uri or "")
            if not any(t.template.uri_template == key[1] for t in self._templates) and key[1] not in self._resources:
                raise McpError(INVALID_PARAMS, f"Unknown resource template: {flatten_text(key[1], 256)}")
        else:
            raise McpError(INVALID_PARAMS, f"Invalid params: unknown reference type {flatten_text(ref.type, 64)}")
        fn = self._completions.get(key)
        if fn is None:
            return CompleteResult(completion=Completion(values=[], has_more=False))
        context = (params.context.arguments if params.context else None) or {}
        if asyncio.iscoroutinefunction(fn):
            value = await fn(params.argument.name, params.argument.value, context)
        else:
            value = await run_sync(fn, params.argument.name, params.argument.value, context)
        if isinstance(value, Completion):
            return CompleteResult(completion=value)
        values = [str(v) for v in value]
        return CompleteResult(completion=Completion(values=values[:100], total=len(values), has_more=len(values) > 100))


def _bind_middleware(mw: Middleware, ctx: Context, nxt: CallNext) -> CallNext:
    async def call() -> Any:
        return await mw(ctx, nxt)

    return call


def _session_of(ctx: Context) -> _Session | None:
    session = ctx._session
    return session if isinstance(session, _Session) else None
