"""The mirrored-header codec (src/mcpkit/protocol/headers.py): header values as the spec
encodes them (plain, or =?base64?...?=), malformed sentinels, and the x-mcp-header map of a
tool's input schema."""

from __future__ import annotations

import pytest

from mcpkit.protocol.headers import decode_header_value, encode_header_value, x_mcp_header_map


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        ("us-west1", "us-west1"),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
        ("a b", "a b"),
        ("tab\there", "=?base64?dGFiCWhlcmU=?="),
    ],
)
def test_header_value_encoding(value: str, encoded: str) -> None:
    assert encode_header_value(value) == encoded
    assert decode_header_value(encoded) == value


def test_malformed_sentinel_decodes_to_none() -> None:
    assert decode_header_value("=?base64?not base64!?=") is None
    assert decode_header_value("=?base64?//8=?=") is None  # not UTF-8
    assert decode_header_value("=?base64?SGk?=") is None  # not canonical (padding)


def test_x_mcp_header_map() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "x-mcp-header": "A"},
            "o": {"type": "object", "properties": {"b": {"type": "integer", "x-mcp-header": "B-2"}}},
            "c": {"type": "number"},
        },
    }
    assert x_mcp_header_map(schema) == {("a",): "A", ("o", "b"): "B-2"}
    assert x_mcp_header_map(None) == {}
    bad = [
        {"properties": {"a": {"type": "number", "x-mcp-header": "A"}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": "has space"}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": ""}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": "X"}, "b": {"type": "string", "x-mcp-header": "x"}}},
        {"properties": {"a": {"anyOf": [{"type": "string", "x-mcp-header": "A"}]}}},
        {"$defs": {"d": {"type": "string", "x-mcp-header": "A"}}},
        {"type": "string", "x-mcp-header": "Root"},
    ]
    for schema in bad:
        with pytest.raises(ValueError, match="x-mcp-header"):
            x_mcp_header_map(schema)
