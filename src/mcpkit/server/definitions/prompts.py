"""A registered prompt: its definition from a function (its arguments are the
function's parameters), and how the handler's value becomes messages. The ``prompts/*``
requests are :mod:`mcpkit.server.features.prompts`."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from ...protocol.types import (
    Content,
    GetPromptResult,
    Icon,
    Prompt,
    PromptArgument,
    PromptMessage,
    TextContent,
)
from ..handler import FunctionHandler
from ..injection import Provider, callable_name, callable_target
from ..media import Media
from ..schema import parse_docstring
from .options import wire_icons

__all__ = ["PromptDef", "to_prompt_result"]


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
        icons: Sequence[Icon | Mapping[str, Any]] | None = None,
        providers: dict[type, Provider] | None = None,
    ) -> None:
        """Raises ``ValueError`` for an icon without a ``src``."""
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
            icons=wire_icons(icons),
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
    if isinstance(item, Media):
        return PromptMessage(role="user", content=item.to_content())
    raise TypeError(f"a prompt cannot return {type(item).__name__}")


def to_prompt_result(value: Any, description: str | None) -> GetPromptResult:
    """What a prompt handler returned, as a :class:`GetPromptResult`. Raises
    ``TypeError`` for values that are not messages."""
    if isinstance(value, GetPromptResult):
        return value
    items = value if isinstance(value, (list, tuple)) else [value]
    return GetPromptResult(description=description, messages=[_message(i) for i in items])
