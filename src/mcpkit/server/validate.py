"""JSON Schema validation with one concise reason on failure.

Schemas that use only the common structural keywords (what mcpkit derives from type
hints, and most hand-written tool schemas) are checked by a small validator here:
no import cost, no native library in memory. Anything else — other keywords, remote or
non-``$defs`` references, a ``pattern`` whose ECMA-262 meaning Python's ``re`` does not
share, another dialect — goes to ``jsonschema_rs``, a complete JSON Schema 2020-12
implementation, imported on first use. Both give the same kind of one-line reason;
tests/test_validator_differential.py holds the two against each other.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import msgspec

from .flat_schema import PropertyCheck, flat_plan
from .schema_subset import ANNOTATIONS as _ANNOTATIONS, ecma as _ecma, handled as _simple

__all__ = ["SchemaError", "Validator", "compile_schema"]

#: The reason given for a value nested too deeply to validate.
_TOO_DEEP = "nested too deeply to validate"


class SchemaError(ValueError):
    """A schema (or a type that should become one) is not usable."""


class Validator(Protocol):
    def describe(self, instance: Any, what: str = "argument") -> str | None:
        """One line saying why ``instance`` fails, or None if it is valid."""
        ...


def _path(parts: Sequence[str | int]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _show(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # JSON has no NaN or infinity: msgspec would show null
    if isinstance(value, str) and len(value) > 80:
        value = value[:80]  # no need to encode all of a long string to show its start
    try:
        text = msgspec.json.encode(value).decode()
    except (TypeError, ValueError):
        text = repr(value)
    except RecursionError:
        text = f"(a nested {type(value).__name__})"
    return text if len(text) <= 80 else text[:77] + "..."


def _is_type(value: Any, kind: str) -> bool:
    t = type(value)
    if kind == "string":
        return t is str
    if kind == "object":
        return t is dict
    if kind == "array":
        return t is list
    if kind == "boolean":
        return t is bool
    if kind == "null":
        return value is None
    if kind == "number":
        return t is int or t is float
    if kind == "integer":
        return t is int or (t is float and value.is_integer())
    return False


def _same(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, but true != 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return (type(a) in (int, float) and type(b) in (int, float) and a == b) or (type(a) is type(b) and a == b)


class _Simple:
    """Validator for schemas that :func:`.schema_subset.handled` accepted.

    An object schema of properties, what a tool's type hints become, gets a fast path
    planned once (:func:`.flat_schema.flat_plan`): it only ever says "valid"; anything it cannot
    vouch for goes to the full check, which gives the reason, so reasons do not change.
    """

    def __init__(self, schema: Mapping[str, Any] | bool) -> None:
        self.schema = schema
        self.root: Mapping[str, Any] = schema if isinstance(schema, Mapping) else {}
        self._patterns: dict[str, re.Pattern[str]] = {}
        self._plan = flat_plan(schema, _ANNOTATIONS)

    def describe(self, instance: Any, what: str = "argument") -> str | None:
        plan = self._plan
        if plan is not None and type(instance) is dict and self._valid_flat(plan, instance, what):
            return None
        try:
            return self._check(self.schema, instance, [], what)
        except RecursionError:  # a recursive schema, and a value nested deeper than the stack goes
            return _TOO_DEEP

    def _valid_flat(self, plan: tuple[dict[str, PropertyCheck], tuple[str, ...], bool], value: dict[str, Any], what: str) -> bool:
        """Whether ``value`` is valid for certain by the fast path's plan (False: the full
        check decides)."""
        props, required, closed = plan
        for name in required:
            if name not in value:
                return False
        for key, item in value.items():
            check = props.get(key)
            if check is None:
                if closed:
                    return False
                continue
            kind = type(check)
            if kind is tuple:
                t = type(item)
                if t not in check or (t is float and item - item != 0.0):
                    return False  # the wrong type, or a float that is NaN or infinite
            elif kind is frozenset:
                if type(item) is not str or item not in check:
                    return False
            else:
                try:
                    if self._check(check, item, [key], what) is not None:
                        return False
                except RecursionError:
                    return False
        return True

    def _where(self, path: list[str | int], what: str, message: str) -> str:
        return f"{what} '{_path(path)}': {message}" if path else message

    def _check(self, schema: Any, value: Any, path: list[str | int], what: str) -> str | None:
        if schema is True:
            return None
        if schema is False:
            return self._where(path, what, "no value is allowed here")
        ref = schema.get("$ref")
        if ref is not None:
            reason = self._check(self.root["$defs"][ref[8:]], value, path, what)
            if reason:
                return reason
        kinds = schema.get("type")
        if kinds is not None:
            options = [kinds] if isinstance(kinds, str) else kinds
            if not any(_is_type(value, k) for k in options):
                expected = " or ".join(f'"{k}"' for k in options)
                return self._where(path, what, f"{_show(value)} is not of type {expected}")
        if "enum" in schema and not any(_same(value, e) for e in schema["enum"]):
            return self._where(path, what, f"{_show(value)} is not one of {_show(schema['enum'])}")
        if "const" in schema and not _same(value, schema["const"]):
            return self._where(path, what, f"{_show(schema['const'])} was expected")
        t = type(value)
        if t is dict:
            reason = self._object(schema, value, path, what)
        elif t is list:
            reason = self._array(schema, value, path, what)
        elif t is str:
            reason = self._string(schema, value, path, what)
        elif t in (int, float):
            reason = self._number(schema, value, path, what)
        else:
            reason = None
        if reason:
            return reason
        return self._combinators(schema, value, path, what)

    def _object(self, schema: Mapping[str, Any], value: dict[str, Any], path: list[str | int], what: str) -> str | None:
        for name in schema.get("required", ()):
            if name not in value:
                return f"missing required {what} '{_path([*path, name])}'"
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            sub = props.get(key)
            if sub is not None:
                reason = self._check(sub, item, [*path, key], what)
            elif extra is False:
                return f"unexpected {what} '{_path([*path, key])}'"
            elif extra is not True:
                reason = self._check(extra, item, [*path, key], what)
            else:
                reason = None
            if reason:
                return reason
        n = len(value)
        if "minProperties" in schema and n < schema["minProperties"]:
            return self._where(path, what, f"has fewer than {schema['minProperties']} properties")
        if "maxProperties" in schema and n > schema["maxProperties"]:
            return self._where(path, what, f"has more than {schema['maxProperties']} properties")
        return None

    def _array(self, schema: Mapping[str, Any], value: list[Any], path: list[str | int], what: str) -> str | None:
        prefix = schema.get("prefixItems", ())
        for i, (sub, item) in enumerate(zip(prefix, value, strict=False)):
            reason = self._check(sub, item, [*path, i], what)
            if reason:
                return reason
        items = schema.get("items")
        if items is not None:
            for i in range(len(prefix), len(value)):
                reason = self._check(items, value[i], [*path, i], what)
                if reason:
                    return reason
        n = len(value)
        if "minItems" in schema and n < schema["minItems"]:
            return self._where(path, what, f"{_show(value)} has fewer than {schema['minItems']} items")
        if "maxItems" in schema and n > schema["maxItems"]:
            return self._where(path, what, f"{_show(value)} has more than {schema['maxItems']} items")
        if schema.get("uniqueItems"):
            for i in range(n):
                for j in range(i + 1, n):
                    if _same(value[i], value[j]):
                        return self._where(path, what, f"{_show(value)} has non-unique elements")
        return None

    def _string(self, schema: Mapping[str, Any], value: str, path: list[str | int], what: str) -> str | None:
        n = len(value)
        if "minLength" in schema and n < schema["minLength"]:
            return self._where(path, what, f"{_show(value)} is shorter than {schema['minLength']} characters")
        if "maxLength" in schema and n > schema["maxLength"]:
            return self._where(path, what, f"{_show(value)} is longer than {schema['maxLength']} characters")
        pattern = schema.get("pattern")
        if pattern is not None:
            rx = self._patterns.get(pattern)
            if rx is None:
                rx = self._patterns[pattern] = re.compile(_ecma(pattern))
            if rx.search(value) is None:
                return self._where(path, what, f"{_show(value)} does not match {_show(pattern)}")
        return None

    def _number(self, schema: Mapping[str, Any], value: float, path: list[str | int], what: str) -> str | None:
        if isinstance(value, float) and not math.isfinite(value):
            return self._where(path, what, "is not a finite number")
        if "minimum" in schema and value < schema["minimum"]:
            return self._where(path, what, f"{_show(value)} is less than the minimum of {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            return self._where(path, what, f"{_show(value)} is greater than the maximum of {schema['maximum']}")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            return self._where(path, what, f"{_show(value)} is not greater than {schema['exclusiveMinimum']}")
        if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
            return self._where(path, what, f"{_show(value)} is not less than {schema['exclusiveMaximum']}")
        return None

    def _combinators(self, schema: Mapping[str, Any], value: Any, path: list[str | int], what: str) -> str | None:
        for sub in schema.get("allOf", ()):
            reason = self._check(sub, value, path, what)
            if reason:
                return reason
        any_of = schema.get("anyOf")
        if any_of is not None and all(self._check(s, value, path, what) for s in any_of):
            return self._where(path, what, f"{_show(value)} does not match any of the allowed schemas")
        one_of = schema.get("oneOf")
        if one_of is not None:
            matches = sum(1 for s in one_of if self._check(s, value, path, what) is None)
            if matches != 1:
                detail = "none" if matches == 0 else "more than one"
                return self._where(path, what, f"{_show(value)} matches {detail} of the 'oneOf' schemas")
        return None


def _no_remote(uri: str) -> Any:
    raise ValueError(f"remote $ref {uri!r} is not fetched")


class _Full:
    """A complete JSON Schema validator (``jsonschema_rs``)."""

    def __init__(self, schema: Mapping[str, Any] | bool) -> None:
        import jsonschema_rs

        self._rs = jsonschema_rs
        data: Any = dict(schema) if isinstance(schema, Mapping) else schema
        try:
            if isinstance(data, dict) and "$schema" not in data and not jsonschema_rs.meta.is_valid(data):
                jsonschema_rs.meta.validate(data)
            self._validator = jsonschema_rs.validator_for(data, retriever=_no_remote)
        except (jsonschema_rs.ValidationError, ValueError, jsonschema_rs.ReferencingError) as exc:
            first = str(exc).split("\n", 1)[0]
            raise SchemaError(f"invalid JSON Schema: {first}") from None

    def describe(self, instance: Any, what: str = "argument") -> str | None:
        try:
            err = next(iter(self._validator.iter_errors(instance)), None)
        except (ValueError, RecursionError):  # jsonschema_rs: "Recursion limit reached"
            return _TOO_DEEP
        if err is None:
            return None
        kinds = self._rs.ValidationErrorKind
        kind = err.kind
        where = list(err.instance_path)
        if isinstance(kind, kinds.Required):
            return f"missing required {what} '{_path([*where, kind.property])}'"
        if isinstance(kind, kinds.AdditionalProperties):
            names = ", ".join(f"'{_path([*where, p])}'" for p in kind.unexpected)
            return f"unexpected {what} {names}"
        message = str(err.message)
        shown = _show(err.instance)
        try:
            full = msgspec.json.encode(err.instance).decode()
        except (TypeError, ValueError, RecursionError):
            full = shown
        if full != shown:  # the message embeds a long value: show it shortened
            compact = message.replace(" ", "")
            if compact.startswith(full.replace(" ", "")) or len(message) > 200:
                rest = message[len(full) :] if message.startswith(full) else f" is invalid ({type(kind).__name__})"
                message = shown + rest
        return f"{what} '{_path(where)}': {message}" if where else message


def compile_schema(schema: Mapping[str, Any] | bool, *, trusted: bool = False) -> Validator:
    """A validator for ``schema`` (JSON Schema 2020-12 unless ``$schema`` names another
    dialect). ``trusted`` marks schemas mcpkit generated itself, which need no check
    against the meta-schema.

    Raises :class:`SchemaError` if the schema is invalid or needs a remote ``$ref``.
    """
    if not isinstance(schema, (Mapping, bool)):
        raise SchemaError("a JSON Schema must be an object or a boolean")
    root = schema if isinstance(schema, Mapping) else {}
    if trusted and _simple(schema, root):
        return _Simple(schema)
    return _Full(schema)
