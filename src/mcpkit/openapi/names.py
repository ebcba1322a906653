"""The names of the features made from operations: the ``operationId`` made a valid
MCP name (letters, digits, ``_``, ``-`` and ``.``, at most 64 characters), else the
method and the path (``get_users_user_id``); a name taken already gets ``_2``, ``_3``…
in the document's order.
"""

from __future__ import annotations

import re
from typing import Final

from .operations import Operation

__all__ = ["base_name", "Names"]

_INVALID: Final = re.compile(r"[^A-Za-z0-9_.\-]+")
_UNDERSCORES: Final = re.compile(r"__+")
MAX_LENGTH: Final = 64


def sanitize(text: str) -> str:
    """``text`` as a name: every run of other characters one ``_``, trimmed, bounded."""
    name = _UNDERSCORES.sub("_", _INVALID.sub("_", text)).strip("_.-")
    return name[:MAX_LENGTH].rstrip("_.-") or "operation"


def base_name(op: Operation) -> str:
    """The name ``op`` gets before collisions are settled."""
    if op.operation_id:
        return sanitize(op.operation_id)
    segments = [segment for segment in op.path.replace("{", "").replace("}", "").split("/") if segment]
    return sanitize("_".join([op.method, *segments]))


class Names:
    """The names handed out so far; :meth:`claim` gives the next one free."""

    __slots__ = ("_taken",)

    def __init__(self) -> None:
        self._taken: set[str] = set()

    def claim(self, wanted: str) -> str:
        name, n = wanted, 2
        while name in self._taken:
            suffix = f"_{n}"
            name, n = wanted[: MAX_LENGTH - len(suffix)] + suffix, n + 1
        self._taken.add(name)
        return name
