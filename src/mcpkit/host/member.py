"""One server of a :class:`~mcpkit.ClientGroup`: its client, its state, and its lists.

A :class:`Member` owns one :class:`~mcpkit.Client` (over a transport made afresh from its
server's description each time it starts) and keeps what the group shows of it:

* its **state** — ``"stopped"`` (not started), ``"starting"``, ``"ready"``,
  ``"reconnecting"`` (the connection was lost and the transport's restart or reconnect
  policy is getting it back; calls wait meanwhile, within their deadlines), ``"failed"``
  (it could not start, or the policy gave up: ``error`` says why, with the tail of a
  spawned server's stderr), ``"closed"`` or ``"disabled"`` — reported as a
  :class:`ServerState`, and to the group whenever it changes;
* its **lists** — tools, prompts, resources, resource templates — listed once it is up,
  listed again after a reconnection, and whenever the server says one changed: in the
  legacy era the session's notifications, in the modern era a ``subscriptions/listen``
  stream opened for the lists the server says can change (one API over both eras:
  ``Client.listen``). Each refresh is reported to the group once the list is new.

A member knows the group only through :class:`Hooks`; the callbacks it is given name the
server they come from (:class:`Callbacks`). Starting never raises: a server that fails is
a member in state ``"failed"``, and the others go on.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable
from typing import Any, Final, Literal, Protocol, runtime_checkable

from ..client.client import Client
from ..client.events import ClientEvent, ConnectionLost, Reconnected, ReconnectFailed
from ..client.features import all_pages
from ..client.link import Supervisor
from ..client.options import ClientOptions
from ..client.retry import RetryPolicy
from ..protocol.errors import ConnectionClosed, McpError, RequestTimeout, flatten_text
from ..protocol.types import Implementation
from ..runtime.channel import Transport
from ..runtime.threads import is_async_callable
from ..transports.base import Servable

__all__ = ["Member", "ServerState", "State", "Hooks", "Callbacks", "LISTS"]

logger = logging.getLogger("mcpkit.host")

State = Literal["stopped", "starting", "ready", "reconnecting", "failed", "closed", "disabled"]
#: The lists a member keeps, by the name the group and ``SubscriptionEvent.kind`` use.
LISTS: Final = ("tools", "prompts", "resources", "templates")
#: Listing is idempotent: a listing cut by a restart is sent again (each attempt within the deadline).
_LIST_RETRY: Final = RetryPolicy(3, initial_delay=0.1)
#: The capability each list needs.
_MAX_PAGES: Final = 100  # of one list: a server whose list never ends is a listing error
_CAPABILITY: Final = {"tools": "tools", "prompts": "prompts", "resources": "resources", "templates": "resources"}


@dataclasses.dataclass(frozen=True)
class ServerState:
    """One server of a group, as it is now.

    Attributes:
        name: The server's name in the group.
        state: ``"stopped"``, ``"starting"``, ``"ready"``, ``"reconnecting"``,
            ``"failed"``, ``"closed"`` or ``"disabled"``.
        error: Why it failed (or, while reconnecting, why the connection was lost);
            None otherwise.
        era: The protocol era agreed, once connected.
        protocol_version: The revision agreed, once connected.
        server_info: What the server said it is, if it said.
        restarts: How many times its process was restarted (stdio).
        tools: How many tools it offers now (and likewise ``prompts``, ``resources``,
            ``templates``).
        rejected_tools: Tools it listed that were left out: name -> why (invalid
            ``x-mcp-header`` annotations, Streamable HTTP).
        description: Its command line or URL.
    """

    name: str
    state: State
    error: str | None = None
    era: str | None = None
    protocol_version: str | None = None
    server_info: Implementation | None = None
    restarts: int = 0
    tools: int = 0
    prompts: int = 0
    resources: int = 0
    templates: int = 0
    rejected_tools: dict[str, str] = dataclasses.field(default_factory=dict)
    description: str = ""

    @property
    def healthy(self) -> bool:
        """Whether it is ready now."""
        return self.state == "ready"


class Hooks(Protocol):
    """What a member tells its group."""

    def state_changed(self, member: Member) -> None:
        """``member``'s state changed."""
        ...

    def lists_changed(self, member: Member, kinds: tuple[str, ...]) -> None:
        """``member``'s lists of ``kinds`` are new (already kept)."""
        ...


