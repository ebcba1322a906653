"""What a handler can ask for by type, besides its arguments (docs/lifespan.md), and
how a handler function is looked at to know it.

A handler parameter is filled by the server, not by the client, when its annotation is
one of three types: :class:`~mcpkit.Context` (the request), :class:`~mcpkit.AccessToken`
(who is asking, over protected HTTP; None otherwise), or the type of the server's
lifespan state (what ``Server(lifespan=...)`` yields, as its return annotation names it:
``AsyncIterator[AppState]``). Such parameters are left out of the tool's input schema.

Why not FastAPI-style ``Depends``: a dependency graph with sub-dependencies, scopes and
caching is a framework of its own, and MCP handlers need exactly these three things,
all of known types, all available on the Context. Resolving by annotation needs no
extra syntax in the signature, keeps handlers plain functions that tests can call with
their own values, and costs one dict lookup per parameter at registration.

Handlers may be functions or callable objects (an object with ``__call__``, sync or
async): :func:`callable_target` is what to read the signature and type hints of, and
:func:`callable_name` the handler's default name.
"""

from __future__ import annotations

import collections.abc
import contextlib
import functools
import inspect
import types
import typing
from collections.abc import Callable
from typing import Any, Union

from ..auth.identity import AccessToken
from .context import Context

__all__ = [
    "Provider",
    "providers",
    "injected_params",
    "lifespan_state_type",
    "callable_target",
    "callable_name",
    "context_param",
    "is_context_type",
]

Provider = Callable[[Context], Any]


def callable_target(fn: Any) -> Any:
    """What to introspect for ``fn``: the function itself, or the ``__call__`` of a
    callable object."""
    if inspect.isroutine(fn) or isinstance(fn, (type, functools.partial)) or not callable(fn):
        return fn
    return type(fn).__call__


def callable_name(fn: Any) -> str:
    """A handler's default name: its ``__name__``, or its class's for a callable object."""
    return str(getattr(fn, "__name__", None) or type(fn).__name__)


def context_param(fn: Any, hints: dict[str, Any] | None = None) -> str | None:
    """The name of the parameter of ``fn`` annotated to receive the :class:`~mcpkit.Context`
    (None if none is, or if its hints cannot be resolved)."""
    if hints is None:
        try:
            hints = typing.get_type_hints(callable_target(fn))
        except Exception:
            return None
    for name, tp in hints.items():
        if name != "return" and is_context_type(tp):
            return name
    return None


def is_context_type(tp: Any) -> bool:
    """Whether a parameter annotated ``tp`` wants the :class:`~mcpkit.Context` injected
    (``Context``, a subclass, or ``Context | None``)."""
    if isinstance(tp, type):
        return issubclass(tp, Context)
    return any(isinstance(a, type) and issubclass(a, Context) for a in typing.get_args(tp))


def _identity(ctx: Context) -> Any:
    return ctx.identity


def _lifespan(ctx: Context) -> Any:
    return ctx.lifespan


def lifespan_state_type(lifespan: Any) -> type | None:
    """The class a lifespan function yields, from its return annotation
    (``AsyncIterator[T]``, ``AsyncGenerator[T, None]``, ``AsyncContextManager[T]``);
    None when it names no class of its own (a dict, ``Any``, nothing)."""
    if lifespan is None:
        return None
    target = getattr(lifespan, "__wrapped__", lifespan)  # under @asynccontextmanager
    try:
        ret = typing.get_type_hints(target).get("return")
    except Exception:
        return None
    args = typing.get_args(ret)
    state = args[0] if args else None
    builtin = (dict, list, str, int, float, bool, tuple, set, type(None), object)
    if isinstance(state, type) and state not in builtin and typing.get_origin(ret) in _ASYNC_ORIGINS:
        return state
    return None


_ASYNC_ORIGINS = (
    collections.abc.AsyncIterator,
    collections.abc.AsyncGenerator,
    collections.abc.AsyncIterable,
    typing.AsyncIterator,
    typing.AsyncGenerator,
    typing.AsyncContextManager,
    contextlib.AbstractAsyncContextManager,
)


def providers(state_type: type | None) -> dict[type, Provider]:
    """The types a server injects (besides ``Context``) and how each is obtained."""
    out: dict[type, Provider] = {AccessToken: _identity}
    if state_type is not None:
        out[state_type] = _lifespan
    return out


def injected_params(hints: dict[str, Any], known: dict[type, Provider]) -> dict[str, Provider]:
    """The parameters (by name) of a function with type hints ``hints`` that the server
    fills, and how. ``T | None`` counts as ``T``."""
    out: dict[str, Provider] = {}
    for name, tp in hints.items():
        if name == "return":
            continue
        while typing.get_origin(tp) is typing.Annotated:
            tp = typing.get_args(tp)[0]
        if typing.get_origin(tp) in (Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            tp = args[0] if len(args) == 1 else tp
        provider = known.get(tp) if isinstance(tp, type) else None
        if provider is not None:
            out[name] = provider
    return out
