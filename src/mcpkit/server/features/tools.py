"""Tools: registration from functions or raw schemas, argument checking, results.

Exceptions from a tool become ``isError`` results (the model can react), except
:class:`McpError` and exceptions carrying an HTTP status, which are protocol answers
chosen on purpose and propagate to the dispatcher.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import typing
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from ...protocol.errors import INTERNAL_ERROR, INVALID_PARAMS, McpError, ToolError, flatten_text
from ...protocol.types import (
    AudioContent,
    CallToolParams,
    CallToolResult,
    CursorParams,
    EmbeddedResource,
    ImageContent,
    ListToolsResult,
    ResourceLink,
    Result,
    TextContent,
    Tool,
    ToolAnnotations,
)
from ...protocol.wire_errors import has_status
from ...runtime.threads import is_async_callable, run_sync
from ..context import Context, callable_name, callable_target, context_param
from ..injection import Provider, injected_params
from ..interaction import InputRequired
from ..schema import converter_for, encode_hook, is_structured, parse_docstring, type_schema
from ..tasks import TaskMode
from ..validate import SchemaError, Validator, compile_schema

if TYPE_CHECKING:
    from ..registry import Registry

__all__ = ["ToolDef", "tool_from_function", "tool_from_schema", "to_call_result", "list_tools", "call_tool"]

log = logging.getLogger("mcpkit.server")
_CONTENT_TYPES = (TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource)
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
        tool: Tool,
        fn: Callable[..., Any],
        *,
        raw: bool,
        context_param: str | None,
        params: dict[str, Callable[[Any], Any] | None],
        var_kwargs: bool,
        wrap_result: bool,
    ) -> None:
        self.name = tool.name
        self.tool = tool
        self.fn = fn
        self.is_async = is_async_callable(fn)
        self.raw = raw
        self.context_param = context_param
        #: Parameter name -> converter (None: pass the JSON value as is).
        self.params = params
        self.var_kwargs = var_kwargs
        self.validator: Validator = compile_schema(tool.input_schema, trusted=not raw)
        self.output_validator = compile_schema(tool.output_schema, trusted=not raw) if tool.output_schema is not None else None
        self.wrap_result = wrap_result
        #: Parameters the server fills (the identity, the lifespan state), by name.
        self.injected: dict[str, Provider] = {}
        #: Seconds the tool may run (None: the server's default, ``Server(tool_timeout=...)``).
        self.timeout: float | None = None
        #: Whether it runs as a task for clients of the tasks extension (server/tasks.py).
        self.task: TaskMode = None

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

    async def call(
        self, arguments: dict[str, Any], ctx: Context, *, mask: bool, limit: int, timeout: float | None = None
    ) -> CallToolResult:
        """Run the tool. Tool failures become ``isError`` results; ``McpError`` and
        HTTP-status exceptions propagate. Cancellation propagates.

        Past its time limit (``self.timeout``, else ``timeout``) the tool is cancelled
        and the call fails with an ``isError`` result saying so. A plain ``def`` tool
        cannot be stopped: its thread runs on and its result is dropped."""
        seconds = self.timeout if self.timeout is not None else timeout
        if seconds is None:
            return await self._run(arguments, ctx, mask=mask, limit=limit)
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
        self.check_arguments(arguments, limit)
        if self.raw:
            args: tuple[Any, ...] = (arguments, ctx) if self.context_param else (arguments,)
            kwargs: dict[str, Any] = {}
        else:
            args, kwargs = (), self._bind(arguments, ctx, limit)
        try:
            # call_handler's choice, inlined: this is every tool call's path
            value = await (self.fn(*args, **kwargs) if self.is_async else run_sync(self.fn, *args, **kwargs))
        except (McpError, InputRequired):
            raise
        except ToolError as exc:
            return CallToolResult(content=[TextContent(text=flatten_text(exc.message, limit))], is_error=True)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # SystemExit from a tool must not end the server either
            if has_status(exc):
                raise
            if mask:
                ref = os.urandom(6).hex()
                log.error("tool %r failed (reference %s)", self.name, ref, exc_info=exc)
                text = f"Tool '{flatten_text(self.name, 256)}' failed (reference {ref})"
            else:
                text = flatten_text(_exception_text(exc), limit)
            return CallToolResult(content=[TextContent(text=text)], is_error=True)
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

    ``str`` becomes text; content blocks pass through; ``None`` is empty; other
    values are JSON text, and also ``structuredContent`` when the tool declares an
    output schema (``wrap`` puts them under ``"result"``).
    """
    if isinstance(value, CallToolResult):
        return value
    if isinstance(value, str) and not structured:
        return CallToolResult(content=[TextContent(text=value)])
    if isinstance(value, _CONTENT_TYPES):
        return CallToolResult(content=[value])
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, _CONTENT_TYPES) for v in value):
        return CallToolResult(content=list(value))
    if value is None and not structured:
        return CallToolResult(content=[])
    data = _to_builtins(value)
    text = data if isinstance(data, str) else _json.encode(data).decode()  # the value itself, for the model
    if wrap:
        data = {"result": data}
    if structured:
        return CallToolResult(content=[TextContent(text=text)], structured_content=data)
    return CallToolResult(content=[TextContent(text=text)])


