"""What the client does with messages the server starts: its requests (``ping``,
``roots/list``) and its notifications (log messages, and everything else handed to
``on_notification``)."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import msgspec

from ..protocol.errors import METHOD_NOT_FOUND, McpError, flatten_text
from ..protocol.events import RequestReceived
from ..protocol.types import EmptyResult
from .options import ClientOptions

__all__ = ["ServerMessages"]

_decode_dict = msgspec.json.Decoder(dict[str, Any]).decode


class ServerMessages:
    """Answers the server's requests and routes its notifications to the callbacks in
    :class:`ClientOptions`. Async ``on_log`` callbacks run as tasks kept here until
    they finish."""

    def __init__(self, options: ClientOptions) -> None:
        self.options = options
        self._tasks: set[asyncio.Future[Any]] = set()

    async def on_request(self, ev: RequestReceived) -> Any:
        """The result for a server request; ``McpError(-32601)`` for one we do not serve."""
        if ev.method == "ping":
            return EmptyResult()
        if ev.method == "roots/list" and self.options.roots is not None:
            return {"roots": msgspec.to_builtins(self.options.roots)}
        raise McpError(METHOD_NOT_FOUND, f"Method not found: {flatten_text(ev.method, 256)}")

    def on_notification(self, method: str, params: msgspec.Raw) -> None:
        """Route one notification; a malformed one is dropped."""
        try:
            data = _decode_dict(params) if params else {}
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
            return
        on_log = self.options.on_log
        if method == "notifications/message" and on_log is not None:
            level, logger = data.get("level"), data.get("logger")
            res = on_log(
                level if isinstance(level, str) else "info", data.get("data"), logger if isinstance(logger, str) else None
            )
            if inspect.isawaitable(res):
                task = asyncio.ensure_future(res)
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        if self.options.on_notification is not None:
            self.options.on_notification(method, data)
