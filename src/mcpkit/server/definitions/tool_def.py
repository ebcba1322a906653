"""A registered tool (:class:`ToolDef`) and calling it: its wire description built
from its :class:`~.options.ToolOptions`, binding and converting the arguments, its time
limit, its failures as ``isError`` results, and what it returns as a
:class:`CallToolResult` (:func:`to_call_result`). Describing a function or a raw schema
as a tool is :mod:`.tools`'s work; the ``tools/*`` requests are
:mod:`mcpkit.server.features.tools`.

Exceptions from a tool become ``isError`` results (the model can react), each noted on
the request's Context as the exception behind it (for middleware that maps it:
:meth:`~mcpkit.server.context.Context.tool_exception`), except :class:`McpError` and
exceptions carrying an HTTP status, which are protocol answers chosen on purpose and
propagate to the dispatcher.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

import msgspec

from ...protocol.errors import INTERNAL_ERROR, INVALID_PARAMS, McpError, ToolError, flatten_text
from ...protocol.types import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    Tool,
    ToolAnnotations,
)
from ...protocol.wire_errors import has_status
from ...runtime.threads import is_async_callable, run_sync
from ..context import Context, note_tool_failure
from ..injection import Provider
from ..interaction import InputRequired
from ..media import Media
from ..schema import encode_hook
from ..settings import check_limit
from ..validate import Validator, compile_schema
from .options import TaskMode, ToolOptions, wire_icons

__all__ = ["ToolDef", "to_call_result", "tool_failure", "CONTENT_TYPES", "CONTENT_LIKE"]

log = logging.getLogger("mcpkit.server")
#: What a tool may return as content, as it is.
CONTENT_TYPES = (TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource)
#: What a tool may return as content: the blocks, and media made into blocks (media.py).
CONTENT_LIKE = (*CONTENT_TYPES, Media)
_json = msgspec.json.Encoder()


class ToolDef:
    """A registered tool: its wire description and how to call it."""

    __slots__ = (
        "context_param",
        "fn",
        "injected",
        "is_async",
        "name",
        "output_validator",
        "params",
        "plain",
        "raw",
        "task",
        "tool",
        "timeout",
        "validator",
        "var_kwargs",
        "wrap_result",
    )

    def __init__(
        self,
        fn: Callable[..., Any],
        options: ToolOptions,
        *,
        name: str,
        description: str | None,
        input_schema: dict[str, Any],
        output_schema: dict[str, Any] | None,
        raw: bool,
        context_param: str | None,
        params: dict[str, Callable[[Any], Any] | None],
        var_kwargs: bool,
        wrap_result: bool,
        injected: dict[str, Provider] | None = None,
    ) -> None:
        """Describe and compile the tool: ``name``, ``description`` and the schemas
        come from the function or the raw schema (:mod:`.tools`), the rest from
        ``options``. Raises ``ValueError`` for an invalid raw schema (a
        :class:`~mcpkit.server.validate.SchemaError`), then for a time limit that is not
        positive, then for an icon without a ``src``; ``msgspec.ValidationError`` for
        annotations that are not ``ToolAnnotations``."""
        annotations = options.annotations
        if isinstance(annotations, Mapping):
            annotations = msgspec.convert(annotations, ToolAnnotations)
        tool = Tool(
            name=name,
            title=options.title,
            description=description,
            input_schema=input_schema,
            output_schema=output_schema,
            annotations=annotations,
            meta=options.meta,
        )
        self.name = tool.name
        self.tool = tool
        self.fn = fn
        self.is_async = is_async_callable(fn)
        self.raw = raw
        self.context_param = context_param
        #: Parameter name -> converter (None: pass the JSON value as is).
        self.params = params
        self.var_kwargs = var_kwargs
        #: The arguments are the keyword arguments as they are: no converter, nothing the
        #: server fills, no ``**kwargs`` (then a call's arguments, once valid, need no binding).
        self.plain = not var_kwargs and context_param is None and not injected and all(c is None for c in params.values())
        self.validator: Validator = compile_schema(tool.input_schema, trusted=not raw)
        self.output_validator = compile_schema(tool.output_schema, trusted=not raw) if tool.output_schema is not None else None
        self.wrap_result = wrap_result
        #: Parameters the server fills (the identity, the lifespan state), by name.
        self.injected: dict[str, Provider] = injected or {}
        #: Seconds the tool may run (None: the server's default, ``Server(tool_timeout=...)``).
        self.timeout: float | None = check_limit(options.timeout)
        #: Whether it runs as a task for clients of the tasks extension (server/tasks.py).
        self.task: TaskMode = options.task
        tool.icons = wire_icons(options.icons)

    def check_arguments(self, arguments: Any, limit: int) -> None:
        """Raise ``McpError(-32602)`` with one concise reason if the arguments do not
        match the input schema."""
        reason = self.validator.describe(arguments)
        if reason is not None:
            raise McpError(
                INVALID_PARAMS, f"Invalid arguments for tool {flatten_text(self.name, 256)}: {flatten_text(reason, limit)}"
            )

    def _bind(self, arguments: dict[str, Any], ctx: Context, limit: int) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        for name, value in arguments.items():
            if name in self.params:
                conv = self.params[name]
                if conv is not None:
                    try:
                        value = conv(value)
                    except (ValueError, TypeError, msgspec.ValidationError, RecursionError) as exc:
                        reason = _conversion_reason(exc)
                        raise McpError(
                            INVALID_PARAMS,
                            f"Invalid arguments for tool {flatten_text(self.name, 256)}: "
                            f"{flatten_text(f'argument {name!r}: {reason}', limit)}",
                        ) from None
                kwargs[name] = value
            elif self.var_kwargs:
                kwargs[name] = value
        if self.context_param is not None:
            kwargs[self.context_param] = ctx
        for pname, provide in self.injected.items():
            kwargs[pname] = provide(ctx)
        return kwargs

    def call(
        self, arguments: dict[str, Any], ctx: Context, *, mask: bool, limit: int, timeout: float | None = None
    ) -> Coroutine[Any, Any, CallToolResult]:
        """Run the tool. Tool failures become ``isError`` results; ``McpError`` and
        HTTP-status exceptions propagate. Cancellation propagates.

        Past its time limit (``self.timeout``, else ``timeout``) the tool is cancelled
        and the call fails with an ``isError`` result saying so. A plain ``def`` tool
        cannot be stopped: its thread runs on and its result is dropped."""
        seconds = self.timeout if self.timeout is not None else timeout
        if seconds is None:  # not a coroutine itself: the call goes through one frame fewer
            return self._run(arguments, ctx, mask=mask, limit=limit)
        return self._run_within(seconds, arguments, ctx, mask=mask, limit=limit)

    async def _run_within(
        self, seconds: float, arguments: dict[str, Any], ctx: Context, *, mask: bool, limit: int
    ) -> CallToolResult:
        deadline = asyncio.timeout(seconds)
        try:
            async with deadline:
                return await self._run(arguments, ctx, mask=mask, limit=limit)
        except TimeoutError:
            if not deadline.expired():
                raise
            log.warning("tool %r ran past its time limit of %g s and was cancelled", self.name, seconds)
            text = f"Tool '{flatten_text(self.name, 256)}' timed out after {seconds:g} s"
            return CallToolResult(content=[TextContent(text=text)], is_error=True)

    async def _run(self, arguments: dict[str, Any], ctx: Context, *, mask: bool, limit: int) -> CallToolResult:
        if self.validator.describe(arguments) is not None:  # check_arguments, inlined for valid arguments
            self.check_arguments(arguments, limit)
        if self.raw:
            args: tuple[Any, ...] = (arguments, ctx) if self.context_param else (arguments,)
            kwargs: dict[str, Any] = {}
        elif self.plain and arguments.keys() <= self.params.keys():
            # what _bind would build, entry for entry (the call copies it into the function's own)
            args, kwargs = (), arguments
        else:
            args, kwargs = (), self._bind(arguments, ctx, limit)
        try:
            # call_handler's choice, inlined: this is every tool call's path
            value = await (self.fn(*args, **kwargs) if self.is_async else run_sync(self.fn, *args, **kwargs))
        except (McpError, InputRequired, asyncio.CancelledError):
            raise
        except BaseException as exc:  # SystemExit from a tool must not end the server either
            return tool_failure(exc, self.name, ctx, mask=mask, limit=limit)
        result = to_call_result(value, structured=self.tool.output_schema is not None, wrap=self.wrap_result)
        if self.output_validator is not None and not result.is_error:
            self._check_output(result)
        return result

    def _check_output(self, result: CallToolResult) -> None:
        assert self.output_validator is not None
        if result.structured_content is None:
            reason = "no structuredContent"
        else:
            reason = self.output_validator.describe(result.structured_content, "field") or ""
        if reason:
            ref = os.urandom(6).hex()
            log.error("tool %r broke its outputSchema: %s (reference %s)", self.name, reason, ref)
            raise McpError(INTERNAL_ERROR, "Internal error", {"reference": ref})


def tool_failure(exc: BaseException, name: str, ctx: Context, *, mask: bool, limit: int) -> CallToolResult:
    """What the tool ``name`` answers for the exception ``exc`` it raised: an ``isError``
    result with a :class:`ToolError`'s text, or the exception's (with ``mask``, a reference
    to the log instead), noted on ``ctx`` as that exception's
    (:meth:`Context.tool_exception`, for middleware that maps it). Re-raises ``exc`` if it
    is a protocol answer chosen on purpose (``McpError``, an exception carrying an HTTP
    status), an input round or a cancellation."""
    if isinstance(exc, (McpError, InputRequired, asyncio.CancelledError)) or has_status(exc):
        raise exc
    if isinstance(exc, ToolError):
        text = flatten_text(exc.message, limit)
    elif mask:
        ref = os.urandom(6).hex()
        log.error("tool %r failed (reference %s)", name, ref, exc_info=exc)
        text = f"Tool '{flatten_text(name, 256)}' failed (reference {ref})"
    else:
        text = flatten_text(_exception_text(exc), limit)
    result = CallToolResult(content=[TextContent(text=text)], is_error=True)
    note_tool_failure(ctx, result, exc)
    return result


def _exception_text(exc: BaseException) -> str:
    """The exception's message; a bare ``KeyError`` (whose message is just the key)
    and a message-less exception also name the type, so the text is readable."""
    text = str(exc)
    if not text:
        return type(exc).__name__
    if type(exc) is KeyError:
        return f"KeyError: {text}"
    return text


def _conversion_reason(exc: BaseException) -> str:
    """Why an argument could not be converted to its parameter's type, in one line."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if hasattr(exc, "errors"):
        return _pydantic_reason(exc)
    return str(exc).split("\n", 1)[0]


