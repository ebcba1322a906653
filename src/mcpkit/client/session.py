"""The client's session: its state for one connection, and its one path to the wire.

Theory of operation. A :class:`Session` is what the :class:`~mcpkit.Client` facade is
built on; the parts of the client get it and know it through the narrow protocols they
name (:class:`~.core.CallCore` and its extensions), never as this class. It holds

* the connection: a :class:`~.link.Link` that owns the current peer and gets it back
  after a crash (it calls :meth:`Session.handshake` and :meth:`Session.restore`);
* the agreement: the era's :class:`~mcpkit.protocol.eras.EraPolicy`, the ``_meta`` every
  modern request carries, and — reported to the :class:`~.core.Negotiated` it is given,
  the facade's public attributes — the era, the revision and what the server said about
  itself (:mod:`.negotiation` writes them, through :meth:`Session.agree`);
* what the client learned and restores after a reconnection: the tools that say they
  are idempotent, the log level it chose, the subscriptions' restore hooks;
* the server's side of the conversation (:class:`~.handlers.ServerMessages`) and the
  events the client reports (:class:`~.events.Events`).

Every request leaves through :attr:`Session.request`: the session's own :meth:`_send`,
or that wrapped in a ``CLIENT`` span when tracing may be on (``runtime/tracing.py``).
``_send`` waits for a reconnection under way (within the request's deadline), adds the
modern ``_meta``, and turns two answers into what the caller needs: a server's -32042
into :class:`~mcpkit.protocol.interactive.UrlElicitationRequired`, and a -32022 that
offers another modern revision into that revision, adopted, and the request sent once
more. :meth:`Session.call` is the typed call of :mod:`.calls` on top.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import msgspec

from ..protocol import meta as meta_keys
from ..protocol.eras import LEGACY, EraPolicy
from ..protocol.errors import URL_ELICITATION_REQUIRED, ConnectionClosed, McpError
from ..protocol.events import RequestId
from ..protocol.types import LOG_LEVELS, DiscoverResult, EmptyResult, ListToolsResult, Tool
from ..runtime.channel import Transport
from ..runtime.peer import ProgressCallback
from ..runtime.tracing import ClientRequest, trace_client_requests
from .calls import typed_call
from .core import Negotiated, in_handshake
from .events import Events
from .features import all_pages
from .handlers import ServerMessages
from .link import Link, Supervisor
from .negotiation import adopt_offered_version, negotiate, record_discovery
from .options import ClientOptions
from .results import url_elicitation_required
from .retry import RetryPolicy, tool_is_idempotent

__all__ = ["Session"]

logger = logging.getLogger("mcpkit.client")


class Session:
    """One client's call core: see the module's docstring. Made by ``Client``."""

    def __init__(self, transport: Transport, options: ClientOptions, facts: Negotiated) -> None:
        self.transport = transport
        self.options = options
        #: Where the agreement and the server's own account are reported (the facade).
        self.facts = facts
        self.events = Events(options.on_event)
        self.inbound = ServerMessages(options)
        self.link = Link(self)
        self.policy: EraPolicy = LEGACY
        self.meta: dict[str, Any] = {}
        #: Learned from ``tools/list`` results: whether each tool may be retried.
        self.idempotent_tools: dict[str, bool] = {}
        #: Chosen by :meth:`set_log_level`, restored after a reconnection.
        self.log_level: str | None = None
        self._restorers: list[Callable[[], Awaitable[None]]] = []
        #: The one path to the wire (traced when tracing may be on: docs/tracing.md).
        self.request: ClientRequest = self._send
        if options.tracing is not False:
            self.request = trace_client_requests(self._send, options.tracing, facts)

    #: One typed call: deadline, retries, input rounds, a task followed (:mod:`.calls`).
    call = typed_call

    # --- the connection ------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        """Whether the connection is open now."""
        return self.link.connected

    def recoverable(self) -> bool:
        """Whether a lost connection is coming back (or already has)."""
        return self.link.recoverable()

    @property
    def reconnecting(self) -> bool:
        """Whether a lost connection is being got back now."""
        return self.link.recovery is not None

    async def open(self) -> None:
        """Start the transport and negotiate. Raises what starting and negotiating raise
        (the caller closes); cancellation propagates likewise."""
        await self.link.open()

    async def close(self) -> None:
        """Stop any reconnection and close the connection and the transport. Idempotent."""
        await self.link.close()

    async def handshake(self, *, restore: bool) -> None:
        """Negotiate on a new connection; after a restart (``restore``) a pinned modern
        revision still asks ``server/discover`` when the server is not ours to start, and
        what the old connection had is restored. Raises what negotiating raises."""
        await negotiate(self, confirm=restore and not isinstance(self.transport, Supervisor))
        if restore:
            await self.restore(renewed=False)

    async def restore(self, *, renewed: bool) -> None:
        """After a new handshake (or a ``renewed`` session): the log level chosen, then
        every open subscription. A refusal is logged and the rest goes on; a connection
        that fails meanwhile is noticed once the recovery ends."""
        level = self.log_level
        if renewed and level is None:
            level = self.options.log_level  # the handshake that set it was the transport's own
        elif level == self.options.log_level:
            level = None  # negotiating set it already
        try:
            if level is not None and (self.policy.stateless or "logging" in self.facts.server_capabilities):
                await self.set_log_level(level)
        except McpError as exc:
            logger.warning("could not set the log level again: %s", exc)
        for restore in list(self._restorers):
            try:
                await restore()
            except McpError as exc:
                logger.warning("could not re-open a subscription: %s", exc)

    def on_reconnected(self, restore: Callable[[], Awaitable[None]]) -> Callable[[], None]:
        """Await ``restore()`` after each reconnection or renewed session (see
        :meth:`restore`); returns the function that stops it."""
        self._restorers.append(restore)

        def stop() -> None:
            if restore in self._restorers:
                self._restorers.remove(restore)

        return stop

    async def reconnected(self) -> bool:
        """If a reconnection is under way, wait for it and return whether the client is
        connected after it; False at once otherwise."""
        return self.link.recovery is not None and await self.link.settled()

    # --- the agreement ---------------------------------------------------------------------------

    def agree(self, policy: EraPolicy, version: str, meta: dict[str, Any]) -> None:
        """Adopt ``policy``'s era at ``version``; ``meta`` is what every request will carry
        (called by negotiation only)."""
        self.policy = policy
        self.meta = meta
        self.facts.era = policy.name
        self.facts.protocol_version = version

    async def set_log_level(self, level: str, timeout: float | None = None) -> None:
        """Legacy era: ``logging/setLevel``; modern era: the ``logLevel`` every request
        carries from now on. Raises ``ValueError`` for an unknown level, and as every
        request does."""
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}")
        self.log_level = level
        if self.policy.stateless:
            self.meta = {**self.meta, meta_keys.LOG_LEVEL: level}
            return
        await self.call("logging/setLevel", {"level": level}, EmptyResult, timeout)

    async def discover(self, timeout: float | None = None, retry: RetryPolicy | None = None) -> DiscoverResult:
        """``server/discover``, and what it says about the server reported (its
        capabilities, instructions and ``serverInfo``: the facade's attributes). Raises as
        every typed call does."""
        found = await self.call("server/discover", None, DiscoverResult, timeout, retry=retry)
        record_discovery(self.facts, found)
        return found

    async def learn_tools(self) -> None:
        """List every tool (all pages), to learn which say they are read-only or
        idempotent. Raises as every typed call does (a local ``McpError`` past 100 pages)."""

        async def page(cursor: str | None) -> ListToolsResult:
            return await self.call("tools/list", {"cursor": cursor} if cursor else None, ListToolsResult, None)

        self.remember_tools(await all_pages(page, "tools", 100))

    def remember_tools(self, tools: Iterable[Tool]) -> None:
        """Note which of ``tools`` say they are read-only or idempotent."""
        for tool in tools:
            self.idempotent_tools[tool.name] = tool_is_idempotent(tool)

    # --- the wire --------------------------------------------------------------------------------

    async def _send(
        self,
        method: str,
        params: dict[str, Any] | None,
        timeout: float,
        on_progress: ProgressCallback | None = None,
        on_start: Callable[[RequestId], None] | None = None,
        *,
        reset: bool = False,
        max_total: float | None = None,
    ) -> msgspec.Raw:
        """Send one request (see the module's docstring). Raises ``RuntimeError`` before
        the client is connected, ``McpError`` for an error response,
        ``UrlElicitationRequired`` for a -32042, ``RequestTimeout``,
        ``ConnectionClosed``; cancelling the caller cancels the request on the wire."""
        link = self.link
        peer = link.peer
        if peer is None:
            raise RuntimeError("the client is not connected; use 'async with Client(...)' or await connect()")
        if (link.recovery is not None or link.failed is not None) and not in_handshake():
            peer, timeout = await link.ready(timeout)  # reconnecting: wait for it, within the deadline
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        retried = False
        while True:  # at most twice: a modern revision refused mid-session is retried once (negotiation.py)
            try:
                return await peer.request(
                    method,
                    self._with_meta(params),
                    timeout=timeout,
                    on_progress=on_progress,
                    on_start=on_start,
                    reset_on_progress=reset,
                    max_total=max_total,
                )
            except McpError as exc:
                if exc.code == URL_ELICITATION_REQUIRED and not exc.local:
                    raise url_elicitation_required(exc) from None
                if retried or not adopt_offered_version(self, exc):
                    raise
            retried = True
            timeout = max(deadline - loop.time(), 0.001)

    def _with_meta(self, params: dict[str, Any] | None) -> dict[str, Any] | None:
        """``params`` with the modern era's ``_meta`` added (members the caller gave win)."""
        if not self.meta:
            return params
        params = dict(params) if params else {}
        extra = params.get("_meta")
        params["_meta"] = {**self.meta, **extra} if isinstance(extra, dict) else self.meta
        return params

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification as it is (dropped if the connection is gone)."""
        peer = self.link.peer
        if peer is not None:
            peer.notify(method, params)

    def send_notification(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification with the modern ``_meta``, unless ``params`` has a ``_meta``
        of its own. Raises :class:`ConnectionClosed` if the connection is gone."""
        peer = self.link.peer
        if peer is None or peer.is_closed:
            raise ConnectionClosed()
        if self.meta:
            params = dict(params) if params else {}
            params.setdefault("_meta", self.meta)
        peer.notify(method, params)