def _to_builtins(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if dump is not None and callable(dump):  # a pydantic model
        return dump(mode="json", by_alias=True)
    return msgspec.to_builtins(value, enc_hook=encode_hook)


def tool_from_function(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    annotations: ToolAnnotations | Mapping[str, Any] | None = None,
    structured_output: bool | None = None,
    meta: dict[str, Any] | None = None,
    providers: dict[type, Provider] | None = None,
) -> ToolDef:
    """Describe a plain or async function as a tool.

    The input schema comes from the parameters' type hints (a ``Context``-typed
    parameter is injected, not described), descriptions from the docstring, and an
    output schema from the return annotation when it is a structured type (or when
    ``structured_output=True``). Raises ``TypeError`` for signatures that cannot be
    described (positional-only parameters, un-JSON-able types).
    """
    sig = inspect.signature(fn)
    target = callable_target(fn)
    fn_name = callable_name(fn)
    try:
        hints = typing.get_type_hints(target, include_extras=True)
    except Exception as exc:
        raise TypeError(f"cannot resolve type hints of {fn!r}: {exc}") from None
    ctx_param = context_param(fn, hints)
    injected = injected_params(hints, providers or {})
    summary, param_docs = parse_docstring(target.__doc__ or fn.__doc__)
    skip = {ctx_param, *injected} - {None}
    input_schema, converters, var_kwargs = _input_schema(sig, hints, skip, param_docs, fn_name)
    output_schema, wrap = _output_schema(hints.get("return", inspect.Parameter.empty), structured_output)
    if isinstance(annotations, Mapping):
        annotations = msgspec.convert(annotations, ToolAnnotations, from_attributes=False)
    tool = Tool(
        name=name or fn_name,
        title=title,
        description=description if description is not None else summary,
        input_schema=input_schema,
        output_schema=output_schema,
        annotations=annotations,
        meta=meta,
    )
    td = ToolDef(tool, fn, raw=False, context_param=ctx_param, params=converters, var_kwargs=var_kwargs, wrap_result=wrap)
    td.injected = injected
    return td


def _input_schema(
    sig: inspect.Signature, hints: dict[str, Any], skip: set[str | None], param_docs: dict[str, str], fn_name: str
) -> tuple[dict[str, Any], dict[str, Callable[[Any], Any] | None], bool]:
    """The input schema of a function's parameters, a converter per parameter, and
    whether it takes ``**kwargs``. Raises ``TypeError`` as :func:`tool_from_function`."""
    defs: dict[str, Any] = {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    converters: dict[str, Callable[[Any], Any] | None] = {}
    var_kwargs = False
    for pname, p in sig.parameters.items():
        if pname in skip:  # filled by the server, not by the client
            continue
        if p.kind is p.VAR_KEYWORD:
            var_kwargs = True
            continue
        if p.kind is p.VAR_POSITIONAL:
            continue
        if p.kind is p.POSITIONAL_ONLY:
            raise TypeError(f"tool parameter {pname!r} of {fn_name} is positional-only; tools take named arguments")
        tp = hints.get(pname, Any)
        try:
            schema = type_schema(tp, defs)
        except SchemaError as exc:
            raise TypeError(f"tool parameter {pname!r} of {fn_name}: {exc}") from None
        schema = dict(schema)
        if pname in param_docs and "description" not in schema:
            schema["description"] = param_docs[pname]
        if p.default is p.empty:
            required.append(pname)
        else:
            try:
                schema["default"] = msgspec.to_builtins(p.default)
            except TypeError:
                pass
        properties[pname] = schema
        converters[pname] = converter_for(tp)
    input_schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        input_schema["required"] = required
    if defs:
        input_schema["$defs"] = defs
    return input_schema, converters, var_kwargs


def _output_schema(ret: Any, structured_output: bool | None) -> tuple[dict[str, Any] | None, bool]:
    if structured_output is False or ret is inspect.Parameter.empty or ret is None or ret is type(None):
        return None, False
    if isinstance(ret, type) and issubclass(ret, (CallToolResult, *_CONTENT_TYPES)):
        return None, False
    if is_structured(ret):
        defs: dict[str, Any] = {}
        schema = dict(type_schema(ret, defs))
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and len(schema) == 1:
            # Clients validate outputSchema as an object schema at the root: inline it,
            # and keep it under $defs only if something still refers to it.
            schema = dict(defs[ref[8:]])
            if ref not in _json.encode([schema, {k: v for k, v in defs.items() if k != ref[8:]}]).decode():
                del defs[ref[8:]]
        if defs:
            schema["$defs"] = defs
        return schema, False
    if structured_output is None and not _wrapped_by_default(ret):
        return None, False
    defs = {}
    inner = type_schema(ret, defs)
    schema = {"type": "object", "properties": {"result": inner}, "required": ["result"]}
    if defs:
        schema["$defs"] = defs
    return schema, True


def _is_content(tp: Any) -> bool:
    """Whether values of ``tp`` are content blocks (or lists of them): content, not data."""
    args = typing.get_args(tp)
    if isinstance(tp, type):
        return issubclass(tp, (CallToolResult, *_CONTENT_TYPES))
    return bool(args) and all(_is_content(a) for a in args if a is not type(None) and a is not Ellipsis)


def _wrapped_by_default(ret: Any) -> bool:
    """Whether a return type is JSON that is not an object or text (a list, a number, a
    boolean, a date…): its value is structured content under ``"result"``. Content
    blocks and lists of them are content, not structured data."""
    if _is_content(ret):
        return False
    try:
        schema = type_schema(ret, {})
    except SchemaError:
        return False
    kind = schema.get("type")
    return kind in ("array", "integer", "number", "boolean") or (kind == "string" and "format" in schema)


def tool_from_schema(
    name: str,
    description: str | None,
    input_schema: Mapping[str, Any],
    handler: Callable[..., Any],
    *,
    title: str | None = None,
    output_schema: Mapping[str, Any] | None = None,
    annotations: ToolAnnotations | Mapping[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
) -> ToolDef:
    """A tool from a raw JSON Schema; ``handler(arguments)`` or
    ``handler(arguments, ctx)`` gets the validated arguments dict.

    Raises :class:`SchemaError` (a ``ValueError``) if a schema is not valid JSON Schema.
    """
    if not isinstance(input_schema, Mapping) or input_schema.get("type", "object") != "object":
        raise SchemaError('a tool input schema must be a JSON Schema of "type": "object"')
    if isinstance(annotations, Mapping):
        annotations = msgspec.convert(annotations, ToolAnnotations)
    positional = [
        p
        for p in inspect.signature(handler).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    tool = Tool(
        name=name,
        title=title,
        description=description,
        input_schema=dict(input_schema),
        output_schema=dict(output_schema) if output_schema is not None else None,
        annotations=annotations,
        meta=meta,
    )
    return ToolDef(
        tool,
        handler,
        raw=True,
        context_param="ctx" if len(positional) >= 2 else None,
        params={},
        var_kwargs=False,
        wrap_result=False,
    )


# --- requests ---------------------------------------------------------------------------------


async def list_tools(reg: Registry, ctx: Context, params: CursorParams) -> ListToolsResult:
    page, nxt = reg.page([t.tool for t in reg.tools.values()], params.cursor)
    return ListToolsResult(tools=page, next_cursor=nxt)


async def call_tool(reg: Registry, ctx: Context, params: CallToolParams) -> Result:
    td = reg.tools.get(params.name)
    if td is None:
        raise McpError(INVALID_PARAMS, f"Unknown tool: {flatten_text(params.name, 256)}")
    settings = reg.settings

    def run() -> Coroutine[Any, Any, CallToolResult]:
        return td.call(
            params.arguments or {},
            ctx,
            mask=settings.mask_tool_errors,
            limit=settings.max_error_text,
            timeout=settings.tool_timeout,
        )

    if td.task is not None:  # it may run as a task (server/tasks.py): bad arguments fail the call, not a task
        td.check_arguments(params.arguments or {}, settings.max_error_text)
        return await reg.tasks.call_tool(td.task, td.name, ctx, run)
    return await run()
