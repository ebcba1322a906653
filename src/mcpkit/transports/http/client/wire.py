"""What the client transport reads of the JSON-RPC messages it carries, and its wire constants.

A transport moves whole messages without understanding them; this one peeks at a few
fields only: an outbound message's ``id``, ``method`` and ``params`` (to pick its era and
headers), and an inbound message's ``id``, ``method``, ``result`` and ``error`` (to match
it to its request and learn from the results of ``initialize`` and ``tools/list``).
"""

from __future__ import annotations

from typing import Any, Final

import msgspec
from msgspec import UNSET

__all__ = [
    "ACCEPT_BOTH",
    "SSE",
    "ERROR_BODY_LIMIT",
    "EXCERPT",
    "Out",
    "In",
    "decode_out",
    "decode_in",
    "decode_version",
    "decode_dict",
]

ACCEPT_BOTH: Final = "application/json, text/event-stream"
SSE: Final = "text/event-stream"
ERROR_BODY_LIMIT: Final = 64 * 1024  # read at most this much of an error body
EXCERPT: Final = 512  # bytes of an error body quoted in a message


class Out(msgspec.Struct):
    """An outbound message, as far as the transport cares."""

    id: Any = UNSET
    method: Any = UNSET
    params: Any = None


class In(msgspec.Struct):
    """An inbound message, as far as the transport cares."""

    id: Any = UNSET
    method: Any = UNSET
    result: msgspec.Raw = msgspec.Raw()
    error: Any = UNSET


class _Version(msgspec.Struct, rename="camel"):
    protocol_version: Any = None


decode_out: Final = msgspec.json.Decoder(Out).decode
decode_in: Final = msgspec.json.Decoder(In).decode
decode_dict: Final = msgspec.json.Decoder(dict[str, Any]).decode
_decode_version: Final = msgspec.json.Decoder(_Version).decode


def decode_version(raw: msgspec.Raw) -> str | None:
    """The ``protocolVersion`` of an ``initialize`` result, if it is a printable ASCII
    string; None otherwise (never raises)."""
    try:
        version = _decode_version(raw).protocol_version
    except (msgspec.DecodeError, RecursionError):  # ValidationError included
        return None
    if isinstance(version, str) and version.isascii() and version.isprintable():
        return version
    return None
