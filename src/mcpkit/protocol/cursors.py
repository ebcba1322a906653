"""Opaque pagination cursors: an offset into a list, base64 so that clients treat it
as opaque."""

from __future__ import annotations

import base64
import binascii
from typing import Final

from .errors import INVALID_PARAMS, McpError

__all__ = ["encode_cursor", "decode_cursor"]

_CURSOR_PREFIX: Final = b"mcpkit:"


def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(_CURSOR_PREFIX + str(offset).encode()).decode()


def decode_cursor(cursor: str, size: int) -> int:
    """The offset a cursor stands for; ``McpError(-32602, "Invalid cursor")`` if it is
    not one of ours or points outside a list of ``size`` items."""
    try:
        raw = base64.urlsafe_b64decode(cursor.encode("ascii"))
        if not raw.startswith(_CURSOR_PREFIX):
            raise ValueError
        offset = int(raw[len(_CURSOR_PREFIX) :])
        if not 0 < offset <= size:
            raise ValueError
    except (ValueError, binascii.Error, UnicodeEncodeError):
        raise McpError(INVALID_PARAMS, "Invalid cursor") from None
    return offset
