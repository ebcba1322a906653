"""The argument validator's fast path: an object schema of plain properties, planned once.

What a tool's type hints usually become — an object whose properties are ``str``,
``int``, ``float | None``, a ``Literal`` of strings, … — is turned at registration into a
table of property name → the Python types its value may have (or the strings it may be,
or, for anything else, its sub-schema). :class:`~.validate._Simple` checks a call's
arguments against the table and, whenever the table cannot vouch for them, runs the full
check, which gives the reason: the fast path only ever says "valid".
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Any

__all__ = ["PropertyCheck", "flat_plan"]

#: The Python types of a JSON value of each primitive type. ``integer`` leaves out
#: integral floats and ``number`` lets non-finite floats through: the fast path checks
#: those once more.
_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
    "object": (dict,),
    "array": (list,),
}
_TOP = frozenset({"type", "properties", "required", "additionalProperties", "$defs"})
#: How the fast path checks one property: the Python types its value may have, the
#: strings it may be (an ``enum`` of strings), or a sub-schema for the full check.
PropertyCheck = tuple[type, ...] | frozenset[str] | Mapping[str, Any]


def _types_only(schema: Any, annotations: Set[str]) -> tuple[type, ...] | None:
    """The Python types of a property schema that says nothing but ``type`` (and
    annotations), or an ``anyOf`` of such schemas (what ``X | None`` becomes); else None."""
    if not isinstance(schema, Mapping) or not schema:
        return None
    if "type" in schema and "anyOf" in schema:
        return None  # both must hold: not a union of the two
    out: tuple[type, ...] = ()
    for key, value in schema.items():
        if key == "type":
            for kind in [value] if isinstance(value, str) else value:
                out += _PY_TYPES[kind]
        elif key == "anyOf":
            for sub in value:
                more = _types_only(sub, annotations)
                if more is None:
                    return None
                out += more
        elif key not in annotations or key == "$schema":
            return None
    return out or None


def flat_plan(schema: Any, annotations: Set[str]) -> tuple[dict[str, PropertyCheck], tuple[str, ...], bool] | None:
    """For an object schema of properties, the fast path's plan: each property's check,
    the required names, and whether other names are refused. None for any other schema.
    ``schema`` must be one the built-in validator accepted; ``annotations`` are the
    keywords that constrain nothing."""
    if not isinstance(schema, Mapping) or schema.get("type") != "object" or not set(schema) <= _TOP | annotations:
        return None
    props = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    if not isinstance(props, Mapping) or extra not in (True, False):
        return None
    plan: dict[str, PropertyCheck] = {}
    for name, sub in props.items():
        types = _types_only(sub, annotations)
        if types is not None:
            plan[name] = types
        elif isinstance(sub, Mapping) and set(sub) - annotations == {"type", "enum"} and sub["type"] == "string":
            values = sub["enum"]
            plan[name] = frozenset(values) if all(type(v) is str for v in values) else sub
        elif isinstance(sub, Mapping):
            plan[name] = sub
        else:
            return None  # a boolean schema: rare, left to the full check
    return plan, tuple(schema.get("required", ())), extra is False
