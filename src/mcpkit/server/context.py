"""One request being served, as its handler sees it (:class:`Context`) and as the
server does (:class:`Call`).

The :class:`Context` is what handlers and middleware get: what the request is, who
asks, logging and progress, asking the client (``elicit``, ``sample``, ``list_roots``:
the same code in both eras, docs/interactive.md) and becoming a task (docs/tasks.md).
The :class:`Call` is the server's side of the same request: the connection's session,
the era's policy, the way back to the client (``outbound``) and how questions travel
(``asker``), the task the call may become (a :class:`TaskHook`), and whether it is over.

The dispatcher makes one Call per request, builds the Context on it (passing the Call
as the Context's outbound: while it lasts, a call *is* the request's way back) and gives
both to the method's handler. Whatever changes while the request is served changes on
the Call, through its own methods, and the Context reads it there:

* the request ends: the dispatcher finishes the call (:meth:`~Call.finish`) — unless it
  became a task, which the task manager ends (:meth:`~Call.end_task`) when its handler
  stops;
* the call becomes a task: :meth:`Context.start_task` asks the call's :class:`TaskHook`
  to start one, and switches the call to the task's asker
  (:meth:`~Call.become_task`): from then on questions wait for ``tasks/update`` and
  notifications go nowhere.

Rules the Context keeps: nothing goes out once the call is over (notifications are
dropped, asking raises ``RuntimeError``); a question is asked only of a client that
declared the capability for it (-32021 otherwise, nothing sent); progress must increase.
This module knows nothing of tasks beyond :class:`TaskHook` (server/tasks.py implements
it) and nothing of the dispatcher.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

import msgspec

from ..auth.identity import CURRENT, AccessToken
from ..protocol import meta as meta_keys
from ..protocol.engine import is_request_id
from ..protocol.eras import EraPolicy
from ..protocol.errors import INVALID_PARAMS, McpError, flatten_text
from ..protocol.events import RequestId
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
from ..protocol.request_state import new_exchange_id
from ..protocol.types import LOG_LEVELS, Implementation, LogLevel, Result, Root
from ..protocol.wire import LOG_RANK
from ..runtime.outbound import DROP, Notifier, Outbound
from ..runtime.peer import check_timeout
from .interaction import Asker, ReplayAsker, content_converter, elicitation_schema, invalid_content
from .session import Session

__all__ = ["Context", "Call", "TaskHook", "LogLevel", "mounted_context", "relay_question", "note_tool_failure"]

_log = logging.getLogger("mcpkit.server")

_decode_params = msgspec.json.Decoder(dict[str, Any]).decode


class TaskHook(Protocol):
    """What a :class:`Context` needs of the task a tool's call may become
    (server/tasks.py makes one for each call of a tool registered with ``task=``)."""

    @property
    def task_id(self) -> str | None:
        """The task's id once the call is one (None before, or when it cannot be)."""
        ...

    async def start(self, required: bool) -> Asker | None:
        """Make the call a task: write it down, let the call be answered with the task's
        handle, and return the asker the handler's questions go to from now on. Returns
        None when the call cannot become a task; with ``required`` it raises the
        reason instead (an ``McpError``)."""
        ...

    async def report(self, message: str) -> None:
        """The handler's progress, as the task's status message."""
        ...


