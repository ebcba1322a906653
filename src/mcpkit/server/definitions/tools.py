"""Describing a function or a raw JSON Schema as a tool: its input schema from the
parameters' type hints (the injected ones left out), its output schema from the return
annotation, its converters, and the :class:`~.tool_def.ToolDef` that registration adds
to the registry. A registered tool and calling it are :mod:`.tool_def`'s; the
``tools/*`` requests are :mod:`mcpkit.server.features.tools`.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from ...protocol.types import CallToolResult
from ..injection import Provider, callable_name, callable_target, context_param, injected_params
from ..schema import converter_for, is_structured, parse_docstring, type_schema
from ..validate import SchemaError
from .options import ToolOptions
from .tool_def import CONTENT_LIKE, ToolDef

__all__ = ["tool_from_function", "tool_from_schema"]

_json = msgspec.json.Encoder()


def tool_from_function(fn: Callable[..., Any], options: ToolOptions, providers: dict[type, Provider] | None = None) -> ToolDef:
    """Describe a plain or async function (or a callable object) as a tool.

    The input schema comes from the parameters' type hints (a ``Context``-typed
    parameter, and those ``providers`` fill, are injected, not described), descriptions
    from the docstring, and an output schema from the return annotation when it is a
    structured type (or when ``options.structured_output`` is True). Raises
    ``TypeError`` for signatures that cannot be described (positional-only parameters,
    un-JSON-able types), then what :class:`ToolDef` raises for the options.
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
    output_schema, wrap = _output_schema(hints.get("return", inspect.Parameter.empty), options.structured_output)
    return ToolDef(
        fn,
        options,
        name=options.name or fn_name,
        description=options.description if options.description is not None else summary,
        input_schema=input_schema,
        output_schema=output_schema,
        raw=False,
        context_param=ctx_param,
        params=converters,
        var_kwargs=var_kwargs,
        wrap_result=wrap,
        injected=injected,
    )


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
    if isinstance(ret, type) and issubclass(ret, (CallToolResult, *CONTENT_LIKE)):
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
    """Whether values of ``tp`` are content blocks (or lists of them, strings among them
    as text blocks): content, not data."""
    args = [a for a in typing.get_args(tp) if a is not type(None) and a is not Ellipsis]
    if isinstance(tp, type):
        return issubclass(tp, (CallToolResult, *CONTENT_LIKE))
    return any(_is_content(a) for a in args) and all(a is str or _is_content(a) for a in args)


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


def tool_from_schema(input_schema: Mapping[str, Any], handler: Callable[..., Any], options: ToolOptions) -> ToolDef:
    """A tool from a raw JSON Schema, named ``options.name``; ``handler(arguments)`` or
    ``handler(arguments, ctx)`` gets the validated arguments dict.

    Raises :class:`SchemaError` (a ``ValueError``) if a schema is not valid JSON Schema,
    then what :class:`ToolDef` raises for the options.
    """
    if not isinstance(input_schema, Mapping) or input_schema.get("type", "object") != "object":
        raise SchemaError('a tool input schema must be a JSON Schema of "type": "object"')
    positional = [
        p
        for p in inspect.signature(handler).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    if options.name is None:
        raise TypeError("a tool described by a schema needs a name")
    output_schema = options.output_schema
    return ToolDef(
        handler,
        options,
        name=options.name,
        description=options.description,
        input_schema=dict(input_schema),
        output_schema=dict(output_schema) if output_schema is not None else None,
        raw=True,
        context_param="ctx" if len(positional) >= 2 else None,
        params={},
        var_kwargs=False,
        wrap_result=False,
    )
