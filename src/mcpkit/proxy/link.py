"""One connection of a proxy to the server behind it: a :class:`~mcpkit.Client` whose
callbacks relay the upstream server's questions and messages to the downstream request
that caused them.

A :class:`Link` forwards a downstream request (:meth:`Link.forward`) as the typed call of
its method, relaying progress to the downstream request's progress token. While the call
runs, the downstream :class:`~mcpkit.Context` is the link's *current* request: in a
context variable of the forwarding task, and in the link's list of requests in flight.
What the upstream server starts is relayed to it:

* a question (elicitation, sampling, roots) goes to the request it belongs to —
  the context variable's when the question comes from an input round of the modern era
  (the Client answers those in the calling task), else the most recent request in flight
  (a legacy server's request, which the Client answers on its reader's task) — through
  the downstream request's own asker (:func:`~mcpkit.server.context.relay_question`): a
  real request to a legacy client, an input round for a modern one (under the upstream
  round's own key, when the question comes from one);
* a link lent to an :class:`Asking` exchange (:mod:`.bridge`: a legacy server's call for
  a modern client, held between the client's rounds) hands every question to it, and
  sends progress and log messages to its current round;
* a log message goes to the most recent request in flight, filtered by the level its
  client chose; with none in flight, to the legacy connection the link is its own
  (:meth:`~mcpkit.server.session.Session.log`), else it is dropped (a shared link has no
  one connection to send it to, and the modern era no connection-wide way back);
* a cancelled downstream request cancels the forwarding task, and the Client cancels the
  upstream request on the wire;
* a call from a client of the tasks extension to a modern server behind declares the
  extension upstream; a task the server behind creates makes the downstream call a task
  of the proxy's (:meth:`Link._call_as_task`), which follows the task behind and cancels
  it if it ends first.

Errors cross as they are: an upstream ``McpError`` is raised unchanged (code, message,
data), so the dispatcher sends it on as such; a local failure (the upstream gone, its
deadline) is the dispatcher's generic -32603. A modern upstream's round asking what the
downstream client did not declare fails the call with -32021, as the upstream server
itself would have answered that client.

The link's Client is the proxy's: its credentials, its transport. Nothing of the
downstream request's authorization (its bearer token) is ever put on it.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import logging
from collections.abc import Callable
from typing import Any, Protocol

import msgspec

from ..client.client import Client
from ..client.handlers import input_key
from ..client.options import ClientOptions
from ..client.tasks import TaskHandle
from ..protocol.eras import BY_NAME
from ..protocol.errors import INTERNAL_ERROR, MISSING_CLIENT_CAPABILITY, McpError
from ..protocol.interactive import ELICIT, LIST_ROOTS, SAMPLE, CreateMessageParams, ElicitRequestParams, missing_capability
from ..protocol.skills import DIRECTORY_READ, SKILL_METHODS
from ..protocol.tasks import declares_tasks
from ..protocol.types import CallToolParams, CompleteParams, GetPromptParams, ReadResourceParams, Root
from ..runtime.peer import ProgressCallback
from ..server.context import Context, relay_question
from ..server.session import Session
from ..transports.base import Servable, Transport

__all__ = ["Link", "Connect", "Asking", "mirrored_options"]

log = logging.getLogger("mcpkit.proxy")

#: What a proxy connects with: a function returning a fresh transport (or a Server, in
#: memory) for each upstream session.
Connect = Callable[[], Transport | Servable]


class Asking(Protocol):
    """The exchange a link is lent to (:class:`~.bridge.Exchange`): every question the
    link receives is its call's."""

    @property
    def ctx(self) -> Context:
        """The downstream request of the exchange's current round."""
        ...

    async def ask(self, method: str, params: dict[str, Any]) -> Any:
        """The client's answer to the upstream question, at its next round."""
        ...


#: Methods forwarded with their params as they are, answered with the upstream's result.
_AS_THEY_ARE = frozenset({*SKILL_METHODS, DIRECTORY_READ})
_CURRENT: contextvars.ContextVar[Context | None] = contextvars.ContextVar("mcpkit_proxy_request", default=None)
#: The refusal of a downstream request's question that its client cannot answer (-32021),
#: found while its call was forwarded: the downstream answer, in place of the local error
#: the Client raises for the unanswered upstream round.
_REFUSED: contextvars.ContextVar[list[McpError] | None] = contextvars.ContextVar("mcpkit_proxy_refused", default=None)


