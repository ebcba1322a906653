"""What a handler asks the client — ``ctx.elicit``, ``ctx.elicit_url``, ``ctx.sample``,
``ctx.list_roots`` — as a mixin the :class:`~mcpkit.Context` inherits (:mod:`.context`).
The capability check is made here; how the question travels in each era is the
request's asker's (:mod:`.interaction`).
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..protocol.interactive import (
    ELICIT,
    LIST_ROOTS,
    SAMPLE,
    CreateMessageResult,
    ElicitResult,
    ListRootsResult,
    SamplingMessage,
    missing_capability,
)
from ..protocol.types import Root
from ..runtime.outbound import Outbound
from ..runtime.peer import check_timeout
from .interaction import Asker, content_converter, elicitation_schema, invalid_content

__all__ = ["Asking"]


class Asking:
    """Asking the client, in both eras (docs/interactive.md): a mixin of
    :class:`~mcpkit.Context`, which holds the attributes."""

    __slots__ = ("_ask_timeout", "_asked", "_asker")  # set by Context.__init__

    client_capabilities: dict[str, Any]
    _asker: Asker | None
    _ask_timeout: float
    _asked: int
    _done: bool
    _outbound: Outbound

    async def _ask(self, kind: str, method: str, params: dict[str, Any], key: str | None, timeout: float | None) -> Any:
        missing = missing_capability(self.client_capabilities, method, params)
        if missing is not None:
            raise missing
        if self._asker is None or self._done:
            raise RuntimeError("this request can no longer ask the client anything")
        self._asked += 1
        if key is None:
            key = f"{kind}-{self._asked}"
        elif not isinstance(key, str) or not key:
            raise ValueError("key must be a non-empty string")
        wait = self._ask_timeout if timeout is None else check_timeout(timeout)
        return await self._asker.ask(key, method, params, wait)

    async def elicit(self, message: str, schema: Any, *, key: str | None = None, timeout: float | None = None) -> ElicitResult:
        """Ask the user to fill in a form (elicitation, form mode).

        ``schema`` is a JSON Schema dict (a flat object of string, number, integer,
        boolean and enum properties, with titles and defaults if you like) or a class
        (msgspec struct, dataclass, TypedDict, pydantic model) of such fields. Returns the
        user's :class:`ElicitResult`: ``action`` is ``"accept"``, ``"decline"`` or
        ``"cancel"``; on accept, ``content`` holds the answers and ``value`` the same
        converted to ``schema``'s class (the dict itself for a schema dict).

        ``key`` names the question in the modern era's ``inputRequests`` (default
        ``"elicit-N"``, N counting this request's questions); ``timeout`` bounds the
        legacy-era wait (default: the server's ``ask_timeout``).

        Raises ``McpError(-32021)`` if the client did not declare elicitation (nothing
        is sent), ``McpError(-32602)`` if accepted content does not fit ``schema``'s
        class, ``ValueError`` for a schema elicitation cannot carry. Legacy era: the
        client's error response as :class:`McpError`, ``RequestTimeout``,
        ``ConnectionClosed``; cancelling the handler cancels the request on the wire.
        Modern era: the first unanswered question ends this run of the handler (an
        ``InputRequired`` signal, a ``BaseException`` — do not catch it); the handler is
        run again from the start with the answer once the client retries.
        """
        requested = elicitation_schema(schema)
        params = {"mode": "form", "message": message, "requestedSchema": requested}
        result: ElicitResult = await self._ask("elicit", ELICIT, params, key, timeout)
        if result.action == "accept":
            content = result.content or {}
            convert = content_converter(schema)
            try:
                result.value = content if convert is None else convert(content)
            except (ValueError, TypeError, msgspec.ValidationError) as exc:
                raise invalid_content(exc) from None
        return result

    async def elicit_url(
        self, message: str, url: str, elicitation_id: str, *, key: str | None = None, timeout: float | None = None
    ) -> ElicitResult:
        """Ask the user to open ``url`` for an interaction that must not pass through
        the client (elicitation, URL mode). ``"accept"`` means the user agreed to go
        there, not that they finished: the server learns that out of band, and may tell
        the client with :meth:`~Context.complete_elicitation`. Raises as :meth:`~Context.elicit` does
        (-32021 unless the client declared URL elicitation)."""
        params = {"mode": "url", "message": message, "url": url, "elicitationId": elicitation_id}
        result: ElicitResult = await self._ask("elicit", ELICIT, params, key, timeout)
        return result

    async def complete_elicitation(self, elicitation_id: str) -> None:
        """Tell the client that the URL interaction ``elicitation_id`` has finished
        (``notifications/elicitation/complete``; dropped once this request is done)."""
        if not self._done:
            self._outbound.notify("notifications/elicitation/complete", {"elicitationId": elicitation_id})

    async def sample(
        self,
        messages: str | list[SamplingMessage] | list[dict[str, Any]],
        max_tokens: int,
        *,
        system_prompt: str | None = None,
        temperature: float | None = None,
        stop_sequences: list[str] | None = None,
        model_preferences: dict[str, Any] | None = None,
        include_context: str | None = None,
        tools: list[dict[str, Any]] | None = None,
        tool_choice: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        key: str | None = None,
        timeout: float | None = None,
    ) -> CreateMessageResult:
        """Ask the client's language model for a message (sampling).

        ``messages`` is the conversation (a string is one user text message). ``tools``
        and ``tool_choice`` (2025-11-25) let the model answer with ``tool_use`` blocks;
        they need the client's ``sampling.tools`` capability. Returns the
        :class:`CreateMessageResult` (``.text`` joins its text). Raises as :meth:`~Context.elicit`
        does (-32021 unless the client declared sampling).
        """
        if isinstance(messages, str):
            conversation: list[Any] = [{"role": "user", "content": {"type": "text", "text": messages}}]
        else:
            conversation = [msgspec.to_builtins(m) if isinstance(m, SamplingMessage) else m for m in messages]
        params: dict[str, Any] = {"messages": conversation, "maxTokens": max_tokens}
        optional = {
            "systemPrompt": system_prompt,
            "temperature": temperature,
            "stopSequences": stop_sequences,
            "modelPreferences": model_preferences,
            "includeContext": include_context,
            "tools": tools,
            "toolChoice": tool_choice,
            "metadata": metadata,
        }
        params.update((k, v) for k, v in optional.items() if v is not None)
        result: CreateMessageResult = await self._ask("sample", SAMPLE, params, key, timeout)
        return result

    async def list_roots(self, *, key: str | None = None, timeout: float | None = None) -> list[Root]:
        """The client's roots (the directories or other URIs it lets the server work
        in). Raises as :meth:`~Context.elicit` does (-32021 unless the client declared roots)."""
        result: ListRootsResult = await self._ask("roots", LIST_ROOTS, {}, key, timeout)
        return result.roots
