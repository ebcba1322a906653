"""What a server offers — tools, resources, templates, prompts, completions,
middleware, the scopes they require — and how that changes while serving (removing,
hiding, bringing back, each change announced on the :class:`~.changes.ChangeHub`).
The registration API (:mod:`.registration`) fills it with the definitions of
:mod:`.definitions`; the dispatcher and the request handlers of :mod:`.features` read
it, with the server's :class:`~.settings.Settings` and its task manager."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from ..protocol.cursors import decode_cursor, encode_cursor
from ..protocol.headers import HeaderRules, x_mcp_header_map
from ..protocol.tasks import TASKS_EXTENSION
from ..stores.tasks import InMemoryTaskStore
from .changes import ChangeHub
from .context import Context
from .definitions.prompts import PromptDef
from .definitions.resources import ResourceDef, TemplateDef
from .definitions.tool_def import ToolDef
from .settings import Settings
from .tasks import TaskManager

__all__ = ["Registry", "Middleware", "CallNext"]

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


class Registry:
    """The server's registered features; registration raises ``ValueError`` for a
    duplicate name or URI."""

    def __init__(self, settings: Settings, hub: ChangeHub, tasks: TaskManager | None = None) -> None:
        self.settings = settings
        #: Where list changes and resource updates are published and fanned out.
        self.hub = hub
        #: The tasks of the tasks extension (docs/tasks.md).
        self.tasks = tasks if tasks is not None else TaskManager(InMemoryTaskStore(), hub, settings)
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
        self.hub.list_changed("tools")

    def add_resource(self, rd: ResourceDef) -> None:
        """Offer the resource ``rd``. Raises ``ValueError`` for a duplicate URI."""
        uri = rd.resource.uri
        if uri in self.resources:
            raise ValueError(f"a resource with URI {uri!r} is already registered")
        self.resources[uri] = rd
        self.hub.list_changed("resources")

    def add_template(self, td: TemplateDef) -> None:
        """Offer the resource template ``td`` (templates are matched in this order)."""
        self.templates.append(td)
        self.hub.list_changed("resources")

    def add_prompt(self, pd: PromptDef) -> None:
        """Offer the prompt ``pd``. Raises ``ValueError`` for a duplicate name."""
        if pd.prompt.name in self.prompts:
            raise ValueError(f"a prompt named {pd.prompt.name!r} is already registered")
        self.prompts[pd.prompt.name] = pd
        self.hub.list_changed("prompts")

    # --- changing what is offered while serving -------------------------------------------------

    def _table(self, kind: str) -> dict[str, Any]:
        tables: dict[str, dict[str, Any]] = {"tool": self.tools, "resource": self.resources, "prompt": self.prompts}
        if kind not in tables and kind != "template":
            raise ValueError(f"kind must be 'tool', 'resource', 'template' or 'prompt', not {kind!r}")
        return tables.get(kind, {})

    def remove(self, kind: str, key: str) -> None:
        """Remove the tool, resource, template (by its URI template) or prompt ``key``,
        enabled or not. Raises ``KeyError`` if there is none."""
        table = self._table(kind)
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
        self.hub.list_changed(_LIST_OF[kind])

    def set_enabled(self, kind: str, key: str, enabled: bool) -> None:
        """Enable or disable a feature; a disabled one is in no list and unknown to
        calls until enabled again. Raises ``KeyError`` if there is none."""
        table = self._table(kind)
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
        self.hub.list_changed(_LIST_OF[kind])

    def scopes_for(self, method: str, params: Any) -> tuple[str, ...]:
        """The scopes the feature a request names requires: ``params`` is its decoded
        ``{"name"}`` or ``{"uri"}``."""
        if method == "tools/call":
            return self.scopes.get(("tool", str(params.get("name"))), ())
        if method == "prompts/get":
            return self.scopes.get(("prompt", str(params.get("name"))), ())
        if method in ("resources/read", "resources/subscribe"):
            uri = str(params.get("uri"))
            if uri in self.resources:
                return self.scopes.get(("resource", uri), ())
            for t in self.templates:
                if t.uri_template.match(uri) is not None:
                    return self.scopes.get(("resource", t.template.uri_template), ())
        return ()

    def knows_resource(self, uri: str) -> bool:
        """Whether ``uri`` is a registered resource or matches a template."""
        return uri in self.resources or any(t.uri_template.match(uri) is not None for t in self.templates)

    # --- reading ------------------------------------------------------------------------------

    def header_rules(self, tool: str) -> HeaderRules:
        """The ``x-mcp-header`` annotations of a registered tool, computed once at
        registration (empty for an unknown tool: nothing is kept for names a client
        makes up)."""
        return self._header_rules.get(tool) or {}

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
        return caps

    @property
    def modern_capabilities(self) -> dict[str, Any]:
        """:attr:`capabilities`, plus the extensions of the 2026-07-28 era: tasks, when a
        tool runs as one (docs/tasks.md)."""
        caps = self.capabilities
        tools = [*self.tools.values(), *(td for (kind, _), td in self.disabled.items() if kind == "tool")]
        if any(td.task is not None for td in tools):
            caps["extensions"] = {TASKS_EXTENSION: {}}
        return caps