@dataclasses.dataclass(frozen=True)
class Callbacks:
    """The group's callbacks, each told first which server it is about (None: not set)."""

    on_log: Callable[..., Any] | None = None
    on_elicit: Callable[..., Any] | None = None
    on_sample: Callable[..., Any] | None = None
    on_event: Callable[[str, ClientEvent], None] | None = None
    on_notification: Callable[[str, str, dict[str, Any]], None] | None = None


@runtime_checkable
class CapturesStderr(Protocol):
    """A transport that keeps the tail of its server's stderr (``StdioTransport``)."""

    @property
    def stderr_output(self) -> bytes: ...


@runtime_checkable
class RejectsTools(Protocol):
    """A transport that leaves some listed tools out (``HttpTransport``: invalid ``x-mcp-header``)."""

    @property
    def rejected_tools(self) -> dict[str, str]: ...


#: What a member starts: a transport, a ``Server`` object (in memory), made anew per start.
Target = Transport | Servable


class Member:
    """One server of a group (see the module's docstring)."""

    def __init__(
        self,
        name: str,
        make: Callable[[], Target] | None,
        options: ClientOptions,
        callbacks: Callbacks,
        hooks: Hooks,
        *,
        description: str = "",
        error: str | None = None,
        disabled: bool = False,
    ) -> None:
        """``make`` makes the transport of each start (None: it cannot start, for ``error``)."""
        self.name = name
        self._make = make
        self._callbacks = callbacks
        self._hooks = hooks
        self._options = self._own_options(options)
        self.description = description
        self.state: State = "disabled" if disabled else ("failed" if make is None else "stopped")
        self.error: str | None = error
        self.client: Client | None = None
        self.transport: Target | None = None
        #: The server's lists, by kind (``LISTS``), with the items' own names.
        self.lists: dict[str, list[Any]] = {kind: [] for kind in LISTS}
        self._settled = asyncio.Event()  # the current start has ended, either way
        if self.state in ("failed", "disabled"):
            self._settled.set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._refreshing: dict[str, asyncio.Task[None]] = {}
        self._again: set[str] = set()
        self._starting: asyncio.Task[None] | None = None

    # --- the callbacks, naming this server ------------------------------------------------------

    def _own_options(self, options: ClientOptions) -> ClientOptions:
        name, cb = self.name, self._callbacks
        changes: dict[str, Any] = {"on_event": self._on_event, "on_list_changed": None}
        if cb.on_log is not None:
            on_log = cb.on_log
            changes["on_log"] = lambda level, data, source: on_log(name, level, data, source)
        for field, fn in (("on_elicit", cb.on_elicit), ("on_sample", cb.on_sample)):
            if fn is not None:
                changes[field] = _naming(fn, name)
        if cb.on_notification is not None:
            on_notification = cb.on_notification
            changes["on_notification"] = lambda method, params: on_notification(name, method, params)
        return dataclasses.replace(options, **changes)

    def _on_event(self, event: ClientEvent) -> None:
        if self._callbacks.on_event is not None:
            try:
                self._callbacks.on_event(self.name, event)
            except Exception:
                logger.exception("the group's on_event callback failed")
        if isinstance(event, ConnectionLost) and self.state == "ready":
            asyncio.get_running_loop().call_soon(self._after_loss, event.reason)
        elif isinstance(event, Reconnected) and self.state in ("ready", "reconnecting"):
            self._set("ready", None)
            for kind in ("tools", "prompts", "resources"):
                self.refresh_soon(kind)  # they may have changed while it was away
        elif isinstance(event, ReconnectFailed) and self.state in ("ready", "reconnecting"):
            self._set("failed", event.error.message)

    def _after_loss(self, reason: str) -> None:
        """The connection was lost (the client has settled what it does about it)."""
        client = self.client
        if self.state != "ready" or client is None:
            return
        if client.is_reconnecting or client.is_connected:
            self._set("reconnecting", reason)
        else:
            self._set("failed", f"connection lost: {reason}")

    # --- state ----------------------------------------------------------------------------------

    def _set(self, state: State, error: str | None) -> None:
        if (state, error) == (self.state, self.error):
            return
        self.state, self.error = state, error
        if state == "failed":
            logger.warning("server %r failed: %s", self.name, error)
        self._hooks.state_changed(self)

    def snapshot(self) -> ServerState:
        """The member as it is now."""
        client, transport = self.client, self.transport
        restarts = transport.restarts if isinstance(transport, Supervisor) else 0
        rejected: dict[str, str] = transport.rejected_tools if isinstance(transport, RejectsTools) else {}
        return ServerState(
            name=self.name,
            state=self.state,
            error=self.error,
            era=client.era if client is not None else None,
            protocol_version=client.protocol_version if client is not None else None,
            server_info=client.server_info if client is not None else None,
            restarts=restarts,
            rejected_tools=rejected,
            description=self.description,
            **{kind: len(items) for kind, items in self.lists.items()},
        )

    def stderr_tail(self, lines: int = 15) -> list[str]:
        """The last ``lines`` lines a spawned server wrote to its stderr (captured)."""
        transport = self.transport
        if not isinstance(transport, CapturesStderr):
            return []
        return transport.stderr_output.decode("utf-8", "replace").strip().splitlines()[-lines:]

    # --- starting and stopping -------------------------------------------------------------------

    def start(self) -> asyncio.Task[None]:
        """Start the server in a task of its own (the one under way, if it is starting).
        Raises ``RuntimeError`` for a server that cannot start (see :meth:`restart`)."""
        if self._make is None or self.state == "disabled":
            raise RuntimeError(f"server {self.name!r} cannot start: {self.error or 'it is disabled'}")
        if self._starting is not None and not self._starting.done():
            return self._starting
        self._settled.clear()
        self._starting = asyncio.get_running_loop().create_task(self._start(), name=f"mcpkit-group-start-{self.name}")
        return self._starting

    async def _start(self) -> None:
        """Connect, learn the lists, listen for their changes; a failure is the state
        ``"failed"`` (never raised). Cancellation closes the client and propagates."""
        assert self._make is not None
        self._set("starting", None)
        try:
            self.transport = target = self._make()
            self.client = client = Client(target, self._options)
            await client.connect()
            if client.era == "modern" and not client.server_capabilities:
                await client.discover(retry=_LIST_RETRY)  # a pinned revision: nothing told what it offers (nor reached it)
            await self._list(LISTS, report=False)  # becoming ready reports them
        except asyncio.CancelledError:
            await self._close_client()
            raise
        except Exception as exc:
            self._set("failed", _why(exc))
            await self._close_client()
            return
        finally:
            self._settled.set()
        self._set("ready", None)
        self._spawn(self._listen(client))

    async def settled(self, timeout: float) -> bool:
        """Wait (at most ``timeout`` seconds) until the start under way has ended; whether it has."""
        try:
            async with asyncio.timeout(timeout):
                await self._settled.wait()
        except TimeoutError:
            return False
        return True

    async def ready(self, timeout: float) -> tuple[Client, float]:
        """The client to call, once the server is up (waiting at most ``timeout`` seconds
        for a start under way), and the time left. Raises :class:`RequestTimeout` if it is
        still starting then, :class:`ConnectionClosed` naming the server if it is not up
        (failed, stopped, closed, disabled). A reconnection under way is the client's to
        wait for."""
        loop = asyncio.get_running_loop()
        began = loop.time()
        if self.state == "starting" and not await self.settled(timeout):
            raise RequestTimeout(None, f"Server {self.name!r} is still starting")
        client = self.client
        if self.state not in ("ready", "reconnecting") or client is None:
            why = f": {self.error}" if self.error else ""
            raise ConnectionClosed(f"Server {self.name!r} is {self.state}{why}")
        return client, max(timeout - (loop.time() - began), 0.001)

    async def close(self) -> None:
        """Stop everything of this member (its start, listening, refreshing) and close its
        client. Idempotent."""
        starting, self._starting = self._starting, None
        tasks = [t for t in (starting, *self._tasks, *self._refreshing.values()) if t is not None and not t.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._close_client()
        if self.state != "disabled":
            self._set("closed", None)
        self._settled.set()

    async def _close_client(self) -> None:
        client = self.client
        if client is not None:
            await client.close()

    async def restart(self) -> asyncio.Task[None]:
        """Close the client and start the server again with a new transport; the start's task.
        Raises ``RuntimeError`` for a server that cannot start (its configuration's error,
        or disabled)."""
        if self._make is None or self.state == "disabled":
            raise RuntimeError(f"server {self.name!r} cannot start: {self.error or 'it is disabled'}")
        await self.close()
        self.state, self.error = "stopped", None
        self.lists = {kind: [] for kind in LISTS}
        return self.start()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # --- the lists -------------------------------------------------------------------------------

    async def _list(self, kinds: tuple[str, ...], *, report: bool = True) -> None:
        """List ``kinds`` (those the server has the capability for) and keep them; tell the
        group of those that changed (with ``report``). A server's error for one list is
        logged and leaves that list as it was; losing the connection for good raises."""
        client = self.client
        assert client is not None
        caps = client.server_capabilities
        changed: list[str] = []
        for kind in kinds:
            if _CAPABILITY[kind] not in caps:
                items: list[Any] = []
            else:
                try:
                    items = await _LISTERS[kind](client)
                except McpError as exc:
                    if isinstance(exc, ConnectionClosed) and not (client.is_connected or client.is_reconnecting):
                        raise
                    logger.warning("server %r: listing its %s failed: %s", self.name, kind, exc)
                    continue
            if items != self.lists[kind]:
                self.lists[kind] = items
                changed.append(kind)
        if changed and report:
            self._hooks.lists_changed(self, tuple(changed))

    async def refresh_now(self, kind: str) -> None:
        """List ``kind`` again now (``"resources"``: templates too); a failure is logged."""
        kinds = ("resources", "templates") if kind == "resources" else (kind,)
        try:
            await self._list(kinds)
        except McpError as exc:
            logger.info("server %r: %s not listed again: %s", self.name, kind, exc)

    def refresh_soon(self, kind: str) -> None:
        """List ``kind`` again in the background (``"resources"``: templates too); a
        notice while a listing runs lists once more after it."""
        if kind in self._refreshing:
            self._again.add(kind)
            return
        task = asyncio.get_running_loop().create_task(self._refresh(kind))
        self._refreshing[kind] = task

    async def _refresh(self, kind: str) -> None:
        try:
            while True:
                self._again.discard(kind)
                await self.refresh_now(kind)
                if kind not in self._again:
                    return
        finally:
            self._refreshing.pop(kind, None)

    async def _listen(self, client: Client) -> None:
        """Hear of list changes until the connection is gone for good: the legacy
        session's notices, or a modern ``subscriptions/listen`` for the lists the server
        says can change."""
        caps = client.server_capabilities
        if client.era == "modern":
            wanted = {
                kind: isinstance(caps.get(kind), dict) and bool(caps[kind].get("listChanged"))
                for kind in ("tools", "prompts", "resources")
            }
        else:
            wanted = {"tools": True, "prompts": True, "resources": True}
        if not any(wanted.values()):
            return
        try:
            async with client.listen(tools=wanted["tools"], prompts=wanted["prompts"], resources=wanted["resources"]) as changes:
                async for change in changes:
                    if change.kind in ("tools", "prompts", "resources"):
                        self.refresh_soon(change.kind)
        except McpError as exc:
            logger.info("server %r: not listening for list changes: %s", self.name, exc)


async def _tools(client: Client) -> list[Any]:
    return await all_pages(lambda cursor: client.list_tools(cursor, retry=_LIST_RETRY), "tools", _MAX_PAGES)


async def _prompts(client: Client) -> list[Any]:
    return await all_pages(lambda cursor: client.list_prompts(cursor, retry=_LIST_RETRY), "prompts", _MAX_PAGES)


async def _resources(client: Client) -> list[Any]:
    return await all_pages(lambda cursor: client.list_resources(cursor, retry=_LIST_RETRY), "resources", _MAX_PAGES)


async def _templates(client: Client) -> list[Any]:
    return await all_pages(
        lambda cursor: client.list_resource_templates(cursor, retry=_LIST_RETRY), "resource_templates", _MAX_PAGES
    )


_LISTERS: Final = {"tools": _tools, "prompts": _prompts, "resources": _resources, "templates": _templates}


def _naming(fn: Callable[..., Any], server: str) -> Callable[..., Any]:
    """``fn(server, request)`` as a callback of one argument, async if ``fn`` is."""
    if is_async_callable(fn):

        async def asking(request: Any) -> Any:
            return await fn(server, request)

        return asking

    def told(request: Any) -> Any:
        return fn(server, request)

    return told


def _why(exc: BaseException) -> str:
    """A failure to start, in one line (what an ``OSError`` names included)."""
    if isinstance(exc, McpError):
        return exc.message
    if isinstance(exc, OSError):
        return f"cannot start it: {type(exc).__name__}: {exc}"
    return flatten_text(f"{type(exc).__name__}: {exc}", 1024)
