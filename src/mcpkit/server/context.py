"""The per-request :class:`Context` handed to handlers and middleware: what the request
is, logging, progress, tasks. Asking the client is the mixin of :mod:`.asking`."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import msgspec

from ..auth.identity import CURRENT, AccessToken
from ..protocol import meta as meta_keys
from ..protocol.engine import is_request_id
from ..protocol.eras import EraPolicy
from ..protocol.errors import INVALID_PARAMS, McpError, flatten_text
from ..protocol.events import RequestId
from ..protocol.types import LOG_LEVELS, Implementation, LogLevel
from ..runtime.outbound import Notifier, Outbound
from .asking import Asking
from .interaction import Asker

if TYPE_CHECKING:
    from .tasks import NoTask, TaskHook

__all__ = ["Context", "LogLevel"]

_RANK = {name: i for i, name in enumerate(LOG_LEVELS)}
_log = logging.getLogger("mcpkit.server")

_decode_params = msgspec.json.Decoder(dict[str, Any]).decode


class Context(Asking):
    """What a handler knows about the request it serves, and how it talks back.

    ``era`` is ``"modern"`` (2026-07-28, stateless) or ``"legacy"`` (after
    ``initialize``); handler code normally need not care. Notifications sent through
    the context (log messages, progress) belong to this request: they are dropped once
    the request has finished or been cancelled.

    Handlers ask the client with :meth:`elicit`, :meth:`elicit_url`, :meth:`sample` and
    :meth:`list_roots` — the same code in both eras (docs/interactive.md).
    """

    __slots__ = (  # and the asking state, in Asking's
        "_done",
        "_last_progress",
        "_lifespan",
        "_log_level",
        "_max_text",
        "_outbound",
        "_params",
        "_policy",
        "_progress_token",
        "_raw_params",
        "_session",
        "_task_hook",
        "client_capabilities",
        "client_info",
        "era",
        "meta",
        "method",
        "protocol_version",
        "request_id",
        "state",
    )

    def __init__(
        self,
        *,
        request_id: RequestId,
        method: str,
        policy: EraPolicy,
        protocol_version: str,
        client_info: Implementation | None,
        client_capabilities: dict[str, Any],
        meta: dict[str, Any],
        raw_params: msgspec.Raw,
        outbound: Outbound,
        log_level: str | None,
        session: Any = None,
        max_text: int = 1024,
        asker: Asker | None = None,
        ask_timeout: float = 300.0,
        lifespan: Any = None,
    ) -> None:
        self.request_id = request_id
        self.method = method
        self._policy = policy
        self.era = policy.name
        self.protocol_version = protocol_version
        self.client_info = client_info
        self.client_capabilities = client_capabilities
        #: The request's ``params._meta`` (empty dict when absent).
        self.meta = meta
        self._raw_params = raw_params
        self._params: dict[str, Any] | None = None
        self._outbound = outbound
        self._log_level = log_level
        self._max_text = max_text
        token = meta.get(meta_keys.PROGRESS_TOKEN)
        self._progress_token = token if token is not None and is_request_id(token) else None
        self._last_progress: float | None = None
        self._done = False
        self._session = session
        self._lifespan = lifespan
        self._asker = asker
        self._ask_timeout = ask_timeout
        self._asked = 0
        #: How this call of a task tool becomes a task (server/tasks.py); None: no task tool.
        self._task_hook: TaskHook | NoTask | None = None
        #: Free-form per-request storage for middleware and handlers.
        self.state: dict[str, Any] = {}

    @property
    def lifespan(self) -> Any:
        """What the server's lifespan yielded (``Server(lifespan=...)``; None without
        one). Handlers can also ask for it by annotating a parameter with its type."""
        return self._lifespan

    @property
    def identity(self) -> AccessToken | None:
        """Who is asking, as the server's authorization verified it (docs/auth.md):
        subject, client id, scopes and claims. None without authorization (stdio, or a
        server that does not require it)."""
        return CURRENT.get()

    @property
    def params(self) -> dict[str, Any]:
        """The request's ``params`` as a dict (decoded on first use).

        Raises ``McpError(-32602)`` if they hold valid JSON that cannot be decoded (a
        number out of range, nesting too deep): members the method itself does not read
        are decoded only here.
        """
        if self._params is None:
            try:
                self._params = _decode_params(self._raw_params) if self._raw_params else {}
            except msgspec.DecodeError as exc:  # ValidationError included
                raise McpError(INVALID_PARAMS, f"Invalid params: {flatten_text(str(exc), 512)}") from None
            except RecursionError:
                raise McpError(INVALID_PARAMS, "Invalid params: nested too deeply") from None
        return self._params

    def _finish(self) -> None:
        if self._task_hook is not None and self._task_hook.task_id is not None:
            return  # a task's context lives on until its handler ends (server/tasks.py)
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
            return self._policy.log_by_default
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
        self._outbound.notify("notifications/message", params)

    async def debug(self, data: Any, *, logger: str | None = None) -> None:
        """``log("debug", data)``: sent only if the client's level lets it through."""
        await self.log("debug", data, logger=logger)

    async def info(self, data: Any, *, logger: str | None = None) -> None:
        """``log("info", data)``: sent only if the client's level lets it through."""
        await self.log("info", data, logger=logger)

    async def warning(self, data: Any, *, logger: str | None = None) -> None:
        """``log("warning", data)``: sent only if the client's level lets it through."""
        await self.log("warning", data, logger=logger)

    async def error(self, data: Any, *, logger: str | None = None) -> None:
        """``log("error", data)``: sent only if the client's level lets it through."""
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
        sent. In a task (docs/tasks.md) nothing is sent: ``message`` (else "progress/total")
        becomes the task's status message.
        """
        hook = self._task_hook
        if hook is not None and hook.task_id is not None and not self._done:
            text = message or (f"{progress:g}/{total:g}" if total is not None else f"{progress:g}")
            await hook.report(flatten_text(text, self._max_text))
            return
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
            params["message"] = flatten_text(message, self._max_text)
        self._outbound.notify("notifications/progress", params)

    async def close_sse_stream(self) -> bool:
        """End the HTTP connection of this request's SSE stream now, without ending the
        request: its later messages and result are stored, and the client reconnects
        (after the server's ``retry`` interval) with ``Last-Event-ID`` to get them —
        SSE polling, for long work that should not hold a connection (docs/http.md).

        Only the legacy era over Streamable HTTP at 2025-11-25 (a revision that primes
        its streams) has this; a request answered with JSON starts its stream here.
        Returns False, and does nothing, elsewhere (stdio, memory, the modern era,
        ``json_response=True``, older revisions) and once the request has finished.
        """
        if self._done or not isinstance(self._outbound, Notifier):
            return False
        return self._outbound.close_stream()

    # --- tasks (docs/tasks.md) --------------------------------------------------------------

    @property
    def task_id(self) -> str | None:
        """The id of the task this call runs as (None: it is not a task)."""
        hook = self._task_hook
        return hook.task_id if hook is not None else None

    async def start_task(self, *, required: bool = False) -> bool:
        """Make this call a task from here on, in a tool registered with
        ``task="deferred"`` (docs/tasks.md): the call is answered now with the task's
        handle, and the handler goes on in the background (its later questions wait for
        ``tasks/update``; its log and progress notifications are not sent). Returns True
        once the call is a task (at once if it already is: ``task=True`` tools).

        Returns False, and the handler goes on as a plain call, when it cannot become one:
        the client did not declare the tasks extension (or the era is 2025-11-25), or the
        server's task store is full. With ``required`` it raises instead:
        ``McpError(-32021)`` naming the extension, or -32603 (HTTP 503) for a full store.
        Questions asked before (input rounds) keep their answers. Raises ``RuntimeError``
        outside a call of a tool registered with ``task=``.
        """
        hook = self._task_hook
        if hook is None:
            raise RuntimeError("ctx.start_task() needs a tool registered with task='deferred' (or task=True)")
        return await hook.start(required)
