"""Results as plain JSON, for snapshot-style assertions: ``assert as_json(result) == {...}``."""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["as_json", "ENVELOPE"]

#: The fields of a result that say how it was sent rather than what it holds: left out
#: by :func:`as_json` unless ``envelope=True``.
ENVELOPE = frozenset({"_meta", "resultType", "ttlMs", "cacheScope"})


def as_json(value: Any, *, envelope: bool = False) -> Any:
    """``value`` (a result, a content block, a tool, a list of them, ...) as the JSON it
    is on the wire: dicts with camelCase keys, content blocks with their ``"type"``,
    fields at their defaults left out. Unless ``envelope``, the top-level fields that
    describe the response rather than its contents (``_meta`` with the server's name,
    ``resultType``, ``ttlMs``, ``cacheScope``) are dropped, so an assertion does not
    change when the server's version does.

    Raises ``TypeError`` for a value that is not JSON-like (msgspec's ``to_builtins``
    rules). Pure: no I/O, nothing to cancel.
    """
    plain = msgspec.to_builtins(value)
    if not envelope and isinstance(plain, dict):
        return {key: item for key, item in plain.items() if key not in ENVELOPE}
    return plain
