"""The host's side of the MCP Apps extension (docs/apps.md): a tool's view read from the
server (:func:`read_tool_ui`, behind :meth:`~mcpkit.Client.tool_ui`), and
:class:`AppBridge`, which answers what a view sends its host over ``postMessage``:
``ui/initialize`` and the other ``ui/*`` requests by the host's callbacks, ``tools/call``
and ``resources/read`` forwarded to the server through the client (a tool whose
visibility leaves out ``"app"`` refused), and the notifications the host sends back
(tool input, tool result, context changes, teardown). How the messages reach the
view — an iframe, a webview, a test browser — is the host's business: the bridge takes
and gives JSON-RPC messages as dicts."""

from __future__ import annotations

import asyncio
import base64
import binascii
import dataclasses
import inspect
import logging
from collections.abc import Callable, Collection, Mapping
from typing import Any, get_args

import msgspec

from ..protocol.app_views import (
    APPS_PROTOCOL_VERSION,
    CONTENT_MODALITIES,
    ContentModality,
    DisplayMode,
    DownloadFileParams,
    MessageParams,
    UiAppCapabilities,
    UiHostCapabilities,
    UiHostContext,
    UiInitializeParams,
    UiInitializeResult,
    UpdateModelContextParams,
    decode_ui_params,
    ui_message,
)
from ..protocol.apps import (
    UI_MIME_TYPE,
    UiResourceMeta,
    Visibility,
    callable_by_app,
    tool_resource_uri,
    tool_visibility,
)
from ..protocol.content import Content
from ..protocol.errors import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, McpError
from ..protocol.types import CallToolResult, Implementation, Resource, Tool
from .features import FeatureRequests

__all__ = ["ToolUi", "AppBridge", "read_tool_ui"]

#: A host callback: sync or async; what it returns is described where it is taken.
Callback = Callable[..., Any]

logger = logging.getLogger("mcpkit.client")

_DISPLAY_MODES: frozenset[str] = frozenset(get_args(DisplayMode))
#: The modality of each content block type (``McpUiSupportedContentBlockModalities``).
_BLOCK_MODALITY: Mapping[str, ContentModality] = {
    "text": "text",
    "image": "image",
    "audio": "audio",
    "resource": "resource",
    "resource_link": "resourceLink",
}

#: Without the client's notifications, how many names unknown to the tool listing each
#: fetch it again once (then they are answered from the cache).
_MISSES_REFETCHED = 64

#: What a host accepts by default in ``ui/message`` and ``ui/update-model-context``.
_MESSAGE_MODALITIES: tuple[ContentModality, ...] = ("text",)
_MODEL_CONTEXT_MODALITIES: tuple[ContentModality, ...] = ("text", "structuredContent")


def _modalities(what: str, given: Collection[ContentModality]) -> tuple[ContentModality, ...]:
    if isinstance(given, str):
        raise TypeError(f"{what} is a collection of modalities, not one string: {given!r}")
    unknown = [m for m in given if m not in CONTENT_MODALITIES]
    if unknown:
        raise ValueError(f"{what}: unknown content modality {unknown[0]!r} (known: {', '.join(CONTENT_MODALITIES)})")
    return tuple(m for m in CONTENT_MODALITIES if m in given)


def _check_modalities(
    method: str, accepted: tuple[ContentModality, ...], content: list[Content] | None, structured: bool
) -> None:
    """Refuse (``-32602``) what the view sends in a modality the host did not advertise."""
    used: list[str] = [_BLOCK_MODALITY.get(str(type(block).__struct_config__.tag), "") for block in content or ()]
    if structured:
        used.append("structuredContent")
    for modality in used:
        if modality not in accepted:
            raise McpError(
                INVALID_PARAMS,
                f"Invalid params for {method}: this host does not accept {modality or 'that content'}"
                f" (it accepts {', '.join(accepted) or 'nothing'})",
            )


class _HostFailure(Exception):
    """A host callback or a call the host forwarded failed on the host's side (not the
    server's answer, not the view's fault): the view is told -32603 without the detail,
    which goes to the log."""


@dataclasses.dataclass(frozen=True)
class ToolUi:
    """A tool's view, as read from its server.

    Attributes:
        tool: The tool, as listed.
        uri: The view's ``ui://`` URI.
        html: The page (decoded from base64 when the server sent a blob).
        mime_type: ``text/html;profile=mcp-app``.
        meta: The view's ``_meta.ui`` — CSP origins, permissions, domain, border — from
            the contents read, else from its ``resources/list`` entry.
        visibility: Who may use the tool: ``"model"``, ``"app"`` or both.
    """

    tool: Tool
    uri: str
    html: str
    mime_type: str
    meta: UiResourceMeta
    visibility: tuple[Visibility, ...]


