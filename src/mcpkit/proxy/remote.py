"""What a proxy serves: the features of the server behind it (:class:`RemoteFeatures`,
the :class:`~mcpkit.server.registry.Remote` of the proxy's registry), and the upstream
sessions that reach it.

**Lists** are the upstream server's, fetched whole (every page, at most ``max_pages``)
when the proxy starts and again whenever the upstream server says a list changed; the
proxy's registry pages them for its own clients, so pagination works whatever page size
either side has, and a proxy mounted in another server lists them merged with the rest.
Each refetch is announced to the proxy's subscribers as a list change.

**Requests** for a name the proxy does not have itself are forwarded, on a
:class:`~.link.Link`:

* a legacy downstream connection (stdio, in memory, a legacy HTTP session) gets an
  upstream session of its own, opened on its first forwarded request with the
  downstream client's capabilities mirrored, and closed when that connection ends — so
  an upstream server that keeps state per session keeps it per downstream client;
* modern downstream requests, which have no session, share the *primary* link, opened
  when the proxy starts; so does everything when the upstream server is itself modern
  (stateless: nothing to keep apart), or when the proxy was built on a single transport
  rather than a function making one;
* but a modern request that may ask (``tools/call``, ``prompts/get``, ``resources/read``)
  of a legacy upstream server goes through the era bridge (:mod:`.bridge`) on a link lent
  to it alone for the exchange, from a pool of idle links, so that the upstream server's
  questions reach the right client, across its rounds.

At most ``max_sessions`` upstream sessions are open besides the primary (per connection
and lent ones together): past that a new downstream connection's requests, or a new
exchange, are refused with -32603 and HTTP status 503.

**Skills** (docs/skills.md): when the upstream server declares the skills extension (in
the modern era), the proxy declares it too, with the same settings, and forwards
``skills/list``, ``skills/get`` and ``resources/directory/read`` as they are; the skill
files are resources like any other.

**Resource updates**: the primary link keeps one subscription upstream, for the lists and
for every URI a downstream client subscribed to (at most :data:`MAX_WATCHED`, kept for
the proxy's life), reopened when a URI is added; each update is announced to the proxy's
subscribers of that URI. A downstream subscription is answered once the upstream one
holds its URI (within :data:`WATCH_WAIT`), so an update that follows it is not missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Final

import msgspec

from ..client.options import ClientOptions
from ..protocol.apps import APPS_EXTENSION
from ..protocol.eras import BY_NAME
from ..protocol.errors import INTERNAL_ERROR, McpError, flatten_text
from ..protocol.headers import HeaderRules, x_mcp_header_map
from ..protocol.interactive import MRTR_METHODS
from ..protocol.skills import SKILLS_EXTENSION
from ..protocol.tasks import declares_tasks
from ..protocol.types import Tool
from ..server.context import Call, Context
from ..server.definitions.uri_template import UriTemplate
from ..server.filters import Selection
from ..server.registry import Kind, Registry, key_of
from ..server.session import Session
from .bridge import Bridge
from .link import Connect, Link

__all__ = ["RemoteFeatures", "MAX_WATCHED"]

log = logging.getLogger("mcpkit.proxy")

#: The longest a downstream subscription waits for the upstream one to take its URI (s).
WATCH_WAIT: Final = 10.0
#: How many resource URIs a proxy watches upstream for its subscribers.
MAX_WATCHED: Final = 1000
_LISTS: Final = {"tool": "tools", "prompt": "prompts", "resource": "resources", "template": "resources"}
_FEATURES: Final = ("tools", "resources", "prompts", "completions", "logging")


class RemoteFeatures:
    """The upstream server's features, and the links to it (see the module's docstring)."""

    def __init__(
        self,
        connect: Connect,
        options: ClientOptions,
        registry: Registry,
        *,
        per_session: bool,
        max_sessions: int,
        max_pages: int,
        round_ttl: float,
        selection: Selection | None = None,
    ) -> None:
        self._connect = connect
        #: Which upstream features are offered (server/filters.py): the others are never
        #: listed nor forwarded.
        self._selection = selection or Selection()
        self._options = options
        self._registry = registry
        self._per_session = per_session
        self._max_sessions = max_sessions
        self._max_pages = max_pages
        self._primary: Link | None = None
        self._sessions: dict[Session, asyncio.Future[Link]] = {}
        self._lists: dict[Kind, list[Any]] = {"tool": [], "prompt": [], "resource": [], "template": []}
        self._templates: list[UriTemplate] = []
        #: The ``x-mcp-header`` rules of the listed tools that have any.
        self._header_rules: dict[str, HeaderRules] = {}
        #: Resource URIs the selection left out: not served through a template either.
        self._left_out: frozenset[str] = frozenset()
        self._watched: set[str] = set()
        self._rewatch = asyncio.Event()
        self._watching = asyncio.Event()  # set while the upstream subscription is open with every watched URI
        self._watcher: asyncio.Task[None] | None = None
        self._capabilities: dict[str, Any] = {}
        self._runs_tasks = False
        self._skills: dict[str, Any] | None = None
        #: The tasks that open a session's link and close it when the session ends.
        self._tasks: set[asyncio.Future[None]] = set()
        #: Links lent to exchanges (bridge.py): idle ones, and how many there are in all.
        self._idle: list[Link] = []
        self._lent = 0
        self._bridge = Bridge(self._checkout, self._checkin, max_exchanges=max_sessions, ttl=round_ttl)

    # --- the proxy's life ------------------------------------------------------------------

    async def start(self) -> None:
        """Open the primary link, fetch every list, and start watching for changes.
        Raises what connecting and listing raise (the proxy then fails to start)."""
        primary = Link(self._connect, self._options, None)
        await primary.open()
        self._primary = primary
        if not primary.client.server_capabilities:  # a modern revision pinned: no handshake told them
            await primary.client.discover()
        caps = primary.client.server_capabilities
        self._capabilities = {name: caps[name] for name in _FEATURES if name in caps}
        extensions = caps.get("extensions")
        if isinstance(extensions, dict) and APPS_EXTENSION in extensions:  # its views pass through (docs/apps.md)
            self._capabilities["extensions"] = {APPS_EXTENSION: {}}
        self._runs_tasks = not self._upstream_is_legacy() and declares_tasks(caps)
        extensions = caps.get("extensions") if not self._upstream_is_legacy() else None
        skills = extensions.get(SKILLS_EXTENSION) if isinstance(extensions, dict) else None
        self._skills = dict(skills) if isinstance(skills, dict) else None
        if "resources" in self._capabilities:
            self._capabilities["resources"] = {"subscribe": True, "listChanged": True}
        for kind in ("tools", "prompts", "resources"):
            await self._refresh(kind, announce=False)
        self._watcher = asyncio.ensure_future(self._watch())

    async def stop(self) -> None:
        """Stop watching and close every link."""
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._watcher
        await self._bridge.close()
        for task in list(self._tasks):
            task.cancel()
        links = [fut.result() for fut in self._sessions.values() if fut.done() and not fut.cancelled() and not fut.exception()]
        self._sessions.clear()
        links.extend(self._idle)
        self._idle.clear()
        if self._primary is not None:
            links.append(self._primary)
            self._primary = None
        for link in links:
            with contextlib.suppress(Exception):
                await link.close()

    # --- the Remote protocol (server/registry.py) -------------------------------------------

    @property
    def capabilities(self) -> dict[str, Any]:
        return self._capabilities

    @property
    def runs_tasks(self) -> bool:
        return self._runs_tasks

    @property
    def skills(self) -> dict[str, Any] | None:
        return self._skills

    def listed(self, kind: Kind) -> list[Any]:
        return self._lists[kind]

    def has(self, kind: Kind, key: str) -> bool:
        return self.describe(kind, key) is not None

    def header_rules(self, tool: str) -> HeaderRules:
        return self._header_rules.get(tool, {})

    def roots_changed(self, session: Session) -> None:
        pending = self._sessions.get(session)
        opened = pending is not None and pending.done() and not pending.cancelled() and pending.exception() is None
        link = pending.result() if opened and pending is not None else None
        if link is None and not self._per_session:
            link = self._primary  # the one upstream session every client shares
        era = link.client.era if link is not None else None
        if link is None or era is None or BY_NAME[era].stateless:
            return  # no upstream session yet (it will ask when opened), or a modern one (it asks each time)
        task = asyncio.ensure_future(_tell_roots_changed(link))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def serves(self, kind: Kind, key: str) -> bool:
        return self._selection.everything or self.has(kind, key)

    def describe(self, kind: Kind, key: str) -> tuple[str, Any] | None:
        if kind in ("tool", "prompt"):
            return next(((key, item) for item in self._lists[kind] if item.name == key), None)
        if kind == "resource":
            if key in self._left_out:
                return None
            exact = next(((key, item) for item in self._lists["resource"] if item.uri == key), None)
            if exact is not None:
                return exact
            matching = zip(self._templates, self._lists["template"], strict=True)
            return next(((item.uri_template, item) for t, item in matching if t.match(key) is not None), None)
        return next(((key, item) for item in self._lists["template"] if item.uri_template == key), None)

    async def watch(self, uri: str) -> None:
        """Add ``uri`` to what the upstream subscription watches, and return once the
        subscription is open with it (at most :data:`WATCH_WAIT` seconds: an upstream
        server slow to acknowledge does not hold the downstream subscription up for
        longer), so that an update right after the downstream client was answered
        reaches it. Cancellation only stops the waiting."""
        if uri not in self._watched and len(self._watched) < MAX_WATCHED:
            self._watched.add(uri)
            self._watching.clear()
            self._rewatch.set()
        if uri in self._watched and self._watcher is not None and not self._watcher.done():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(WATCH_WAIT):
                    await self._watching.wait()

    async def forward(self, ctx: Context, call: Call, method: str, params: Any) -> Any:
        if call.policy.stateless and method in MRTR_METHODS and self._per_session and self._upstream_is_legacy():
            return await self._bridge.forward(ctx, method, params)
        link = await self._link_for(ctx, call)
        return await link.forward(ctx, method, params)

    def _upstream_is_legacy(self) -> bool:
        primary = self._primary
        upstream = BY_NAME.get(primary.client.era or "") if primary is not None else None
        return upstream is not None and not upstream.stateless

    async def _checkout(self) -> Link:
        """A link for one exchange alone: an idle one, or a new one. Raises -32603
        (503) past ``max_sessions``, and what opening it raises."""
        while self._idle:
            link = self._idle.pop()
            if link.client.is_connected:
                return link
            self._lent -= 1
            await link.close()
        if self._lent + len(self._sessions) >= self._max_sessions:
            raise McpError(INTERNAL_ERROR, "Service unavailable: the proxy has no upstream session to spare", status=503)
        self._lent += 1
        link = Link(self._connect, self._options, None)
        try:
            await link.open()
        except BaseException:
            self._lent -= 1
            raise
        return link

    def _checkin(self, link: Link) -> None:
        """An exchange is over: its link is idle again (closed when the proxy stops)."""
        self._idle.append(link)

    # --- links ----------------------------------------------------------------------------

    async def _link_for(self, ctx: Context, call: Call) -> Link:
        """The link for the request: its connection's own, or the primary. Raises -32603
        (503) past ``max_sessions``, and what opening a link raises."""
        primary = self._primary
        if primary is None:
            raise McpError(INTERNAL_ERROR, "Service unavailable: the proxy is not connected upstream", status=503)
        session = call.session
        upstream = BY_NAME.get(primary.client.era or "")
        shared = upstream is None or upstream.stateless
        if not self._per_session or call.policy.stateless or shared or not isinstance(session, Session):
            return primary
        pending = self._sessions.get(session)
        if pending is None:
            if len(self._sessions) + self._lent >= self._max_sessions:
                raise McpError(INTERNAL_ERROR, "Service unavailable: the proxy has no upstream session to spare", status=503)
            pending = self._sessions[session] = asyncio.get_running_loop().create_future()
            task = asyncio.ensure_future(self._open_for(session, pending, dict(ctx.client_capabilities)))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return await asyncio.shield(pending)

    async def _open_for(self, session: Session, pending: asyncio.Future[Link], capabilities: dict[str, Any]) -> None:
        """Open the link of ``session`` (its requests wait on ``pending``); close it when
        the session ends."""
        link = Link(self._connect, self._options, capabilities, session)
        try:
            await link.open()
        except BaseException as exc:
            self._sessions.pop(session, None)
            pending.set_exception(exc)
            pending.exception()  # each waiter re-raises it
            return
        pending.set_result(link)
        await session.ended()
        if self._sessions.get(session) is pending:
            del self._sessions[session]
        await link.close()

    # --- lists and changes ------------------------------------------------------------------

    async def _refresh(self, kind: str, *, announce: bool = True) -> None:
        """Fetch the upstream list ``kind`` again (resources with their templates)."""
        primary = self._primary
        if primary is None:
            return
        client, caps = primary.client, self._capabilities
        if kind == "tools" and "tools" in caps:
            tools = self._chosen("tool", await client.list_all_tools(max_pages=self._max_pages))
            self._lists["tool"], self._header_rules = _with_header_rules(tools)
        elif kind == "prompts" and "prompts" in caps:
            self._lists["prompt"] = self._chosen("prompt", await client.list_all_prompts(max_pages=self._max_pages))
        elif kind == "resources" and "resources" in caps:
            resources = await client.list_all_resources(max_pages=self._max_pages)
            self._lists["resource"] = self._chosen("resource", resources)
            self._left_out = frozenset(r.uri for r in resources) - {r.uri for r in self._lists["resource"]}
            templates = await client.list_all_resource_templates(max_pages=self._max_pages)
            self._lists["template"] = self._chosen("template", templates)
            self._templates = [UriTemplate(t.uri_template) for t in self._lists["template"]]
            known = {uri for uri in self._watched if self.has("resource", uri)}
            if known != self._watched:  # a watched resource is gone: watch the others
                self._watched = known
                self._rewatch.set()
        if announce:
            self._registry.announce(kind)

    def _chosen(self, kind: Kind, items: list[Any]) -> list[Any]:
        """The listed ``items`` of ``kind`` the selection lets through."""
        return [item for item in items if self._selection.admits(key_of(kind, item), item)]

    async def _refetch(self, kind: str) -> None:
        """:meth:`_refresh` after a change; a list that cannot be fetched (an error, more
        than ``max_pages`` pages) stays as it was, logged."""
        try:
            await self._refresh(kind)
        except McpError as exc:
            log.warning("the proxy kept its %s list: fetching the upstream one failed: %s", kind, exc)

    async def _watch(self) -> None:
        """One upstream subscription for the lists and the watched URIs, reopened when
        the URIs change; runs until cancelled. When the upstream server refuses the URIs
        (one was removed meanwhile, say), they are dropped and the lists watched alone;
        when the connection is gone for good, watching stops (logged)."""
        assert self._primary is not None
        client = self._primary.client
        try:
            while True:
                self._rewatch.clear()
                uris = sorted(self._watched)
                try:
                    async with client.listen(tools=True, prompts=True, resources=True, resource_uris=uris) as changes:
                        if not self._rewatch.is_set():  # open with every URI watched now
                            self._watching.set()
                        while not self._rewatch.is_set():
                            change = await _next_or(changes, self._rewatch)
                            if change is None:
                                break
                            if change.kind == "resource" and change.uri is not None:
                                self._registry.resource_updated(change.uri)
                            elif change.kind != "resource":
                                await self._refetch(change.kind)
                except asyncio.CancelledError:
                    raise
                except McpError as exc:
                    if not uris:
                        log.warning("the upstream server refuses to tell the proxy of its changes: %s", exc)
                        return
                    log.warning(
                        "the upstream server refused to watch %d resources (%s); watching the lists alone", len(uris), exc
                    )
                    self._watched.clear()
                except Exception:
                    log.warning("the proxy stopped watching the upstream server for changes", exc_info=True)
                    return
        finally:  # nobody waits for a subscription that is not coming
            self._watching.set()


async def _tell_roots_changed(link: Link) -> None:
    """Send ``notifications/roots/list_changed`` on ``link``; a link already closed is
    skipped."""
    with contextlib.suppress(McpError):
        await link.client.send_notification("notifications/roots/list_changed")


def _with_header_rules(tools: list[Tool]) -> tuple[list[Tool], dict[str, HeaderRules]]:
    """The listed ``tools`` a client may call, and the ``x-mcp-header`` rules of those that
    have any — what the proxy checks a downstream call's ``Mcp-Param-*`` headers against, as
    the upstream server would. A tool whose annotations are malformed is left out, as the
    spec has an HTTP client do (an HTTP upstream's transport already has), logged."""
    kept: list[Tool] = []
    rules: dict[str, HeaderRules] = {}
    for tool in tools:
        if "x-mcp-header" in msgspec.json.encode(tool.input_schema).decode():
            try:
                rules[tool.name] = x_mcp_header_map(tool.input_schema)
            except ValueError as exc:
                log.warning("the proxy leaves out the upstream tool %r: %s", flatten_text(tool.name, 256), exc)
                continue
        kept.append(tool)
    return kept, rules


async def _next_or(changes: Any, stop: asyncio.Event) -> Any:
    """The subscription's next change, or None once ``stop`` is set or it has ended."""
    nxt = asyncio.ensure_future(changes.__anext__())
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait((nxt, stopped), return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        nxt.cancel()
        raise
    finally:
        stopped.cancel()
    if not nxt.done():
        nxt.cancel()
        with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
            await nxt
        return None
    try:
        return nxt.result()
    except StopAsyncIteration:
        return None
