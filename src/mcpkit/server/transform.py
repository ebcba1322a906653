"""Tool transformation: a tool this server offers — its own, a mounted server's or a
proxied one — offered instead under another name and description, with arguments
renamed, described anew, given defaults or hidden with a fixed value, and optionally
wrapped in code that runs before and after it (``server.transform_tool``,
docs/howto/compose.md).

Theory of operation. A transformation is a view, not a copy: :class:`~.registry.Transforms` (one
per registry) maps the name a tool is offered under here (its *source*) to a
:class:`ToolTransform`. Whenever the registry lists its tools, a transformed tool's
current wire description is rewritten by :meth:`ToolTransform.describe`; when a
``tools/call`` names the new name, :meth:`ToolTransform.arguments` checks the arguments
against the rewritten schema and translates them to the source's, and the call goes to
the source by the path every call takes (so a mounted source runs through its server's
middleware, a proxied one goes upstream, a task tool becomes a task). The source's own
name is no longer offered. Because the description is derived from the source's
*current* one, a source that changes (a mounted server re-registers it, an upstream
lists it anew) is transformed anew; the rewritten schema and its validator are kept for
as long as the source's description stays equal.

Exact schemas: renaming or hiding an argument rewrites ``properties`` and ``required``
only, so it is refused (``ValueError``) for a schema whose top level has keywords that
name or count properties otherwise (``dependentRequired``, ``allOf``,
``patternProperties``, ``minProperties``...), where a rewrite could change what is valid.
A default is checked against its argument's schema. A client that sends an argument's old
name, or a hidden one, gets -32602: they are not arguments of the transformed tool.

A source not known when the transformation is registered (a proxy's upstream lists its
tools once connected) is checked when it appears; if the transformation does not fit it,
the transformed tool is not offered and the problem is logged (``mcpkit.server``).
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

import msgspec

from ..protocol.errors import INVALID_PARAMS, McpError, flatten_text
from ..protocol.headers import HeaderRules, x_mcp_header_map
from ..protocol.types import CallToolResult, Result, Tool
from ..runtime.threads import is_async_callable
from .context import Context
from .definitions.tool_def import to_call_result, tool_failure
from .filters import TAGS_META, check_tags
from .validate import SchemaError, Validator, compile_schema

__all__ = ["ArgTransform", "ToolTransform", "Forward", "Wrapper"]

log = logging.getLogger("mcpkit.server")

Forward = Callable[[dict[str, Any]], Awaitable[Result]]
"""What a wrapper awaits to call the source tool: ``await forward(arguments)`` with
arguments named as the transformed tool names them; returns the source's result (a
``CallToolResult``, or a task's handle when the source runs as a task)."""
Wrapper = Callable[[dict[str, Any], Forward, Context], Awaitable[Any]]
"""A wrapper around a transformed tool: ``async def wrap(arguments, forward, ctx)``. It
gets the checked arguments (defaults filled in), may change them, calls ``forward`` (or
not), and returns what a tool may return (a ``CallToolResult`` as it is)."""

#: Top-level schema keywords a rename or a hidden argument leaves exact: none of them
#: names or counts properties other than through ``properties`` and ``required``.
_SAFE_KEYWORDS: Final = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "$defs",
        "definitions",
        "$schema",
        "$id",
        "$comment",
        "title",
        "description",
        "examples",
    }
)


