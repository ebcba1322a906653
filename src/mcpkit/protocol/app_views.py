"""The MCP Apps extension between a host and its view (SEP-1865, JSON-RPC over
``postMessage``, docs/apps.md): the ``ui/*`` requests and notifications whose params and
results are the structs below (:data:`VIEW_REQUESTS`, :data:`HOST_REQUESTS`,
:data:`NOTIFICATIONS`), and the few MCP requests a view may send, which the host answers
itself or forwards to the server (:data:`VIEW_MCP_METHODS`). What travels over MCP (UI
resources, the tools linked to them, the client's declaration) is :mod:`.apps`.

Its own module because only a host (the client's ``AppBridge``) needs it: a server does
not load these structs (start-up cost).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

import msgspec

from .apps import UiCsp, UiPermissions
from .content import Content, EmbeddedResource, ResourceLink
from .types import CallToolResult
from .wire import Implementation, WireStruct

__all__ = [
    "APPS_PROTOCOL_VERSION",
    "VIEW_MCP_METHODS",
    "DisplayMode",
    "ContentModality",
    "CONTENT_MODALITIES",
    "UiAppCapabilities",
    "UiHostCapabilities",
    "UiHostContext",
    "UiInitializeParams",
    "UiInitializeResult",
    "OpenLinkParams",
    "DownloadFileParams",
    "MessageParams",
    "RequestDisplayModeParams",
    "RequestDisplayModeResult",
    "UpdateModelContextParams",
    "UiActionResult",
    "EmptyParams",
    "SizeChangedParams",
    "ToolInputParams",
    "ToolCancelledParams",
    "SandboxResourceReadyParams",
    "VIEW_REQUESTS",
    "HOST_REQUESTS",
    "NOTIFICATIONS",
    "ui_message",
    "decode_ui_params",
]

#: The revision of the view <-> host protocol (``ui/initialize``'s ``protocolVersion``).
APPS_PROTOCOL_VERSION: Final = "2026-01-26"
DisplayMode = Literal["inline", "fullscreen", "pip"]
#: What a host accepts in ``ui/message`` and ``ui/update-model-context`` (the keys of
#: the extension's ``McpUiSupportedContentBlockModalities``, the value of the
#: ``message`` and ``updateModelContext`` host capabilities): a content block type, or
#: ``structuredContent``.
ContentModality = Literal["text", "image", "audio", "resource", "resourceLink", "structuredContent"]
#: Every :data:`ContentModality`, in the extension's order.
CONTENT_MODALITIES: Final = ("text", "image", "audio", "resource", "resourceLink", "structuredContent")
#: The MCP methods a view may send its host (besides ``ui/*``): the host forwards
#: ``tools/call`` and ``resources/read`` to the server, answers ``ping`` and records
#: ``notifications/message``.
VIEW_MCP_METHODS: Final = frozenset({"tools/call", "resources/read", "ping", "notifications/message"})


# --- between the host and its view -------------------------------------------------------------


class UiAppCapabilities(WireStruct, kw_only=True):
    """What a view offers (``ui/initialize``): tools of its own, its display modes."""

    experimental: dict[str, Any] | None = None
    tools: dict[str, Any] | None = None
    available_display_modes: list[DisplayMode] | None = None


class UiHostCapabilities(WireStruct, kw_only=True):
    """What a host offers its view (``ui/initialize``'s result). ``server_tools`` and
    ``server_resources``: it forwards the view's ``tools/call`` and ``resources/read``;
    ``open_links``, ``download_file``, ``message``, ``update_model_context``: it
    handles those ``ui/*`` requests (the last two: ``{modality: {}}`` for each
    :data:`ContentModality` it accepts there; ``{}`` would say none); ``sandbox``: the
    CSP and permissions it applied."""

    experimental: dict[str, Any] | None = None
    open_links: dict[str, Any] | None = None
    download_file: dict[str, Any] | None = None
    server_tools: dict[str, Any] | None = None
    server_resources: dict[str, Any] | None = None
    logging: dict[str, Any] | None = None
    sandbox: dict[str, Any] | None = None
    update_model_context: dict[str, Any] | None = None
    message: dict[str, Any] | None = None
    sampling: dict[str, Any] | None = None


class UiHostContext(WireStruct, kw_only=True):
    """What a host tells its view about where it is shown (``ui/initialize``'s result,
    and the changes of ``ui/notifications/host-context-changed``).

    Attributes:
        tool_info: The call that made the view: ``{"id": ..., "tool": {...}}``.
        theme: ``"light"`` or ``"dark"``.
        styles: ``{"variables": {"--color-...": ...}, "css": {"fonts": ...}}``.
        display_mode: How the view is shown now.
        available_display_modes: The modes the host supports.
        container_dimensions: ``height`` or ``maxHeight``, ``width`` or ``maxWidth`` (pixels).
        locale: BCP 47.
        time_zone: IANA.
        user_agent: The host application.
        platform: ``"web"``, ``"desktop"`` or ``"mobile"``.
        device_capabilities: ``{"touch": bool, "hover": bool}``.
        safe_area_insets: ``top``, ``right``, ``bottom``, ``left`` (pixels).
    """

    tool_info: dict[str, Any] | None = None
    theme: Literal["light", "dark"] | None = None
    styles: dict[str, Any] | None = None
    display_mode: DisplayMode | None = None
    available_display_modes: list[DisplayMode] | None = None
    container_dimensions: dict[str, float] | None = None
    locale: str | None = None
    time_zone: str | None = None
    user_agent: str | None = None
    platform: Literal["web", "desktop", "mobile"] | None = None
    device_capabilities: dict[str, bool] | None = None
    safe_area_insets: dict[str, float] | None = None


class UiInitializeParams(WireStruct, kw_only=True):
    """``ui/initialize`` (view -> host): the view's identity, capabilities and revision."""

    app_info: Implementation
    app_capabilities: UiAppCapabilities
    protocol_version: str


class UiInitializeResult(WireStruct, kw_only=True):
    """The host's answer to ``ui/initialize``."""

    protocol_version: str
    host_info: Implementation
    host_capabilities: UiHostCapabilities
    host_context: UiHostContext


class OpenLinkParams(WireStruct, kw_only=True):
    """``ui/open-link`` (view -> host): a URL to open in the user's browser."""

    url: str


class DownloadFileParams(WireStruct, kw_only=True):
    """``ui/download-file`` (view -> host): files to save, embedded or linked."""

    contents: list[EmbeddedResource | ResourceLink]


class MessageParams(WireStruct, kw_only=True):
    """``ui/message`` (view -> host): content for the conversation, as the user."""

    role: Literal["user"]
    content: list[Content]


class RequestDisplayModeParams(WireStruct, kw_only=True):
    """``ui/request-display-mode`` (view -> host)."""

    mode: DisplayMode


class RequestDisplayModeResult(WireStruct, kw_only=True):
    """The mode the host actually set (maybe not the one asked for)."""

    mode: DisplayMode


class UpdateModelContextParams(WireStruct, kw_only=True):
    """``ui/update-model-context`` (view -> host): context for the model's next turns,
    replacing what the view sent before."""

    content: list[Content] | None = None
    structured_content: dict[str, Any] | None = None


class UiActionResult(WireStruct, kw_only=True):
    """The result of ``ui/open-link``, ``ui/download-file``, ``ui/message`` and
    ``ui/update-model-context``: ``is_error`` when the host could not (or would not)."""

    is_error: bool | None = None


class EmptyParams(WireStruct, kw_only=True):
    """The params of the messages that carry none (``ui/notifications/initialized``,
    ``ui/resource-teardown``, ...)."""


class SizeChangedParams(WireStruct, kw_only=True):
    """``ui/notifications/size-changed`` (view -> host): the view's new size in pixels."""

    width: float | None = None
    height: float | None = None


class ToolInputParams(WireStruct, kw_only=True):
    """``ui/notifications/tool-input`` and ``-partial`` (host -> view): the call's arguments."""

    arguments: dict[str, Any] | None = None


class ToolCancelledParams(WireStruct, kw_only=True):
    """``ui/notifications/tool-cancelled`` (host -> view)."""

    reason: str | None = None


class SandboxResourceReadyParams(WireStruct, kw_only=True):
    """``ui/notifications/sandbox-resource-ready`` (web host -> its sandbox proxy): the
    view's HTML and the policy to load it under."""

    html: str
    sandbox: str | None = None
    csp: UiCsp | None = None
    permissions: UiPermissions | None = None


#: The requests a view sends its host: method -> (params, result).
VIEW_REQUESTS: Final[Mapping[str, tuple[type[WireStruct], type[WireStruct] | None]]] = {
    "ui/initialize": (UiInitializeParams, UiInitializeResult),
    "ui/open-link": (OpenLinkParams, UiActionResult),
    "ui/download-file": (DownloadFileParams, UiActionResult),
    "ui/message": (MessageParams, UiActionResult),
    "ui/request-display-mode": (RequestDisplayModeParams, RequestDisplayModeResult),
    "ui/update-model-context": (UpdateModelContextParams, None),
}
#: The requests a host sends its view: method -> (params, result).
HOST_REQUESTS: Final[Mapping[str, tuple[type[WireStruct], type[WireStruct] | None]]] = {
    "ui/resource-teardown": (EmptyParams, None),
}
#: The notifications, both ways: method -> params.
NOTIFICATIONS: Final[Mapping[str, type[WireStruct]]] = {
    "ui/notifications/initialized": EmptyParams,
    "ui/notifications/size-changed": SizeChangedParams,
    "ui/notifications/request-teardown": EmptyParams,
    "ui/notifications/tool-input": ToolInputParams,
    "ui/notifications/tool-input-partial": ToolInputParams,
    "ui/notifications/tool-result": CallToolResult,
    "ui/notifications/tool-cancelled": ToolCancelledParams,
    "ui/notifications/host-context-changed": UiHostContext,
    "ui/notifications/sandbox-proxy-ready": EmptyParams,
    "ui/notifications/sandbox-resource-ready": SandboxResourceReadyParams,
}


_ALL_PARAMS: Final = {
    **{method: pair[0] for method, pair in VIEW_REQUESTS.items()},
    **{method: pair[0] for method, pair in HOST_REQUESTS.items()},
    **NOTIFICATIONS,
}


def ui_message(method: str, params: WireStruct | Mapping[str, Any] | None = None, id: int | str | None = None) -> dict[str, Any]:
    """The JSON-RPC message (a dict, for ``postMessage``) of the ``ui/*`` ``method``: a
    request with ``id``, a notification without. Params given as a dict are checked
    against the method's struct. Raises ``ValueError`` for a method the extension does not
    define and ``msgspec.ValidationError`` for params that do not fit it."""
    kind = _ALL_PARAMS.get(method)
    if kind is None:
        raise ValueError(f"not a method of the MCP Apps extension: {method!r}")
    if params is None:
        struct: Any = msgspec.convert({}, kind)
    elif isinstance(params, WireStruct):
        struct = params
    else:
        struct = msgspec.convert(dict(params), kind)
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": msgspec.to_builtins(struct)}
    if id is not None:
        message["id"] = id
    return message


def decode_ui_params(method: str, params: Any) -> Any:
    """The params of a received ``ui/*`` message as the method's struct. Raises
    ``ValueError`` for a method the extension does not define and
    ``msgspec.ValidationError`` for params that do not fit."""
    kind = _ALL_PARAMS.get(method)
    if kind is None:
        raise ValueError(f"not a method of the MCP Apps extension: {method!r}")
    return msgspec.convert(params if params is not None else {}, kind)