def mirrored_options(base: ClientOptions, capabilities: dict[str, Any] | None) -> dict[str, bool | tuple[str, ...]]:
    """Which questions a link answers: those the downstream client's ``capabilities``
    declare (all of them for a link shared by every client, ``capabilities`` None), as
    ``elicit``, ``sample``, ``roots`` flags and the elicitation modes."""
    if capabilities is None:
        return {"elicit": True, "sample": True, "roots": True, "modes": ("form", "url")}
    elicitation = capabilities.get("elicitation")
    modes = tuple(mode for mode in ("form", "url") if isinstance(elicitation, dict) and mode in elicitation) or ("form",)
    return {
        "elicit": isinstance(elicitation, dict),
        "sample": isinstance(capabilities.get("sampling"), dict),
        "roots": isinstance(capabilities.get("roots"), dict),
        "modes": modes,
    }


class Link:
    """One upstream session (see the module's docstring). ``capabilities`` are the
    downstream client's, mirrored upstream (None: a link every downstream client shares,
    declaring every question it can relay)."""

    def __init__(
        self, connect: Connect, options: ClientOptions, capabilities: dict[str, Any] | None, session: Session | None = None
    ) -> None:
        wants = mirrored_options(options, capabilities)
        #: The downstream legacy connection this link is its own (None: a shared link).
        self.session = session
        self.active: list[Context] = []
        #: The exchange this link is lent to (bridge.py), if any.
        self.exchange: Asking | None = None
        #: Upstream tasks being cancelled in the background (kept referenced).
        self._cancelling: set[asyncio.Task[None]] = set()
        self.client = Client(
            connect(),
            dataclasses.replace(
                options,
                on_elicit=self._elicit if wants["elicit"] else None,
                on_sample=self._sample if wants["sample"] else None,
                on_roots=self._roots if wants["roots"] else None,
                elicitation_modes=wants["modes"],  # type: ignore[arg-type]
                on_log=self._log,
                log_level=options.log_level or "debug",
            ),
        )

    async def open(self) -> None:
        """Connect and agree on an era with the upstream server. Raises what
        :meth:`Client.connect` raises."""
        await self.client.connect()

    async def close(self) -> None:
        """Disconnect (requests in flight fail with ``ConnectionClosed``)."""
        await self.client.close()

    # --- forwarding --------------------------------------------------------------------

    async def forward(self, ctx: Context, method: str, params: Any) -> Any:
        """The upstream server's answer to the downstream request ``ctx`` for ``method``
        with the decoded ``params``. Raises the upstream ``McpError`` as it is, and the
        Client's local errors; cancellation cancels the upstream request."""
        token = _CURRENT.set(ctx)
        refused: list[McpError] = []
        refusal = _REFUSED.set(refused)
        self.active.append(ctx)
        try:
            return await self.forward_for(lambda: ctx, method, params)
        except McpError as exc:
            if exc.local and refused:  # a modern upstream's round the client cannot answer
                first = refused[0]  # marked local by the Client on its way up: sent as new
                raise McpError(first.code, first.message, first.data, status=first.status) from None
            raise
        finally:
            self.active.remove(ctx)
            _REFUSED.reset(refusal)
            _CURRENT.reset(token)

    async def forward_for(self, ctx_of: Callable[[], Context], method: str, params: Any) -> Any:
        """:meth:`forward`, its progress reported to the request ``ctx_of()`` names at
        the time (an exchange's current round); raises as :meth:`forward` does."""
        client = self.client
        if isinstance(params, CallToolParams):

            async def progress(done: float, total: float | None, message: str | None) -> None:
                await ctx_of().report_progress(done, total, message)

            ctx = ctx_of()
            upstream = BY_NAME.get(client.era or "")
            tasks_both_ways = upstream is not None and upstream.tasks_extension and BY_NAME[ctx.era].tasks_extension
            if tasks_both_ways and declares_tasks(ctx.client_capabilities):
                return await self._call_as_task(ctx, params, progress)
            return await client.call_tool(params.name, params.arguments, on_progress=progress)
        if isinstance(params, GetPromptParams):
            return await client.get_prompt(params.name, params.arguments)
        if isinstance(params, ReadResourceParams):
            return await client.read_resource(params.uri)
        if isinstance(params, CompleteParams):
            ref = {k: v for k, v in msgspec.to_builtins(params.ref).items() if v is not None}
            context = params.context.arguments if params.context is not None else None
            return await client.complete(ref, params.argument.name, params.argument.value, context=context)
        if method in _AS_THEY_ARE:  # the skills extension's: the upstream's answer passes through
            given = {name: value for name, value in msgspec.to_builtins(params).items() if value is not None}
            return await client.send_request(method, given)
        raise McpError(INTERNAL_ERROR, f"a proxy does not forward {method}")

    async def _call_as_task(self, ctx: Context, params: CallToolParams, progress: ProgressCallback) -> Any:
        """A call for a client of the tasks extension, to a modern server behind: the
        extension declared upstream too. When the server behind makes the call a task,
        the downstream call becomes one of the proxy's (``ctx.start_task``: the client
        gets the proxy's handle at once) that follows the upstream task to its end —
        its questions relayed to the proxy's task, its outcome the proxy task's; it is
        cancelled upstream if the proxy's task ends first (``tasks/cancel``, its time to
        live). Where the proxy cannot make it a task, it is followed within the client's
        request timeout, as a plain call's task is. Raises as :meth:`forward` does."""
        client = self.client
        handle = await client.start_task(params.name, params.arguments, on_progress=progress)
        if handle.task_id is None:
            return await handle.wait()  # answered at once
        became = await ctx.start_task()
        try:
            return await handle.wait(timeout=None if became else client.options.request_timeout)
        except BaseException:
            if handle.task is None or not handle.task.terminal:
                self._cancel_upstream(handle)
            raise

    def _cancel_upstream(self, handle: TaskHandle) -> None:
        """Cancel an upstream task the proxy no longer follows, in the background
        (a failure is logged at debug level: the connection may be going)."""

        async def cancel() -> None:
            try:
                await handle.cancel()
            except Exception as exc:
                log.debug("could not cancel the upstream task %s: %s", handle.task_id, exc)

        job = asyncio.get_running_loop().create_task(cancel(), name="mcpkit-proxy-cancel-task")
        self._cancelling.add(job)
        job.add_done_callback(self._cancelling.discard)

    # --- what the upstream server starts ------------------------------------------------

    def _asking(self) -> Context:
        """The downstream request an upstream question belongs to. Raises -32603 when
        none is in flight, and when a legacy upstream server asks a modern client
        (bridging that needs state kept between the client's rounds: not yet built)."""
        ctx = _CURRENT.get()
        if ctx is not None:
            return ctx
        if not self.active:
            raise McpError(INTERNAL_ERROR, "The proxy has no request in progress to ask this of")
        ctx = self.active[-1]
        if BY_NAME[ctx.era].stateless:  # only a link lent to an exchange can (bridge.py)
            raise McpError(INTERNAL_ERROR, "The proxy cannot relay a legacy server's question to a 2026-07-28 client here")
        return ctx

    async def _question(self, method: str, params: dict[str, Any]) -> Any:
        if self.exchange is not None:
            # Put to the client at its next round: one it cannot answer is refused to the
            # upstream server here (-32021), and the client's call goes on.
            missing = missing_capability(self.exchange.ctx.client_capabilities, method, params)
            if missing is not None:
                raise missing
            return await self.exchange.ask(method, params)
        try:
            # Under the upstream round's key, so the client's answer comes back by it.
            return await relay_question(self._asking(), method, params, key=input_key())
        except McpError as exc:
            refused = _REFUSED.get()
            if exc.code == MISSING_CLIENT_CAPABILITY and input_key() is not None and refused is not None:
                refused.append(exc)
            raise

    async def _elicit(self, request: ElicitRequestParams) -> Any:
        return await self._question(ELICIT, _params(request))

    async def _sample(self, request: CreateMessageParams) -> Any:
        return await self._question(SAMPLE, _params(request))

    async def _roots(self) -> list[Root]:
        answer = await self._question(LIST_ROOTS, {})
        return list(getattr(answer, "roots", []))

    async def _log(self, level: str, data: Any, logger: str | None) -> None:
        if self.exchange is not None:
            await self.exchange.ctx.log(level, data, logger=logger)  # type: ignore[arg-type]
            return
        ctx = _CURRENT.get() or (self.active[-1] if self.active else None)
        if ctx is not None:
            await ctx.log(level, data, logger=logger)  # type: ignore[arg-type]
        elif self.session is not None:  # between calls: to the connection this link is its own
            self.session.log(level, data, logger)


def _params(request: msgspec.Struct) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(request)
    return out
