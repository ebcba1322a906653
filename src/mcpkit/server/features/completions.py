"""Argument completion for prompts and resource templates: ``completion/complete``."""

from __future__ import annotations

import msgspec

from ...protocol.errors import INVALID_PARAMS, McpError, flatten_text
from ...protocol.types import CompleteParams, CompleteResult, Completion
from ...runtime.threads import call_handler, is_async_callable
from ..context import Call, Context
from ..registry import Mounted, Registry

__all__ = ["complete"]

#: At most this many values go in one answer (the spec's limit); ``total`` says how many there were.
MAX_VALUES = 100


async def complete(reg: Registry, ctx: Context, call: Call, params: CompleteParams) -> CompleteResult:
    """The completion handler's values for one argument (at most :data:`MAX_VALUES`;
    none without a handler). Raises -32602 for an unknown prompt, template or reference
    type, and what the handler raised; cancellation propagates (a plain ``def`` handler
    runs on to its end). A mounted server's prompt or template is completed by the same
    code on its registry."""
    ref = params.ref
    if ref.type == "ref/prompt":
        key = ("ref/prompt", ref.name or "")
        if key[1] not in reg.prompts:
            routed = reg.route("prompt", key[1]) if reg.mounts else None
            if routed is None and reg.remote is not None and reg.remote.serves("prompt", key[1]):
                return await reg.remote.forward(ctx, call, "completion/complete", params)  # type: ignore[no-any-return]
            if routed is None:
                raise McpError(INVALID_PARAMS, f"Unknown prompt: {flatten_text(key[1], 256)}")
            return await _mounted(routed, ctx, call, params, name=routed[1])
    elif ref.type == "ref/resource":
        key = ("ref/resource", ref.uri or "")
        if not any(t.template.uri_template == key[1] for t in reg.templates) and key[1] not in reg.resources:
            routed = (reg.route("template", key[1]) or reg.route("resource", key[1])) if reg.mounts else None
            if routed is None and reg.remote is not None and reg.remote.serves("template", key[1]):
                return await reg.remote.forward(ctx, call, "completion/complete", params)  # type: ignore[no-any-return]
            if routed is None:
                raise McpError(INVALID_PARAMS, f"Unknown resource template: {flatten_text(key[1], 256)}")
            return await _mounted(routed, ctx, call, params, uri=routed[1])
    else:
        raise McpError(INVALID_PARAMS, f"Invalid params: unknown reference type {flatten_text(ref.type, 64)}")
    fn = reg.completions.get(key)
    if fn is None:
        return CompleteResult(completion=Completion(values=[], has_more=False))
    context = (params.context.arguments if params.context else None) or {}
    value = await call_handler(fn, is_async_callable(fn), params.argument.name, params.argument.value, context)
    if isinstance(value, Completion):
        return CompleteResult(completion=value)
    values = [str(v) for v in value]
    return CompleteResult(completion=Completion(values=values[:MAX_VALUES], total=len(values), has_more=len(values) > MAX_VALUES))


async def _mounted(routed: tuple[Mounted, str], ctx: Context, call: Call, params: CompleteParams, **ref: str) -> CompleteResult:
    """:func:`complete` on the mounted server ``routed`` names, with its own reference."""
    mount, _ = routed
    local = msgspec.structs.replace(params, ref=msgspec.structs.replace(params.ref, **ref))
    return await mount.run(ctx, {}, lambda c: complete(mount.registry, c, call, local))
