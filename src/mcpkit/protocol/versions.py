"""The protocol revisions mcpkit speaks, which era each belongs to, and what each supports.

Code that needs to know whether a peer's revision has a feature asks
:func:`supports` — never compares date strings. Revisions are listed newest first.
"""

from __future__ import annotations

from typing import Final, Literal

__all__ = [
    "Era",
    "Feature",
    "MODERN_PROTOCOL_VERSIONS",
    "LEGACY_PROTOCOL_VERSIONS",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "LATEST_PROTOCOL_VERSION",
    "LATEST_LEGACY_PROTOCOL_VERSION",
    "era_of",
    "supports",
]

Era = Literal["modern", "legacy"]

#: Stateless revisions: ``server/discover``, protocol data in every request's ``_meta``.
MODERN_PROTOCOL_VERSIONS: Final = ("2026-07-28",)
#: Session revisions: ``initialize`` first, then a stateful connection.
LEGACY_PROTOCOL_VERSIONS: Final = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
#: Every protocol revision mcpkit speaks, newest first: the modern one, then the legacy ones.
#: A client pins one with ``ClientOptions(protocol_version=...)``.
SUPPORTED_PROTOCOL_VERSIONS: Final = MODERN_PROTOCOL_VERSIONS + LEGACY_PROTOCOL_VERSIONS
#: The newest revision mcpkit speaks, ``"2026-07-28"`` (the modern, stateless era).
LATEST_PROTOCOL_VERSION: Final = MODERN_PROTOCOL_VERSIONS[0]
LATEST_LEGACY_PROTOCOL_VERSION: Final = LEGACY_PROTOCOL_VERSIONS[0]

Feature = Literal[
    "sse-priming",  # an SSE stream opens with an event that has an id and no data
    "structured-output",  # tools declare outputSchema and return structuredContent
    "elicitation",  # the server may ask the user for input
    "url-elicitation",  # elicitation in URL mode
    "sampling-tools",  # sampling requests may offer tools
    "ping",  # the ping request
    "sessions",  # initialize, a session, server-to-client JSON-RPC requests
    "request-meta",  # protocol version, capabilities and client info in every request's _meta
]

# (first revision that has it, last revision that has it); None = open-ended.
_SPANS: Final[dict[str, tuple[str | None, str | None]]] = {
    "sse-priming": ("2025-11-25", None),
    "structured-output": ("2025-06-18", None),
    "elicitation": ("2025-06-18", None),
    "url-elicitation": ("2025-11-25", None),
    "sampling-tools": ("2025-11-25", None),
    "ping": (None, "2025-11-25"),
    "sessions": (None, "2025-11-25"),
    "request-meta": ("2026-07-28", None),
}
_AGE: Final = {version: i for i, version in enumerate(SUPPORTED_PROTOCOL_VERSIONS)}  # 0 = newest


def era_of(version: str) -> Era | None:
    """The era of a revision we speak, or None for one we do not."""
    if version in MODERN_PROTOCOL_VERSIONS:
        return "modern"
    if version in LEGACY_PROTOCOL_VERSIONS:
        return "legacy"
    return None


def supports(version: str, feature: Feature) -> bool:
    """Whether protocol revision ``version`` has ``feature``. False for a revision we
    do not speak. Raises ``KeyError`` for an unknown feature name."""
    first, last = _SPANS[feature]
    age = _AGE.get(version)
    if age is None:
        return False
    return (first is None or age <= _AGE[first]) and (last is None or age >= _AGE[last])
