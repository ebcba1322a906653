"""Resources, resource templates (RFC 6570 matching) and prompts."""

from __future__ import annotations

import base64
import inspect
import re
import typing
from collections.abc import Callable
from typing import Any

import msgspec

from ._context import Context, is_context_type
from ._schema import parse_docstring
from ._threads import run_sync
from ._types import (
    Content,
    GetPromptResult,
    Prompt,
    PromptArgument,
    PromptMessage,
    Resource,
    ResourceContents,
    ResourceTemplate,
    TextContent,
)

__all__ = ["UriTemplate", "ResourceDef", "TemplateDef", "PromptDef", "to_contents", "to_prompt_result", "is_valid_uri"]

_json = msgspec.json.Encoder()
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:\S*$")


def is_valid_uri(uri: str) -> bool:
    """A URI with a scheme and no whitespace (RFC 3986, loosely)."""
    return bool(_URI.match(uri))


class UriTemplate:
    """An RFC 6570 URI template that can *match* URIs (levels 1–4 operators;
    the explode and prefix modifiers are accepted and ignored when matching)."""

    _EXPR = re.compile(r"\{([+#./;?&]?)([^{}]+)\}")

    def __init__(self, template: str) -> None:
        self.template = template
        self.variables: list[str] = []
        self._query_vars: list[str] = []
        pattern = "^"
        pos = 0
        for m in self._EXPR.finditer(template):
            pattern += re.escape(template[pos : m.start()])
            pos = m.end()
            op, names = m.group(1), [n.split(":")[0].rstrip("*") for n in m.group(2).split(",")]
            for n in names:
                if not re.fullmatch(r"[A-Za-z0-9_.%]+", n):
                    raise ValueError(f"invalid variable name {n!r} in URI template {template!r}")
            self.variables.extend(names)
            if op in ("?", "&"):
                self._query_vars.extend(names)
                pattern += rf"(?:[?&](?P<_q{len(self._query_vars)}>[^#]*))?"
                continue
            groups = []
            for n in names:
                g = f"(?P<{self._group(n)}>{self._charset(op)})"
                groups.append(g)
            sep = {"": ",", "+": ",", "#": ",", ".": r"\.", "/": "/", ";": ";"}[op]
            prefix = {"": "", "+": "", "#": "#", ".": r"\.", "/": "/", ";": ";"}[op]
            if op == ";":
                groups = [f"{re.escape(n)}=?{g}" for n, g in zip(names, groups, strict=True)]
            pattern += prefix + sep.join(groups)
        pattern += re.escape(template[pos:]) + "$"
        self._regex = re.compile(pattern)

    @staticmethod
    def _group(name: str) -> str:
        return "v_" + re.sub(r"[^A-Za-z0-9_]", "_", name)

    @staticmethod
    def _charset(op: str) -> str:
        if op in ("+", "#"):
            return r"[^?#]*?" if op == "+" else r".*?"
        return r"[^/?#,.;&=]*"

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables if ``uri`` matches, else None. Values are percent-decoded."""
        from urllib.parse import parse_qs, unquote

        m = self._regex.match(uri)
        if m is None:
            return None
        out: dict[str, str] = {}
        for n in self.variables:
            if n in self._query_vars:
                continue
            value = m.group(self._group(n))
            if value is None or value == "":
                return None
            out[n] = unquote(value)
        if self._query_vars:
            query = "&".join(v for k, v in m.groupdict().items() if k.startswith("_q") and v)
            parsed = parse_qs(query, keep_blank_values=True)
            for n in self._query_vars:
                if n in parsed:
                    out[n] = parsed[n][0]
        return out


def _wants_context(fn: Callable[..., Any]) -> str | None:
    try:
        hints = typing.get_type_hints(fn)
    except Exception:
        return None
    for name, tp in hints.items():
        if name != "return" and is_context_type(tp):
            return name
    return None


class _Handler:
    __slots__ = ("accepted", "context_param", "fn", "is_async", "var_kwargs")

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.is_async = inspect.iscoroutinefunction(fn)
        self.context_param = _wants_context(fn)
        params = inspect.signature(fn).parameters
        self.accepted = {n for n, p in params.items() if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
        self.var_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())

    async def __call__(self, ctx: Context, kwargs: dict[str, Any]) -> Any:
        if not self.var_kwargs:
            kwargs = {k: v for k, v in kwargs.items() if k in self.accepted}
        if self.context_param is not None:
            kwargs[self.context_param] = ctx
        if self.is_async:
            return await self.fn(**kwargs)
        return await run_sync(self.fn, **kwargs)


class ResourceDef:
    """A resource with a fixed URI."""

    def __init__(self, resource: Resource, fn: Callable[..., Any]) -> None:
        self.resource = resource
        self.handler = _Handler(fn)


class TemplateDef:
    """A family of resources whose URIs match an RFC 6570 template."""

    def __init__(self, template: ResourceTemplate, fn: Callable[..., Any]) -> None:
        self.template = template
        self.uri_template = UriTemplate(template.uri_template)
        self.handler = _Handler(fn)
        missing = set(self.uri_template.variables) - self.handler.accepted
        if missing and not self.handler.var_kwargs:
            raise TypeError(f"resource template {template.uri_template!r}: handler lacks parameters {sorted(missing)}")


def to_contents(value: Any, uri: str, mime_type: str | None) -> list[ResourceContents]:
    """What a resource handler returned, as resource contents: ``str`` is text,
    ``bytes`` a base64 blob, :class:`ResourceContents` pass through, anything else is
    JSON text."""
    if isinstance(value, ResourceContents):
        return [value]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, ResourceContents) for v in value):
        return list(value)
    if isinstance(value, str):
        return [ResourceContents(uri=uri, mime_type=mime_type or "text/plain", text=value)]
    if isinstance(value, (bytes, bytearray, memoryview)):
        blob = base64.b64encode(bytes(value)).decode("ascii")
        return [ResourceContents(uri=uri, mime_type=mime_type or "application/octet-stream", blob=blob)]
    text = _json.encode(msgspec.to_builtins(value)).decode()
    return [ResourceContents(uri=uri, mime_type=mime_type or "application/json", text=text)]


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
    ) -> None:
        self.handler = _Handler(fn)
        summary, docs = parse_docstring(fn.__doc__)
        args = []
        self.required: list[str] = []
        for pname, p in inspect.signature(fn).parameters.items():
            if pname == self.handler.context_param or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                continue
            required = p.default is p.empty
            if required:
                self.required.append(pname)
            args.append(PromptArgument(name=pname, description=docs.get(pname), required=required))
        self.prompt = Prompt(
            name=name or fn.__name__,
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
