"""The MCP Apps extension (SEP-1865, ``io.modelcontextprotocol/ui``, stable revision
2026-01-26): interactive views a host renders from a server's ``ui://`` resources
(docs/apps.md). This module is what travels over MCP; what stays between a host and
its view is :mod:`.app_views`, which a server never imports.

A UI resource (``mimeType: "text/html;profile=mcp-app"``, its ``_meta.ui`` a
:class:`UiResourceMeta`: the CSP domains, the permissions, a dedicated domain, the
border preference), the tools linked to it (``_meta.ui`` a :class:`UiToolMeta`:
``resourceUri``, ``visibility``; the deprecated flat ``_meta["ui/resourceUri"]`` beside
it), and the client's declaration under ``capabilities.extensions``
(:class:`UiClientCapabilities`: the MIME types it renders).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal

import msgspec

from .wire import Meta, WireStruct

__all__ = [
    "APPS_EXTENSION",
    "UI_MIME_TYPE",
    "UI_SCHEME",
    "RESOURCE_URI_META_KEY",
    "VISIBILITIES",
    "PERMISSIONS",
    "Visibility",
    "UiCsp",
    "UiPermissions",
    "UiResourceMeta",
    "UiToolMeta",
    "UiClientCapabilities",
    "tool_ui_meta",
    "tool_resource_uri",
    "tool_visibility",
    "visible_to_model",
    "callable_by_app",
    "client_ui_mime_types",
    "with_apps_declared",
]

#: The extension's identifier, under ``capabilities.extensions`` on both sides.
APPS_EXTENSION: Final = "io.modelcontextprotocol/ui"
#: The MIME type of an HTML view.
UI_MIME_TYPE: Final = "text/html;profile=mcp-app"
#: The URI scheme every UI resource uses.
UI_SCHEME: Final = "ui://"
#: The deprecated flat ``_meta`` key of a tool's UI resource (hosts read both).
RESOURCE_URI_META_KEY: Final = "ui/resourceUri"
Visibility = Literal["model", "app"]
#: Who may use a tool: the model (the agent's tool list) and the app (its view's ``tools/call``).
VISIBILITIES: Final = ("model", "app")
#: The permissions a UI resource may ask for (Permission Policy features), as the wire names them.
PERMISSIONS: Final = ("camera", "microphone", "geolocation", "clipboardWrite")


# --- what travels over MCP -------------------------------------------------------------------


class UiCsp(WireStruct, kw_only=True):
    """The origins a view needs, from which the host builds its Content Security Policy
    (omitted or empty: none, the restrictive default).

    Attributes:
        connect_domains: Origins for fetch, XHR and WebSocket (``connect-src``).
        resource_domains: Origins for scripts, styles, images, fonts, media.
        frame_domains: Origins for nested iframes (``frame-src``).
        base_uri_domains: Allowed base URIs (``base-uri``).
    """

    connect_domains: list[str] | None = None
    resource_domains: list[str] | None = None
    frame_domains: list[str] | None = None
    base_uri_domains: list[str] | None = None


class UiPermissions(WireStruct, kw_only=True):
    """The browser features a view asks for; each is an empty object when asked. A host
    may grant them (the iframe's ``allow``); a view must not assume it did."""

    camera: dict[str, Any] | None = None
    microphone: dict[str, Any] | None = None
    geolocation: dict[str, Any] | None = None
    clipboard_write: dict[str, Any] | None = None

    @classmethod
    def of(cls, names: Iterable[str]) -> UiPermissions:
        """The permissions named (``"camera"``, ``"microphone"``, ``"geolocation"``,
        ``"clipboardWrite"`` or ``"clipboard_write"``). Raises ``ValueError`` for another
        name."""
        fields: dict[str, dict[str, Any]] = {}
        for name in names:
            key = "clipboard_write" if name in ("clipboardWrite", "clipboard_write") else name
            if key not in ("camera", "microphone", "geolocation", "clipboard_write"):
                raise ValueError(f"unknown UI permission {name!r}: expected one of {', '.join(PERMISSIONS)}")
            fields[key] = {}
        return cls(**fields)


class UiResourceMeta(WireStruct, kw_only=True):
    """A UI resource's ``_meta.ui``: on its ``resources/list`` entry and on the contents
    ``resources/read`` returns (where a host looks first).

    Attributes:
        csp: The origins the view needs.
        permissions: The browser features it asks for.
        domain: A dedicated sandbox origin; its format is the host's.
        prefers_border: Whether the host should draw a border and background (omitted: the host decides).
    """

    csp: UiCsp | None = None
    permissions: UiPermissions | None = None
    domain: str | None = None
    prefers_border: bool | None = None


class UiToolMeta(WireStruct, kw_only=True):
    """A tool's ``_meta.ui``.

    Attributes:
        resource_uri: The ``ui://`` resource the host renders for the tool's results.
        visibility: Who may use it: ``"model"`` (in the agent's tool list) and/or
            ``"app"`` (callable by views of this server). Omitted: both.
    """

    resource_uri: str | None = None
    visibility: list[Visibility] | None = None


class UiClientCapabilities(WireStruct, kw_only=True):
    """What a client declares under ``capabilities.extensions["io.modelcontextprotocol/ui"]``:
    the MIME types of the views it renders (``text/html;profile=mcp-app``)."""

    mime_types: list[str] | None = None


# --- reading and writing -------------------------------------------------------------------


def tool_ui_meta(meta: Meta | None) -> UiToolMeta | None:
    """The ``_meta.ui`` of a tool's ``meta``, with the deprecated flat
    ``ui/resourceUri`` read too (the nested key wins); None when it has neither. What is
    malformed there is ignored."""
    if not isinstance(meta, dict):
        return None
    nested = meta.get("ui")
    flat = meta.get(RESOURCE_URI_META_KEY)
    found = UiToolMeta()
    if isinstance(nested, dict):
        try:
            found = msgspec.convert(nested, UiToolMeta)
        except msgspec.ValidationError:
            found = UiToolMeta()
    if found.resource_uri is None and isinstance(flat, str):
        found = UiToolMeta(resource_uri=flat, visibility=found.visibility)
    if found.resource_uri is None and found.visibility is None:
        return None
    return found


def tool_resource_uri(tool: Any) -> str | None:
    """The ``ui://`` resource linked to ``tool`` (a ``Tool``), or None."""
    found = tool_ui_meta(getattr(tool, "meta", None))
    uri = found.resource_uri if found is not None else None
    return uri if uri is not None and uri.startswith(UI_SCHEME) else None


def tool_visibility(tool: Any) -> tuple[Visibility, ...]:
    """Who may use ``tool``: its ``_meta.ui.visibility``, or both when it says nothing."""
    found = tool_ui_meta(getattr(tool, "meta", None))
    if found is None or found.visibility is None:
        return ("model", "app")
    return tuple(found.visibility)


def visible_to_model(tool: Any) -> bool:
    """Whether ``tool`` belongs in the agent's tool list (its visibility has ``"model"``)."""
    return "model" in tool_visibility(tool)


def callable_by_app(tool: Any) -> bool:
    """Whether a view may call ``tool`` (its visibility has ``"app"``)."""
    return "app" in tool_visibility(tool)


def client_ui_mime_types(capabilities: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The view MIME types a client declared it renders (empty: none, or no extension)."""
    extensions = (capabilities or {}).get("extensions")
    declared = extensions.get(APPS_EXTENSION) if isinstance(extensions, dict) else None
    types = declared.get("mimeTypes") if isinstance(declared, dict) else None
    return tuple(t for t in types if isinstance(t, str)) if isinstance(types, list) else ()


def with_apps_declared(capabilities: Mapping[str, Any], settings: Mapping[str, Any]) -> dict[str, Any]:
    """``capabilities`` with the extension declared under ``extensions`` with ``settings``
    (the other extensions kept)."""
    extensions = capabilities.get("extensions")
    merged = dict(extensions) if isinstance(extensions, dict) else {}
    merged[APPS_EXTENSION] = dict(settings)
    return {**capabilities, "extensions": merged}
