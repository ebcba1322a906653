"""What a server offers — tools, resources, templates, prompts, completions,
middleware, the scopes they require — and how that changes while serving (removing,
hiding, bringing back, each change announced on the :class:`~.changes.ChangeHub`).
The registration API (:mod:`.registration`) fills it with the definitions of
:mod:`.definitions`; the dispatcher and the request handlers of :mod:`.features` read
it, with the server's :class:`~.settings.Settings` and its task manager.

A registry may have other servers' registries mounted in it (:mod:`.mount`, which
implements :class:`Mounted`): its lookups (:meth:`Registry.route`), lists
(:meth:`Registry.listed`), capabilities and scopes then take theirs in too, and their
changes are announced as its own. A registry may also serve what another server offers
over a transport (a :class:`Remote`, which :mod:`mcpkit.proxy` implements): listed after
its own features and its mounts', and asked for every name that neither it nor a mount has."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import msgspec

from ..protocol.apps import APPS_EXTENSION, tool_resource_uri
from ..protocol.cursors import decode_cursor, encode_cursor
from ..protocol.headers import HeaderRules, x_mcp_header_map
from ..protocol.skills import SKILLS_EXTENSION
from ..protocol.tasks import TASKS_EXTENSION
from .apps import is_ui_resource
from .changes import ChangeHub
from .context import Call, Context
from .definitions.prompts import PromptDef
from .definitions.resources import ResourceDef, TemplateDef
from .definitions.tool_def import ToolDef
from .session import Session
from .settings import Settings

if TYPE_CHECKING:  # loaded when used: server/transform.py, server/tasks.py and server/skills.py (start-up cost)
    from ..protocol.types import Tool
    from ..stores.tasks import TaskStore
    from .skills import SkillCatalog
    from .tasks import TaskManager
    from .transform import ToolTransform

__all__ = ["Registry", "TaskSetup", "Middleware", "CallNext", "Mounted", "Remote", "run_middleware", "Kind", "key_of"]

T = TypeVar("T")
#: What a registry offers, by kind: ``"tool"``, ``"prompt"``, ``"resource"`` (keyed by
#: URI), ``"template"`` (keyed by URI template).
Kind = str

_LIST_OF = {"tool": "tools", "resource": "resources", "template": "resources", "prompt": "prompts"}


CallNext = Callable[[], Awaitable[Any]]
"""What middleware awaits to run the rest of the chain: ``await call_next()`` runs the
next middleware, or the request's handler, and returns its result (or raises what it
raised). Not calling it answers the request without running the handler."""
Middleware = Callable[[Context, CallNext], Awaitable[Any]]
"""The type of middleware: ``async def mw(ctx: Context, call_next: CallNext) -> Any``,
registered with ``Server.use``, the first registered outermost. It runs for every request
after the handshake and may read ``ctx``, keep values in ``ctx.state``, refuse the request
by raising, or change the result ``call_next()`` returns. What it raises is a protocol
error whatever the request: ``McpError`` as it is, any other exception as ``-32603``
with a reference id (docs/errors.md). When the request is cancelled, the
``CancelledError`` comes out of ``call_next()``: let it propagate."""


async def run_middleware(middleware: list[Middleware], ctx: Context, innermost: CallNext) -> Any:
    """``innermost()`` run through ``middleware``, the first outermost: its result, or
    what the chain raised. Cancellation propagates through every layer."""
    chain = innermost
    for mw in reversed(middleware):
        chain = _bind(mw, ctx, chain)
    return await chain()


def _bind(mw: Middleware, ctx: Context, nxt: CallNext) -> CallNext:
    async def call() -> Any:
        return await mw(ctx, nxt)

    return call


class Mounted(Protocol):
    """Another server's registry mounted in this one, with the rule that names its
    features here (:class:`mcpkit.server.mount.Mount` implements it)."""

    @property
    def registry(self) -> Registry:
        """The mounted server's registry (read live: what it offers now)."""
        ...

    @property
    def scopes(self) -> tuple[str, ...]:
        """Scopes every feature of the mount requires, besides its own."""
        ...

    def local(self, kind: Kind, key: str) -> str | None:
        """The mounted server's own key for the key ``key`` names here (None: not one
        of the mount's names)."""
        ...

    def expose(self, kind: Kind, item: Any) -> Any:
        """The wire description ``item`` (a Tool, Prompt, Resource, ResourceTemplate)
        as listed here: renamed, or None when it cannot be offered under the mount (or
        its selection leaves it out)."""
        ...

    def admits(self, kind: Kind, key: str) -> bool:
        """Whether the mounted server's feature ``key`` (its own key) passes the mount's
        selection (:mod:`.filters`)."""
        ...

    async def run(self, ctx: Context, renamed: dict[str, Any], inner: Callable[[Context], Awaitable[T]]) -> T:
        """``inner`` run as the mounted server serves: with the Context its handlers
        see (``renamed`` are the params members as it names them) and its middleware."""
        ...

    def list_changed(self, kind: str) -> None:
        """The mounted server's list ``kind`` changed."""
        ...

    def resource_updated(self, uri: str) -> None:
        """The mounted server's resource ``uri`` (its own URI) was updated."""
        ...


