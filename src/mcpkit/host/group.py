"""The :class:`ClientGroup`: many servers as one client, for the authors of agent hosts
(docs/howto/host.md) — a facade over one :class:`~.member.Member` per server.

A group is built from code (server name -> a transport, a ``Server`` object or a
:class:`~.config.ServerConfig`) or from a host's configuration file
(:meth:`ClientGroup.from_config`). :meth:`~ClientGroup.start` starts every server at
once; one that fails to start, or dies later, is a member in state ``"failed"`` or
``"reconnecting"`` (:attr:`~ClientGroup.servers`) and never blocks or breaks the others:
servers from a configuration are supervised (stdio: restarted, first start included;
HTTP: reached again) under the group's :class:`~mcpkit.RestartPolicy`.

What the servers offer is listed across them under group-wide names
(:mod:`.names`: ``"{server}.{name}"`` by default; collisions are errors naming both
servers), kept up to date as the servers announce changes; a call is routed to its
server and made with that server's client — its deadlines, retries and cancellation —
in whichever era it speaks. The callbacks a group is given are each told first which
server they are about.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, Final

from ..client.client import Client
from ..client.events import ClientEvent
from ..client.options import ClientOptions
from ..client.retry import RetryPolicy
from ..protocol.errors import INVALID_PARAMS, ConnectionClosed, McpError
from ..protocol.types import CallToolResult, GetPromptResult, Prompt, ReadResourceResult, Resource, ResourceTemplate, Tool
from ..runtime.channel import Transport
from ..runtime.peer import ProgressCallback
from ..transports.base import Servable
from ..transports.restart import RestartPolicy
from .config import ConfigError, ConfigSource, ServerConfig, read_config
from .llm import LlmTools, ToolFormat
from .member import LISTS, Callbacks, Member, ServerState
from .names import DEFAULT_RULE, Directory, NameRule

__all__ = ["ClientGroup", "DEFAULT_RESTART", "DEFAULT_RECONNECT"]

logger = logging.getLogger("mcpkit.host")

#: How a group supervises the servers of a configuration: a spawned server is restarted
#: at most three times a minute, its first start included.
DEFAULT_RESTART: Final = RestartPolicy(supervise_start=True)
#: An HTTP server is reached again (and, not listening yet when the group starts, waited
#: for) with ten attempts a minute, 0.1 s doubling to 5 s: about 26 s of back-off.
DEFAULT_RECONNECT: Final = RestartPolicy(max_restarts=10, supervise_start=True)

ServerSpec = Transport | Servable | ServerConfig


class ClientGroup:
    """Many MCP servers as one client (see the module's docstring and docs/howto/host.md).

    ``ClientGroup(servers, options=None, *, namespace="{server}.{name}", restart=True,
    on_log=None, on_progress=None, on_elicit=None, on_sample=None, on_list_changed=None,
    on_event=None, on_state=None, on_notification=None)``; use as ``async with`` (which
    starts every server and waits until each is up or has failed) or call
    :meth:`start` and :meth:`close`.

    * ``servers``: name -> a :class:`~mcpkit.ServerConfig`, a transport, or a
      :class:`~mcpkit.Server` (in memory). A configuration's transport is made afresh at
      each start; a transport object given is reused.
    * ``options``: the :class:`~mcpkit.ClientOptions` of every server's client (deadlines,
      retries, the era): its own callbacks must stay unset — the group's below name the
      server.
    * ``namespace``: how the group names its servers' tools and prompts (a format string
      with ``{server}`` and ``{name}``, a function ``(server, name) -> str``, or None for
      their own names); two items of one name raise :class:`~mcpkit.NameCollision`.
    * ``restart``: how servers from configurations are supervised — True (the defaults:
      :data:`DEFAULT_RESTART` for a spawned server, :data:`DEFAULT_RECONNECT` over HTTP;
      first starts included), a :class:`~mcpkit.RestartPolicy` for both, or False (a
      crashed server stays down; an HTTP server is still reached again, but only once it
      answered).
    * callbacks, each told the server's name first: ``on_log(server, level, data,
      logger)``, ``on_progress(server, progress, total, message)`` (for calls without an
      ``on_progress`` of their own), ``on_elicit(server, request)`` and
      ``on_sample(server, request)`` (sync or async: they answer the server),
      ``on_list_changed(server, kind)`` (``"tools"``, ``"prompts"``, ``"resources"``,
      ``"templates"``) whenever the group's list of that kind changed because of that
      server — it came up or went down, announced a change, or came back after a
      reconnection with other items (the group's lists are already new), ``on_event(server, event)``
      (a :class:`~mcpkit.ClientEvent`), ``on_state(state)`` (a
      :class:`~mcpkit.ServerState`, whenever a server's state changes),
      ``on_notification(server, method, params)``.

    Raises ``ValueError`` for options that set their own callbacks, or a bad
    ``namespace``; ``TypeError`` for a server that is none of the above.
    """

    def __init__(
        self,
        servers: Mapping[str, ServerSpec] | None = None,
        options: ClientOptions | None = None,
        *,
        namespace: NameRule = DEFAULT_RULE,
        restart: bool | RestartPolicy = True,
        on_log: Callable[..., Any] | None = None,
        on_progress: Callable[[str, float, float | None, str | None], Any] | None = None,
        on_elicit: Callable[..., Any] | None = None,
        on_sample: Callable[..., Any] | None = None,
        on_list_changed: Callable[[str, str], Any] | None = None,
        on_event: Callable[[str, ClientEvent], None] | None = None,
        on_state: Callable[[ServerState], Any] | None = None,
        on_notification: Callable[[str, str, dict[str, Any]], None] | None = None,
    ) -> None:
        options = options or ClientOptions()
        own = [
            name
            for name in ("on_log", "on_elicit", "on_sample", "on_list_changed", "on_event", "on_notification")
            if getattr(options, name) is not None
        ]
        if own:
            raise ValueError(
                f"set {', '.join(own)} on the group, whose callbacks say which server they are about, not in its ClientOptions"
            )
        self.options = options
        self._directory = Directory(namespace)
        self._rule = namespace
        self._restart = None if restart is False else (DEFAULT_RESTART if restart is True else restart)
        self._callbacks = Callbacks(
            on_log=on_log, on_elicit=on_elicit, on_sample=on_sample, on_event=on_event, on_notification=on_notification
        )
        self._on_progress = on_progress
        self._on_list_changed = on_list_changed
        self._on_state = on_state
        self._members: dict[str, Member] = {}
        self._up: set[str] = set()  # the members whose items are in the group's lists
        self._hooks = _Told(self._state_changed, self._lists_changed)
        self._closed = False
        self._tasks: set[asyncio.Future[Any]] = set()
        for name, spec in (servers or {}).items():
            self.add(name, spec)

    @classmethod
    def from_config(
        cls,
        source: ConfigSource,
        options: ClientOptions | None = None,
        *,
        inputs: Mapping[str, str] | None = None,
        environ: Mapping[str, str] | None = None,
        workspace: str | os.PathLike[str] | None = None,
        **settings: Any,
    ) -> ClientGroup:
        """A group of the servers of a host's configuration (``mcpServers`` or VS Code's
        ``servers``: :func:`~mcpkit.load_config`). An entry that cannot be used (a
        variable not set, an input not answered) is a server in state ``"failed"`` whose
        ``error`` says why; the others start. ``settings`` are the constructor's. Raises
        :class:`~mcpkit.ConfigError` for a document that is not a configuration,
        ``OSError`` if the file cannot be read."""
        servers, errors = read_config(source, inputs=inputs, environ=environ, workspace=workspace)
        group = cls(None, options, **settings)
        for name in [*servers, *errors]:
            if name in errors:
                group._add_broken(name, errors[name])
            else:
                group.add(name, servers[name])
        return group

    # --- the servers -------------------------------------------------------------------------------

    def add(self, name: str, server: ServerSpec) -> None:
        """Add a server; in a group that is running it starts at once. Raises
        ``ValueError`` for a name already taken (or empty), ``TypeError`` for a server that
        is neither a configuration, a transport nor a ``Server``."""
        if not name or not isinstance(name, str):
            raise ValueError("a server's name is a non-empty string")
        if name in self._members:
            raise ValueError(f"there is a server {name!r} in the group already")
        if isinstance(server, ServerConfig):
            policy = self._restart
            if policy is not None and server.kind != "stdio" and policy is DEFAULT_RESTART:
                policy = DEFAULT_RECONNECT
            config = server

            def make() -> Transport | Servable:
                return config.transport(restart=policy)

            member = self._member(name, make, description=server.describe(), disabled=server.disabled)
        elif isinstance(server, Servable) or _is_transport(server):
            target = server
            member = self._member(name, lambda: target, description=type(server).__name__)
        else:
            raise TypeError(f"server {name!r}: expected a ServerConfig, a transport or a Server, not {type(server).__name__}")
        self._members[name] = member
        if self._started and not self._closed and member.state == "stopped":
            member.start()

    def _add_broken(self, name: str, error: ConfigError) -> None:
        self._members[name] = self._member(name, None, error=str(error))

    def _member(self, name: str, make: Callable[[], Any] | None, **kwargs: Any) -> Member:
        return Member(name, make, self.options, self._callbacks, self._hooks, **kwargs)

    @property
    def servers(self) -> dict[str, ServerState]:
        """Every server's state, by name, in the order they were added."""
        return {name: member.snapshot() for name, member in self._members.items()}

    def state(self, name: str) -> ServerState:
        """Server ``name``'s state. Raises ``KeyError`` for a name not in the group."""
        return self._get(name).snapshot()

    def client(self, name: str) -> Client:
        """The :class:`~mcpkit.Client` of server ``name``, for what the group does not
        offer itself (tasks, subscriptions, completions, ``send_request``). Raises
        ``KeyError`` for a name not in the group, ``RuntimeError`` before it was started."""
        client = self._get(name).client
        if client is None:
            raise RuntimeError(f"server {name!r} has not been started")
        return client

    def stderr(self, name: str, lines: int = 15) -> list[str]:
        """The last ``lines`` lines a spawned server wrote to its stderr (its
        configuration's servers keep them), to show why it failed. Raises ``KeyError``."""
        return self._get(name).stderr_tail(lines)

    def _get(self, name: str) -> Member:
        try:
            return self._members[name]
        except KeyError:
            raise KeyError(f"no server {name!r} in the group (it has {', '.join(self._members) or 'none'})") from None

    # --- lifecycle --------------------------------------------------------------------------------------

    _started = False

    async def __aenter__(self) -> ClientGroup:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    async def start(self, *names: str, wait: bool = True) -> None:
        """Start every server (or those named) at once. With ``wait`` (the default),
        return once each of them is up or has failed — every start is bounded by its
        client's deadlines and its restart policy; without, at once (calls to a server
        still starting wait for it, within their deadlines). Never raises for a server
        that fails: see :attr:`servers`. Raises ``KeyError`` for a name not in the group,
        ``RuntimeError`` once closed. Cancelling it stops the servers it was starting."""
        if self._closed:
            raise RuntimeError("the group is closed")
        self._started = True
        members = [self._get(name) for name in names] if names else list(self._members.values())
        tasks = [member.start() for member in members if member.state in ("stopped", "starting")]
        if wait and tasks:
            await asyncio.gather(*(asyncio.shield(task) for task in tasks))

    async def wait_ready(self, *names: str, timeout: float = 60.0) -> dict[str, ServerState]:
        """Wait until every server (or those named) has started or failed, at most
        ``timeout`` seconds; their states. Raises ``KeyError`` for a name not in the
        group."""
        members = [self._get(name) for name in names] if names else list(self._members.values())
        await asyncio.gather(*(member.settled(timeout) for member in members))
        return {member.name: member.snapshot() for member in members}

    async def restart(self, name: str) -> None:
        """Close server ``name``'s client and start it again (a configuration's server
        with a new transport), say after it failed. Returns once it is up or has failed.
        Raises ``KeyError``, and ``RuntimeError`` for a server that cannot start (its
        configuration's error, or ``disabled``)."""
        await asyncio.shield(await self._get(name).restart())

    async def close(self) -> None:
        """Close every server's client (stopping supervised processes, ending sessions)
        and what the group runs for them. Idempotent."""
        self._closed = True
        await asyncio.gather(*(member.close() for member in self._members.values()))
        tasks = [task for task in self._tasks if not task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # --- what members report (their Hooks) -----------------------------------------------------------------

    def _state_changed(self, member: Member) -> None:
        """A member's state changed: tell ``on_state``; one that came up (or went down)
        changed the group's lists by all of its items."""
        if self._on_state is not None:
            self._run(self._on_state, member.snapshot())
        up = member.state in ("ready", "reconnecting")
        if up == (member.name in self._up):
            return
        if up:
            self._up.add(member.name)
        else:
            self._up.discard(member.name)
        self._lists_changed(member, tuple(kind for kind in LISTS if member.lists[kind]))

    def _lists_changed(self, member: Member, kinds: tuple[str, ...]) -> None:
        """A member's lists are new (or came or went with it): rebuild the names, tell
        ``on_list_changed``."""
        self._rebuild()
        if self._on_list_changed is not None and not self._closed:  # closing is the host's own doing
            for kind in kinds:
                self._run(self._on_list_changed, member.name, kind)

    def _rebuild(self) -> None:
        self._directory.rebuild({name: m.lists for name, m in self._members.items() if name in self._up})

    def _run(self, callback: Callable[..., Any], *args: Any) -> None:
        """Call a user callback; an async one runs as a task kept here; a failure is logged."""
        try:
            result = callback(*args)
        except Exception:
            logger.exception("a group callback failed")
            return
        if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
            task = asyncio.ensure_future(result)
            self._tasks.add(task)
            task.add_done_callback(self._callback_done)

    def _callback_done(self, task: asyncio.Future[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("a group callback failed", exc_info=task.exception())

    # --- what the servers offer ------------------------------------------------------------------------

    async def list_tools(self, *, refresh: bool = False) -> list[Tool]:
        """The tools of every server that is up, under their group-wide names (copies of
        the servers' ``Tool`` with ``name`` replaced), in the order the servers were added.
        Answered from what the group keeps (each server's list, renewed whenever it
        announces a change); ``refresh`` lists every server again first. Raises
        :class:`~mcpkit.NameCollision` when two servers' tools get one name."""
        return await self._listed("tools", refresh)

    async def list_prompts(self, *, refresh: bool = False) -> list[Prompt]:
        """The prompts of every server that is up, under their group-wide names (see
        :meth:`list_tools`). Raises :class:`~mcpkit.NameCollision`."""
        return await self._listed("prompts", refresh)

    async def list_resources(self, *, refresh: bool = False) -> list[Resource]:
        """The resources of every server that is up: their URIs unchanged, their names
        made group-wide (see :meth:`list_tools`; :meth:`server_of_uri` says whose)."""
        return await self._listed("resources", refresh)

    async def list_resource_templates(self, *, refresh: bool = False) -> list[ResourceTemplate]:
        """The resource templates of every server that is up (names made group-wide)."""
        return await self._listed("templates", refresh)

    async def _listed(self, kind: str, refresh: bool) -> list[Any]:
        up = [m for m in self._members.values() if m.name in self._up]
        if refresh:
            await asyncio.gather(*(m.refresh_now(kind) for m in up))
        self._rebuild()
        if kind in ("tools", "prompts"):
            self._directory.check()
        items: list[Any] = []
        for member in up:
            items.extend(self._directory.renamed(member.name, member.lists[kind]))
        return items

    def route(self, name: str, kind: str = "tool") -> tuple[str, str]:
        """The server behind the group-wide ``name`` of a tool (``kind="prompt"``: a
        prompt), and the name it has there. Raises ``KeyError`` if no server that is up
        offers it."""
        try:
            return table_of(self._directory, kind)[name]
        except KeyError:
            raise KeyError(f"no server offers a {kind} {name!r}") from None

    def server_of_uri(self, uri: str) -> str | None:
        """The server to read ``uri`` from: the one listing it, else the one whose
        template matches it (None if none does). Raises :class:`~mcpkit.NameCollision`
        when two do."""
        self._rebuild()
        return self._directory.server_for_uri(uri)

    async def llm_tools(self, format: ToolFormat = "openai") -> LlmTools:
        """The group's tools as an LLM API's tool definitions (:class:`~mcpkit.LlmTools`):
        ``"openai"`` (Chat Completions), ``"openai-responses"`` or ``"anthropic"``. A
        model's calls read back with its :meth:`~mcpkit.LlmTools.calls` carry the
        group-wide names :meth:`call_tool` takes."""
        return LlmTools(await self.list_tools(), format)

    # --- calls -------------------------------------------------------------------------------------------

    async def _find(self, kind: str, name: str, timeout: float) -> tuple[Member, str, float]:
        """The member offering ``name``, its own name for it, and the time left. A server
        still starting whose name the rule could have made is waited for."""
        if self._closed:
            raise ConnectionClosed("The group is closed")
        loop = asyncio.get_running_loop()
        began = loop.time()
        if name not in table_of(self._directory, kind):
            for member in self._members.values():
                if member.state == "starting" and _could_name(self._rule, member.name, name):
                    await member.settled(timeout)
            self._rebuild()
        found = table_of(self._directory, kind).get(name)
        if found is None:
            starting = [m.name for m in self._members.values() if m.state == "starting"]
            down = [
                f"{m.name} ({m.state})" for m in self._members.values() if m.state not in ("ready", "reconnecting", "starting")
            ]
            notes = "; ".join(
                part
                for part in (
                    f"still starting: {', '.join(starting)}" if starting else "",
                    f"not up: {', '.join(down)}" if down else "",
                )
                if part
            )
            raise McpError(INVALID_PARAMS, f"Unknown {kind}: {name}" + (f" ({notes})" if notes else ""), local=True)
        server, own = found
        return self._members[server], own, max(timeout - (loop.time() - began), 0.001)

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        meta: dict[str, Any] | None = None,
        retry: RetryPolicy | None = None,
        idempotent: bool | None = None,
        reset_timeout_on_progress: bool | None = None,
        max_total_timeout: float | None = None,
    ) -> CallToolResult:
        """Call the tool of group-wide name ``name`` on its server: that server's
        ``Client.call_tool`` (the same parameters, deadlines, retries and cancellation).
        Progress goes to ``on_progress``, else to the group's ``on_progress`` with the
        server's name. ``timeout`` (else the options' ``request_timeout``) also bounds
        waiting for a server still starting.

        Raises a local ``McpError(-32602)`` for a name no server offers, what the call
        raises (with a note naming the server), :class:`~mcpkit.ConnectionClosed` for a
        server that is not up (failed, closed) or a group that is closed,
        :class:`~mcpkit.RequestTimeout`."""
        limit = self.options.request_timeout if timeout is None else timeout
        member, own, left = await self._find("tool", name, limit)
        client, left = await member.ready(left)
        progress = on_progress if on_progress is not None else self._progress_of(member.name)
        try:
            return await client.call_tool(
                own,
                arguments,
                timeout=left,
                on_progress=progress,
                meta=meta,
                retry=retry,
                idempotent=idempotent,
                reset_timeout_on_progress=reset_timeout_on_progress,
                max_total_timeout=max_total_timeout,
            )
        except McpError as exc:
            exc.add_note(f"from server {member.name!r} (tool {own!r})")
            raise

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, str] | None = None,
        *,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
    ) -> GetPromptResult:
        """Get the prompt of group-wide name ``name`` from its server (see
        :meth:`call_tool` for what it raises)."""
        limit = self.options.request_timeout if timeout is None else timeout
        member, own, left = await self._find("prompt", name, limit)
        client, left = await member.ready(left)
        try:
            return await client.get_prompt(own, arguments, timeout=left, retry=retry)
        except McpError as exc:
            exc.add_note(f"from server {member.name!r} (prompt {own!r})")
            raise

    async def read_resource(
        self, uri: str, *, server: str | None = None, timeout: float | None = None, retry: RetryPolicy | None = None
    ) -> ReadResourceResult:
        """Read the resource at ``uri`` from ``server``, or from the server that lists it
        (or whose template matches it). Raises :class:`~mcpkit.NameCollision` when two do
        (say which with ``server=``), a local ``McpError(-32602)`` when none does, and what
        the read raises (with a note naming the server)."""
        limit = self.options.request_timeout if timeout is None else timeout
        if self._closed:
            raise ConnectionClosed("The group is closed")
        if server is None:
            server = self.server_of_uri(uri)
            if server is None:
                raise McpError(INVALID_PARAMS, f"No server in the group lists resource {uri} (pass server=...)", local=True)
        member = self._get(server)
        client, left = await member.ready(limit)
        try:
            return await client.read_resource(uri, timeout=left, retry=retry)
        except McpError as exc:
            exc.add_note(f"from server {member.name!r}")
            raise

    def _progress_of(self, server: str) -> ProgressCallback | None:
        group = self._on_progress
        if group is None:
            return None
        return lambda progress, total, message: group(server, progress, total, message)


class _Told:
    """The :class:`~.member.Hooks` the members of a group report to (the group's own
    handlers, kept off its public face)."""

    def __init__(self, state: Callable[[Member], None], lists: Callable[[Member, tuple[str, ...]], None]) -> None:
        self._state = state
        self._lists = lists

    def state_changed(self, member: Member) -> None:
        """``member``'s state changed."""
        self._state(member)

    def lists_changed(self, member: Member, kinds: tuple[str, ...]) -> None:
        """``member``'s lists of ``kinds`` are new."""
        self._lists(member, kinds)


def table_of(directory: Directory, kind: str) -> dict[str, tuple[str, str]]:
    """The directory's table of ``kind`` (``"tool"`` or ``"prompt"``)."""
    return directory.tools if kind == "tool" else directory.prompts


def _could_name(rule: NameRule, server: str, name: str) -> bool:
    """Whether ``rule`` could have made ``name`` for an item of ``server`` (a format
    string's text around ``{name}`` matches; a function's: always, it cannot be told)."""
    if rule is None:
        return True
    if not isinstance(rule, str):
        return True
    marker = "\x00"
    before, _, after = rule.format(server=server, name=marker).partition(marker)
    return name.startswith(before) and name.endswith(after) and len(name) > len(before) + len(after)


def _is_transport(value: Any) -> bool:
    return all(callable(getattr(value, method, None)) for method in ("start", "send", "drain", "close"))
