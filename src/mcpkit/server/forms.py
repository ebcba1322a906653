"""Elicitation forms: the ``requestedSchema`` a handler asks with (docs/interactive.md).

A form is a flat object of primitive fields — the restricted JSON Schema subset that
elicitation allows (2025-11-25 ``PrimitiveSchemaDefinition``): strings (with an optional
``format``), numbers, integers, booleans, single-select enums of strings, and
multi-select arrays of string enums. A handler gives a schema dict, or a class whose
fields are those types (a dataclass, msgspec struct, TypedDict or pydantic model); the
class's field order, enum order, defaults and optional fields (``T | None``) carry over.
"""

from __future__ import annotations

import datetime
import enum
import sys
import types
import typing
from typing import Any, Literal, Union

import msgspec

__all__ = ["form_schema"]

_SCALARS: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
    datetime.datetime: {"type": "string", "format": "date-time"},
    datetime.date: {"type": "string", "format": "date"},
}
_PRIMITIVE_TYPES = ("string", "number", "integer", "boolean", "array")
_KEYS = ("type", "properties", "required", "title", "description")


def form_schema(schema_or_class: Any) -> dict[str, Any]:
    """The ``requestedSchema`` for ``schema_or_class`` (a schema dict is checked and
    returned as it is). Raises ``ValueError`` for anything elicitation cannot carry,
    naming the field."""
    if isinstance(schema_or_class, dict):
        schema = schema_or_class
    elif isinstance(schema_or_class, type):
        schema = _class_schema(schema_or_class)
    else:
        raise ValueError(f"cannot elicit {schema_or_class!r}: give a schema dict or a class")
    if schema.get("type") != "object" or not isinstance(schema.get("properties"), dict):
        raise ValueError("an elicitation schema must be an object schema with 'properties'")
    for name, prop in schema["properties"].items():
        if not isinstance(prop, dict) or (
            prop.get("type") not in _PRIMITIVE_TYPES and "enum" not in prop and "oneOf" not in prop
        ):
            raise ValueError(f"elicitation property {name!r} must be a string, number, integer, boolean or enum")
    return schema


def _fields(cls: type) -> list[tuple[str, Any, Any]]:
    """(name, type, default or _MISSING) of each field of ``cls``, in order."""
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and issubclass(cls, pydantic.BaseModel):
        fields = typing.cast(Any, cls).model_fields
        return [(n, f.annotation, _MISSING if f.is_required() else f.default) for n, f in fields.items()]
    if issubclass(cls, msgspec.Struct):
        return [
            (f.encode_name, f.type, _MISSING if f.required else (f.default if f.default is not msgspec.NODEFAULT else _MISSING))
            for f in msgspec.structs.fields(cls)
        ]
    hints = typing.get_type_hints(cls, include_extras=True)
    dataclasses = sys.modules.get("dataclasses")  # loaded by any dataclass, as pydantic is by a model
    if dataclasses is not None and dataclasses.is_dataclass(cls):
        out = []
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                default = f.default
            elif f.default_factory is not dataclasses.MISSING:
                default = f.default_factory()
            else:
                default = _MISSING
            out.append((f.name, hints[f.name], default))
        return out
    if issubclass(cls, dict) and hasattr(cls, "__required_keys__"):  # a TypedDict
        required = cls.__required_keys__
        return [(n, t, _MISSING if n in required else _OPTIONAL) for n, t in hints.items()]
    raise ValueError(f"cannot elicit {cls.__name__}: use a dataclass, msgspec struct, TypedDict or pydantic model")


class _Missing:
    pass


_MISSING: Any = _Missing()
_OPTIONAL: Any = _Missing()  # a TypedDict key that may be left out


def _class_schema(cls: type) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, tp, default in _fields(cls):
        tp, optional = _unwrap(tp)
        prop = _property(name, tp)
        if default is not _MISSING and default is not _OPTIONAL and default is not None:
            prop["default"] = default.value if isinstance(default, enum.Enum) else msgspec.to_builtins(default)
        if default is _MISSING and not optional:
            required.append(name)
        properties[name] = prop
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    doc = (cls.__doc__ or "").strip()
    if doc and not doc.startswith(cls.__name__ + "("):  # not a dataclass's generated signature
        schema["description"] = doc.split("\n\n")[0].strip()
    return schema


def _unwrap(tp: Any) -> tuple[Any, bool]:
    """``tp`` without ``Annotated`` and ``| None``, and whether it was optional."""
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    if typing.get_origin(tp) in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return _unwrap(args[0])[0], True
    return tp, False


def _string_choices(name: str, tp: Any) -> list[str] | None:
    """The values of a ``Literal`` of strings or of a string-valued ``Enum``, in order;
    None if ``tp`` is neither. Raises ``ValueError`` for non-string choices."""
    if typing.get_origin(tp) is Literal:
        values = list(typing.get_args(tp))
    elif isinstance(tp, type) and issubclass(tp, enum.Enum):
        values = [member.value for member in tp]
    else:
        return None
    if not all(isinstance(v, str) for v in values):
        raise ValueError(f"elicitation field {name!r}: enum values must be strings")
    return values


def _property(name: str, tp: Any) -> dict[str, Any]:
    scalar = _SCALARS.get(tp)
    if scalar is not None:
        return dict(scalar)
    choices = _string_choices(name, tp)
    if choices is not None:
        return {"type": "string", "enum": choices}
    if typing.get_origin(tp) in (list, set, frozenset, tuple):
        args = typing.get_args(tp)
        item = _string_choices(name, _unwrap(args[0])[0]) if args else None
        if item is not None:
            return {"type": "array", "items": {"type": "string", "enum": item}}
    raise ValueError(
        f"elicitation field {name!r} must be str, int, float, bool, a date, a Literal or Enum of strings, "
        f"or a list of those choices (not {getattr(tp, '__name__', tp)!r})"
    )