class Remote(Protocol):
    """What another server offers, reached over a transport (:class:`mcpkit.Proxy`)."""

    @property
    def capabilities(self) -> dict[str, Any]:
        """The remote server's feature capabilities (tools, resources, prompts, ...)."""
        ...

    def listed(self, kind: Kind) -> list[Any]:
        """The remote server's features of ``kind``, as last listed."""
        ...

    def has(self, kind: Kind, key: str) -> bool:
        """Whether the remote server listed ``key`` of ``kind`` (a resource: a URI it
        listed or one of its templates matches)."""
        ...

    async def watch(self, uri: str) -> None:
        """A client of this server subscribed to the remote resource ``uri``: its
        updates are wanted from now on. Returns once the remote server is asked for them
        (or could not be, within a bound), so that an update right after the
        subscription is answered is not missed."""
        ...

    def describe(self, kind: Kind, key: str) -> tuple[str, Any] | None:
        """What :meth:`Registry.describe` says of a remote feature, as last listed."""
        ...

    def roots_changed(self, session: Session) -> None:
        """The client of the legacy connection ``session`` says its roots changed: the
        remote server is told, on that connection's upstream session. Never raises."""
        ...

    @property
    def runs_tasks(self) -> bool:
        """Whether the remote server runs calls as tasks (it declared the tasks extension
        of the 2026-07-28 era): a call forwarded for a client of the extension may then
        become a task here (docs/howto/proxies.md)."""
        ...

    @property
    def skills(self) -> dict[str, Any] | None:
        """The settings of the skills extension the remote server declared in the
        2026-07-28 era (``{"directoryRead": true}``, ``{}``), None if it did not: then its
        ``skills/*`` requests are forwarded (docs/skills.md)."""
        ...

    def serves(self, kind: Kind, key: str) -> bool:
        """Whether a request for ``key`` of ``kind``, which this registry does not have,
        goes to the remote server: any key when the remote's features are not filtered
        (the remote server knows its own, or says it does not), else only one listed."""
        ...

    def header_rules(self, tool: str) -> HeaderRules:
        """The ``x-mcp-header`` annotations of the remote tool ``tool`` as last listed
        (empty if it has none or is unknown)."""
        ...

    async def forward(self, ctx: Context, call: Call, method: str, params: Any) -> Any:
        """The remote server's answer to ``method`` with ``params`` (the decoded params
        struct), for the request ``ctx``: its result, or its error as an ``McpError``."""
        ...


def key_of(kind: Kind, item: Any) -> str:
    """The key a wire description ``item`` of ``kind`` goes by: a tool's or prompt's name, a
    resource's URI, a template's URI template."""
    if kind in ("tool", "prompt"):
        return str(item.name)
    return str(item.uri if kind == "resource" else item.uri_template)


