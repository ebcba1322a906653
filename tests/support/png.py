"""A PNG decoder for screenshots (8-bit RGB or RGBA, not interlaced: what Chromium's
``Page.captureScreenshot`` writes), with nothing but zlib: the tests look at pixels
without an imaging package."""

from __future__ import annotations

import struct
import zlib
from typing import NamedTuple

SIGNATURE = b"\x89PNG\r\n\x1a\n"


class Png(NamedTuple):
    """A decoded image: ``rows[y][x]`` is the pixel's ``(r, g, b)``."""

    width: int
    height: int
    rows: list[list[tuple[int, int, int]]]


def decode_png(data: bytes) -> Png:
    """The pixels of ``data``. Raises ``ValueError`` for what is not such a PNG (a bad
    signature or chunk CRC, another bit depth or color type, interlacing)."""
    if not data.startswith(SIGNATURE):
        raise ValueError("not a PNG: bad signature")
    pos, header, idat = len(SIGNATURE), b"", bytearray()
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        if zlib.crc32(kind + body) != crc:
            raise ValueError(f"bad CRC in the {kind!r} chunk")
        pos += 12 + length
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", header)
    if depth != 8 or color not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG: bit depth {depth}, color type {color}, interlace {interlace}")
    channels = 3 if color == 2 else 4
    stride = width * channels
    raw = zlib.decompress(bytes(idat))
    previous = bytearray(stride)
    rows: list[list[tuple[int, int, int]]] = []
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                predictor = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + predictor) & 0xFF
            elif kind != 0:
                raise ValueError(f"bad PNG filter type {kind} in row {y}")
        rows.append([(line[x], line[x + 1], line[x + 2]) for x in range(0, stride, channels)])
        previous = line
    return Png(width, height, rows)