async def read_tool_ui(features: FeatureRequests, tool: Tool | str, *, timeout: float | None = None) -> ToolUi | None:
    """The view of ``tool`` (a listed ``Tool``, or a name looked up with
    ``list_all_tools``), read with ``resources/read``; None when the tool links to none.
    Raises ``KeyError`` for a name the server does not list, ``ValueError`` when what the
    server returns for the view is not a ``text/html;profile=mcp-app`` page, and what
    the requests raise."""
    if isinstance(tool, str):
        listed = {t.name: t for t in await features.list_all_tools()}
        if tool not in listed:
            raise KeyError(tool)
        tool = listed[tool]
    uri = tool_resource_uri(tool)
    if uri is None:
        return None
    result = await features.read_resource(uri, timeout=timeout)
    contents = [c for c in result.contents if c.uri == uri] or result.contents
    if not contents:
        raise ValueError(f"the server returned no contents for the view {uri!r}")
    item = contents[0]
    if item.mime_type != UI_MIME_TYPE:
        raise ValueError(f"the view {uri!r} is served as {item.mime_type!r}, not {UI_MIME_TYPE}")
    if item.text is not None:
        html = item.text
    elif item.blob is not None:
        try:
            html = base64.b64decode(item.blob, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise ValueError(f"the view {uri!r} is not base64 UTF-8 HTML: {exc}") from None
    else:
        raise ValueError(f"the view {uri!r} has neither text nor blob")
    meta = _ui_meta(item.meta)
    if meta is None:  # the listing's, a fallback
        resources: list[Resource] = await features.list_all_resources()
        meta = next((_ui_meta(r.meta) for r in resources if r.uri == uri), None)
    return ToolUi(tool, uri, html, item.mime_type, meta or UiResourceMeta(), tool_visibility(tool))


def _ui_meta(meta: Any) -> UiResourceMeta | None:
    if not isinstance(meta, dict) or not isinstance(meta.get("ui"), dict):
        return None
    try:
        return msgspec.convert(meta["ui"], UiResourceMeta)
    except msgspec.ValidationError:
        return None


async def _run(callback: Callback, *args: Any) -> Any:
    """``callback(*args)``, awaited if need be; what it raises (an ``Exception``) becomes
    :class:`_HostFailure`, logged. Cancellation is not an ``Exception``: it propagates."""
    try:
        value = callback(*args)
        if inspect.isawaitable(value):
            value = await value
    except Exception as exc:
        logger.warning("an AppBridge callback %r raised", getattr(callback, "__name__", callback), exc_info=True)
        raise _HostFailure(type(exc).__name__) from exc
    return value


async def _forward(what: str, call: Any) -> Any:
    """Await ``call``, a request the host makes to the server for the view: the server's
    error (an ``McpError`` it sent) goes back to the view as it is; a failure on the
    host's side (a local error such as a deadline or a closed connection, or any other
    exception) becomes :class:`_HostFailure`, logged."""
    failure: Exception
    try:
        return await call
    except McpError as exc:
        if not exc.local:
            raise
        failure = exc
    except Exception as exc:
        failure = exc
    logger.warning("AppBridge: %s failed on the host's side", what, exc_info=failure)
    raise _HostFailure(type(failure).__name__) from failure


def _error(id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": id, "error": error}


#: What a server's result carries for its MCP client, not for a view (the 2026-07-28 era's).
_ERA_FIELDS = ("resultType", "ttlMs", "cacheScope")


def _answer(id: Any, result: Any) -> dict[str, Any]:
    value = result if isinstance(result, dict) else msgspec.to_builtins(result)
    for name in _ERA_FIELDS:
        value.pop(name, None)
    return {"jsonrpc": "2.0", "id": id, "result": value}


class AppBridge:
    """One view's host: what the view sends (:meth:`handle`), what the host sends it.

    ``client`` reaches the view's server (a :class:`~mcpkit.Client`); ``ui`` is the view
    (:meth:`~mcpkit.Client.tool_ui`). ``host_info`` and ``host_context``
    go in the answer to ``ui/initialize`` (the context's ``toolInfo`` and display modes
    are filled in when not given). The callbacks, sync or async, are the host's: each
    one set is advertised in the host capabilities, and a view's request for one not set
    is answered ``-32601``:

    * ``on_open_link(url)``, ``on_download(DownloadFileParams)``,
      ``on_message(MessageParams)``: False (or a raise) means the host could not
      (``isError: true``);
    * ``on_model_context(UpdateModelContextParams)``: the view's context for the model;
      False (or a raise) refuses it (``isError: true``); else it is kept in
      :attr:`model_context` (the last one accepted only);
    * ``on_display_mode(mode)``: the mode now set (default, and for anything that is
      not one of the context's ``available_display_modes``: the current one);
    * ``on_size_changed(width, height)``, ``on_teardown_request()``,
      ``on_log(level, data, logger)``: the view's notifications.

    ``message_modalities`` and ``model_context_modalities`` are what the host accepts
    in ``ui/message`` (default: text) and ``ui/update-model-context`` (default: text
    and ``structuredContent``), advertised as the ``message`` and
    ``updateModelContext`` capabilities; a view's request with anything else is
    refused with ``-32602`` before it reaches the callback.

    The host must not send anything before the view says it is initialized:
    :attr:`initialized` is set then, and :meth:`tool_input` and the other messages the
    host sends raise ``RuntimeError`` before.
    """

    def __init__(
        self,
        client: FeatureRequests,
        ui: ToolUi,
        *,
        host_info: Implementation | None = None,
        host_context: UiHostContext | Mapping[str, Any] | None = None,
        on_open_link: Callback | None = None,
        on_download: Callback | None = None,
        on_message: Callback | None = None,
        on_model_context: Callback | None = None,
        on_display_mode: Callback | None = None,
        on_size_changed: Callback | None = None,
        on_teardown_request: Callback | None = None,
        on_log: Callback | None = None,
        message_modalities: Collection[ContentModality] = _MESSAGE_MODALITIES,
        model_context_modalities: Collection[ContentModality] = _MODEL_CONTEXT_MODALITIES,
        timeout: float | None = None,
    ) -> None:
        self.client = client
        self.ui = ui
        self.host_info = host_info or Implementation(name="mcpkit-host", version="1")
        context = (
            host_context if isinstance(host_context, UiHostContext) else msgspec.convert(dict(host_context or {}), UiHostContext)
        )
        if context.tool_info is None:
            context = msgspec.structs.replace(context, tool_info={"tool": msgspec.to_builtins(ui.tool)})
        if context.display_mode is None:
            context = msgspec.structs.replace(context, display_mode="inline")
        if context.available_display_modes is None:
            context = msgspec.structs.replace(context, available_display_modes=[context.display_mode or "inline"])
        self.host_context = context
        self._callbacks = {
            "open_link": on_open_link,
            "download": on_download,
            "message": on_message,
            "model_context": on_model_context,
            "display_mode": on_display_mode,
            "size_changed": on_size_changed,
            "teardown_request": on_teardown_request,
            "log": on_log,
        }
        #: What the host accepts in ``ui/message`` and ``ui/update-model-context``.
        self.message_modalities = _modalities("message_modalities", message_modalities)
        self.model_context_modalities = _modalities("model_context_modalities", model_context_modalities)
        self.timeout = timeout
        #: Set when the view sent ``ui/notifications/initialized``.
        self.initialized = asyncio.Event()
        #: Set when the view answered ``ui/resource-teardown``.
        self.torn_down = asyncio.Event()
        #: What the view said of itself in ``ui/initialize``.
        self.app_info: Implementation | None = None
        self.app_capabilities: UiAppCapabilities | None = None
        #: The view's last ``ui/notifications/size-changed`` (width, height).
        self.size: tuple[float | None, float | None] | None = None
        #: The view's last ``ui/update-model-context`` that the host accepted.
        self.model_context: UpdateModelContextParams | None = None
        self._tools: dict[str, Tool] | None = None
        #: True when the cached tool listing may be out of date (a list-changed notice).
        self._tools_stale = False
        #: Names the listing lacked, each fetched again once (without notifications).
        self._missed: set[str] = set()
        self._next_id = 0
        self._teardowns: set[int] = set()

    @property
    def host_capabilities(self) -> UiHostCapabilities:
        """What this host offers its view: the server's tools and resources, logging,
        and the ``ui/*`` requests it has callbacks for."""
        has = self._callbacks
        return UiHostCapabilities(
            server_tools={},
            server_resources={},
            logging={},
            open_links={} if has["open_link"] else None,
            download_file={} if has["download"] else None,
            message={m: {} for m in self.message_modalities} if has["message"] else None,
            update_model_context={m: {} for m in self.model_context_modalities} if has["model_context"] else None,
        )

    # --- from the view ---------------------------------------------------------------------

    async def handle(self, message: Mapping[str, Any]) -> dict[str, Any] | None:
        """The answer to one JSON-RPC message from the view (None for a notification, or
        for the view's answer to a request of the host's). Never raises for what the view
        sent: a malformed message, unknown method or failed call is an error response,
        and a host callback or forwarded request that fails on the host's side is
        ``-32603`` (``isError: true`` for the action requests), its detail logged, not
        sent. Cancelling the caller still cancels this."""
        if not isinstance(message, Mapping) or message.get("jsonrpc") != "2.0":
            return _error(None, INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 message")
        method = message.get("method")
        id = message.get("id")
        if method is None:  # a response: the view's answer to ui/resource-teardown
            if id in self._teardowns:
                self._teardowns.discard(id)
                self.torn_down.set()
            return None
        if not isinstance(method, str):
            return _error(id, INVALID_REQUEST, "Invalid request: method is not a string")
        params = message.get("params")
        if "id" not in message:
            await self._notification(method, params)
            return None
        try:
            return _answer(id, await self._request(method, params))
        except _HostFailure:
            return _error(id, INTERNAL_ERROR, "Internal error")
        except McpError as exc:
            return _error(id, exc.code, exc.message, exc.data)
        except (msgspec.ValidationError, ValueError, TypeError) as exc:
            return _error(id, INVALID_PARAMS, f"Invalid params for {method}: {exc}")
        except Exception:  # the bridge's own bug: still an answer, never a raise
            logger.exception("AppBridge could not answer %s", method)
            return _error(id, INTERNAL_ERROR, "Internal error")

    async def _request(self, method: str, params: Any) -> Any:
        has = self._callbacks
        if method == "ping":
            return {}
        if method == "tools/call":
            return await self._call_tool(params)
        if method == "resources/read":
            if not isinstance(params, Mapping) or not isinstance(params.get("uri"), str):
                raise ValueError("resources/read takes a uri")
            return await _forward("resources/read", self.client.read_resource(params["uri"], timeout=self.timeout))
        if method == "ui/initialize":
            init: UiInitializeParams = decode_ui_params(method, params)
            self.app_info, self.app_capabilities = init.app_info, init.app_capabilities
            return UiInitializeResult(
                protocol_version=APPS_PROTOCOL_VERSION,
                host_info=self.host_info,
                host_capabilities=self.host_capabilities,
                host_context=self.host_context,
            )
        if method == "ui/request-display-mode":
            mode: DisplayMode = decode_ui_params(method, params).mode
            current = self.host_context.display_mode or "inline"
            chosen = await _run(has["display_mode"], mode) if has["display_mode"] else current
            available = self.host_context.available_display_modes or [current]
            if chosen not in _DISPLAY_MODES or chosen not in available:
                if chosen is not None:
                    logger.warning("AppBridge: on_display_mode chose %r, not an available display mode", chosen)
                chosen = current  # the host's answer must be a mode it has: the one in place
            self.host_context = msgspec.structs.replace(self.host_context, display_mode=chosen)
            return {"mode": chosen}
        if method == "ui/update-model-context":
            update: UpdateModelContextParams = decode_ui_params(method, params)
            if has["model_context"] is None:
                raise McpError(METHOD_NOT_FOUND, f"Method not found: {method}")
            _check_modalities(method, self.model_context_modalities, update.content, update.structured_content is not None)
            try:
                accepted = await _run(has["model_context"], update)
            except _HostFailure:
                accepted = False
            if accepted is False:
                return {"isError": True}
            self.model_context = update
            return {}
        simple = {"ui/open-link": "open_link", "ui/download-file": "download", "ui/message": "message"}
        if method in simple:
            decoded = decode_ui_params(method, params)
            callback = has[simple[method]]
            if callback is None:
                raise McpError(METHOD_NOT_FOUND, f"Method not found: {method}")
            if method == "ui/message":
                _check_modalities(method, self.message_modalities, decoded.content, False)
            argument: str | DownloadFileParams | MessageParams = decoded.url if method == "ui/open-link" else decoded
            try:
                ok = await _run(callback, argument)
            except _HostFailure:
                ok = False
            return {"isError": True} if ok is False else {}
        raise McpError(METHOD_NOT_FOUND, f"Method not found: {method}")

    async def _call_tool(self, params: Any) -> CallToolResult:
        if not isinstance(params, Mapping) or not isinstance(params.get("name"), str):
            raise ValueError("tools/call takes a name")
        name = params["name"]
        arguments = params.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            raise ValueError("arguments is an object")
        tool = await self._tool(name)
        if tool is None or not callable_by_app(tool):
            # The extension: a host refuses a view's call to a tool not visible to apps.
            raise McpError(INVALID_PARAMS, f"Tool not available to this app: {name}", {"name": name})
        call = self.client.call_tool(name, arguments, timeout=self.timeout)
        result: CallToolResult = await _forward(f"tools/call {name}", call)
        return result

    def tools_changed(self) -> None:
        """Say the server's tool list may have changed: the next ``tools/call`` from the
        view lists the tools again, and names the listing lacked are looked up afresh too.
        Call it from the client's ``ClientOptions(on_list_changed=...)`` for ``"tools"``
        (a legacy-era session hears every change; in the 2026-07-28 era the changes come
        while a ``client.listen(tools=True)`` is open)."""
        self._tools_stale = True

    async def _tool(self, name: str) -> Tool | None:
        """The tool ``name`` as listed. The listing is fetched at most once per change of
        the server's list: first, then after :meth:`tools_changed`; besides, each name the
        listing lacks (up to a bound) has it fetched again once, for a tool added since."""
        tools = self._tools
        if (
            tools is None
            or self._tools_stale
            or (name not in tools and name not in self._missed and len(self._missed) < _MISSES_REFETCHED)
        ):
            if tools is None or self._tools_stale:
                self._missed.clear()
            self._tools_stale = False  # before the request: a change during it is heard again
            try:
                tools = {t.name: t for t in await _forward("tools/list", self.client.list_all_tools())}
            except BaseException:
                self._tools_stale = self._tools is not None  # not listed: the next call tries again
                raise
            self._tools = tools
        if name not in tools and len(self._missed) < _MISSES_REFETCHED:
            self._missed.add(name)  # bounded: past it, an unknown name is answered from the cache
        return tools.get(name)

    async def _notification(self, method: str, params: Any) -> None:
        has = self._callbacks
        try:
            if method == "ui/notifications/initialized":
                self.initialized.set()
            elif method == "ui/notifications/size-changed":
                size = decode_ui_params(method, params)
                self.size = (size.width, size.height)
                if has["size_changed"]:
                    await _run(has["size_changed"], size.width, size.height)
            elif method == "ui/notifications/request-teardown":
                if has["teardown_request"]:
                    await _run(has["teardown_request"])
            elif method == "notifications/message" and isinstance(params, Mapping) and has["log"]:
                await _run(has["log"], params.get("level"), params.get("data"), params.get("logger"))
        except (msgspec.ValidationError, ValueError):
            return  # a malformed notification is dropped: there is no one to answer
        except _HostFailure:
            return  # the callback's failure is logged; a notification has no answer

    # --- to the view ------------------------------------------------------------------------

    def _ready(self) -> None:
        if not self.initialized.is_set():
            raise RuntimeError("the view has not sent ui/notifications/initialized yet: the host must wait for it")

    def tool_input(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """``ui/notifications/tool-input``: the call's complete arguments (sent once,
        before the result)."""
        self._ready()
        return ui_message("ui/notifications/tool-input", {"arguments": dict(arguments or {})})

    def tool_input_partial(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """``ui/notifications/tool-input-partial``: arguments still streaming in."""
        self._ready()
        return ui_message("ui/notifications/tool-input-partial", {"arguments": dict(arguments)})

    def tool_result(self, result: CallToolResult) -> dict[str, Any]:
        """``ui/notifications/tool-result``: what the call returned."""
        self._ready()
        return ui_message("ui/notifications/tool-result", msgspec.structs.replace(result, result_type=None))

    def tool_cancelled(self, reason: str | None = None) -> dict[str, Any]:
        """``ui/notifications/tool-cancelled``: the call will not complete."""
        self._ready()
        return ui_message("ui/notifications/tool-cancelled", {"reason": reason} if reason is not None else {})

    def host_context_changed(self, changes: UiHostContext | Mapping[str, Any]) -> dict[str, Any]:
        """``ui/notifications/host-context-changed`` with the fields that changed (kept in
        :attr:`host_context` too)."""
        self._ready()
        update = changes if isinstance(changes, UiHostContext) else msgspec.convert(dict(changes), UiHostContext)
        given = msgspec.to_builtins(update)
        merged = {**msgspec.to_builtins(self.host_context), **given}
        self.host_context = msgspec.convert(merged, UiHostContext)
        return ui_message("ui/notifications/host-context-changed", update)

    def teardown(self) -> dict[str, Any]:
        """``ui/resource-teardown``, a request: :attr:`torn_down` is set when the view
        answers it (wait for it before removing the view)."""
        self._ready()
        self._next_id += 1
        self._teardowns.add(self._next_id)
        return ui_message("ui/resource-teardown", {}, id=self._next_id)
