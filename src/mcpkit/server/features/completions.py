"""Argument completion for prompts and resource templates: ``completion/complete``."""

from __future__ import annotations

from ...protocol.errors import INVALID_PARAMS, McpError, flatten_text
from ...protocol.types import CompleteParams, CompleteResult, Completion
from ...runtime.threads import call_handler, is_async_callable
from ..context import Call, Context
from ..registry import Registry

__all__ = ["complete"]

#: At most this many values go in one answer (the spec's limit); ``total`` says how many there were.
MAX_VALUES = 100


async def complete(reg: Registry, ctx: Context, call: Call, params: CompleteParams) -> CompleteResult:
    """The completion handler's values for one argument (at most :data:`MAX_VALUES`;
    none without a handler). Raises -32602 for an unknown prompt, template or reference
    type, and what the handler raised; cancellation propagates (a plain ``def`` handler
    runs on to its end)."""
    ref = params.ref
    if ref.type == "ref/prompt":
        key = ("ref/prompt", ref.name or "")
        if key[1] not in reg.prompts:
            raise McpError(INVALID_PARAMS, f"Unknown prompt: {flatten_text(key[1], 256)}")
    elif ref.type == "ref/resource":
        key = ("ref/resource", ref.uri or "")
        if not any(t.template.uri_template == key[1] for t in reg.templates) and key[1] not in reg.resources:
            raise McpError(INVALID_PARAMS, f"Unknown resource template: {flatten_text(key[1], 256)}")
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
