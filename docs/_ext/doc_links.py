"""A MkDocs hook: the plain-text references to pages that docstrings make, made links.

mcpkit's docstrings point at the guide the way a reader of the source needs it, by path:
``(docs/auth.md)``, ``(docs/http.md, "Legacy sessions and resumable streams")``. On the site
those are text, since mkdocstrings renders a docstring as it is. This hook turns each
``docs/NAME.md`` in the text of a page (a docstring's, mostly; not in code, not already
in a link) into a link to that page, relative to the page it is on, and to the section
when a quoted title follows (``docs/X.md, "Title"``), which must be one of its headings.
The text shown stays as written.

It runs at ``on_page_context``: by then every page has been rendered, so the headings of
the page linked to are known. A reference to a page the site does not have, or to a
heading the page does not have, is a warning, which fails ``mkdocs build --strict``.
"""

from __future__ import annotations

import html
import logging
import re
from typing import Any

from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page
from mkdocs.structure.toc import AnchorLink

log = logging.getLogger("mkdocs.hooks.doc_links")

#: ``docs/NAME.md``, and a quoted title right after it (``, "Title"``) when there is one.
REFERENCE = re.compile(r'\bdocs/(?P<path>[A-Za-z0-9_-]+(?:/[A-Za-z0-9_-]+)*\.md)(?P<title>,\s+"(?P<text>[^"<>]+)")?')
#: Where text is left as it is: code, links, and what is not prose.
SKIPPED = frozenset({"a", "code", "pre", "script", "style", "kbd", "samp", "textarea", "title"})
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9]*)\b[^>]*?(/?)>|<!--.*?-->", re.DOTALL)

_files: Files | None = None


def on_files(files: Files, **kwargs: Any) -> Files:
    global _files
    _files = files
    return files


def _headings(toc: list[AnchorLink]) -> dict[str, str]:
    """A page's heading titles (normalised), each with its anchor."""
    found: dict[str, str] = {}
    for item in toc:
        found.setdefault(" ".join(html.unescape(item.title).split()).casefold(), item.id)
        found.update({k: v for k, v in _headings(item.children).items() if k not in found})
    return found


def link(text: str, page: Page, files: Files) -> str:
    """``text`` (the text of one HTML text node) with its references made links."""

    def one(match: re.Match[str]) -> str:
        target = files.get_file_from_path(match["path"])
        if target is None or not target.is_documentation_page():
            log.warning("%s: a reference to docs/%s, a page the site does not have", page.file.src_uri, match["path"])
            return match[0]
        href = target.url_relative_to(page.file)
        shown = f"docs/{match['path']}"
        if match["title"] is not None and target.page is not None:
            anchor = _headings(list(target.page.toc)).get(" ".join(html.unescape(match["text"]).split()).casefold())
            if anchor is not None:
                return f'<a href="{href}#{anchor}">{shown}{match["title"]}</a>'
            log.warning('%s: docs/%s has no heading "%s"', page.file.src_uri, match["path"], match["text"])
        return f'<a href="{href}">{shown}</a>{match["title"] or ""}'

    return REFERENCE.sub(one, text)


def linked(content: str, page: Page, files: Files) -> str:
    """The HTML ``content`` of ``page`` with the references in its text made links."""
    out: list[str] = []
    skipping: list[str] = []
    position = 0
    for tag in _TAG.finditer(content):
        text = content[position : tag.start()]
        out.append(text if skipping or "docs/" not in text else link(text, page, files))
        out.append(tag[0])
        position = tag.end()
        closing, name, self_closing = tag[1], (tag[2] or "").lower(), tag[3]
        if name in SKIPPED and not self_closing:
            if closing:
                if name in skipping:
                    del skipping[len(skipping) - 1 - skipping[::-1].index(name) :]
            else:
                skipping.append(name)
    rest = content[position:]
    out.append(rest if skipping or "docs/" not in rest else link(rest, page, files))
    return "".join(out)


def on_page_context(context: dict[str, Any], page: Page, **kwargs: Any) -> dict[str, Any]:
    if page.content and _files is not None and "docs/" in page.content:
        page.content = linked(page.content, page, _files)
        context["page"] = page
    return context