class Call:
    """The server's side of one request being served (see the module's docstring):
    ``session`` (the connection's legacy state, or None), ``policy`` (its era),
    ``outbound`` (the way back to the client), ``asker`` (how its questions travel),
    ``task`` (the hook of a task tool's call, else None), ``done``, and ``params_size``
    (the bytes of the request's params: what a task holds while its handler runs), and
    ``failure``: the ``isError`` result a tool's exception became and that exception
    (:func:`note_tool_failure`) — left unset until a tool fails, so that a call that
    succeeds pays nothing for it until it is answered (read it with ``getattr(call,
    "failure", None)``; :meth:`finish` lets it go).

    A call is an :class:`~mcpkit.runtime.outbound.Outbound` of its own: its
    notifications go to ``outbound`` until it is over, then nowhere.
    """

    __slots__ = ("asker", "done", "failure", "outbound", "params_size", "policy", "session", "task", "tasked")

    failure: tuple[Any, BaseException] | None

    def __init__(self, session: Any, outbound: Outbound, asker: Asker | None, policy: EraPolicy, *, params_size: int = 0) -> None:
        self.session = session
        self.params_size = params_size
        self.outbound = outbound
        self.asker = asker
        self.policy = policy
        self.task: TaskHook | None = None
        #: The call became a task: it lives on after the request is answered.
        self.tasked = False
        self.done = False

    def notify(self, method: str, params: Any = None) -> None:
        """Send a notification to the client; dropped once the call is over."""
        if not self.done:
            self.outbound.notify(method, params)

    async def request(self, method: str, params: Any, *, timeout: float) -> msgspec.Raw:
        """A request to the client over ``outbound``: raises what it raises
        (``McpError``, ``RequestTimeout``, ``ConnectionClosed``); on cancellation the
        request is cancelled on the wire."""
        return await self.outbound.request(method, params, timeout=timeout)

    def become_task(self, asker: Asker) -> None:
        """The call is a task from now on: its questions go to ``asker``, its
        notifications nowhere, and answering the request does not end it."""
        self.asker = asker
        self.outbound = DROP
        self.tasked = True

    def finish(self) -> None:
        """The request has been answered (or has failed, or was cancelled): nothing more
        goes out — unless the call became a task, which goes on until :meth:`end_task`.
        A tool's exception noted on the call is let go: its traceback holds the frames that
        hold this call, a cycle the garbage collector would otherwise have to find."""
        self.failure = None
        if not self.tasked:
            self.done = True

    def end_task(self) -> None:
        """The task's handler has stopped: the call is over, and no task any more."""
        self.task = None
        self.tasked = False
        self.done = True


