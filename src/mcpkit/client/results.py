"""Decoding a server's result into its typed form."""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from ..protocol.errors import INTERNAL_ERROR, McpError, flatten_text

__all__ = ["decode_result"]

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
