"""The server's side of the MCP Apps extension (docs/apps.md): a UI resource's
``_meta.ui`` built from the registration's options, a tool's ``_meta`` linking it to
its view, and the checks made at registration (a ``ui://`` URI, a linked resource that
exists and is a view, visibilities the extension knows). The wire types are
:mod:`mcpkit.protocol.apps`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import msgspec

from ..protocol.apps import RESOURCE_URI_META_KEY, UI_MIME_TYPE, UI_SCHEME, VISIBILITIES, UiCsp, UiPermissions, UiResourceMeta

__all__ = ["ui_resource_meta", "check_ui_uri", "tool_meta_with_ui", "is_ui_resource", "relinked_tool_meta"]


def check_ui_uri(uri: str) -> None:
    """Raises ``ValueError`` unless ``uri`` is a ``ui://`` URI with something after the scheme."""
    if not isinstance(uri, str) or not uri.startswith(UI_SCHEME) or len(uri) == len(UI_SCHEME) or "{" in uri:
        raise ValueError(f"a UI resource's URI is a fixed ui:// URI, not {uri!r}")


def ui_resource_meta(
    *,
    csp: UiCsp | Mapping[str, Sequence[str]] | None,
    permissions: UiPermissions | Iterable[str] | None,
    domain: str | None,
    prefers_border: bool | None,
) -> dict[str, Any] | None:
    """The ``_meta.ui`` of a UI resource, as a JSON object (None when every option is
    unset). ``csp`` is a :class:`UiCsp` or a mapping of its fields, by their wire
    (``connectDomains``) or Python (``connect_domains``) names, each a list of origins;
    ``permissions`` a :class:`UiPermissions` or the names of those asked for. Raises
    ``ValueError`` for an unknown CSP field or permission, ``TypeError`` for a domain list
    given as one string."""
    if csp is not None and not isinstance(csp, UiCsp):
        fields: dict[str, list[str]] = {}
        for key, value in dict(csp).items():
            name = _snake(key)
            if name not in UiCsp.__struct_fields__:
                raise ValueError(
                    f"unknown CSP field {key!r}: expected one of connectDomains, resourceDomains, frameDomains, baseUriDomains"
                )
            if isinstance(value, str):
                raise TypeError(f"csp {key!r} is a list of origins, not one string")
            fields[name] = [str(origin) for origin in value]
        csp = UiCsp(**fields)
    if permissions is not None and not isinstance(permissions, UiPermissions):
        if isinstance(permissions, str):
            raise TypeError("permissions is a list of permission names, not one string")
        permissions = UiPermissions.of(permissions)
    meta = UiResourceMeta(csp=csp, permissions=permissions, domain=domain, prefers_border=prefers_border)
    built: dict[str, Any] = msgspec.to_builtins(meta)
    return built or None


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


def tool_meta_with_ui(meta: dict[str, Any] | None, ui: str | None, visibility: Sequence[str] | None) -> dict[str, Any] | None:
    """A tool's ``_meta`` with its link to the view ``ui`` (``ui.resourceUri``, and the
    deprecated flat ``ui/resourceUri`` that older hosts read) and its ``visibility``
    (``["model"]``, ``["app"]`` or both); ``meta`` itself when both are None. Raises
    ``ValueError`` for a URI that is not ``ui://``, an empty visibility or one the
    extension does not define, and a ``meta`` that has a ``ui`` of its own."""
    if ui is None and visibility is None:
        return meta
    if meta is not None and ("ui" in meta or RESOURCE_URI_META_KEY in meta):
        raise ValueError("give the tool's UI with ui= and visibility=, not in meta as well")
    entry: dict[str, Any] = {}
    if ui is not None:
        check_ui_uri(ui)
        entry["resourceUri"] = ui
    if visibility is not None:
        if isinstance(visibility, str):
            raise TypeError('visibility is a list: ["model"], ["app"] or ["model", "app"]')
        chosen = list(dict.fromkeys(visibility))
        if not chosen or not set(chosen) <= set(VISIBILITIES):
            raise ValueError(f'visibility must name "model", "app" or both, not {list(visibility)!r}')
        entry["visibility"] = chosen
    out = {**(meta or {}), "ui": entry}
    if ui is not None:
        out[RESOURCE_URI_META_KEY] = ui
    return out


def is_ui_resource(resource: Any) -> bool:
    """Whether the wire ``Resource`` ``resource`` is a view: a ``ui://`` URI and the MCP
    Apps MIME type."""
    return str(getattr(resource, "uri", "")).startswith(UI_SCHEME) and getattr(resource, "mime_type", None) == UI_MIME_TYPE


def relinked_tool_meta(meta: dict[str, Any] | None, rename: Callable[[str], str | None]) -> dict[str, Any] | None:
    """A tool's ``_meta`` with its view's URI (nested and flat) as ``rename`` gives it —
    a mount's prefix (:mod:`.mount`), so that the link follows the resource it names;
    ``meta`` itself when it links to no view or ``rename`` has no new URI."""
    if not isinstance(meta, dict):
        return meta
    nested = meta.get("ui")
    out = dict(meta)
    if isinstance(nested, dict) and isinstance(nested.get("resourceUri"), str):
        renamed = rename(nested["resourceUri"])
        if renamed is not None:
            out["ui"] = {**nested, "resourceUri": renamed}
    flat = meta.get(RESOURCE_URI_META_KEY)
    if isinstance(flat, str):
        renamed = rename(flat)
        if renamed is not None:
            out[RESOURCE_URI_META_KEY] = renamed
    return out if out != meta else meta