class Context:
    """What a handler knows about the request it serves, and how it talks back.

    ``era`` is ``"modern"`` (2026-07-28, stateless) or ``"legacy"`` (after
    ``initialize``); handler code normally need not care. Notifications sent through
    the context (log messages, progress) belong to this request: they are dropped once
    the request has finished or been cancelled.

    Handlers ask the client with :meth:`elicit`, :meth:`elicit_url`, :meth:`sample` and
    :meth:`list_roots` — the same code in both eras (docs/interactive.md).
    """

    __slots__ = (
        "_ask_timeout",
        "_asked",
        "_call",
        "_exchange",
        "_last_progress",
        "_lifespan",
        "_log_level",
        "_max_text",
        "_params",
        "_progress_token",
        "_raw_params",
        "_renamed",
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
        self.era = policy.name
        self.protocol_version = protocol_version
        self.client_info = client_info
        self.client_capabilities = client_capabilities
        #: The request's ``params._meta`` (empty dict when absent).
        self.meta = meta
        self._raw_params = raw_params
        self._params: dict[str, Any] | None = None
        self._renamed: dict[str, Any] | None = None
        # The dispatcher passes the Call it made for this request as the outbound (it
        # carries the session and the asker then); any other outbound gets a call of its own.
        self._call = outbound if isinstance(outbound, Call) else Call(session, outbound, asker, policy)
        self._log_level = log_level
        self._max_text = max_text
        token = meta.get(meta_keys.PROGRESS_TOKEN)
        self._progress_token = token if token is not None and is_request_id(token) else None
        self._last_progress: float | None = None
        self._lifespan = lifespan
        self._ask_timeout = ask_timeout
        self._asked = 0
        self._exchange: str | None = None
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
    def session_id(self) -> str | None:
        """An opaque id of the legacy session this request belongs to (a stdio
        connection, an in-memory pair, an HTTP session): the same for each of its
        requests, random, and this process's own — not the ``Mcp-Session-Id``, and
        different on each node a shared HTTP session reaches. None in the modern era,
        which has no session. Never raises."""
        session = self._call.session
        if isinstance(session, Session) and session.initialized:
            return session.id
        return None

    @property
    def exchange_id(self) -> str:
        """The id of this exchange with the client: in the modern era the same on every
        round of a multi-round-trip request (random, sealed in its ``requestState``, so
        the client can neither choose nor change it) and different for every new call;
        in the legacy era and in a task, where one run serves the whole request, an id of
        this request alone. A ``requestState`` can be presented again until it expires,
        so a handler whose step must happen at most once per exchange records this id
        (docs/interactive.md, "Replays"). Never raises."""
        if self._exchange is None:
            asker = self._call.asker
            self._exchange = asker.exchange_id if isinstance(asker, ReplayAsker) else new_exchange_id()
        return self._exchange

    @property
    def params(self) -> dict[str, Any]:
        """The request's ``params`` as a dict (decoded on first use).

        Raises ``McpError(-32602)`` if they hold valid JSON that cannot be decoded (a
        number out of range, nesting too deep): members the method itself does not read
        are decoded only here.
        """
        if self._params is None:
            try:
                params = _decode_params(self._raw_params) if self._raw_params else {}
                self._params = {**params, **self._renamed} if self._renamed else params
            except msgspec.DecodeError as exc:  # ValidationError included
                raise McpError(INVALID_PARAMS, f"Invalid params: {flatten_text(str(exc), 512)}") from None
            except RecursionError:
                raise McpError(INVALID_PARAMS, "Invalid params: nested too deeply") from None
        return self._params

    def tool_exception(self, result: Any) -> BaseException | None:
        """The exception a tool raised that ``result``, the ``isError`` result of this
        ``tools/call``, reports — for middleware that answers a tool's failure its own way
        (:class:`~mcpkit.middleware.ErrorMapping` does): ``result = await call_next()``,
        then ``ctx.tool_exception(result)``. The tool of a mounted server and the wrapper
        of a transformed tool count (their middleware and the parent's see the same
        request), and so does a ``ToolError``.

        None when ``result`` is not the very result the server made of a tool's
        exception: the tool returned it (an ``isError`` result it built, a success), the
        tool ran past its time limit, it came from a proxied server, or a middleware
        inside this one answered with a result of its own. A tool run as a task reports
        its failure later, through ``tasks/result``: its call's result is the task's
        handle. Never raises."""
        failure = getattr(self._call, "failure", None)
        if failure is not None and failure[0] is result:
            exc: BaseException = failure[1]
            return exc
        return None

    # --- asking the client (docs/interactive.md) -------------------------------------------

    async def _ask(self, kind: str, method: str, params: dict[str, Any], key: str | None, timeout: float | None) -> Any:
        """The client's answer to one question, through the call's asker. Raises the
        -32021 of a capability the client did not declare, ``RuntimeError`` once the
        call is over, ``ValueError`` for an empty key, and what the asker raises."""
        missing = missing_capability(self.client_capabilities, method, params)
        if missing is not None:
            raise missing
        call = self._call
        if call.asker is None or call.done:
            raise RuntimeError("this request can no longer ask the client anything")
        self._asked += 1
        if key is None:
            key = f"{kind}-{self._asked}"
        elif not isinstance(key, str) or not key:
            raise ValueError("key must be a non-empty string")
        wait = self._ask_timeout if timeout is None else check_timeout(timeout)
        answer: Result = await call.asker.ask(key, method, params, wait)
        return answer

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
        self._call.notify("notifications/elicitation/complete", {"elicitationId": elicitation_id})

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

    # --- logging -------------------------------------------------------------------------

    def should_log(self, level: LogLevel) -> bool:
        """Whether a message at ``level`` would reach the client.

        Modern era: only if the request carried ``io.modelcontextprotocol/logLevel`` and
        ``level`` is at or above it. Legacy era: at or above the level the client set
        with ``logging/setLevel`` (everything until it sets one).
        """
        call = self._call
        if call.done:
            return False
        if self._log_level is None:
            return call.policy.log_by_default
        return LOG_RANK.get(level, 0) >= LOG_RANK.get(self._log_level, 0)

    async def log(self, level: LogLevel, data: Any, *, logger: str | None = None) -> None:
        """Send a ``notifications/message`` to the client (when its level allows).

        Raises ``ValueError`` for an unknown level. Never raises for a closed
        connection: the message is dropped.
        """
        if level not in LOG_RANK:
            raise ValueError(f"unknown log level {level!r}; expected one of {', '.join(LOG_LEVELS)}")
        if not self.should_log(level):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        self._call.notify("notifications/message", params)

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
        call = self._call
        hook = call.task
        if hook is not None and hook.task_id is not None and not call.done:
            text = message or (f"{progress:g}/{total:g}" if total is not None else f"{progress:g}")
            await hook.report(flatten_text(text, self._max_text))
            return
        token = self._progress_token
        if token is None or call.done:
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
        call.notify("notifications/progress", params)

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
        outbound = self._call.outbound
        if self._call.done or not isinstance(outbound, Notifier):
            return False
        return outbound.close_stream()

    # --- tasks (docs/tasks.md) --------------------------------------------------------------

    @property
    def task_id(self) -> str | None:
        """The id of the task this call runs as (None: it is not a task)."""
        hook = self._call.task
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
        call = self._call
        hook = call.task
        if hook is None:
            raise RuntimeError("ctx.start_task() needs a tool registered with task='deferred' (or task=True)")
        if hook.task_id is not None:
            return True
        asker = await hook.start(required)
        if asker is None:
            return False
        call.become_task(asker)
        return True


def mounted_context(ctx: Context, renamed: dict[str, Any], lifespan: Any) -> Context:
    """The Context a mounted server's handler and middleware see for the request ``ctx``
    (server/mount.py): the same request, call, asker and ``state``, with the params
    members in ``renamed`` as that server names them (``{"name": ...}`` or
    ``{"uri": ...}``) and that server's lifespan state."""
    import copy  # loaded with the first mounted call: a server without mounts never imports it (start-up cost)

    inner = copy.copy(ctx)
    inner._renamed = {**(ctx._renamed or {}), **renamed}
    inner._params = None
    inner._lifespan = lifespan
    return inner


def note_tool_failure(ctx: Context, result: Any, exc: BaseException) -> None:
    """Write down on the call of ``ctx`` that the ``isError`` ``result`` reports the
    exception ``exc`` a tool raised (server/definitions/tool_def.py), for
    :meth:`Context.tool_exception`. The call is shared by every Context of the request
    (:func:`mounted_context`), so the servers a tool is mounted in see it too."""
    ctx._call.failure = (result, exc)


async def relay_question(ctx: Context, method: str, params: dict[str, Any], *, key: str | None = None) -> Result:
    """Ask the client of ``ctx`` the question ``method`` (``elicitation/create``,
    ``sampling/createMessage``, ``roots/list``) with ``params`` as they are — another
    server's question relayed by a proxy — through the request's asker, as ``ctx.elicit``
    and the others do: the same capability check (-32021), the same keys (or ``key``) and
    deadlines. Returns the typed answer; raises what those methods raise
    (``InputRequired`` in a modern input round)."""
    kind = {ELICIT: "elicit", SAMPLE: "sample", LIST_ROOTS: "roots"}.get(method)
    if kind is None:
        raise ValueError(f"not a question to a client: {method!r}")
    return await ctx._ask(kind, method, params, key, None)  # type: ignore[no-any-return]
