"""The ``resources/list``, ``resources/templates/list`` and ``resources/read``
requests. Registered resources and templates, URI matching and how a handler's value
becomes contents are :mod:`mcpkit.server.definitions.resources`'s."""

from __future__ import annotations

import msgspec

from ...protocol.errors import INVALID_PARAMS, McpError, echo, flatten_text
from ...protocol.types import (
    CursorParams,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ReadResourceParams,
    ReadResourceResult,
)
from ..context import Call, Context
from ..definitions.resources import check_length, is_valid_uri, to_contents
from ..registry import Mounted, Registry

__all__ = ["list_resources", "list_templates", "read_resource"]


async def list_resources(reg: Registry, ctx: Context, call: Call, params: CursorParams) -> ListResourcesResult:
    """One page of the enabled resources. Raises -32602 for a cursor that is not ours."""
    page, nxt = reg.page(reg.listed("resource"), params.cursor)
    return ListResourcesResult(resources=page, next_cursor=nxt)


async def list_templates(reg: Registry, ctx: Context, call: Call, params: CursorParams) -> ListResourceTemplatesResult:
    """One page of the enabled resource templates. Raises -32602 for a cursor that is
    not ours."""
    page, nxt = reg.page(reg.listed("template"), params.cursor)
    return ListResourceTemplatesResult(resource_templates=page, next_cursor=nxt)


async def read_resource(reg: Registry, ctx: Context, call: Call, params: ReadResourceParams) -> ReadResourceResult:
    """The contents of the resource ``params.uri`` names, or of the first template it
    matches. Raises -32602 (``data: {"uri"}``) for a malformed, unknown or too long URI
    (``max_uri_length``), and what the handler raised; cancellation propagates (a plain
    ``def`` handler runs on to its end). A mounted server's resource is read by the
    same code on its registry, with its own URI."""
    uri = params.uri
    check_length(uri, reg.settings.max_uri_length)
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
            routed = reg.route("resource", uri) if reg.mounts else None
            if routed is not None:
                return await _read_mounted(routed, ctx, call, params)
            if reg.remote is not None and reg.remote.serves("resource", uri):
                return await reg.remote.forward(ctx, call, "resources/read", params)  # type: ignore[no-any-return]
            # -32602 in both eras: 2026-07-28 requires it, and the conformance suite
            # grades the legacy -32002 as a warning for every revision (docs/errors.md).
            raise McpError(INVALID_PARAMS, "Resource not found", {"uri": echo(uri)})
    value = await handler(ctx, dict(kwargs))
    contents = to_contents(value, uri, mime)
    extra = rd.contents_meta if rd is not None else None
    if extra is not None:  # a view's _meta.ui (docs/apps.md), unless the handler gave its own
        contents = [c if c.meta is not None else msgspec.structs.replace(c, meta=dict(extra)) for c in contents]
    return ReadResourceResult(contents=contents)


async def _read_mounted(routed: tuple[Mounted, str], ctx: Context, call: Call, params: ReadResourceParams) -> ReadResourceResult:
    """:func:`read_resource` on the mounted server ``routed`` names, with its own URI;
    its contents of that URI come back under the URI the client read."""
    mount, local = routed
    inner = msgspec.structs.replace(params, uri=local)
    result = await mount.run(ctx, {"uri": local}, lambda c: read_resource(mount.registry, c, call, inner))
    return _relocated(result, local, params.uri)


def _relocated(result: ReadResourceResult, local: str, public: str) -> ReadResourceResult:
    """A mounted server's contents of ``local``, as the URI the client read: each
    content whose ``uri`` is ``local`` gets ``public``."""
    contents = [msgspec.structs.replace(c, uri=public) if c.uri == local else c for c in result.contents]
    return msgspec.structs.replace(result, contents=contents)
