"""Error handling: :class:`ErrorMapping`, exception types mapped to protocol errors or to
tool errors (docs/errors.md)."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Mapping
from typing import Any, Literal

from ..protocol.content import TextContent
from ..protocol.errors import DEFAULT_MAX_ERROR_TEXT, INTERNAL_ERROR, McpError, flatten_text
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
    """Middleware that turns the exceptions raised inside it — by the handlers of
    resources, prompts and completions, and by the middleware registered after it —
    into the answers ``rules`` give, by exception type (the most derived class with a
    rule wins; subclasses match).

    An exception a tool raises is already an ``isError`` result by the time middleware
    sees it (docs/errors.md): a ``"tool"`` rule is for what the middleware after this
    one raises around a ``tools/call`` (a rate limit, say, that the model should read
    rather than the client). ``McpError`` and cancellation pass untouched, and so does
    an exception no rule matches: the server answers it -32603 ``Internal error`` with a
    reference id (or its text, with ``expose_internal_errors``).

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

    def rule_for(self, exc: BaseException) -> ErrorRule | None:
        """The rule for ``exc`` (None: it passes untouched)."""
        if isinstance(exc, (McpError, asyncio.CancelledError)):
            return None
        for kind in type(exc).__mro__:
            if kind in self.rules:
                return self.rules[kind]
        return None

    async def __call__(self, ctx: Context, call_next: CallNext) -> Any:
        try:
            return await call_next()
        except BaseException as exc:
            rule = self.rule_for(exc)
            if rule is None:
                raise
            answer = self._answer(ctx, exc, rule)
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
