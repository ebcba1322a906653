"""The request-metadata headers of Streamable HTTP (2026-07-28), both directions.

Values go into headers verbatim when they are plain visible ASCII, else in the
``=?base64?…?=`` sentinel form; tool parameters annotated with ``x-mcp-header`` in a
tool's ``inputSchema`` are mirrored into ``Mcp-Param-{Name}`` headers.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, Final

__all__ = ["encode_header_value", "decode_header_value", "x_mcp_header_map", "mcp_param_headers"]

_HEADER_SAFE = re.compile(r"[\x20-\x7e]*")
_SENTINEL = re.compile(r"=\?base64\?(.*)\?=", re.S)
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_PRIMITIVE: Final = frozenset({"string", "integer", "boolean"})
# JSON Schema applicators other than `properties`: crossing one leaves the statically
# reachable chain (spec: the chain may consist of `properties` keys only).
_SUB_ONE: Final = frozenset(
    {"items", "contains", "unevaluatedItems", "additionalProperties", "propertyNames", "unevaluatedProperties"}
    | {"not", "if", "then", "else", "contentSchema"}
)
_SUB_LIST: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SUB_MAP: Final = frozenset({"patternProperties", "dependentSchemas", "$defs", "definitions"})


def encode_header_value(value: str) -> str:
    """A value as an HTTP header value: verbatim when it is printable ASCII without
    leading or trailing whitespace and does not look like the sentinel, else
    ``=?base64?<base64 of its UTF-8>?=``."""
    if _HEADER_SAFE.fullmatch(value) and value == value.strip(" ") and not _SENTINEL.fullmatch(value):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8", "surrogatepass")).decode("ascii") + "?="


def x_mcp_header_map(schema: Any) -> dict[tuple[str, ...], str]:
    """The ``x-mcp-header`` annotations of a tool's ``inputSchema``: property path (the
    chain of ``properties`` keys) -> header name token.

    Raises ``ValueError`` (saying why) if an annotation is invalid: not statically
    reachable, not an HTTP token, not on a string/integer/boolean property, or a
    case-insensitive duplicate.
    """
    found: dict[tuple[str, ...], str] = {}
    seen: set[str] = set()
    stack: list[tuple[tuple[str, ...] | None, Any]] = [((), schema)]
    while stack:
        path, node = stack.pop()
        if not isinstance(node, dict):
            continue
        if "x-mcp-header" in node:
            token = node["x-mcp-header"]
            if not path:
                raise ValueError("x-mcp-header on a schema position not reachable through 'properties' alone")
            where = ".".join(path)
            if not isinstance(token, str) or not _TOKEN.fullmatch(token):
                raise ValueError(f"property {where!r}: x-mcp-header must be an HTTP field-name token")
            if node.get("type") not in _PRIMITIVE:
                raise ValueError(f"property {where!r}: x-mcp-header is only allowed on string, integer or boolean properties")
            if token.lower() in seen:
                raise ValueError(f"property {where!r}: x-mcp-header {token!r} is used twice")
            seen.add(token.lower())
            found[path] = token
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                stack.extend(((*path, name) if path is not None else None, sub) for name, sub in value.items())
            elif key in _SUB_ONE:
                stack.append((None, value))
            elif key in _SUB_LIST and isinstance(value, list):
                stack.extend((None, sub) for sub in value)
            elif key in _SUB_MAP and isinstance(value, dict):
                stack.extend((None, sub) for sub in value.values())
    return found


def decode_header_value(value: str) -> str | None:
    """Undo :func:`encode_header_value`; None for a malformed sentinel."""
    match = _SENTINEL.fullmatch(value)
    if match is None:
        return value
    try:
        decoded = base64.b64decode(match.group(1), validate=True)
        return decoded.decode("utf-8") if base64.b64encode(decoded).decode("ascii") == match.group(1) else None
    except (binascii.Error, UnicodeDecodeError):
        return None


def mcp_param_headers(mapping: dict[tuple[str, ...], str], arguments: dict[str, Any]) -> dict[str, str]:
    """The ``Mcp-Param-{Name}`` headers for a call's ``arguments``, given the tool's
    :func:`x_mcp_header_map`: booleans as ``true``/``false``, integers in decimal,
    strings as they are, each encoded; a missing, null or other value has no header."""
    headers: dict[str, str] = {}
    for path, token in mapping.items():
        rendered = _render(_value_at(arguments, path))
        if rendered is not None:
            headers[f"Mcp-Param-{token}"] = encode_header_value(rendered)
    return headers


def _render(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else None


def _value_at(arguments: dict[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = arguments
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node
