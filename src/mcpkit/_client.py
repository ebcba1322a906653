"""The :class:`Client`: typed requests, deadlines, cancellation, era negotiation."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, Literal, TypeVar

import msgspec

from . import __version__
from ._errors import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
    ConnectionClosed,
    McpError,
    RequestTimeout,
    flatten_text,
)
from ._jsonrpc import RequestReceived
from ._peer import Peer, ProgressCallback, check_timeout
from ._server import Server
from ._transport import Transport, memory_pair
from ._types import (
    LATEST_PROTOCOL_VERSION,
    LEGACY_PROTOCOL_VERSIONS,
    LOG_LEVELS,
    MODERN_PROTOCOL_VERSIONS,
    CallToolResult,
    CompleteResult,
    DiscoverResult,
    EmptyResult,
    GetPromptResult,
    Implementation,
    InitializeResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    ReadResourceResult,
    Root,
)

__all__ = ["Client", "ClientOptions", "RequestOptions"]

T = TypeVar("T")
LogHandler = Callable[[str, Any, str | None], Awaitable[None] | None]
NotificationCallback = Callable[[str, dict[str, Any]], None]

_decoders: dict[type, Any] = {}
_decode_dict = msgspec.json.Decoder(dict[str, Any]).decode


def _decode(raw: msgspec.Raw, tp: type[T]) -> T:
    dec = _decoders.get(tp)
    if dec is None:
        dec = _decoders[tp] = msgspec.json.Decoder(tp)
    try:
        return dec.decode(raw)  # type: ignore[no-any-return]
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:  # DecodeError covers ValidationError
        err = McpError(INTERNAL_ERROR, f"Invalid result from server: {flatten_text(str(exc), 512)}")
        err.local = True
        raise err from None


@dataclasses.dataclass(frozen=True)
class ClientOptions:
    """Client-wide settings.

    ``request_timeout`` (seconds, default 30) is every request's deadline unless a call
    gives its own; it must be positive and finite (``ValueError`` otherwise).
    ``protocol_version`` pins a revision (a modern one skips the handshake, a legacy one
    goes straight to ``initialize``); None probes with ``server/discover`` and falls
    back to ``initialize``. ``discover_timeout`` bounds that probe.
    """

    request_timeout: float = 30.0
    protocol_version: str | None = None
    client_info: Implementation = dataclasses.field(default_factory=lambda: Implementation(name="mcpkit", version=__version__))
    capabilities: dict[str, Any] = dataclasses.field(default_factory=dict)
    discover_timeout: float = 5.0
    log_level: Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"] | None = None
    on_log: LogHandler | None = None
    on_notification: NotificationCallback | None = None
    roots: list[Root] | None = None
    max_error_text: int = 1024

    def __post_init__(self) -> None:
        check_timeout(self.request_timeout)
        check_timeout(self.discover_timeout)
        if self.max_error_text < 16:
            raise ValueError("max_error_text must be at least 16 bytes")
        if self.protocol_version is not None and self.protocol_version not in MODERN_PROTOCOL_VERSIONS + LEGACY_PROTOCOL_VERSIONS:
            raise ValueError(f"unsupported protocol version {self.protocol_version!r}")
        if self.log_level is not None and self.log_level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {self.log_level!r}")


@dataclasses.dataclass(frozen=True)
class RequestOptions:
    """Per-request settings for :meth:`Client.send_request`: ``timeout`` in seconds
    (positive and finite, else ``ValueError``; None = the client's default) and an
    ``on_progress(progress, total, message)`` callback."""

    timeout: float | None = None
    on_progress: ProgressCallback | None = None

    def __post_init__(self) -> None:
        if self.timeout is not None:
            check_timeout(self.timeout)


class Client:
    """An MCP client over one transport (or straight to a :class:`Server` in memory).

    Use as ``async with Client(transport) as client: ...``. Every request has a
    deadline; errors are raised as :class:`McpError` (``RequestTimeout`` and
    ``ConnectionClosed`` are local); a tool result with ``is_error`` is returned.
    """

    def __init__(self, transport: Transport | Server, options: ClientOptions | None = None) -> None:
        self.options = options or ClientOptions()
        self._server: Server | None = None
        if isinstance(transport, Server):
            self._server = transport
            self.transport: Transport = memory_pair()[0]
        else:
            self.transport = transport
        self._peer: Peer | None = None
        self._serve_task: asyncio.Task[None] | None = None
        self.era: Literal["modern", "legacy"] | None = None
        self.protocol_version: str | None = None
        self.server_info: Implementation | None = None
        self.server_capabilities: dict[str, Any] = {}
        self.instructions: str | None = None
        self._meta: dict[str, Any] = {}
        self._tasks: set[asyncio.Future[Any]] = set()

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
        """
        if self._peer is not None:
            raise RuntimeError("the client is already connected")
        if self._server is not None:
            client_end = self.transport
            server_end = client_end.other  # type: ignore[attr-defined]
            self._serve_task = asyncio.get_running_loop().create_task(self._server.serve(server_end))
        self._peer = Peer(
            self.transport,
            on_request=self._on_request,
            on_notification=self._on_notification,
            max_error_text=self.options.max_error_text,
        )
        try:
            await self._peer.start()
            await self._negotiate()
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """Close the transport (for a spawned server: close stdin, wait, SIGTERM,
        SIGKILL). Pending requests fail with :class:`ConnectionClosed`. Idempotent."""
        peer = self._peer
        if peer is not None:
            await peer.close()
        else:
            await self.transport.close()
        task, self._serve_task = self._serve_task, None
        if task is not None:
            try:
                await asyncio.wait_for(task, 5.0)
            except (TimeoutError, asyncio.CancelledError):
                pass

    async def _negotiate(self) -> None:
        pinned = self.options.protocol_version
        if pinned in MODERN_PROTOCOL_VERSIONS:
            self._use_modern(pinned)
            return
        if pinned is not None:
            await self._initialize(pinned)
            return
        self._use_modern(LATEST_PROTOCOL_VERSION)
        try:
            found = await self.discover(timeout=min(self.options.discover_timeout, self.options.request_timeout))
        except ConnectionClosed:
            raise
        except RequestTimeout:
            await self._initialize(LEGACY_PROTOCOL_VERSIONS[0])
            return
        except McpError as exc:
            if exc.code == UNSUPPORTED_PROTOCOL_VERSION and not exc.local and isinstance(exc.data, dict):
                offered = exc.data.get("supported") or []
                modern = [v for v in MODERN_PROTOCOL_VERSIONS if v in offered]
                if modern:
                    self._use_modern(modern[0])
                    return
                legacy = [v for v in LEGACY_PROTOCOL_VERSIONS if v in offered]
                if not legacy:
                    raise
                await self._initialize(legacy[0])
                return
            await self._initialize(LEGACY_PROTOCOL_VERSIONS[0])
            return
        modern = [v for v in MODERN_PROTOCOL_VERSIONS if v in found.supported_versions]
        if modern:
            self._use_modern(modern[0])
            self.server_capabilities = found.capabilities
            self.instructions = found.instructions
            self._server_info_from(found.meta)
            return
        legacy = [v for v in LEGACY_PROTOCOL_VERSIONS if v in found.supported_versions]
        await self._initialize(legacy[0] if legacy else LEGACY_PROTOCOL_VERSIONS[0])

    def _use_modern(self, version: str) -> None:
        self.era = "modern"
        self.protocol_version = version
        meta: dict[str, Any] = {
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientCapabilities": self.options.capabilities,
            "io.modelcontextprotocol/clientInfo": msgspec.to_builtins(self.options.client_info),
        }
        if self.options.log_level is not None:
            meta["io.modelcontextprotocol/logLevel"] = self.options.log_level
        self._meta = meta

    def _server_info_from(self, meta: dict[str, Any] | None) -> None:
        info = (meta or {}).get("io.modelcontextprotocol/serverInfo")
        if isinstance(info, dict):
            try:
                self.server_info = msgspec.convert(info, Implementation)
            except msgspec.ValidationError:
                pass

    async def _initialize(self, version: str) -> None:
        self.era = "legacy"
        self._meta = {}
        params = {
            "protocolVersion": version,
            "capabilities": self._legacy_capabilities(),
            "clientInfo": msgspec.to_builtins(self.options.client_info),
        }
        raw = await self._request("initialize", params, self.options.request_timeout, None)
        result = _decode(raw, InitializeResult)
        if result.protocol_version not in LEGACY_PROTOCOL_VERSIONS:
            err = McpError(
                UNSUPPORTED_PROTOCOL_VERSION,
                f"Server chose protocol version {result.protocol_version!r}, which this client does not speak",
                {"supported": list(LEGACY_PROTOCOL_VERSIONS), "requested": result.protocol_version},
            )
            err.local = True
            raise err
        self.protocol_version = result.protocol_version
        self.server_info = result.server_info
        self.server_capabilities = result.capabilities
        self.instructions = result.instructions
        assert self._peer is not None
        self._peer.notify("notifications/initialized")
        if self.options.log_level is not None and "logging" in result.capabilities:
            await self.send_request("logging/setLevel", {"level": self.options.log_level})

    def _legacy_capabilities(self) -> dict[str, Any]:
        caps = dict(self.options.capabilities)
        if self.options.roots is not None:
            caps.setdefault("roots", {"listChanged": False})
        return caps

    # --- inbound from the server ---------------------------------------------------------

    async def _on_request(self, ev: RequestReceived) -> Any:
        if ev.method == "ping":
            return EmptyResult()
        if ev.method == "roots/list" and self.options.roots is not None:
            return {"roots": msgspec.to_builtins(self.options.roots)}
        raise McpError(METHOD_NOT_FOUND, f"Method not found: {ev.method}")

    def _on_notification(self, method: str, params: msgspec.Raw) -> None:
        try:
            data = _decode_dict(params) if params else {}
        except (msgspec.DecodeError, UnicodeDecodeError):
            return
        if method == "notifications/message" and self.options.on_log is not None:
            level = data.get("level")
            logger = data.get("logger")
            res = self.options.on_log(
                level if isinstance(level, str) else "info", data.get("data"), logger if isinstance(logger, str) else None
            )
            if asyncio.iscoroutine(res):
                task = asyncio.ensure_future(res)
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        if self.options.on_notification is not None:
            self.options.on_notification(method, data)

    # --- requests ------------------------------------------------------------------------

    def _timeout(self, timeout: float | None) -> float:
        return self.options.request_timeout if timeout is None else check_timeout(timeout)

    async def _request(
        self, method: str, params: dict[str, Any] | None, timeout: float, on_progress: ProgressCallback | None
    ) -> msgspec.Raw:
        peer = self._peer
        if peer is None:
            raise RuntimeError("the client is not connected; use 'async with Client(...)' or await connect()")
        if self._meta:
            params = dict(params) if params else {}
            extra = params.get("_meta")
            params["_meta"] = {**self._meta, **extra} if isinstance(extra, dict) else self._meta
        return await peer.request(method, params, timeout=timeout, on_progress=on_progress)

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
        return _decode(raw, dict[str, Any])

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
        return _decode(await self._request(method, params, self._timeout(timeout), on_progress), tp)

    async def ping(self, *, timeout: float | None = None) -> None:
        """Check that the server answers: ``ping`` in the legacy era; in the modern era,
        which removed ``ping``, a ``server/discover`` round trip."""
        if self.era == "modern":
            await self._typed("server/discover", None, DiscoverResult, timeout)
        else:
            await self._typed("ping", None, EmptyResult, timeout)

    async def discover(self, *, timeout: float | None = None) -> DiscoverResult:
        """``server/discover``: the server's versions, capabilities and identity."""
        return await self._typed("server/discover", None, DiscoverResult, timeout)

    async def list_tools(self, cursor: str | None = None, *, timeout: float | None = None) -> ListToolsResult:
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
        return await self._typed("resources/list", _cursor(cursor), ListResourcesResult, timeout)

    async def list_resource_templates(
        self, cursor: str | None = None, *, timeout: float | None = None
    ) -> ListResourceTemplatesResult:
        return await self._typed("resources/templates/list", _cursor(cursor), ListResourceTemplatesResult, timeout)

    async def read_resource(self, uri: str, *, timeout: float | None = None) -> ReadResourceResult:
        return await self._typed("resources/read", {"uri": uri}, ReadResourceResult, timeout)

    async def list_prompts(self, cursor: str | None = None, *, timeout: float | None = None) -> ListPromptsResult:
        return await self._typed("prompts/list", _cursor(cursor), ListPromptsResult, timeout)

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, *, timeout: float | None = None
    ) -> GetPromptResult:
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

    async def set_logging_level(self, level: str, *, timeout: float | None = None) -> None:
        """Legacy era: ``logging/setLevel``. Modern era: sets the per-request
        ``logLevel`` sent from now on."""
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}")
        if self.era == "modern":
            self._meta = {**self._meta, "io.modelcontextprotocol/logLevel": level}
            return
        await self._typed("logging/setLevel", {"level": level}, EmptyResult, timeout)


def _cursor(cursor: str | None) -> dict[str, Any] | None:
    return {"cursor": cursor} if cursor is not None else None
