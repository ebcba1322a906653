"""The per-request :class:`Context` handed to handlers and middleware."""

from __future__ import annotations

import logging
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from ._errors import flatten_text
from ._types import LOG_LEVELS, Implementation

if TYPE_CHECKING:
    from ._server import Server

__all__ = ["Context", "LogLevel", "is_context_type"]

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
_RANK = {name: i for i, name in enumerate(LOG_LEVELS)}
_log = logging.getLogger("mcpkit.server")

Notify = Callable[[str, dict[str, Any]], None]
_decode_params = msgspec.json.Decoder(dict[str, Any]).decode


def is_context_type(tp: Any) -> bool:
    """Whether a parameter annotated ``tp`` wants the :class:`Context` injected
    (``Context``, a subclass, or ``Context | None``)."""
    if isinstance(tp, type):
        return issubclass(tp, Context)
    return any(isinstance(a, type) and issubclass(a, Context) for a in typing.get_args(tp))


class Context:
    """What a handler knows about the request it serves, and how it talks back.

    ``era`` is ``"modern"`` (2026-07-28, stateless) or ``"legacy"`` (after
    ``initialize``); handler code normally need not care. Notifications sent through
    the context (log messages, progress) belong to this request: they are dropped once
    the request has finished or been cancelled.
    """

    __slots__ = (
        "_done",
        "_last_progress",
        "_log_level",
        "_notify",
        "_params",
        "_progress_token",
        "_raw_params",
        "_session",
        "client_capabilities",
        "client_info",
        "era",
        "meta",
        "method",
        "protocol_version",
        "request_id",
        "server",
        "state",
    )

    def __init__(
        self,
        server: Server,
        *,
        request_id: int | str,
        method: str,
        era: Literal["modern", "legacy"],
        protocol_version: str,
        client_info: Implementation | None,
        client_capabilities: dict[str, Any],
        meta: dict[str, Any],
        raw_params: msgspec.Raw,
        notify: Notify,
        log_level: str | None,
    ) -> None:
        self.server = server
        self.request_id = request_id
        self.method = method
        self.era = era
        self.protocol_version = protocol_version
        self.client_info = client_info
        self.client_capabilities = client_capabilities
        #: The request's ``params._meta`` (empty dict when absent).
        self.meta = meta
        self._raw_params = raw_params
        self._params: dict[str, Any] | None = None
        self._notify = notify
        self._log_level = log_level
        token = meta.get("progressToken")
        self._progress_token = token if type(token) in (int, str) else None
        self._last_progress: float | None = None
        self._done = False
        self._session: Any = None
        #: Free-form per-request storage for middleware and handlers.
        self.state: dict[str, Any] = {}

    @property
    def params(self) -> dict[str, Any]:
        """The request's ``params`` as a dict (decoded on first use)."""
        if self._params is None:
            self._params = _decode_params(self._raw_params) if self._raw_params else {}
        return self._params

    def _finish(self) -> None:
        self._done = True

    # --- logging -------------------------------------------------------------------------

    def should_log(self, level: LogLevel) -> bool:
        """Whether a message at ``level`` would reach the client.

        Modern era: only if the request carried ``io.modelcontextprotocol/logLevel`` and
        ``level`` is at or above it. Legacy era: at or above the level the client set
        with ``logging/setLevel`` (everything until it sets one).
        """
        if self._done:
            return False
        if self._log_level is None:
            return self.era == "legacy"
        return _RANK.get(level, 0) >= _RANK.get(self._log_level, 0)

    async def log(self, level: LogLevel, data: Any, *, logger: str | None = None) -> None:
        """Send a ``notifications/message`` to the client (when its level allows).

        Raises ``ValueError`` for an unknown level. Never raises for a closed
        connection: the message is dropped.
        """
        if level not in _RANK:
            raise ValueError(f"unknown log level {level!r}; expected one of {', '.join(LOG_LEVELS)}")
        if not self.should_log(level):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        self._notify("notifications/message", params)

    async def debug(self, data: Any, *, logger: str | None = None) -> None:
        await self.log("debug", data, logger=logger)

    async def info(self, data: Any, *, logger: str | None = None) -> None:
        await self.log("info", data, logger=logger)

    async def warning(self, data: Any, *, logger: str | None = None) -> None:
        await self.log("warning", data, logger=logger)

    async def error(self, data: Any, *, logger: str | None = None) -> None:
        await self.log("error", data, logger=logger)

    # --- progress ------------------------------------------------------------------------

    @property
    def progress_token(self) -> int | str | None:
        """The client's progress token, or None if it asked for no progress."""
        return self._progress_token

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send ``notifications/progress`` if the client asked for progress.

        ``progress`` must increase from one call to the next; a value that does not is
        dropped (the spec forbids sending it). After the request finished, nothing is
        sent.
        """
        token = self._progress_token
        if token is None or self._done:
            return
        if self._last_progress is not None and progress <= self._last_progress:
            _log.debug("progress %r not above %r; not sent", progress, self._last_progress)
            return
        self._last_progress = progress
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = flatten_text(message, self.server.max_error_text)
        self._notify("notifications/progress", params)