class Transforms:
    """A registry's tool transformations (server/transform.py makes them): by the name
    each is offered under, and by its source's name (which is then not offered)."""

    __slots__ = ("_by_name", "_by_source")

    def __init__(self) -> None:
        self._by_name: dict[str, ToolTransform] = {}
        self._by_source: dict[str, ToolTransform] = {}

    def __bool__(self) -> bool:
        return bool(self._by_source)

    def copy(self) -> Transforms:
        """The same transformations, in a table of their own."""
        copy = Transforms()
        copy._by_name = dict(self._by_name)
        copy._by_source = dict(self._by_source)
        return copy

    def add(self, transform: ToolTransform) -> None:
        """Add ``transform``. Raises ``ValueError`` if its source is transformed
        already, or its name is another transformation's."""
        if transform.source in self._by_source:
            raise ValueError(f"the tool {transform.source!r} is transformed already")
        if transform.name in self._by_name:
            raise ValueError(f"a transformed tool named {transform.name!r} exists already")
        self._by_source[transform.source] = transform
        self._by_name[transform.name] = transform

    def named(self, name: str) -> ToolTransform | None:
        """The transformation offered as ``name``, if any."""
        return self._by_name.get(name)

    def hides(self, name: str) -> bool:
        """Whether ``name`` is a transformed source's own name, and no transformed tool's:
        not offered."""
        return name in self._by_source and name not in self._by_name

    def listed(self, tools: list[Tool]) -> list[Tool]:
        """``tools`` as offered: each transformed source replaced by its transformation
        (where it fits), and any other tool under a transformed tool's name left out
        (a call of that name reaches the transformation)."""
        out: list[Tool] = []
        for tool in tools:
            transform = self._by_source.get(tool.name)
            if transform is not None:
                described = transform.describe(tool)
                if described is not None:
                    out.append(described)
            elif tool.name not in self._by_name:
                out.append(tool)
        return out


class TaskSetup:
    """What a server's tasks are kept with (``Server(task_store=, task_ttl=,
    task_poll_interval=)``, checked there), and its task manager once one is needed.

    The manager (server/tasks.py, with the default store of stores/tasks.py) is made by
    :meth:`manager` at the first request that needs it — a call of a tool that may run
    as a task, a ``tasks/*`` request, a listen for tasks — not with the server: most
    servers have no task tool. A registry and its snapshots share one setup, so one
    manager."""

    __slots__ = ("_made", "poll_interval", "store", "ttl")

    def __init__(self, store: TaskStore | None = None, *, ttl: float = 3600.0, poll_interval: float = 1.0) -> None:
        self.store = store
        self.ttl = ttl
        self.poll_interval = poll_interval
        self._made: TaskManager | None = None

    def manager(self, hub: ChangeHub, settings: Settings) -> TaskManager:
        """The task manager, made on the first call (on ``store``, or a new
        :class:`~mcpkit.InMemoryTaskStore`) with ``hub`` and ``settings``. Never raises."""
        made = self._made
        if made is None:
            # loaded with the first task: start-up cost of the servers that have none
            from .tasks import TaskManager

            store = self.store
            if store is None:
                from ..stores.tasks import InMemoryTaskStore  # the default store: likewise

                store = InMemoryTaskStore()
            made = self._made = TaskManager(store, hub, settings, ttl=self.ttl, poll_interval=self.poll_interval)
        return made


