"""A griffe extension for the API reference: mcpkit's Sphinx-style docstrings, read right.

* Roles become links. mcpkit's docstrings name other objects the Sphinx way
  (:class:`~mcpkit.McpError`, :meth:`close`). mkdocstrings renders docstrings as Markdown,
  where a role would show as literal text, so each role is rewritten into an *optional*
  cross-reference: a link when the reference documents the target (a public name of
  ``mcpkit`` or one of its members), plain code otherwise. Optional references never fail
  ``mkdocs build --strict``.
* ``#:`` comments document attributes. A constant or field with no docstring of its own
  takes the ``#:`` comment lines just above it (the convention of mcpkit's modules).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

import mcpkit

PUBLIC = frozenset(mcpkit.__all__)
_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|attr|mod|data|exc|obj):`(?P<target>[^`]+)`")


def _public_class(obj: griffe.Object) -> str | None:
    """The public name of the class ``obj`` is, or is a member of (None if neither)."""
    for candidate in (obj, obj.parent):
        if isinstance(candidate, griffe.Class) and candidate.name in PUBLIC:
            return candidate.name
    return None


def _identifier(target: str, obj: griffe.Object) -> str:
    parts = target.lstrip(".").split(".")
    if parts[0] == "mcpkit" and len(parts) > 1 and parts[1] in PUBLIC:
        return ".".join(parts)
    if parts[0] in PUBLIC:
        return "mcpkit." + ".".join(parts)
    owner = _public_class(obj)
    if owner is not None and len(parts) == 1:
        return f"mcpkit.{owner}.{parts[0]}"
    return ".".join(parts)


def rewrite(text: str, obj: griffe.Object) -> str:
    """``text`` with every Sphinx role replaced by an optional cross-reference."""

    def one(match: re.Match[str]) -> str:
        target = match["target"].strip()
        short = target.startswith("~")
        target = target.lstrip("~")
        shown = target.rsplit(".", 1)[-1] if short else target.lstrip(".")
        return f'<autoref identifier="{_identifier(target, obj)}" optional><code>{shown}</code></autoref>'

    return _ROLE.sub(one, text)


def comment_docstring(attr: griffe.Attribute) -> str | None:
    """The ``#:`` comment lines just above ``attr``'s assignment, joined (None if none)."""
    if attr.lineno is None or attr.filepath is None or isinstance(attr.filepath, list):
        return None
    lines = attr.filepath.read_text(encoding="utf-8").splitlines()
    found: list[str] = []
    index = attr.lineno - 2
    while index >= 0 and lines[index].strip().startswith("#:"):
        found.insert(0, lines[index].strip()[2:].strip())
        index -= 1
    return " ".join(found) or None


class SphinxRoles(griffe.Extension):
    """Rewrite Sphinx roles in every docstring that griffe loads, and give attributes
    their ``#:`` comments as docstrings."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is None and isinstance(obj, griffe.Attribute):
            text = comment_docstring(obj)
            if text is not None:
                obj.docstring = griffe.Docstring(text, parent=obj)
        if obj.docstring is not None and ":" in obj.docstring.value:
            obj.docstring.value = rewrite(obj.docstring.value, obj)
