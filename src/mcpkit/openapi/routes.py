"""Route maps: the user's rules that say what each operation becomes — a tool (the
default), a resource or resource template (``GET`` only), or nothing — and under which
name. The first rule that matches an operation decides; none matching, it is a tool.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from .operations import Operation

__all__ = ["RouteMap", "Kind", "route_for"]

Kind = Literal["tool", "resource", "exclude"]


@dataclass(frozen=True)
class RouteMap:
    """A rule: operations whose method is one of ``methods`` (``"*"``: any), whose path
    matches the regular expression ``pattern`` (``re.search``; anchor it with ``^…$``),
    that carry every tag of ``tags`` and whose ``operationId`` is one of
    ``operation_ids`` (when given) become ``kind``:

    * ``"tool"``: a tool calling the operation;
    * ``"resource"``: for a ``GET``, a resource when its path has no parameters, else a
      resource template ``{scheme}://{path}`` whose variables are the path parameters
      (it must have no other required parameter);
    * ``"exclude"``: not offered.

    ``name`` renames the one operation it matches (a rule with ``name`` that matches a
    second operation is an error, so it cannot hand two the same name by mistake).
    Raises ``re.error`` for a bad pattern, ``ValueError`` for an unknown kind."""

    methods: Sequence[str] | Literal["*"] = "*"
    pattern: str = ""
    tags: Sequence[str] = ()
    operation_ids: Sequence[str] = ()
    kind: Kind = "tool"
    name: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("tool", "resource", "exclude"):
            raise ValueError(f"a route map's kind is 'tool', 'resource' or 'exclude', not {self.kind!r}")
        for field_name in ("tags", "operation_ids") + (() if self.methods == "*" else ("methods",)):
            if isinstance(getattr(self, field_name), str):
                raise TypeError(f"RouteMap's {field_name} is a sequence of strings, not one string")
        re.compile(self.pattern)

    def matches(self, op: Operation) -> bool:
        if self.methods != "*" and op.method not in {m.lower() for m in self.methods}:
            return False
        if self.pattern and re.search(self.pattern, op.path) is None:
            return False
        if self.tags and not set(self.tags) <= set(op.tags):
            return False
        return not self.operation_ids or op.operation_id in self.operation_ids


def route_for(op: Operation, maps: Sequence[RouteMap]) -> RouteMap | None:
    """The first rule of ``maps`` that matches ``op``, or None."""
    for rule in maps:
        if rule.matches(op):
            return rule
    return None
