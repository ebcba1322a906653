"""Composing servers: another server's features offered by this one
(``server.mount(other, prefix=...)``, docs/howto/compose.md).

A mount is a link between two registries, not a copy: the parent's
:class:`~.registry.Registry` keeps a list of :class:`Mount` objects, and every lookup,
list, capability and scope question it answers takes them in. There is one dispatcher
and one method table — the parent's. When a request names a feature the parent does not
have itself, the feature handler (:mod:`.features`) asks the registry to *route* the
name; the route is the mount whose naming rule claims the name and whose server offers
the feature under the name the rule gives back. The handler then calls itself on the
mounted server's registry, with that name, inside :meth:`Mount.run`. So a mounted tool
is served by exactly the code that serves the parent's own, and a mount of a mount is
the same step twice.

Naming, reversible in both directions (:meth:`Mount.local` undoes :meth:`Mount.public`):

* tools and prompts: ``{prefix}{separator}{name}`` (``weather_forecast`` for the tool
  ``forecast`` under the prefix ``weather``, separator ``"_"`` by default);
* resources and templates: the prefix becomes the first path segment after the scheme
  and its ``//``: ``notes://today`` -> ``notes://work/today``, ``file:///etc/hosts`` ->
  ``file://work//etc/hosts``, ``urn:x`` -> ``urn:work/x``; a template alike
  (``notes://{day}`` -> ``notes://work/{day}``). A template that does not start with a
  literal scheme cannot be prefixed, and is not offered under a prefix;
* without a prefix, names and URIs stay as they are.

The parent's own features come first; among mounts the most recently mounted wins a name
they share, and a list shows only the feature a name reaches.

Everything is read live: a registration or a removal in the mounted server changes what
the parent lists and serves at once, and is announced to the parent's subscribers (the
mounted registry tells its parents, :meth:`Mount.list_changed`); a resource update it
announces reaches the parent's subscribers under the parent's URI.

What applies to a mounted feature's request, outermost first:

1. the parent's authorization: the scopes ``mount(..., scopes=...)`` gives and those the
   feature was registered with (both required) — checked at the HTTP edge;
2. the parent's middleware (the dispatcher's, around every request);
3. the mounted server's middleware (:meth:`Mount.run`), seeing a Context whose
   ``params`` name the feature as the mounted server does, and whose ``lifespan`` is the
   mounted server's state (:func:`~.context.mounted_context`);
4. the tool's time limit: its own ``timeout=``, else the mounted server's
   ``tool_timeout``, else the parent's — the nearest one given; a tool error is masked
   if either server masks tool errors.

The request itself is the parent's: one Call, one asker, one era, so logging, progress,
elicitation, sampling and roots, input rounds (modern) and tasks (kept by the parent's
task manager) work from a mounted handler as from the parent's own. The mounted server's
``eras`` is not consulted; errors reaching the wire are shaped by the parent's options.
Lifespans nest (:mod:`.lifespan`): the parent's is entered first, then the mounted ones
in mount order; they are exited in reverse.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, TypeVar

import msgspec

from .apps import relinked_tool_meta
from .context import Context, mounted_context
from .filters import Selection
from .lifespan import LifespanRunner
from .registry import Kind, Registry, key_of, run_middleware

__all__ = ["Mount", "prefix_uri", "unprefix_uri", "check_prefix"]

T = TypeVar("T")

# compiled (and cached by re) at first use, not at import
_SCHEME: Final = r"[A-Za-z][A-Za-z0-9+.\-]*:(?://)?"
_PREFIX: Final = r"[A-Za-z0-9_.\-]+"


def check_prefix(prefix: str | None, separator: str) -> None:
    """Raises ``ValueError`` for a prefix that is not letters, digits, ``_``, ``-`` and
    ``.``, or an empty separator or one with whitespace."""
    if prefix is not None and re.fullmatch(_PREFIX, prefix) is None:
        raise ValueError(f"a mount prefix is letters, digits, '_', '-' and '.': {prefix!r}")
    if not separator or any(ch.isspace() for ch in separator):
        raise ValueError(f"a mount separator is a non-empty string without whitespace: {separator!r}")


def prefix_uri(uri: str, prefix: str) -> str | None:
    """``uri`` (or a URI template) under ``prefix``: the prefix as the first path segment
    after its scheme (None if it does not start with a scheme)."""
    found = re.match(_SCHEME, uri)
    if found is None:
        return None
    return f"{found.group(0)}{prefix}/{uri[found.end() :]}"


def unprefix_uri(uri: str, prefix: str) -> str | None:
    """What :func:`prefix_uri` made ``uri`` from, or None if it did not."""
    found = re.match(_SCHEME, uri)
    if found is None:
        return None
    rest, head = uri[found.end() :], prefix + "/"
    return found.group(0) + rest[len(head) :] if rest.startswith(head) else None


class Mount:
    """One server's registry mounted in another's, under a naming rule (see the
    module's docstring); it implements :class:`~.registry.Mounted`."""

    __slots__ = ("_lifespan", "_parent", "_registry", "prefix", "scopes", "selection", "separator")

    def __init__(
        self,
        parent: Registry,
        registry: Registry,
        lifespan: LifespanRunner,
        *,
        prefix: str | None,
        separator: str,
        scopes: Sequence[str],
        selection: Selection | None = None,
    ) -> None:
        """Describe the mount (:meth:`attach` makes it live). Raises ``ValueError`` for
        a prefix or separator :func:`check_prefix` refuses, ``TypeError`` for scopes
        given as one string."""
        check_prefix(prefix, separator)
        if isinstance(scopes, str):
            raise TypeError("scopes must be a sequence of scope names, not one string")
        self._parent = parent
        self._registry = registry
        self._lifespan = lifespan
        self.prefix = prefix
        self.separator = separator
        self.scopes: tuple[str, ...] = tuple(scopes)
        #: Which of the mounted server's features the mount offers (filters.py).
        self.selection = selection or Selection()

    @property
    def registry(self) -> Registry:
        return self._registry

    def attach(self, parent_lifespan: LifespanRunner) -> None:
        """Make the mount live: the parent routes to it, it hears the mounted server's
        changes, its lifespan is nested in the parent's, and the parent's subscribers
        are told its lists changed. Raises ``ValueError`` if the parent is the mounted
        server or mounted in it (a circle), ``RuntimeError`` from
        :meth:`LifespanRunner.nest`."""
        if self._registry.reaches(self._parent):
            raise ValueError("a server cannot be mounted in itself, nor in a server mounted in it")
        parent_lifespan.nest(self._lifespan)
        self._parent.mounts.append(self)
        self._registry.parents.append(self)
        for kind in ("tools", "prompts", "resources"):
            self._parent.announce(kind)

    # --- naming ---------------------------------------------------------------------------

    def public(self, kind: Kind, key: str) -> str | None:
        """The parent's name (or URI) for the mounted server's ``key`` of ``kind``; None
        for a URI that cannot be prefixed."""
        if self.prefix is None:
            return key
        if kind in ("tool", "prompt"):
            return f"{self.prefix}{self.separator}{key}"
        return prefix_uri(key, self.prefix)

    def local(self, kind: Kind, key: str) -> str | None:
        """The mounted server's name (or URI) for the parent's ``key``; None if the
        naming rule did not make ``key``."""
        if self.prefix is None:
            return key
        if kind in ("tool", "prompt"):
            head = self.prefix + self.separator
            return key[len(head) :] if key.startswith(head) and len(key) > len(head) else None
        return unprefix_uri(key, self.prefix)

    def expose(self, kind: Kind, item: Any) -> Any:
        """``item`` (the mounted server's Tool, Prompt, Resource or ResourceTemplate)
        as the parent lists it; None if it cannot be offered under the prefix or the
        mount's selection leaves it out."""
        if not self.selection.everything and not self.selection.admits(key_of(kind, item), item):
            return None
        if self.prefix is None:
            return item
        if kind == "tool":  # a view it links to is renamed as the resource is (docs/apps.md)
            meta = relinked_tool_meta(item.meta, lambda uri: self.public("resource", uri))
            return msgspec.structs.replace(item, name=self.public(kind, item.name), meta=meta)
        if kind == "prompt":
            return msgspec.structs.replace(item, name=self.public(kind, item.name))
        field = "uri" if kind == "resource" else "uri_template"
        renamed = self.public(kind, getattr(item, field))
        return None if renamed is None else msgspec.structs.replace(item, **{field: renamed})

    def admits(self, kind: Kind, key: str) -> bool:
        """Whether the mounted server's ``key`` of ``kind`` passes the mount's selection
        (a resource URI a template matches: as the template does)."""
        if self.selection.everything:
            return True
        found = self._registry.describe(kind, key)
        return found is not None and self.selection.admits(*found)

    # --- serving ----------------------------------------------------------------------------

    async def run(self, ctx: Context, renamed: dict[str, Any], inner: Callable[[Context], Awaitable[T]]) -> T:
        """``inner`` with the mounted server's Context, through its middleware (the
        first it registered outermost). Returns or raises what they do; cancellation
        propagates."""
        inner_ctx = mounted_context(ctx, renamed, self._lifespan.state)
        registry = self._registry
        if not registry.middleware:
            return await inner(inner_ctx)
        result: T = await run_middleware(registry.middleware, inner_ctx, lambda: inner(inner_ctx))
        return result

    # --- what the mounted server announces -----------------------------------------------

    def list_changed(self, kind: str) -> None:
        self._parent.announce(kind)

    def resource_updated(self, uri: str) -> None:
        public = self.public("resource", uri)
        if public is not None:
            self._parent.resource_updated(public)