class Registry:
    """The server's registered features; registration raises ``ValueError`` for a
    duplicate name or URI."""

    def __init__(self, settings: Settings, hub: ChangeHub, tasks: TaskSetup | None = None) -> None:
        self.settings = settings
        #: Where list changes and resource updates are published and fanned out.
        self.hub = hub
        #: How the tasks of the tasks extension are kept (docs/tasks.md): :attr:`tasks`.
        self.task_setup = tasks if tasks is not None else TaskSetup()
        self.tools: dict[str, ToolDef] = {}
        self.resources: dict[str, ResourceDef] = {}
        self.templates: list[TemplateDef] = []
        self.prompts: dict[str, PromptDef] = {}
        self.completions: dict[tuple[str, str], Callable[..., Any]] = {}
        self.middleware: list[Middleware] = []
        self._header_rules: dict[str, HeaderRules] = {}
        #: Scopes a feature requires, by (kind, key): ("tool", name), ("prompt", name),
        #: ("resource", uri or URI template).
        self.scopes: dict[tuple[str, str], tuple[str, ...]] = {}
        #: Disabled features, by kind and key: out of every list and unknown to calls.
        self.disabled: dict[tuple[str, str], Any] = {}
        #: Registries mounted in this one, in the order they were mounted (server/mount.py).
        self.mounts: list[Mounted] = []
        #: The mounts of this registry in others: told of its changes.
        self.parents: list[Mounted] = []
        #: The remote server this registry also serves (a proxy's), if any.
        self.remote: Remote | None = None
        #: Tools offered transformed, in place of their sources (server/transform.py).
        self.transforms = Transforms()
        self._skills: SkillCatalog | None = None

    @property
    def skills(self) -> SkillCatalog:
        """The skills served (server/skills.py); their files are in :attr:`resources`.
        The catalog is made when first asked for (a skill added, a skills request, the
        ``directoryRead`` setting). Never raises."""
        catalog = self._skills
        if catalog is None:
            from .skills import SkillCatalog  # loaded with the first skill: start-up cost of the servers without

            catalog = self._skills = SkillCatalog(self)
        return catalog

    @property
    def tasks(self) -> TaskManager:
        """The task manager of the tasks extension (docs/tasks.md), made when first
        asked for (:class:`TaskSetup`). Never raises."""
        return self.task_setup.manager(self.hub, self.settings)

    # --- what changed, announced here and where this registry is mounted -------------------------

    def announce(self, kind: str) -> None:
        """The list ``kind`` (``tools``, ``prompts``, ``resources``) changed: its
        subscribers are told, here and in every server this one is mounted in."""
        self.hub.list_changed(kind)
        for parent in self.parents:
            parent.list_changed(kind)

    def resource_updated(self, uri: str) -> None:
        """The resource ``uri`` was updated: its subscribers are told, here and (under
        its URI there) in every server this one is mounted in."""
        self.hub.resource_updated(uri)
        for parent in self.parents:
            parent.resource_updated(uri)

    # --- registration -------------------------------------------------------------------------

    def add_tool(self, td: ToolDef) -> None:
        """Offer the tool ``td`` (its ``x-mcp-header`` rules read once, here). Raises
        ``ValueError`` for a duplicate name or malformed ``x-mcp-header`` annotations."""
        if td.name in self.tools:
            raise ValueError(f"a tool named {td.name!r} is already registered")
        rules: HeaderRules = {}
        if "x-mcp-header" in msgspec.json.encode(td.tool.input_schema).decode():
            try:
                rules = x_mcp_header_map(td.tool.input_schema)
            except ValueError as exc:
                raise ValueError(f"tool {td.name!r}: {exc}") from None
        self.tools[td.name] = td
        self._header_rules[td.name] = rules
        self.announce("tools")

    def add_resource(self, rd: ResourceDef) -> None:
        """Offer the resource ``rd``. Raises ``ValueError`` for a duplicate URI."""
        uri = rd.resource.uri
        if uri in self.resources:
            raise ValueError(f"a resource with URI {uri!r} is already registered")
        self.resources[uri] = rd
        self.announce("resources")

    def add_template(self, td: TemplateDef) -> None:
        """Offer the resource template ``td`` (templates are matched in this order)."""
        self.templates.append(td)
        self.announce("resources")

    def add_transform(self, transform: ToolTransform) -> None:
        """Offer the tool ``transform.source`` transformed, in its place. Raises
        ``ValueError`` if it is transformed already, if another transformation has that
        name, or if the source is offered now and the transformation does not fit it."""
        found = self.describe_untransformed("tool", transform.source)
        if found is not None:
            transform.fit(found[1])
        self.transforms.add(transform)
        self.announce("tools")

    def add_prompt(self, pd: PromptDef) -> None:
        """Offer the prompt ``pd``. Raises ``ValueError`` for a duplicate name."""
        if pd.prompt.name in self.prompts:
            raise ValueError(f"a prompt named {pd.prompt.name!r} is already registered")
        self.prompts[pd.prompt.name] = pd
        self.announce("prompts")

    # --- changing what is offered while serving -------------------------------------------------

    def _table(self, kind: str) -> dict[str, Any]:
        tables: dict[str, dict[str, Any]] = {"tool": self.tools, "resource": self.resources, "prompt": self.prompts}
        if kind not in tables and kind != "template":
            raise ValueError(f"kind must be 'tool', 'resource', 'template' or 'prompt', not {kind!r}")
        return tables.get(kind, {})

    def remove(self, kind: str, key: str) -> None:
        """Remove the tool, resource, template (by its URI template) or prompt ``key``,
        enabled or not. Raises ``KeyError`` if there is none, ``ValueError`` for a skill's
        file."""
        table = self._table(kind)
        self._not_a_skill_file(kind, key)
        if kind == "resource":
            self._check_unlinked(key)
        if self.disabled.pop((kind, key), None) is not None:
            return  # a disabled one is in no list: nothing changes for clients
        if kind == "template":
            found = [t for t in self.templates if t.template.uri_template == key]
            if not found:
                raise KeyError(key)
            self.templates.remove(found[0])
        else:
            del table[key]
        if kind == "tool":
            self._header_rules.pop(key, None)
        self.announce(_LIST_OF[kind])

    def _check_unlinked(self, uri: str) -> None:
        """Raises ``ValueError`` if a tool here links to the view ``uri`` (docs/apps.md)."""
        tools = [*self.tools.values(), *(td for (kind, _), td in self.disabled.items() if kind == "tool")]
        linked = sorted(td.name for td in tools if tool_resource_uri(td.tool) == uri)
        if linked:
            raise ValueError(f"the UI resource {uri!r} is linked to by the tools {linked}: remove them first")

    def set_enabled(self, kind: str, key: str, enabled: bool) -> None:
        """Enable or disable a feature; a disabled one is in no list and unknown to
        calls until enabled again. Raises ``KeyError`` if there is none, ``ValueError``
        for a skill's file (its skill's entry lists it: remove the skill instead)."""
        table = self._table(kind)
        self._not_a_skill_file(kind, key)
        if enabled:
            item = self.disabled.pop((kind, key), None)
            if item is None:
                if (kind == "template" and any(t.template.uri_template == key for t in self.templates)) or key in table:
                    return  # already enabled
                raise KeyError(key)
            if kind == "template":
                self.templates.append(item)
            else:
                table[key] = item
        else:
            if (kind, key) in self.disabled:
                return
            if kind == "template":
                found = [t for t in self.templates if t.template.uri_template == key]
                if not found:
                    raise KeyError(key)
                self.templates.remove(found[0])
                item = found[0]
            else:
                item = table.pop(key)
            self.disabled[(kind, key)] = item
        self.announce(_LIST_OF[kind])

    def _not_a_skill_file(self, kind: str, key: str) -> None:
        if kind != "resource":
            return
        from .skills import SkillFileResource  # loaded when used, as the catalog is (start-up cost)

        if isinstance(self.resources.get(key), SkillFileResource):
            raise ValueError(f"{key} is a file of a skill: remove the skill (Server.remove_skill) or change it")

    def scopes_for(self, method: str, params: Any) -> tuple[str, ...]:
        """The scopes the feature a request names requires: ``params`` is its decoded
        ``{"name"}`` or ``{"uri"}``. A mounted feature requires its mount's scopes and
        its own (server/mount.py)."""
        if method in ("tools/call", "prompts/get"):
            kind, key = ("tool" if method == "tools/call" else "prompt"), str(params.get("name"))
            if kind == "tool" and self.transforms:
                if self.transforms.hides(key):
                    return ()
                transform = self.transforms.named(key)
                key = key if transform is None else transform.source
            if key in (self.tools if kind == "tool" else self.prompts) or not self.mounts:
                return self.scopes.get((kind, key), ())
            routed = self.route(kind, key)
            if routed is None:
                return ()
            mount, local = routed
            return _union(mount.scopes, mount.registry.scopes_for(method, {"name": local}))
        if method in ("resources/read", "resources/subscribe"):
            uri = str(params.get("uri"))
            if uri in self.resources:
                return self.scopes.get(("resource", uri), ())
            for t in self.templates:
                if t.uri_template.match(uri) is not None:
                    return self.scopes.get(("resource", t.template.uri_template), ())
            routed = self.route("resource", uri) if self.mounts else None
            if routed is not None:
                mount, local = routed
                return _union(mount.scopes, mount.registry.scopes_for(method, {"uri": local}))
        return ()

    def has_scopes(self) -> bool:
        """Whether some feature, here or mounted, requires scopes."""
        return bool(self.scopes) or any(m.scopes or m.registry.has_scopes() for m in self.mounts)

    def all_scopes(self) -> set[str]:
        """Every scope some feature, here or mounted, requires."""
        found = {scope for scopes in self.scopes.values() for scope in scopes}
        for mount in self.mounts:
            found |= set(mount.scopes) | mount.registry.all_scopes()
        return found

    def knows_resource(self, uri: str) -> bool:
        """Whether ``uri`` is a registered resource or matches a template (here or in a
        mounted server)."""
        if uri in self.resources or any(t.uri_template.match(uri) is not None for t in self.templates):
            return True
        if self.remote is not None and self.remote.has("resource", uri):
            return True
        return bool(self.mounts) and self.route("resource", uri) is not None

    def roots_changed(self, session: Session) -> None:
        """The client of the legacy connection ``session`` says its roots changed: the
        remote servers (this registry's, and those of the servers mounted in it) are told."""
        if self.remote is not None:
            self.remote.roots_changed(session)
        for mount in self.mounts:
            mount.registry.roots_changed(session)

    async def watch(self, uri: str) -> None:
        """A client subscribed to ``uri``: a remote server that offers it (here or in a
        mounted server) is told its updates are wanted; returns once it has been (see
        :meth:`RemoteFeatures.watch`)."""
        if uri in self.resources or any(t.uri_template.match(uri) is not None for t in self.templates):
            return
        routed = self.route("resource", uri) if self.mounts else None
        if routed is not None:
            await routed[0].registry.watch(routed[1])
        elif self.remote is not None and self.remote.has("resource", uri):
            await self.remote.watch(uri)

    # --- mounted servers (server/mount.py) ------------------------------------------------------

    def has(self, kind: Kind, key: str) -> bool:
        """Whether this registry, or one mounted in it, offers ``key`` of ``kind``
        (a resource: a URI it can read; a template: its URI template)."""
        if kind == "tool":
            if self.transforms:
                if self.transforms.hides(key):
                    return False
                transform = self.transforms.named(key)
                if transform is not None:
                    return self.describe(kind, key) is not None
            found = key in self.tools
        elif kind == "prompt":
            found = key in self.prompts
        elif kind == "resource":
            return self.knows_resource(key)
        else:
            found = any(t.template.uri_template == key for t in self.templates)
        if not found and self.remote is not None:
            found = self.remote.has(kind, key)
        return found or (bool(self.mounts) and self.route(kind, key) is not None)

    def route(self, kind: Kind, key: str) -> tuple[Mounted, str] | None:
        """The mount that offers ``key`` of ``kind`` under this registry's names, and
        its own key for it; the most recently mounted first. None if no mount does (the
        registry's own features are not looked at: they come first, and their caller
        looked already)."""
        for mount in reversed(self.mounts):
            local = mount.local(kind, key)
            if local is not None and mount.registry.has(kind, local) and mount.admits(kind, local):
                return mount, local
        return None

    def describe(self, kind: Kind, key: str) -> tuple[str, Any] | None:
        """The feature ``key`` of ``kind`` offered here (or mounted, or remote): its own
        key and its wire description — for a resource URI a template matches, the
        template's URI template and description; a transformed tool's as transformed.
        None if none is offered."""
        if kind == "tool" and self.transforms:
            if self.transforms.hides(key):
                return None
            transform = self.transforms.named(key)
            if transform is not None:
                source = self.describe_untransformed(kind, transform.source)
                described = None if source is None else transform.describe(source[1])
                return None if described is None else (key, described)
        return self.describe_untransformed(kind, key)

    def describe_untransformed(self, kind: Kind, key: str) -> tuple[str, Any] | None:
        """:meth:`describe` as if this registry transformed no tool: what a
        transformation's source is."""
        found: tuple[str, Any] | None = None
        if kind == "tool" and key in self.tools:
            found = key, self.tools[key].tool
        elif kind == "prompt" and key in self.prompts:
            found = key, self.prompts[key].prompt
        elif kind == "resource" and key in self.resources:
            found = key, self.resources[key].resource
        elif kind in ("resource", "template"):
            for t in self.templates:
                if (t.template.uri_template == key) if kind == "template" else (t.uri_template.match(key) is not None):
                    found = t.template.uri_template, t.template
                    break
        if found is None and self.mounts:
            routed = self.route(kind, key)
            if routed is not None:
                found = routed[0].registry.describe(kind, routed[1])
        if found is None and self.remote is not None:
            found = self.remote.describe(kind, key)
        return found

    def listed(self, kind: Kind) -> list[Any]:
        """The wire descriptions of the enabled features of ``kind``: this registry's
        own, then each mount's (the most recently mounted first) as the mount names
        them, then the remote server's, leaving out a name or URI already listed (the
        one listed is the one served)."""
        if kind == "tool":
            own: list[Any] = [t.tool for t in self.tools.values()]
        elif kind == "prompt":
            own = [p.prompt for p in self.prompts.values()]
        elif kind == "resource":
            own = [r.resource for r in self.resources.values()]
        else:
            own = [t.template for t in self.templates]
        if not self.mounts and self.remote is None and not (kind == "tool" and self.transforms):
            return own
        seen = {key_of(kind, item) for item in own}
        for mount in reversed(self.mounts):
            for item in mount.registry.listed(kind):
                exposed = mount.expose(kind, item)
                if exposed is not None and key_of(kind, exposed) not in seen:
                    seen.add(key_of(kind, exposed))
                    own.append(exposed)
        if self.remote is not None:  # the last resort of a call, so listed last
            own.extend(item for item in self.remote.listed(kind) if key_of(kind, item) not in seen)
        if kind == "tool" and self.transforms:
            return self.transforms.listed(own)
        return own

    def snapshot(self) -> Registry:
        """A registry offering what this one offers now — its features, their scopes and
        completions, its middleware, its transformations, the servers mounted in it and
        its remote — that later changes here do not reach (``Server.import_server``)."""
        copy = Registry(self.settings, self.hub, self.task_setup)
        copy.tools = dict(self.tools)
        copy._header_rules = dict(self._header_rules)
        copy.resources = dict(self.resources)
        copy.templates = list(self.templates)
        copy.prompts = dict(self.prompts)
        copy.completions = dict(self.completions)
        copy.middleware = list(self.middleware)
        copy.scopes = dict(self.scopes)
        copy.mounts = list(self.mounts)
        copy.remote = self.remote
        copy.transforms = self.transforms.copy()
        return copy

    def reaches(self, other: Registry) -> bool:
        """Whether ``other`` is this registry or mounted in it, at any depth."""
        return other is self or any(mount.registry.reaches(other) for mount in self.mounts)

    # --- reading ------------------------------------------------------------------------------

    def header_rules(self, tool: str) -> HeaderRules:
        """The ``x-mcp-header`` annotations of a registered tool, computed once at
        registration (empty for an unknown tool: nothing is kept for names a client
        makes up); a mounted tool's are its server's, a proxied one's its listing's, a
        transformed one's its transformed schema's."""
        if self.transforms:
            if self.transforms.hides(tool):
                return {}
            transform = self.transforms.named(tool)
            if transform is not None:
                source = self.describe_untransformed("tool", transform.source)
                try:
                    return {} if source is None else transform.fit(source[1]).rules
                except ValueError:
                    return {}
        rules = self._header_rules.get(tool)
        if rules is None and self.mounts:
            routed = self.route("tool", tool)
            if routed is not None:
                return routed[0].registry.header_rules(routed[1])
        if rules is None and self.remote is not None:
            return self.remote.header_rules(tool)
        return rules or {}

    def page(self, items: list[Any], cursor: str | None) -> tuple[list[Any], str | None]:
        """One page of ``items`` from ``cursor``, and the next page's cursor (None at the
        end). Raises ``McpError(-32602)`` for a cursor that is not ours."""
        start = decode_cursor(cursor, len(items)) if cursor is not None else 0
        end = start + self.settings.page_size
        return items[start:end], encode_cursor(end) if end < len(items) else None

    @property
    def capabilities(self) -> dict[str, Any]:
        """The server capabilities these features amount to."""
        caps: dict[str, Any] = {"logging": {}}
        kinds = {kind for kind, _ in self.disabled}
        if self.tools or "tool" in kinds:
            caps["tools"] = {"listChanged": True}
        if self.resources or self.templates or kinds & {"resource", "template"}:
            caps["resources"] = {"subscribe": True, "listChanged": True}
        if self.prompts or "prompt" in kinds:
            caps["prompts"] = {"listChanged": True}
        if self.completions or self.prompts or self.templates:
            caps["completions"] = {}
        if self.serves_views():  # MCP Apps, in both eras (docs/apps.md)
            caps["extensions"] = {APPS_EXTENSION: {}}
        if self.remote is not None:
            for name, value in self.remote.capabilities.items():
                caps.setdefault(name, value)
        for mount in self.mounts:  # what a mounted server offers is offered here
            for name, value in mount.registry.capabilities.items():
                caps.setdefault(name, value)
        return caps

    @property
    def modern_capabilities(self) -> dict[str, Any]:
        """:attr:`capabilities`, plus the extensions of the 2026-07-28 era: tasks, when a
        tool runs as one (docs/tasks.md); skills, when some are served (docs/skills.md),
        with ``directoryRead`` when ``resources/directory/read`` is."""
        caps = self.capabilities
        declared = caps.get("extensions")
        extensions: dict[str, Any] = dict(declared) if isinstance(declared, dict) else {}  # MCP Apps: both eras
        if self.runs_tasks():
            extensions[TASKS_EXTENSION] = {}
        skills = self._skills  # None: no skill was ever added (the catalog is made with the first)
        if skills:
            extensions[SKILLS_EXTENSION] = {"directoryRead": True} if skills.directory_read else {}
        elif self.remote is not None and self.remote.skills is not None:
            extensions[SKILLS_EXTENSION] = dict(self.remote.skills)
        if extensions:
            caps = {**caps, "extensions": extensions}
        return caps

    def serves_views(self) -> bool:
        """Whether a view of the MCP Apps extension (a ``ui://`` resource served as
        ``text/html;profile=mcp-app``) is registered here or mounted, enabled or not."""
        resources = [*self.resources.values(), *(rd for (kind, _), rd in self.disabled.items() if kind == "resource")]
        return any(is_ui_resource(rd.resource) for rd in resources) or any(m.registry.serves_views() for m in self.mounts)

    def runs_tasks(self) -> bool:
        """Whether a tool, here or mounted (or the remote server's), enabled or not, may
        run as a task."""
        tools = [*self.tools.values(), *(td for (kind, _), td in self.disabled.items() if kind == "tool")]
        if self.remote is not None and self.remote.runs_tasks:
            return True
        return any(td.task is not None for td in tools) or any(m.registry.runs_tasks() for m in self.mounts)


def _union(first: tuple[str, ...], second: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*first, *second)))