class _Unset:
    """The default of :attr:`ArgTransform.default`: no default given."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"


_UNSET: Final[Any] = _Unset()


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ArgTransform:
    """How one argument of a transformed tool differs from the source's.

    ``name``: the name clients give it (default: the source's). ``description``: its
    description (default: the source's). ``default``: the value the source gets when
    the client gives none (the argument becomes optional). ``hide=True``: clients
    neither see nor give it; the source gets ``default`` (an argument the source
    requires cannot be hidden without one)."""

    name: str | None = None
    description: str | None = None
    default: Any = _UNSET
    hide: bool = False

    @property
    def has_default(self) -> bool:
        """Whether a ``default`` was given (``None`` is a default like any other)."""
        return self.default is not _UNSET


class _Fitted(msgspec.Struct):
    """A transformation fitted to one description of its source."""

    source: Tool
    tool: Tool
    validator: Validator
    #: Argument name here -> the source's name for it (the visible arguments only).
    to_source: dict[str, str]
    #: What the source gets when the client gives nothing, by the source's names.
    defaults: dict[str, Any]
    #: Names a client may not give: old names of renamed arguments, hidden ones.
    refused: frozenset[str]
    #: The ``x-mcp-header`` rules of the transformed schema.
    rules: HeaderRules


class ToolTransform:
    """One transformation of the tool offered as ``source`` (see the module's
    docstring)."""

    __slots__ = ("_fitted", "_misfit", "args", "description", "meta", "name", "source", "tags", "title", "wrap")

    def __init__(
        self,
        source: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        args: Mapping[str, ArgTransform] | None = None,
        wrap: Wrapper | None = None,
        tags: Sequence[str] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        """Describe the transformation. Raises ``TypeError`` for an ``args`` value that
        is not an :class:`ArgTransform`, a ``wrap`` that is not an ``async def``, and
        what :func:`~.filters.check_tags` raises for ``tags``; ``ValueError`` for two
        arguments given one name."""
        self.source = source
        self.name = name or source
        self.title = title
        self.description = description
        self.args: dict[str, ArgTransform] = dict(args or {})
        for key, spec in self.args.items():
            if not isinstance(spec, ArgTransform):
                raise TypeError(f"args[{key!r}] must be an ArgTransform, not {type(spec).__name__}")
        names = [spec.name or key for key, spec in self.args.items() if not spec.hide]
        if len(set(names)) != len(names):
            raise ValueError("two arguments of the transformed tool would have the same name")
        if wrap is not None and not is_async_callable(wrap):
            raise TypeError("wrap must be an async function: async def wrap(arguments, forward, ctx)")
        self.wrap = wrap
        self.meta = meta
        #: The transformed tool's tags, replacing the source's (None: the source's).
        self.tags = None if tags is None else check_tags(tags)
        self._fitted: _Fitted | None = None
        #: The last source description the transformation did not fit (logged once).
        self._misfit: Tool | None = None

    # --- the description --------------------------------------------------------------------

    def fit(self, source: Tool) -> _Fitted:
        """The transformation fitted to ``source`` (the source's current description),
        kept while it stays equal. Raises ``ValueError`` saying why it does not fit."""
        fitted = self._fitted
        if fitted is not None and fitted.source == source:
            return fitted
        fitted = self._fit(source)
        self._fitted = fitted
        return fitted

    def _fit(self, source: Tool) -> _Fitted:
        schema = copy.deepcopy(source.input_schema)
        found, listed = schema.get("properties"), schema.get("required")
        properties: dict[str, Any] = found if isinstance(found, dict) else {}
        required = [r for r in listed if isinstance(r, str)] if isinstance(listed, list) else []
        where = f"tool {source.name!r}"
        unknown = sorted(set(self.args) - set(properties))
        if unknown:
            raise ValueError(f"{where} has no argument {', '.join(map(repr, unknown))}")
        reshaped = any(spec.hide or (spec.name or key) != key for key, spec in self.args.items())
        unsafe = sorted(set(schema) - _SAFE_KEYWORDS)
        if reshaped and unsafe:
            raise ValueError(f"{where}: cannot rename or hide arguments of a schema with {', '.join(unsafe)} at its top level")
        specs = {key: self.args.get(key, ArgTransform()) for key in properties}
        names = [spec.name or key for key, spec in specs.items() if not spec.hide]
        twice = next((n for n in names if names.count(n) > 1), None)
        if twice is not None:
            raise ValueError(f"{where}: two arguments would be named {twice!r}")
        new_properties: dict[str, Any] = {}
        new_required: list[str] = []
        to_source: dict[str, str] = {}
        defaults: dict[str, Any] = {}
        refused: set[str] = set()
        for key, prop in properties.items():
            spec = specs[key]
            if spec.has_default:
                _check_default(where, key, spec.default, prop, schema)
                defaults[key] = spec.default
            if spec.hide:
                if key in required and not spec.has_default:
                    raise ValueError(f"{where}: argument {key!r} is required, so hiding it needs a default")
                refused.add(key)
                continue
            new = spec.name or key
            if new != key:
                refused.add(key)
            prop = dict(prop) if isinstance(prop, dict) else prop
            if isinstance(prop, dict):
                if spec.description is not None:
                    prop["description"] = spec.description
                if spec.has_default:
                    prop["default"] = msgspec.to_builtins(spec.default)
            new_properties[new] = prop
            to_source[new] = key
            if key in required and not spec.has_default:
                new_required.append(new)
        refused -= set(new_properties)
        if self.args or "properties" in schema:
            schema["properties"] = new_properties
        if new_required:
            schema["required"] = new_required
        else:
            schema.pop("required", None)
        try:
            validator = compile_schema(schema)
            rules = x_mcp_header_map(schema)
        except SchemaError as exc:
            raise ValueError(f"{where}: the transformed input schema is invalid: {exc}") from None
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        meta = self.meta if self.meta is not None else source.meta
        if self.tags is not None:
            meta = {k: v for k, v in (meta or {}).items() if k != TAGS_META} | ({TAGS_META: list(self.tags)} if self.tags else {})
        tool = msgspec.structs.replace(
            source,
            name=self.name,
            title=self.title if self.title is not None else source.title,
            description=self.description if self.description is not None else source.description,
            input_schema=schema,
            meta=meta or None,
        )
        return _Fitted(source, tool, validator, to_source, defaults, frozenset(refused), rules)

    def describe(self, source: Tool) -> Tool | None:
        """The transformed tool's wire description, or None (logged) if the
        transformation does not fit ``source``."""
        try:
            return self.fit(source).tool
        except ValueError as exc:
            if self._misfit is None or self._misfit != source:  # once per description, not per listing
                self._misfit = source
                log.warning("the transformed tool %r is not offered: %s", self.name, exc)
            return None

    # --- calling ----------------------------------------------------------------------------

    def arguments(self, source: Tool, arguments: dict[str, Any], limit: int) -> dict[str, Any]:
        """``arguments`` as the transformed tool takes them, checked against its schema
        and translated to the source's names, with the defaults filled in. Raises
        ``McpError(-32602)`` saying what is wrong, or if the transformation does not fit
        the source (any more)."""
        fitted = self._checked(source, arguments, limit)
        translated = dict(fitted.defaults)
        for key, value in arguments.items():
            translated[fitted.to_source.get(key, key)] = value
        return translated

    def _checked(self, source: Tool, arguments: dict[str, Any], limit: int) -> _Fitted:
        try:
            fitted = self.fit(source)
        except ValueError as exc:
            raise McpError(INVALID_PARAMS, f"Unknown tool: {flatten_text(self.name, 256)}") from exc
        prefix = f"Invalid arguments for tool {flatten_text(self.name, 256)}: "
        bad = next((key for key in arguments if key in fitted.refused), None)
        if bad is not None:
            raise McpError(INVALID_PARAMS, prefix + flatten_text(f"{bad!r} is not an argument of this tool", limit))
        reason = fitted.validator.describe(arguments)
        if reason is not None:
            raise McpError(INVALID_PARAMS, prefix + flatten_text(reason, limit))
        return fitted

    async def call(
        self,
        source: Tool,
        arguments: dict[str, Any],
        ctx: Context,
        forward: Callable[[dict[str, Any]], Awaitable[Result]],
        *,
        mask: bool,
        limit: int,
    ) -> Result:
        """Call the source through the transformation: ``forward(translated)`` calls it
        by its own name. With a wrapper, the wrapper gets the checked arguments (the
        visible defaults filled in) and decides what is forwarded (checked and
        translated alike) and what is answered. Raises what :meth:`arguments` raises and
        what the call raises; what the wrapper raises fails the call as a tool's own
        failure would (``mask`` as for a tool). Cancellation propagates."""
        if self.wrap is None:
            return await forward(self.arguments(source, arguments, limit))
        fitted = self._checked(source, arguments, limit)
        given = {
            name: msgspec.to_builtins(fitted.defaults[key])
            for name, key in fitted.to_source.items()
            if key in fitted.defaults and name not in arguments
        }
        given.update(arguments)

        async def through(args: dict[str, Any]) -> Result:
            return await forward(self.arguments(source, args, limit))

        try:
            value = await self.wrap(given, through, ctx)
        except BaseException as exc:  # as a tool's own failure: an isError result, or re-raised
            return tool_failure(exc, self.name, ctx, mask=mask, limit=limit)
        if isinstance(value, Result) and not isinstance(value, CallToolResult):
            return value  # a task's handle, passed on
        return to_call_result(value, structured=fitted.tool.output_schema is not None)


def _check_default(where: str, key: str, default: Any, prop: Any, schema: dict[str, Any]) -> None:
    """Raises ``ValueError`` if ``default`` is not a valid value of the argument
    ``key`` (its schema ``prop``, references resolved in the tool's ``schema``)."""
    try:
        value = msgspec.to_builtins(default)
    except TypeError:
        raise ValueError(f"{where}: the default of argument {key!r} is not JSON") from None
    probe: dict[str, Any] = {"type": "object", "properties": {key: prop}, "required": [key]}
    for defs in ("$defs", "definitions"):
        if defs in schema:
            probe[defs] = schema[defs]
    if "$schema" in schema:
        probe["$schema"] = schema["$schema"]
    try:
        reason = compile_schema(probe).describe({key: value})
    except SchemaError as exc:
        raise ValueError(f"{where}: argument {key!r} has an invalid schema: {exc}") from None
    if reason is not None:
        raise ValueError(f"{where}: the default of argument {key!r} is not valid: {reason}")
