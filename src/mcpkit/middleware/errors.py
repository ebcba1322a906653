"""Error handling: :class:`ErrorMapping`, exception types mapped to protocol errors or to
tool errors (docs/errors.md)."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Mapping
from typing import Any, Literal

from ..protocol.content import TextContent
from ..protocol.errors import DEFAULT_MAX_ERROR_TEXT, INTERNAL_ERROR, McpError, ToolError, flatten_text
from ..protocol.types import CallToolResult
from ..server.context import Context
from ..server.registry import CallNext

__all__ = ["ErrorMapping", "ErrorRule"]

log = logging.getLogger("mcpkit.server")

#: What an exception type maps to: a JSON-RPC error code (an ``McpError`` with the
#: exception's text), ``"tool"`` (an ``isError`` result of a ``tools/call``, -32603 on
#: other methods), or a function of the exception returning the ``McpError`` or
#: ``CallToolResult`` to answer with.
ErrorRule = int | Literal["tool"] | Callable[[BaseException], "McpError | CallToolResult"]


class ErrorMapping:
    """Middleware that turns exceptions into the answers ``rules`` give, by exception
    type (the most derived class with a rule wins; subclasses match): those raised
    inside it — by the handlers of resources, prompts and completions, and by the
    middleware registered after it — and those a tool raised.

    A tool's exception is already an ``isError`` result when middleware sees it
    (docs/errors.md); this one looks the exception up with
    :meth:`~mcpkit.Context.tool_exception` and applies its rules as to a raised one: a
    code answers the call with that JSON-RPC error instead, a ``"tool"`` rule with an
    ``isError`` result of its own text, a function with what it returns — the text
    this mapping's (its ``mask``, ``max_text``), whatever the server's
    ``mask_tool_errors`` says. So it does for the tools of mounted servers (the
    parent's mapping included) and the wrappers of transformed tools. A result no rule
    matches stays as the server made it. A tool's ``ToolError`` (text the tool chose for
    the model) is matched only by a rule keyed by ``ToolError`` or a subclass of it,
    never by a broader one such as ``Exception``. Not a tool's exception, and left
    alone: a time limit reached (the tool raised nothing), an ``isError`` result a tool
    returned, a proxied server's, one a middleware inside this one made, and the failure
    of a tool that became a task (reported later, through ``tasks/result``).

    A ``"tool"`` rule for what is raised around a ``tools/call`` (a rate limit, say,
    that the model should read rather than the client) answers an ``isError`` result;
    on other methods, -32603 with the text. ``McpError`` and cancellation pass
    untouched, and so does an exception no rule matches: the server answers it -32603
    ``Internal error`` with a reference id (or its text, with ``expose_internal_errors``).

    A mapped exception's text is flattened and cut to ``max_text`` bytes. With
    ``mask=True`` it is replaced by ``Request failed (reference <id>)`` and the
    exception is logged under that id on ``mcpkit.server`` (as ``mask_tool_errors``
    does for tools). A rule function that raises is logged and answered -32603.
    Raises ``TypeError`` at construction for a key that is no exception type or a rule
    that is no code, ``"tool"`` or function.
    """

    def __init__(
        self,
        rules: Mapping[type[BaseException], ErrorRule],
        *,
        mask: bool = False,
        max_text: int = DEFAULT_MAX_ERROR_TEXT,
    ) -> None:
        for kind, rule in rules.items():
            if not (isinstance(kind, type) and issubclass(kind, BaseException)):
                raise TypeError(f"rules are keyed by exception types, not {kind!r}")
            if not (callable(rule) or rule == "tool" or (isinstance(rule, int) and not isinstance(rule, bool))):
                raise TypeError(f"a rule is an error code, 'tool' or a function, not {rule!r}")
        self.rules = dict(rules)
        self.mask = mask
        self.max_text = max_text

    def rule_for(self, exc: BaseException, *, from_tool: bool = False) -> ErrorRule | None:
        """The rule for ``exc`` (None: it passes untouched); ``from_tool``: ``exc`` is a
        tool's, which for a ``ToolError`` only its own rules match."""
        if isinstance(exc, (McpError, asyncio.CancelledError)):
            return None
        chosen = from_tool and isinstance(exc, ToolError)
        for kind in type(exc).__mro__:
            if chosen and not issubclass(kind, ToolError):
                return None
            if kind in self.rules:
                return self.rules[kind]
        return None

    async def __call__(self, ctx: Context, call_next: CallNext) -> Any:
        try:
            result = await call_next()
        except BaseException as exc:
            rule = self.rule_for(exc)
            if rule is None:
                raise
            answer = self._answer(ctx, exc, rule)
            if isinstance(answer, McpError):
                raise answer from None
            return answer
        if not isinstance(result, CallToolResult) or not result.is_error:
            return result
        failed = ctx.tool_exception(result)
        if failed is None:
            return result
        rule = self.rule_for(failed, from_tool=True)
        if rule is None:
            return result
        answer = self._answer(ctx, failed, rule)
        if isinstance(answer, McpError):
            raise answer from None
        return answer

    def _answer(self, ctx: Context, exc: BaseException, rule: ErrorRule) -> McpError | CallToolResult:
        if callable(rule):
            try:
                answer = rule(exc)
            except Exception:
                log.exception("an ErrorMapping rule failed for %s", type(exc).__name__)
                return McpError(INTERNAL_ERROR, "Internal error")
            if not isinstance(answer, (McpError, CallToolResult)):
                log.error("an ErrorMapping rule for %s returned %r, not an McpError or a result", type(exc).__name__, answer)
                return McpError(INTERNAL_ERROR, "Internal error")
            return answer
        text = self._text(ctx, exc)
        if rule == "tool":
            if ctx.method == "tools/call":
                return CallToolResult(content=[TextContent(text=text)], is_error=True)
            return McpError(INTERNAL_ERROR, text)
        return McpError(int(rule), text)

    def _text(self, ctx: Context, exc: BaseException) -> str:
        if self.mask:
            ref = os.urandom(6).hex()
            log.error("%s failed (reference %s)", ctx.method, ref, exc_info=exc)
            return f"Request failed (reference {ref})"
        return flatten_text(str(exc) or type(exc).__name__, self.max_text)
