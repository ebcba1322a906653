"""The ``prompts/list`` and ``prompts/get`` requests. A registered prompt and how its
handler's value becomes messages are :mod:`mcpkit.server.definitions.prompts`'s."""

from __future__ import annotations

from typing import Any

import msgspec

from ...protocol.errors import INVALID_PARAMS, McpError, flatten_text
from ...protocol.types import CursorParams, GetPromptParams, ListPromptsResult
from ..context import Call, Context
from ..definitions.prompts import to_prompt_result
from ..registry import Registry

__all__ = ["list_prompts", "get_prompt"]


async def list_prompts(reg: Registry, ctx: Context, call: Call, params: CursorParams) -> ListPromptsResult:
    """One page of the enabled prompts. Raises -32602 for a cursor that is not ours."""
    page, nxt = reg.page(reg.listed("prompt"), params.cursor)
    return ListPromptsResult(prompts=page, next_cursor=nxt)


async def get_prompt(reg: Registry, ctx: Context, call: Call, params: GetPromptParams) -> Any:
    """The prompt's messages. Raises -32602 for an unknown prompt or a missing required
    argument, and what the handler raised (``TypeError`` for a value that is not
    messages); cancellation propagates (a plain ``def`` handler runs on to its end).
    A mounted server's prompt is got by the same code on its registry."""
    pd = reg.prompts.get(params.name)
    if pd is None:
        routed = reg.route("prompt", params.name) if reg.mounts else None
        if routed is not None:
            mount, name = routed
            local = msgspec.structs.replace(params, name=name)
            return await mount.run(ctx, {"name": name}, lambda c: get_prompt(mount.registry, c, call, local))
        if reg.remote is not None and reg.remote.serves("prompt", params.name):
            return await reg.remote.forward(ctx, call, "prompts/get", params)
        raise McpError(INVALID_PARAMS, f"Unknown prompt: {flatten_text(params.name, 256)}")
    args = params.arguments or {}
    missing = [a for a in pd.required if a not in args]
    if missing:
        raise McpError(
            INVALID_PARAMS,
            f"Invalid arguments for prompt {flatten_text(params.name, 256)}: missing required argument '{missing[0]}'",
        )
    value = await pd.handler(ctx, dict(args))
    return to_prompt_result(value, pd.prompt.description)
