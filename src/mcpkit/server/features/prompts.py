"""Prompts: definitions from functions, how a handler's value becomes messages, and
the ``prompts/*`` requests."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from ...protocol.errors import INVALID_PARAMS, McpError, flatten_text
from ...protocol.types import (
    Content,
    CursorParams,
    GetPromptParams,
    GetPromptResult,
    ListPromptsResult,
    Prompt,
    PromptArgument,
    PromptMessage,
    TextContent,
)
from ..context import Context, callable_name, callable_target
from ..handler import FunctionHandler
from ..injection import Provider
from ..schema import parse_docstring

if TYPE_CHECKING:
    from ..registry import Registry

__all__ = ["PromptDef", "to_prompt_result", "list_prompts", "get_prompt"]


class PromptDef:
    """A prompt template: its arguments come from the function's parameters."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None,
        title: str | None,
        description: str | None,
        meta: dict[str, Any] | None = None,
        providers: dict[type, Provider] | None = None,
    ) -> None:
        self.handler = FunctionHandler(fn, providers)
        summary, docs = parse_docstring(callable_target(fn).__doc__ or fn.__doc__)
        args = []
        self.required: list[str] = []
        for pname, p in inspect.signature(fn).parameters.items():
            injected = pname == self.handler.context_param or pname in self.handler.injected
            if injected or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                continue
            required = p.default is p.empty
            if required:
                self.required.append(pname)
            args.append(PromptArgument(name=pname, description=docs.get(pname), required=required))
        self.prompt = Prompt(
            name=name or callable_name(fn),
            title=title,
            description=description if description is not None else summary,
            arguments=args or None,
            meta=meta,
        )


def _message(item: Any) -> PromptMessage:
    if isinstance(item, PromptMessage):
        return item
    if isinstance(item, str):
        return PromptMessage(role="user", content=TextContent(text=item))
    if isinstance(item, dict):
        return msgspec.convert(item, PromptMessage)
    if isinstance(item, typing.get_args(Content)):
        return PromptMessage(role="user", content=item)
    raise TypeError(f"a prompt cannot return {type(item).__name__}")


def to_prompt_result(value: Any, description: str | None) -> GetPromptResult:
    """What a prompt handler returned, as a :class:`GetPromptResult`. Raises
    ``TypeError`` for values that are not messages."""
    if isinstance(value, GetPromptResult):
        return value
    items = value if isinstance(value, (list, tuple)) else [value]
    return GetPromptResult(description=description, messages=[_message(i) for i in items])


# --- requests ---------------------------------------------------------------------------------


async def list_prompts(reg: Registry, ctx: Context, params: CursorParams) -> ListPromptsResult:
    page, nxt = reg.page([p.prompt for p in reg.prompts.values()], params.cursor)
    return ListPromptsResult(prompts=page, next_cursor=nxt)


async def get_prompt(reg: Registry, ctx: Context, params: GetPromptParams) -> Any:
    pd = reg.prompts.get(params.name)
    if pd is None:
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
