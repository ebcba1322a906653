"""Which JSON Schemas mcpkit's built-in validator handles (:mod:`.validate`).

A schema qualifies when every keyword anywhere in it is one of the common structural
keywords (what mcpkit derives from type hints, and most hand-written tool schemas), its
``$ref`` values name entries of its own ``$defs``, its dialect is 2020-12, and each
``pattern`` means the same in ECMA-262 as in Python's ``re`` once translated
(:func:`ecma`). Anything else goes to the complete validator.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["ANNOTATIONS", "handled", "ecma"]

#: The keywords that constrain nothing, and the dialects this module accepts.
_DIALECT_2020_12 = ("https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/schema#")
ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly", "$comment", "format", "$schema"}
)
_HANDLED = frozenset(
    {"type", "enum", "const", "properties", "required", "additionalProperties", "items", "prefixItems", "$ref", "$defs"}
    | {"minItems", "maxItems", "uniqueItems", "anyOf", "allOf", "oneOf", "minLength", "maxLength", "pattern"}
    | {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minProperties", "maxProperties"}
)
_TYPES = frozenset({"string", "integer", "number", "boolean", "object", "array", "null"})
#: The ``$ref`` values whose name needs no URI or JSON Pointer unescaping (``~1``, ``%20``).
_PLAIN_REF = r"#/\$defs/[A-Za-z0-9_.-]+"  # compiled (and cached by re) at first use, not at import
#: The ``pattern`` values whose ECMA-262 meaning Python's ``re`` gives once ``$`` and ``.``
#: are translated (:func:`ecma`): literals, simple classes, groups, alternation and
#: quantifiers; no escapes (``\d``, ``\w``, ``\s`` differ), no ``(?`` and no possessive ``+``.
_PORTABLE_PATTERN = r"\^?(?:[A-Za-z0-9_ .-]|\[\^?[A-Za-z0-9_ -]+\]|[*+?|()]|\{\d+(?:,\d*)?\})*\$?"  # see _PLAIN_REF


def handled(schema: Any, root: Mapping[str, Any]) -> bool:
    """Whether every keyword anywhere in ``schema`` is one the built-in validator handles
    (``root`` is the whole schema, whose ``$defs`` a ``$ref`` must name)."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, Mapping):
        return False
    for key, value in schema.items():
        if key in ANNOTATIONS:
            if key == "$schema" and value not in _DIALECT_2020_12:
                return False
            continue
        if key not in _HANDLED:
            return False
        if key == "$ref":
            if not (isinstance(value, str) and re.fullmatch(_PLAIN_REF, value) and value[8:] in root.get("$defs", {})):
                return False
        elif key == "type":
            kinds = [value] if isinstance(value, str) else value
            if not isinstance(kinds, list) or not all(k in _TYPES for k in kinds):
                return False
        elif key in ("properties", "$defs"):
            if not isinstance(value, Mapping) or not all(handled(v, root) for v in value.values()):
                return False
        elif key in ("items", "additionalProperties"):
            if not handled(value, root):
                return False
        elif key in ("anyOf", "allOf", "oneOf", "prefixItems"):
            if not isinstance(value, list) or not value or not all(handled(v, root) for v in value):
                return False
        elif key == "required":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                return False
        elif key == "enum":
            if not isinstance(value, list):
                return False
        elif key == "pattern":
            if not (isinstance(value, str) and _portable(value)):
                return False
        elif key in ("minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties"):
            if type(value) is not int or value < 0:
                return False
        elif key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if type(value) not in (int, float):
                return False
        elif key == "uniqueItems" and type(value) is not bool:
            return False
    return True


def _portable(pattern: str) -> bool:
    """Whether ``pattern`` means the same in ECMA-262 and, through :func:`ecma`, in ``re``."""
    if not re.fullmatch(_PORTABLE_PATTERN, pattern) or "(?" in pattern or "--" in pattern or re.search(r"[*+?}]\+", pattern):
        return False
    try:
        re.compile(ecma(pattern))
    except re.error:
        return False
    return True


def ecma(pattern: str) -> str:
    """A portable ``pattern`` (:data:`_PORTABLE_PATTERN`) in Python's dialect: ECMA-262's
    ``$`` matches only at the end (Python's also before a final newline), and its ``.``
    matches no line terminator (Python's matches all but a newline)."""
    if pattern.endswith("$"):
        pattern = pattern[:-1] + r"\Z"
    return pattern.replace(".", "[^\n\r\u2028\u2029]")
