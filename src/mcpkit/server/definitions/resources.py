"""Registered resources and resource templates: their definitions from a function
(:func:`resource_from_function`), matching URIs against a template (RFC 6570), and how
a handler's value becomes contents. The ``resources/*`` requests are
:mod:`mcpkit.server.features.resources`."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from ...protocol.types import Icon, Resource, ResourceContents, ResourceTemplate
from ..handler import FunctionHandler
from ..injection import Provider, callable_name, callable_target
from ..schema import parse_docstring
from .options import wire_icons

__all__ = ["UriTemplate", "ResourceDef", "TemplateDef", "resource_from_function", "to_contents", "is_valid_uri"]

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


def resource_from_function(
    uri: str,
    fn: Callable[..., Any],
    *,
    name: str | None,
    title: str | None,
    description: str | None,
    mime_type: str | None,
    size: int | None,
    meta: dict[str, Any] | None,
    icons: Sequence[Icon | Mapping[str, Any]] | None,
    providers: dict[type, Provider] | None = None,
) -> ResourceDef | TemplateDef:
    """The definition of a resource served by ``fn``: a template when ``uri`` has
    ``{placeholders}`` (their values are ``fn``'s keyword arguments), else a resource of
    that fixed URI; the name and description default to the function's name and
    docstring summary. Raises ``ValueError`` for a malformed URI or URI template or an
    icon without a ``src``, ``TypeError`` for a template whose variables ``fn`` does not
    take."""
    summary, _ = parse_docstring(callable_target(fn).__doc__ or fn.__doc__)
    desc = description if description is not None else summary
    fn_name = name or callable_name(fn)
    if "{" in uri:
        template = ResourceTemplate(
            uri_template=uri,
            name=fn_name,
            title=title,
            description=desc,
            mime_type=mime_type,
            icons=wire_icons(icons),
            meta=meta,
        )
        return TemplateDef(template, fn, providers)
    if not is_valid_uri(uri):
        raise ValueError(f"invalid resource URI {uri!r}")
    resource = Resource(
        uri=uri,
        name=fn_name,
        title=title,
        description=desc,
        mime_type=mime_type,
        size=size,
        icons=wire_icons(icons),
        meta=meta,
    )
    return ResourceDef(resource, fn, providers)


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