def _pydantic_reason(exc: Any) -> str:
    """The first problem of a pydantic ``ValidationError``, as ``loc: message``."""
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ()))
    return f"{loc}: {first.get('msg')}" if loc else str(first.get("msg"))


def to_call_result(value: Any, *, structured: bool = False, wrap: bool = False) -> CallToolResult:
    """Turn what a tool returned into a :class:`CallToolResult`.

    ``str`` becomes text; content blocks pass through, and :mod:`..media` values
    become blocks (also in a list of blocks, where strings are text blocks; a tool whose
    schema wraps a list, ``-> list``, also gets the blocks as ``structuredContent``
    under ``"result"``); ``None`` is empty; other values are JSON text, and also
    ``structuredContent`` when the tool declares an output schema (``wrap`` puts them
    under ``"result"``).
    """
    if isinstance(value, CallToolResult):
        return value
    if isinstance(value, str) and not structured:
        return CallToolResult(content=[TextContent(text=value)])
    if isinstance(value, CONTENT_TYPES):
        return CallToolResult(content=[value])
    if isinstance(value, Media):
        return CallToolResult(content=[value.to_content()])
    if isinstance(value, (list, tuple)) and _is_content_list(value):
        blocks = [_block(v) for v in value]
        if structured and wrap:  # a bare ``-> list`` (any items): the blocks are its declared result too
            return CallToolResult(content=blocks, structured_content={"result": msgspec.to_builtins(blocks)})
        return CallToolResult(content=blocks)
    if value is None and not structured:
        return CallToolResult(content=[])
    data = _to_builtins(value)
    text = data if isinstance(data, str) else _json.encode(data).decode()  # the value itself, for the model
    if wrap:
        data = {"result": data}
    if structured:
        return CallToolResult(content=[TextContent(text=text)], structured_content=data)
    return CallToolResult(content=[TextContent(text=text)])


def _is_content_list(values: list[Any] | tuple[Any, ...]) -> bool:
    """Whether ``values`` are content: blocks and media, strings among them."""
    blocks = [isinstance(v, CONTENT_LIKE) for v in values]
    return any(blocks) and all(block or isinstance(v, str) for block, v in zip(blocks, values, strict=True))


def _block(value: Any) -> Any:
    if isinstance(value, Media):
        return value.to_content()
    return TextContent(text=value) if isinstance(value, str) else value


def _to_builtins(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if dump is not None and callable(dump):  # a pydantic model
        return dump(mode="json", by_alias=True)
    return msgspec.to_builtins(value, enc_hook=encode_hook)
