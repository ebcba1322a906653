"""The base of every MCP wire struct, and the small types all of them share: ``_meta``,
icons, implementation info, annotations, log levels. The wire types themselves are
re-exported by :mod:`.types`.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

__all__ = ["LOG_LEVELS", "LOG_RANK", "LogLevel", "Meta", "WireStruct", "Icon", "Implementation", "Annotations"]

#: RFC 5424 severities, least to most severe, as MCP logging names them.
LOG_LEVELS: Final = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
#: Each log level's rank: a message passes a threshold when its rank is at least the threshold's.
LOG_RANK: Final = {name: i for i, name in enumerate(LOG_LEVELS)}
LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]

Meta = dict[str, Any]


class WireStruct(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """Base of every wire struct: keyword-only, camelCase on the wire, defaults omitted."""


class Icon(WireStruct, kw_only=True):
    src: str
    mime_type: str | None = None
    sizes: list[str] | None = None
    theme: str | None = None


class Implementation(WireStruct, kw_only=True):
    """A client's or server's name and version (``clientInfo``, ``serverInfo``).

    Attributes:
        name: A programmatic name.
        version: Its version.
        title: A human-readable name.
        description: What it is.
        website_url: Where to read more.
        icons: Icons a client may show.
    """

    name: str
    version: str = ""
    title: str | None = None
    description: str | None = None
    website_url: str | None = None
    icons: list[Icon] | None = None


class Annotations(WireStruct, kw_only=True):
    audience: list[str] | None = None
    priority: float | None = None
    last_modified: str | None = None
