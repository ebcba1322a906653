"""Registered resources and resource templates: their definitions from a function
(:func:`resource_from_function`), whose templates match URIs as
:mod:`.uri_template` says (RFC 6570, in linear time), and how a handler's value becomes
contents. The ``resources/*`` requests are
:mod:`mcpkit.server.features.resources`."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from ...protocol.errors import INVALID_PARAMS, McpError, echo
from ...protocol.types import Icon, Resource, ResourceContents, ResourceTemplate
from ..handler import FunctionHandler
from ..injection import Provider, callable_name, callable_target
from ..media import Media
from ..schema import parse_docstring
from .options import wire_icons

__all__ = ["ResourceDef", "TemplateDef", "resource_from_function", "to_contents", "is_valid_uri", "check_length"]

_json = msgspec.json.Encoder()
_URI = r"^[A-Za-z][A-Za-z0-9+.\-]*:\S*$"  # compiled (and cached by re) at first use, not at import
#: An expression with the explode modifier, but in the query (``{?tags*}``), where a
#: matched value is the query parameter's.
_EXPLODED = r"\{([+#./;]?)([^{}?&]*\*[^{}]*)\}"  # see _URI


def is_valid_uri(uri: str) -> bool:
    """A URI with a scheme and no whitespace (RFC 3986, loosely)."""
    return bool(re.match(_URI, uri))


def check_length(uri: str, limit: int) -> None:
    """Raises ``McpError(-32602)`` (HTTP 400, ``data: {"uri"}`` cut short) for a URI of
    more than ``limit`` characters (``Server(max_uri_length=...)``)."""
    if len(uri) > limit:
        raise McpError(INVALID_PARAMS, f"Invalid params: the URI is longer than {limit} characters", {"uri": echo(uri)})


class ResourceDef:
    """A resource with a fixed URI."""

    def __init__(self, resource: Resource, fn: Callable[..., Any], providers: dict[type, Provider] | None = None) -> None:
        self.resource = resource
        self.handler = FunctionHandler(fn, providers)
        #: ``_meta`` every content item read gets, where the handler's value has none (a
        #: view's ``_meta.ui``: docs/apps.md).
        self.contents_meta: dict[str, Any] | None = None


class TemplateDef:
    """A family of resources whose URIs match an RFC 6570 template."""

    def __init__(self, template: ResourceTemplate, fn: Callable[..., Any], providers: dict[type, Provider] | None = None) -> None:
        self.template = template
        from .uri_template import UriTemplate  # loaded with the first template: start-up cost of the others

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
    docstring summary. Raises ``ValueError`` for a malformed URI or URI template (the
    explode modifier ``{path*}`` outside the query included: ``{+path}`` takes a value
    with ``/``) or an icon without a ``src``, ``TypeError`` for a template whose variables ``fn`` does not
    take."""
    summary, _ = parse_docstring(callable_target(fn).__doc__ or fn.__doc__)
    desc = description if description is not None else summary
    fn_name = name or callable_name(fn)
    if "{" in uri:
        exploded = re.search(_EXPLODED, uri)
        if exploded is not None:
            variable = exploded.group(2).split("*")[0].split(",")[-1]
            raise ValueError(
                f"resource template {uri!r}: the explode modifier ({exploded.group(0)}) is not supported in a"
                f" resource template; for a value that may contain '/', write {{+{variable}}}"
            )
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
    JSON text; an :mod:`..media` value is its bytes under its own media type (text for a
    text file), and so is each of a list of them (contents among them pass through)."""
    if isinstance(value, ResourceContents):
        return [value]
    if isinstance(value, Media):
        return [value.to_resource_contents(uri)]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, (ResourceContents, Media)) for v in value):
        return [v.to_resource_contents(uri) if isinstance(v, Media) else v for v in value]
    if isinstance(value, str):
        return [ResourceContents(uri=uri, mime_type=mime_type or "text/plain", text=value)]
    if isinstance(value, (bytes, bytearray, memoryview)):
        blob = base64.b64encode(bytes(value)).decode("ascii")
        return [ResourceContents(uri=uri, mime_type=mime_type or "application/octet-stream", blob=blob)]
    text = _json.encode(msgspec.to_builtins(value)).decode()
    return [ResourceContents(uri=uri, mime_type=mime_type or "application/json", text=text)]
