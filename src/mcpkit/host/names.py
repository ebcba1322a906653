"""How a group names what its servers offer, and finds the server behind a name.

Each server's tools and prompts are offered under a group-wide name made by a
:data:`NameRule` from the server's name and the item's own: ``"{server}.{name}"`` by
default (``weather.forecast``), any format string with those two fields, a function of
the two, or None for the items' own names. Two items that end up with the same name are a
:class:`NameCollision` naming both servers — never one silently hiding the other.
Resources keep their URIs (a URI names a resource wherever it is listed); only their
display names are made by the rule. A URI listed by two servers is ambiguous to read
without saying which server (:meth:`Directory.server_for_uri`).

:class:`Directory` is the group's table: rebuilt from the servers' lists whenever one of
them changes, it maps each group-wide name back to its server and the item's own name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Literal, TypeVar

import msgspec

from ..protocol.types import Prompt, Resource, ResourceTemplate, Tool

__all__ = ["NameRule", "NameCollision", "Directory", "make_namer", "DEFAULT_RULE"]

#: ``"{server}.{name}"``-style format string, ``(server, name) -> name``, or None (as is).
NameRule = str | Callable[[str, str], str] | None
DEFAULT_RULE: Final = "{server}.{name}"
Kind = Literal["tool", "prompt", "resource", "template"]
T = TypeVar("T", Tool, Prompt, Resource, ResourceTemplate)


class NameCollision(ValueError):
    """Two servers' items got the same group-wide name under the group's naming rule (or,
    for :meth:`~mcpkit.ClientGroup.read_resource` without ``server=``, the same URI):
    ``kind`` (``"tool"``, ``"prompt"``, ``"resource"``), ``name``, and ``servers``, the
    two servers. Choose another rule (``ClientGroup(namespace=...)``) or pass ``server=``."""

    def __init__(self, kind: str, name: str, servers: tuple[str, str]) -> None:
        first, second = servers
        super().__init__(
            f"{kind} name {name!r} is offered by both server {first!r} and server {second!r}: "
            "give the group another naming rule (namespace=...)"
            if kind != "resource"
            else f"resource {name!r} is listed by both server {first!r} and server {second!r}: say which (server=...)"
        )
        self.kind = kind
        self.name = name
        self.servers = servers


def make_namer(rule: NameRule) -> Callable[[str, str], str]:
    """The function ``(server, name) -> group-wide name`` of ``rule``. Raises
    ``ValueError`` for a format string that does not use ``{name}`` (every item would get
    the same name) or uses fields other than ``{server}`` and ``{name}``, ``TypeError`` for
    a rule of another type."""
    if rule is None:
        return lambda server, name: name
    if isinstance(rule, str):
        fields = set(re.findall(r"\{(\w*)\}", rule))
        if "name" not in fields or not fields <= {"server", "name"}:
            raise ValueError(f"a naming rule uses {{name}} and optionally {{server}}, and nothing else: {rule!r}")
        return lambda server, name: rule.format(server=server, name=name)
    if callable(rule):
        return rule
    raise TypeError(f"a naming rule is a format string, a function or None, not {type(rule).__name__}")


class Directory:
    """The group's names, from the servers' current lists (see the module's docstring)."""

    def __init__(self, rule: NameRule = DEFAULT_RULE) -> None:
        self._name = make_namer(rule)
        #: group-wide name -> (server, the item's own name), for tools and prompts.
        self.tools: dict[str, tuple[str, str]] = {}
        self.prompts: dict[str, tuple[str, str]] = {}
        #: URI -> the servers listing it, in order.
        self.uris: dict[str, list[str]] = {}
        #: (server, template) for every template listed.
        self.templates: list[tuple[str, ResourceTemplate]] = []
        self._collision: NameCollision | None = None

    def name(self, server: str, name: str) -> str:
        """The group-wide name of ``server``'s item ``name``."""
        return self._name(server, name)

    def rebuild(self, lists: Mapping[str, Mapping[str, Sequence[Any]]]) -> None:
        """Build the table from ``lists``: server -> kind (``"tools"``, ``"prompts"``,
        ``"resources"``, ``"templates"``) -> items. A collision is kept and raised by
        :meth:`check` (the names that do not collide still route)."""
        self.tools, self.prompts, self.uris, self.templates = {}, {}, {}, []
        self._collision = None
        for server, kinds in lists.items():
            for kind, table in (("tools", self.tools), ("prompts", self.prompts)):
                for item in kinds.get(kind, ()):
                    wide = self._name(server, item.name)
                    if wide in table and table[wide][0] != server and self._collision is None:
                        self._collision = NameCollision(kind[:-1], wide, (table[wide][0], server))
                    table.setdefault(wide, (server, item.name))
            for resource in kinds.get("resources", ()):
                self.uris.setdefault(resource.uri, []).append(server)
            self.templates.extend((server, template) for template in kinds.get("templates", ()))

    def check(self) -> None:
        """Raise the :class:`NameCollision` the last rebuild found, if any."""
        if self._collision is not None:
            raise self._collision

    def renamed(self, server: str, items: Iterable[T]) -> list[T]:
        """``server``'s items with their group-wide names (copies; URIs unchanged)."""
        return [msgspec.structs.replace(item, name=self._name(server, item.name)) for item in items]

    def server_for_uri(self, uri: str) -> str | None:
        """The server to read ``uri`` from: the one that lists it, else the one whose
        template matches it; None if none does. Raises :class:`NameCollision` if two do."""
        listed = list(dict.fromkeys(self.uris.get(uri, [])))
        if not listed:
            listed = list(
                dict.fromkeys(server for server, template in self.templates if template_matches(template.uri_template, uri))
            )
        if len(listed) > 1:
            raise NameCollision("resource", uri, (listed[0], listed[1]))
        return listed[0] if listed else None


def template_matches(template: str, uri: str) -> bool:
    """Whether ``uri`` is an expansion of the RFC 6570 ``template`` (level 1 and the
    ``{+var}``, ``{#var}``, ``{/var}``, ``{.var}``, ``{?var}``, ``{&var}`` forms, loosely:
    enough to tell which server's template a URI belongs to)."""
    pattern = []
    for literal, expression in re.findall(r"([^{]*)(\{[^}]*\})?", template):
        pattern.append(re.escape(literal))
        if not expression:
            continue
        op = expression[1:2]
        if op in ("+", "#"):
            pattern.append(("#" if op == "#" else "") + ".*")
        elif op in ("?", "&"):
            pattern.append(r"(?:[?&][^#]*)?")
        elif op in ("/", "."):
            pattern.append(r"(?:" + re.escape(op) + r"[^/?#]*)*")
        else:
            pattern.append(r"[^/?#]+")
    return re.fullmatch("".join(pattern), uri) is not None
