"""User functions called with keyword arguments, sync or async, with the
:class:`~mcpkit.Context` injected where they ask for it: how resources, templates and
prompts are called."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any

from ..runtime.threads import call_handler, is_async_callable
from .context import Context
from .injection import Provider, callable_target, context_param, injected_params

__all__ = ["FunctionHandler"]


class FunctionHandler:
    """Calls ``fn(**kwargs)``: only the parameters it accepts (unless it takes
    ``**kwargs``), plus the context; ``async def`` (or an object with an async
    ``__call__``) is awaited, a plain function runs on a worker thread."""

    __slots__ = ("accepted", "context_param", "fn", "injected", "is_async", "var_kwargs")

    def __init__(self, fn: Callable[..., Any], providers: dict[type, Provider] | None = None) -> None:
        """``providers`` are the types the server fills besides ``Context``
        (:mod:`.injection`)."""
        self.fn = fn
        self.is_async = is_async_callable(fn)
        try:
            hints = typing.get_type_hints(callable_target(fn), include_extras=True)
        except Exception:
            hints = {}
        self.context_param = context_param(fn, hints)
        #: Parameters the server fills (the identity, the lifespan state), by name.
        self.injected = injected_params(hints, providers or {})
        params = inspect.signature(fn).parameters
        self.accepted = {n for n, p in params.items() if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
        self.var_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())

    async def __call__(self, ctx: Context, kwargs: dict[str, Any]) -> Any:
        """Call the function. Its exceptions propagate; on cancellation a plain
        function runs on to completion on its thread and its result is dropped."""
        if not self.var_kwargs:
            kwargs = {k: v for k, v in kwargs.items() if k in self.accepted}
        if self.context_param is not None:
            kwargs[self.context_param] = ctx
        for name, provide in self.injected.items():
            kwargs[name] = provide(ctx)
        return await call_handler(self.fn, self.is_async, **kwargs)
