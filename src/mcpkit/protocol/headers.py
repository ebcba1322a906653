"""The request-metadata headers of Streamable HTTP (2026-07-28), for both sides.

A modern request's protocol version, method and target name are mirrored into
``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name``; tool parameters annotated
with ``x-mcp-header`` in a tool's ``inputSchema`` into ``Mcp-Param-{Name}``. The client
builds them with :func:`request_headers`; the server checks them against the body
with :func:`check_request_headers`. Values go into headers verbatim when they are
plain visible ASCII, else in the ``=?base64?…?=`` sentinel form.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from .errors import HEADER_MISMATCH, McpError, quoted
from .events import RequestReceived

__all__ = [
    "NAMED_METHODS",
    "HeaderRules",
    "encode_header_value",
    "decode_header_value",
    "x_mcp_header_map",
    "mcp_param_headers",
    "request_headers",
    "check_request_headers",
]

#: Methods whose target is mirrored into ``Mcp-Name``, and the param that names it (the
#: tasks extension's requests name their task: SEP-2663).
NAMED_METHODS: Final = {
    "tools/call": "name",
    "resources/read": "uri",
    "prompts/get": "name",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
#: A tool's ``x-mcp-header`` annotations: property path -> header name token.
HeaderRules = dict[tuple[str, ...], str]
_MAX_SAFE_INT: Final = 2**53 - 1

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


# --- both sides of a modern request ---------------------------------------------------------


def request_headers(method: str, params: dict[str, Any], version: str, rules: HeaderRules | None) -> dict[str, str]:
    """The mirrored headers of a modern request (client side). ``rules`` are the
    called tool's ``x-mcp-header`` annotations, if known."""
    headers = {"MCP-Protocol-Version": version, "Mcp-Method": method}
    key = NAMED_METHODS.get(method)
    if key is not None and isinstance(params.get(key), str):
        headers["Mcp-Name"] = encode_header_value(params[key])
    arguments = params.get("arguments")
    if rules and isinstance(arguments, dict):
        headers.update(mcp_param_headers(rules, arguments))
    return headers


def _mismatch(message: str) -> McpError:
    return McpError(HEADER_MISMATCH, f"Header mismatch: {message}", status=400)


def _header_safe(value: str) -> bool:
    return value == value.strip() and all(0x20 <= ord(c) <= 0x7E or c == "\t" for c in value)


def _decode_request_header(value: str) -> str | None:
    """A request header's value with the sentinel undone; None if it has characters a
    header value may not carry, or a malformed sentinel."""
    if not value.startswith("=?base64?") and not _header_safe(value):
        return None
    return decode_header_value(value)


def check_request_headers(
    headers: Mapping[str, str], request: RequestReceived, rules_for: Callable[[str], HeaderRules]
) -> None:
    """Check a modern request's mirrored headers (lower-case names) against its body
    (server side), as its head reads it: the version is the one its ``_meta`` names.
    ``rules_for(tool)`` gives a tool's ``x-mcp-header`` annotations.

    Raises ``McpError(-32020)`` (HTTP 400) naming the first header that is missing or
    does not match (values from the request quoted flattened, at most 256 bytes each), and
    ``McpError(-32602)`` (HTTP 400) for params that are valid JSON but cannot be decoded
    (a number out of range, nesting too deep).
    """
    head, method = request.head, request.method
    version = head.version
    header_version = headers.get("mcp-protocol-version")
    if header_version is None:
        raise _mismatch("missing MCP-Protocol-Version header")
    if header_version != version:
        raise _mismatch(f"MCP-Protocol-Version header {quoted(header_version)} does not match body value {quoted(version)}")
    mcp_method = headers.get("mcp-method")
    if mcp_method is None:
        raise _mismatch("missing Mcp-Method header")
    if mcp_method != method:
        raise _mismatch(f"Mcp-Method header {quoted(mcp_method)} does not match body value {quoted(method)}")
    field = NAMED_METHODS.get(method)
    if field is None:
        return
    name, uri, task_id, arguments = head.target()
    body_name = name if field == "name" else uri if field == "uri" else task_id
    raw_name = headers.get("mcp-name")
    if raw_name is None:
        raise _mismatch("missing Mcp-Name header")
    header_name = _decode_request_header(raw_name)
    if header_name is None:
        raise _mismatch("Mcp-Name header has invalid characters or encoding")
    if header_name != body_name:
        raise _mismatch(f"Mcp-Name header {quoted(header_name)} does not match body value {quoted(body_name)}")
    if method == "tools/call" and isinstance(body_name, str):
        _check_param_headers(headers, rules_for(body_name), arguments)


def _check_param_headers(headers: Mapping[str, str], rules: HeaderRules, arguments: Any) -> None:
    for path, token in rules.items():
        header = token.lower()
        value = _value_at(arguments, path) if isinstance(arguments, dict) else None
        if value is None:
            continue
        raw = headers.get(f"mcp-param-{header}")
        if raw is None:
            raise _mismatch(f"missing Mcp-Param-{header} header")
        text = _decode_request_header(raw)
        if text is None:
            raise _mismatch(f"Mcp-Param-{header} header has invalid characters or encoding")
        if isinstance(value, bool):
            ok = text == ("true" if value else "false")
        elif isinstance(value, (int, float)):
            try:
                ok = float(text) == value and abs(value) <= _MAX_SAFE_INT
            except ValueError:
                ok = False
        else:
            ok = text == value
        if not ok:
            raise _mismatch(f"Mcp-Param-{header} header does not match the argument value")
