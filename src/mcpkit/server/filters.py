"""Tags, and which features a mount or a proxy lets through (docs/howto/compose.md).

Every tool, prompt, resource and template may carry *tags* (``tags=`` when it is
registered): free-form words a composing server selects by. They travel with the
feature's wire description, in its ``_meta`` under :data:`TAGS_META` (a sorted list), so
a server that mounts another, a proxy in front of a remote mcpkit server, and a client all
see the same tags; a FastMCP server's tags (its ``_meta.fastmcp.tags``, or
``_meta._fastmcp.tags`` in older releases) count as well.

A :class:`Selection` says which features pass: with ``include`` names or
``include_tags``, only a feature named there or carrying one of those tags; never one
named in ``exclude`` or carrying a tag of ``exclude_tags`` (exclusion wins). Names are the
ones the selected server gives its features — a tool's or prompt's name, a resource's
URI, a template's URI template — before any prefix. A feature left out is neither listed
nor served: a call to it fails as for an unknown one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

__all__ = ["TAGS_META", "Selection", "check_tags", "tags_of", "with_tags"]

#: The ``_meta`` key of a feature's tags on the wire.
TAGS_META: Final = "io.mcpkit/tags"


def check_tags(tags: Iterable[str]) -> tuple[str, ...]:
    """``tags`` as a sorted tuple without repeats. Raises ``TypeError`` for one string
    (a sequence of tags is meant) or a tag that is not a string, ``ValueError`` for an
    empty tag."""
    if isinstance(tags, str):
        raise TypeError("tags must be a sequence of tags, not one string")
    out = set()
    for tag in tags:
        if not isinstance(tag, str):
            raise TypeError(f"a tag is a string, not {type(tag).__name__}")
        if not tag:
            raise ValueError("a tag is a non-empty string")
        out.add(tag)
    return tuple(sorted(out))


def with_tags(meta: dict[str, Any] | None, tags: Iterable[str]) -> dict[str, Any] | None:
    """A feature's ``_meta`` with its ``tags`` added (``meta`` itself when there are none).
    Raises what :func:`check_tags` raises."""
    checked = check_tags(tags)
    if not checked:
        return meta
    return {**(meta or {}), TAGS_META: list(checked)}


def tags_of(item: Any) -> frozenset[str]:
    """The tags of a wire description (a Tool, Prompt, Resource or ResourceTemplate): its
    ``_meta``'s :data:`TAGS_META`, and a FastMCP server's ``_meta.fastmcp.tags`` (or
    ``_meta._fastmcp.tags``); what is not a list of strings there is ignored."""
    meta = getattr(item, "meta", None)
    if not isinstance(meta, dict):
        return frozenset()
    found: set[str] = set()
    fastmcp = [fm.get("tags") for fm in (meta.get("fastmcp"), meta.get("_fastmcp")) if isinstance(fm, dict)]
    values = [meta.get(TAGS_META), *fastmcp]
    for value in values:
        if isinstance(value, list):
            found.update(tag for tag in value if isinstance(tag, str))
    return frozenset(found)


class Selection:
    """Which features pass (see the module's docstring). Raises ``TypeError`` for a
    single string where a sequence is meant."""

    __slots__ = ("exclude", "exclude_tags", "include", "include_tags")

    def __init__(
        self,
        *,
        include: Iterable[str] | None = None,
        exclude: Iterable[str] = (),
        include_tags: Iterable[str] | None = None,
        exclude_tags: Iterable[str] = (),
    ) -> None:
        given = {"include": include, "exclude": exclude, "include_tags": include_tags, "exclude_tags": exclude_tags}
        for what, value in given.items():
            if isinstance(value, str):
                raise TypeError(f"{what} must be a sequence, not one string")
        self.include = frozenset(include) if include is not None else None
        self.exclude = frozenset(exclude)
        self.include_tags = frozenset(include_tags) if include_tags is not None else None
        self.exclude_tags = frozenset(exclude_tags)

    @property
    def everything(self) -> bool:
        """Whether every feature passes (no filter was given)."""
        return self.include is None and self.include_tags is None and not self.exclude and not self.exclude_tags

    def admits(self, key: str, item: Any) -> bool:
        """Whether the feature named ``key`` (its name, URI or URI template), described by
        ``item``, passes."""
        if self.everything:
            return True
        tags = tags_of(item)
        if key in self.exclude or not tags.isdisjoint(self.exclude_tags):
            return False
        if self.include is None and self.include_tags is None:
            return True
        return (self.include is not None and key in self.include) or (
            self.include_tags is not None and not tags.isdisjoint(self.include_tags)
        )
