"""What the client does with what the server starts: its questions (elicitation,
sampling, roots — as legacy-era requests or as a modern ``InputRequiredResult``), its
``ping``, and its notifications (log messages, and everything else handed to
``on_notification``)."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
from collections.abc import Callable
from typing import Any

import msgspec

from ..protocol.errors import INVALID_PARAMS, METHOD_NOT_FOUND, MISSING_CLIENT_CAPABILITY, McpError, flatten_text
from ..protocol.events import RequestReceived
from ..protocol.interactive import (
    ELICIT,
    LIST_ROOTS,
    SAMPLE,
    CreateMessageParams,
    ElicitRequestParams,
    InputRequest,
)
from ..protocol.types import EmptyResult, Root
from ..runtime.threads import is_async_callable, run_sync
from .options import ClientOptions

__all__ = ["ServerMessages", "input_key"]

_decode_dict = msgspec.json.Decoder(dict[str, Any]).decode
_LIST_CHANGED = {
    "notifications/tools/list_changed": "tools",
    "notifications/prompts/list_changed": "prompts",
    "notifications/resources/list_changed": "resources",
}
log = logging.getLogger("mcpkit.client")

_INPUT_KEY: contextvars.ContextVar[str | None] = contextvars.ContextVar("mcpkit_input_key", default=None)


def input_key() -> str | None:
    """In a callback answering a 2026-07-28 server's question: the question's key in the
    ``InputRequiredResult``'s ``inputRequests`` (None for a legacy server's request) — what a
    proxy relaying the question downstream keeps, so the client's answer comes back by it."""
    return _INPUT_KEY.get()


def _with_defaults(result: dict[str, Any], request: ElicitRequestParams) -> dict[str, Any]:
    """An accepted form answer with the schema's ``default`` filled in for every
    property the user left out (SEP-1034)."""
    if result.get("action") != "accept" or not request.requested_schema:
        return result
    props = request.requested_schema.get("properties")
    content = result.get("content")
    if not isinstance(props, dict):
        return result
    filled = dict(content) if isinstance(content, dict) else {}
    for name, prop in props.items():
        if name not in filled and isinstance(prop, dict) and "default" in prop:
            filled[name] = prop["default"]
    return {**result, "content": filled}


class ServerMessages:
    """Answers the server's questions with the callbacks in :class:`ClientOptions`
    and routes its notifications. Async ``on_log`` callbacks run as tasks kept here
    until they finish."""

    def __init__(self, options: ClientOptions) -> None:
        self.options = options
        #: The roots the client offers now (``Client.set_roots`` changes them).
        self.roots: list[Root] | None = options.roots
        self._tasks: set[asyncio.Future[Any]] = set()
        self._listeners: list[Callable[[str, dict[str, Any]], None]] = []

    def listen(self, listener: Callable[[str, dict[str, Any]], None]) -> Callable[[], None]:
        """Call ``listener(method, params)`` for every notification from now on; returns
        the function that stops it."""
        self._listeners.append(listener)

        def stop() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return stop

    async def on_request(self, ev: RequestReceived) -> Any:
        """The result for a legacy-era server request; ``McpError(-32601)`` for one we
        do not serve, ``McpError(-32602)`` for malformed params. A callback's
        :class:`McpError` is the error response; any other exception from it becomes
        -32603 (logged)."""
        if ev.method == "ping":
            return EmptyResult()
        if ev.method not in (ELICIT, SAMPLE, LIST_ROOTS):
            raise McpError(METHOD_NOT_FOUND, f"Method not found: {flatten_text(ev.method, 256)}")
        try:
            params = _decode_dict(ev.params) if ev.params else {}
        except (msgspec.DecodeError, RecursionError):
            raise McpError(INVALID_PARAMS, "Invalid params") from None
        return await self.answer(ev.method, params, unknown=METHOD_NOT_FOUND)

    async def answer(self, method: str, params: dict[str, Any], *, unknown: int = MISSING_CLIENT_CAPABILITY) -> Any:
        """The answer to one question, from the matching callback. Raises
        ``McpError(unknown)`` if this client has no callback for ``method`` (it did not
        declare the capability), ``McpError(-32602)`` for params of the wrong shape, and
        whatever the callback raises."""
        if method == LIST_ROOTS and self.options.on_roots is not None:
            on_roots = self.options.on_roots
            roots = await on_roots() if is_async_callable(on_roots) else await run_sync(on_roots)
            return {"roots": [msgspec.to_builtins(root) for root in roots]}
        if method == LIST_ROOTS and self.roots is not None:
            return {"roots": msgspec.to_builtins(self.roots)}
        if method == ELICIT and self.options.on_elicit is not None:
            request = _convert(params, ElicitRequestParams)
            result = await _call(self.options.on_elicit, request)
            return _with_defaults(_builtins(result), request)
        if method == SAMPLE and self.options.on_sample is not None:
            return _builtins(await _call(self.options.on_sample, _convert(params, CreateMessageParams)))
        raise McpError(unknown, f"This client does not answer {flatten_text(method, 256)}")

    async def answer_all(self, requests: dict[str, InputRequest]) -> dict[str, Any]:
        """Modern era: the ``inputResponses`` for an ``InputRequiredResult``'s
        ``inputRequests``, answered concurrently. Raises what :meth:`answer` raises, as a
        local error naming the question."""
        keys = list(requests)

        async def keyed(key: str) -> Any:
            _INPUT_KEY.set(key)  # in the task gather makes for it: this answer's alone
            return await self.answer(requests[key].method, requests[key].params)

        try:
            results = await asyncio.gather(*(keyed(k) for k in keys))
        except McpError as exc:
            exc.local = True  # raised here, never sent by the server
            raise
        return dict(zip(keys, results, strict=True))

    def on_notification(self, method: str, params: msgspec.Raw) -> None:
        """Route one notification; a malformed one is dropped."""
        try:
            data = _decode_dict(params) if params else {}
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
            return
        on_log = self.options.on_log
        if method == "notifications/message" and on_log is not None:
            level, logger = data.get("level"), data.get("logger")
            self._run(
                on_log(level if isinstance(level, str) else "info", data.get("data"), logger if isinstance(logger, str) else None)
            )
        on_list_changed = self.options.on_list_changed
        if on_list_changed is not None and method in _LIST_CHANGED:
            self._run(on_list_changed(_LIST_CHANGED[method]))
        for listener in tuple(self._listeners):
            listener(method, data)
        if self.options.on_notification is not None:
            self.options.on_notification(method, data)

    def _run(self, result: Any) -> None:
        """Keep an async callback's awaitable running until it finishes."""
        if inspect.isawaitable(result):
            task = asyncio.ensure_future(result)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)


def _convert(params: dict[str, Any], tp: type[Any]) -> Any:
    try:
        return msgspec.convert(params, tp)
    except (msgspec.ValidationError, RecursionError) as exc:
        raise McpError(INVALID_PARAMS, f"Invalid params: {flatten_text(str(exc), 256)}") from None


async def _call(callback: Any, request: Any) -> Any:
    """Call a user callback, sync (on a worker thread) or async."""
    if is_async_callable(callback):
        return await callback(request)
    result = await run_sync(callback, request)
    if inspect.isawaitable(result):
        return await result
    return result


def _builtins(result: Any) -> dict[str, Any]:
    """A callback's result (a result struct or a dict) as a JSON object."""
    out = msgspec.to_builtins(result) if isinstance(result, msgspec.Struct) else result
    if not isinstance(out, dict):
        raise TypeError(f"a callback must return a result or a dict, not {type(result).__name__}")
    out.pop("__value__", None)
    return out
