"""Resources and resource templates (RFC 6570 matching): their definitions, how a
handler's value becomes contents, and the ``resources/*`` requests."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from ...protocol.errors import INVALID_PARAMS, McpError, echo, flatten_text
from ...protocol.types import (
    CursorParams,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ReadResourceParams,
    ReadResourceResult,
    Resource,
    ResourceContents,
    ResourceTemplate,
)
from ..context import Context
from ..handler import FunctionHandler
from ..injection import Provider

if TYPE_CHECKING:
    from ..registry import Registry

__all__ = [
    "UriTemplate",
    "ResourceDef",
    "TemplateDef",
    "to_contents",
    "is_valid_uri",
    "list_resources",
    "list_templates",
    "read_resource",
]

_json = msgspec.json.Encoder()
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:\S*$")


def is_valid_uri(uri: str) -> bool:
    """A URI with a scheme and no whitespace (RFC 3986, loosely)."""
    return bool(_URI.match(uri))


class UriTemplate:
    """An RFC 6570 URI template that can *match* URIs (levels 1–4 operators;
    the explode and prefix modifiers are accepted and ignored when matching)."""

    _EXPR = re.compile(r"\{([+#./;?&]?)([^{}]+)\}")

    def __init__(self, template: str) -> None:
        self.template = template
        self.variables: list[str] = []
        self._query_vars: list[str] = []
        pattern = "^"
        pos = 0
        for m in self._EXPR.finditer(template):
            pattern += re.escape(template[pos : m.start()])
            pos = m.end()
            op, names = m.group(1), [n.split(":")[0].rstrip("*") for n in m.group(2).split(",")]
            for n in names:
                if not re.fullmatch(r"[A-Za-z0-9_.%]+", n):
                    raise ValueError(f"invalid variable name {n!r} in URI template {template!r}")
            self.variables.extend(names)
            if op in ("?", "&"):
                self._query_vars.extend(names)
                pattern += rf"(?:[?&](?P<_q{len(self._query_vars)}>[^#]*))?"
                continue
            groups = []
            for n in names:
                g = f"(?P<{self._group(n)}>{self._charset(op)})"
                groups.append(g)
            sep = {"": ",", "+": ",", "#": ",", ".": r"\.", "/": "/", ";": ";"}[op]
            prefix = {"": "", "+": "", "#": "#", ".": r"\.", "/": "/", ";": ";"}[op]
            if op == ";":
                groups = [f"{re.escape(n)}=?{g}" for n, g in zip(names, groups, strict=True)]
            pattern += prefix + sep.join(groups)
        pattern += re.escape(template[pos:]) + "$"
        self._regex = re.compile(pattern)

    @staticmethod
    def _group(name: str) -> str:
        return "v_" + re.sub(r"[^A-Za-z0-9_]", "_", name)

    @staticmethod
    def _charset(op: str) -> str:
        if op in ("+", "#"):
            return r"[^?#]*?" if op == "+" else r".*?"
        return r"[^/?#,.;&=]*"

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables if ``uri`` matches, else None. Values are percent-decoded."""
        from urllib.parse import parse_qs, unquote

        m = self._regex.match(uri)
        if m is None:
            return None
        out: dict[str, str] = {}
        for n in self.variables:
            if n in self._query_vars:
                continue
            value = m.group(self._group(n))
            if value is None or value == "":
                return None
            out[n] = unquote(value)
        if self._query_vars:
            query = "&".join(v for k, v in m.groupdict().items() if k.startswith("_q") and v)
            parsed = parse_qs(query, keep_blank_values=True)
            for n in self._query_vars:
                if n in parsed:
                    out[n] = parsed[n][0]
        return out


class ResourceDef:
    """A resource with a fixed URI."""

    def __init__(self, resource: Resource, fn: Callable[..., Any], providers: dict[type, Provider] | None = None) -> None:
        self.resource = resource
        self.handler = FunctionHandler(fn, providers)


class TemplateDef:
    """A family of resources whose URIs match an RFC 6570 template."""

    def __init__(self, template: ResourceTemplate, fn: Callable[..., Any], providers: dict[type, Provider] | None = None) -> None:
        self.template = template
        self.uri_template = UriTemplate(template.uri_template)
        self.handler = FunctionHandler(fn, providers)
        missing = set(self.uri_template.variables) - self.handler.accepted
        if missing and not self.handler.var_kwargs:
            raise TypeError(f"resource template {template.uri_template!r}: handler lacks parameters {sorted(missing)}")


def to_contents(value: Any, uri: str, mime_type: str | None) -> list[ResourceContents]:
    """What a resource handler returned, as resource contents: ``str`` is text,
    ``bytes`` a base64 blob, :class:`ResourceContents` pass through, anything else is
    JSON text."""
    if isinstance(value, ResourceContents):
        return [value]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, ResourceContents) for v in value):
        return list(value)
    if isinstance(value, str):
        return [ResourceContents(uri=uri, mime_type=mime_type or "text/plain", text=value)]
    if isinstance(value, (bytes, bytearray, memoryview)):
        blob = base64.b64encode(bytes(value)).decode("ascii")
        return [ResourceContents(uri=uri, mime_type=mime_type or "application/octet-stream", blob=blob)]
    text = _json.encode(msgspec.to_builtins(value)).decode()
    return [ResourceContents(uri=uri, mime_type=mime_type or "application/json", text=text)]


# --- requests ---------------------------------------------------------------------------------


async def list_resources(reg: Registry, ctx: Context, params: CursorParams) -> ListResourcesResult:
    page, nxt = reg.page([r.resource for r in reg.resources.values()], params.cursor)
    return ListResourcesResult(resources=page, next_cursor=nxt)


async def list_templates(reg: Registry, ctx: Context, params: CursorParams) -> ListResourceTemplatesResult:
    page, nxt = reg.page([t.template for t in reg.templates], params.cursor)
    return ListResourceTemplatesResult(resource_templates=page, next_cursor=nxt)


async def read_resource(reg: Registry, ctx: Context, params: ReadResourceParams) -> ReadResourceResult:
    uri = params.uri
    if not is_valid_uri(uri):
        raise McpError(INVALID_PARAMS, f"Invalid URI: {flatten_text(uri, 256)}", {"uri": echo(uri)})
    rd = reg.resources.get(uri)
    if rd is not None:
        handler, kwargs, mime = rd.handler, {}, rd.resource.mime_type
    else:
        for td in reg.templates:
            found = td.uri_template.match(uri)
            if found is not None:
                handler, kwargs, mime = td.handler, found, td.template.mime_type
                break
        else:
            # -32602 in both eras: 2026-07-28 requires it, and the conformance suite
            # grades the legacy -32002 as a warning for every revision (docs/errors.md).
            raise McpError(INVALID_PARAMS, "Resource not found", {"uri": echo(uri)})
    value = await handler(ctx, dict(kwargs))
    return ReadResourceResult(contents=to_contents(value, uri, mime))
