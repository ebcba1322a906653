"""Decoding a server's result into its typed form."""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from ..protocol.errors import INTERNAL_ERROR, McpError, flatten_text

__all__ = ["decode_result", "UnexpectedResultType"]

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
        err = McpError(INTERNAL_ERROR, f"Invalid result from server: {reason}")
        err.local = True
        raise err from None


class UnexpectedResultType(McpError):
    """A modern server answered with a ``resultType`` this client does not know (local,
    -32603); ``result_type`` is what it said."""

    local = True

    def __init__(self, result_type: str) -> None:
        super().__init__(INTERNAL_ERROR, f"Unexpected resultType from server: {flatten_text(result_type, 64)!r}")
        self.result_type = result_type
