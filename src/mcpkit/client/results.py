"""What a server answered, in typed form: a result decoded as the type the call expects,
the local error for a ``resultType`` this client does not know, and a server's -32042 as
:class:`~mcpkit.protocol.interactive.UrlElicitationRequired`."""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from ..protocol.errors import INTERNAL_ERROR, McpError, flatten_text
from ..protocol.interactive import UrlElicitationRequired

__all__ = ["decode_result", "UnexpectedResultType", "url_elicitation_required"]

T = TypeVar("T")
_decoders: dict[type, Any] = {}


def decode_result(raw: msgspec.Raw, tp: type[T]) -> T:
    """``raw`` decoded as ``tp``. Raises a local ``McpError(-32603)`` if the server's
    result does not have that shape, or cannot be decoded (nested too deeply, say)."""
    dec = _decoders.get(tp)
    if dec is None:
        dec = _decoders[tp] = msgspec.json.Decoder(tp)
    try:
        return dec.decode(raw)  # type: ignore[no-any-return]
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:  # DecodeError covers ValidationError
        reason = "nested too deeply" if isinstance(exc, RecursionError) else flatten_text(str(exc), 512)
        raise McpError(INTERNAL_ERROR, f"Invalid result from server: {reason}", local=True) from None


class UnexpectedResultType(McpError):
    """A modern server answered with a ``resultType`` this client does not know (local,
    -32603); ``result_type`` is what it said."""

    local = True

    def __init__(self, result_type: str) -> None:
        super().__init__(INTERNAL_ERROR, f"Unexpected resultType from server: {flatten_text(result_type, 64)!r}")
        self.result_type = result_type


def url_elicitation_required(exc: McpError) -> McpError:
    """A server's -32042 as :class:`UrlElicitationRequired` (as it came, if its data
    does not list the elicitations properly)."""
    items = exc.data.get("elicitations") if isinstance(exc.data, dict) else None
    try:
        return UrlElicitationRequired(items if isinstance(items, list) else [], exc.message)
    except ValueError:
        return exc
