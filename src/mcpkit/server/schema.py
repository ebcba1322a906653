"""JSON Schema from Python type hints, docstrings, and JSON -> Python conversion.

Input schemas are derived once, at registration. Validated arguments are converted to
the annotated Python types with msgspec (or pydantic, for pydantic models, when
pydantic is installed).
"""

from __future__ import annotations

import datetime
import decimal
import enum
import inspect
import re
import sys
import types
import typing
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Union

import msgspec

from .validate import SchemaError

__all__ = [
    "SchemaError",
    "type_schema",
    "is_structured",
    "parse_docstring",
    "Converter",
    "converter_for",
    "encode_hook",
]

_NoneType = type(None)


# --- type hints -> schema ----------------------------------------------------------------


def _is_pydantic_model(tp: Any) -> bool:
    mod = sys.modules.get("pydantic")
    return mod is not None and isinstance(tp, type) and issubclass(tp, mod.BaseModel)


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__required_keys__")


def _is_dataclass(tp: type) -> bool:
    # `dataclasses` is loaded by any dataclass, as pydantic is by a model: a server whose
    # types include neither does not import it (start-up cost)
    dataclasses = sys.modules.get("dataclasses")
    return dataclasses is not None and bool(dataclasses.is_dataclass(tp))


def is_structured(tp: Any) -> bool:
    """Whether values of ``tp`` are JSON objects (so they can be structured content)."""
    tp = _strip_annotated(tp)
    if _is_pydantic_model(tp) or _is_typeddict(tp):
        return True
    if isinstance(tp, type) and (_is_dataclass(tp) or issubclass(tp, msgspec.Struct)):
        return True
    origin = typing.get_origin(tp)
    return tp is dict or origin in (dict, Mapping)


def _strip_annotated(tp: Any) -> Any:
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    return tp


def _hoist(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    inner = schema.pop("$defs", None)
    if inner:
        defs.update(inner)
    return schema


_PLAIN_SCHEMAS: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
    list: {"type": "array"},
    tuple: {"type": "array"},
    set: {"type": "array"},
    frozenset: {"type": "array"},
    dict: {"type": "object"},
    None: {"type": "null"},
    _NoneType: {"type": "null"},
}


#: Types people write every day that JSON carries as strings, with their formats
#: (msgspec converts them both ways; a ``Path`` is its string).
_STRING_TYPES: dict[Any, dict[str, Any]] = {
    datetime.datetime: {"type": "string", "format": "date-time"},
    datetime.date: {"type": "string", "format": "date"},
    datetime.time: {"type": "string", "format": "time"},
    datetime.timedelta: {"type": "string", "format": "duration"},
    uuid.UUID: {"type": "string", "format": "uuid"},
    decimal.Decimal: {"type": ["string", "number"], "format": "decimal"},
    bytes: {"type": "string", "contentEncoding": "base64"},
    bytearray: {"type": "string", "contentEncoding": "base64"},
}


def _path_class(tp: Any) -> bool:
    """Whether ``tp`` is ``pathlib.PurePath`` or a subclass. pathlib is not imported
    for this (it costs start-up time and memory): a program with such a type in a
    signature, or such a value, has imported it already."""
    pathlib = sys.modules.get("pathlib")
    return pathlib is not None and isinstance(tp, type) and issubclass(tp, pathlib.PurePath)


def type_schema(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema of values of ``tp``; shared definitions go into ``defs``.

    Raises :class:`SchemaError` for types with no JSON form.
    """
    if tp is Any or tp is object or tp is inspect.Parameter.empty:
        return {}
    try:
        plain = _PLAIN_SCHEMAS.get(tp)
    except TypeError:  # an unhashable annotation
        plain = None
    if plain is None:
        plain = _STRING_TYPES.get(tp) if isinstance(tp, type) else None
        pathlib = sys.modules.get("pathlib")  # see _path_class
        if plain is None and pathlib is not None and tp in (pathlib.Path, pathlib.PurePath):
            plain = {"type": "string"}  # a Path is its string
    if plain is not None:
        return dict(plain)
    origin = typing.get_origin(tp)
    if origin is not None:
        return _generic_schema(tp, origin, typing.get_args(tp), defs)
    if isinstance(tp, type):
        return _class_schema(tp, defs)
    raise SchemaError(f"type {tp!r} has no JSON Schema form")


def _generic_schema(tp: Any, origin: Any, args: tuple[Any, ...], defs: dict[str, Any]) -> dict[str, Any]:
    """``Annotated``, ``Literal``, unions and parametrised containers."""
    if origin is typing.Annotated:
        schema = dict(type_schema(args[0], defs))
        for extra in args[1:]:
            if isinstance(extra, str):
                schema["description"] = extra
            elif getattr(extra, "description", None):  # pydantic.Field(description=...)
                schema["description"] = extra.description
        return schema
    if origin is Literal:
        return _literal_schema(list(args))
    if origin is Union or origin is types.UnionType:
        return {"anyOf": [type_schema(a, defs) for a in args]}
    if origin in (list, set, frozenset, Sequence, typing.Sequence) or (
        isinstance(origin, type) and issubclass(origin, (list, set, frozenset))
    ):
        schema = {"type": "array", "items": type_schema(args[0], defs) if args else {}}
        if origin in (set, frozenset):
            schema["uniqueItems"] = True
        return schema
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": type_schema(args[0], defs)}
        items = [type_schema(a, defs) for a in args]
        return {"type": "array", "prefixItems": items, "minItems": len(items), "maxItems": len(items)}
    if origin in (dict, Mapping) or origin is typing.Mapping:
        schema = {"type": "object"}
        if len(args) == 2:
            schema["additionalProperties"] = type_schema(args[1], defs)
        return schema
    raise SchemaError(f"type {tp!r} has no JSON Schema form")


def _literal_schema(values: list[Any]) -> dict[str, Any]:
    schema: dict[str, Any] = {"enum": values}
    kinds = {type(v) for v in values}
    if len(kinds) == 1:
        name = {str: "string", int: "integer", bool: "boolean", float: "number"}.get(kinds.pop())
        if name:
            schema["type"] = name
    return schema


def _class_schema(tp: type, defs: dict[str, Any]) -> dict[str, Any]:
    """Enums, pydantic models, msgspec structs, dataclasses and TypedDicts."""
    if issubclass(tp, enum.Enum):
        return {"enum": [m.value for m in tp]}
    if _is_pydantic_model(tp):
        return _hoist(typing.cast(Any, tp).model_json_schema(ref_template="#/$defs/{model}"), defs)
    if issubclass(tp, msgspec.Struct) or _is_dataclass(tp) or _is_typeddict(tp):
        try:
            (schema,), components = msgspec.json.schema_components([tp], ref_template="#/$defs/{name}", schema_hook=_schema_hook)
        except TypeError as exc:
            raise SchemaError(str(exc)) from None
        for typed_dict in _typeddicts_in(tp, set()):
            found = components.get(typed_dict.__name__)
            if found is not None and found.get("title") == typed_dict.__name__:
                _in_declared_order(found, list(typed_dict.__annotations__))
        defs.update(components)
        return dict(schema)
    raise SchemaError(f"type {tp!r} has no JSON Schema form")


def _schema_hook(tp: Any) -> dict[str, Any]:
    """The schema of a field type msgspec has none for: a path is its string."""
    if _path_class(tp):
        return {"type": "string"}
    raise NotImplementedError  # msgspec's schema_hook protocol: "not a type this hook knows"


def _typeddicts_in(tp: Any, seen: set[Any]) -> list[type]:
    """The TypedDict classes among ``tp`` and the types of its fields, at any depth
    (msgspec lists a TypedDict's properties sorted by name; a schema should keep the
    order they were declared in, as it does for dataclasses and structs)."""
    if tp in seen or (not isinstance(tp, type) and typing.get_origin(tp) is None):
        return []
    seen.add(tp)
    args = typing.get_args(tp)
    if args:
        return [found for arg in args for found in _typeddicts_in(arg, seen)]
    if not (isinstance(tp, type) and (issubclass(tp, msgspec.Struct) or _is_dataclass(tp) or _is_typeddict(tp))):
        return []
    try:
        hints = typing.get_type_hints(tp)
    except Exception:  # an unresolvable hint: msgspec reported it already, or never looks
        return []
    found = [tp] if _is_typeddict(tp) else []
    return found + [nested for hint in hints.values() for nested in _typeddicts_in(hint, seen)]


def _in_declared_order(schema: dict[str, Any], order: list[str]) -> None:
    """``schema``'s ``properties`` and ``required`` in the order of ``order``."""
    rank = {name: i for i, name in enumerate(order)}
    properties = schema.get("properties")
    if isinstance(properties, dict):
        schema["properties"] = dict(sorted(properties.items(), key=lambda item: rank.get(item[0], len(rank))))
    required = schema.get("required")
    if isinstance(required, list):
        schema["required"] = sorted(required, key=lambda name: rank.get(name, len(rank)))


# --- docstrings ---------------------------------------------------------------------------

# patterns compiled (and cached by re) at first use, not at import
_SECTION = r"^\s*(Args|Arguments|Parameters|Params|Returns?|Raises|Yields|Examples?|Notes?)\s*:?\s*$"
_NUMPY_RULE = r"^\s*-{3,}\s*$"
_ARG_LINE = r"^\s*\*{0,2}(\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$"
_SPHINX = r"^\s*:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$"
#: The headers _SECTION matches: a docstring without one, without "---" (_NUMPY_RULE) and
#: without ":param" (_SPHINX) is all summary, read without compiling the patterns (most
#: tools' docstrings: the first registration's start-up cost).
_HEADERS = frozenset(
    {"Args", "Arguments", "Parameters", "Params", "Return", "Returns", "Raises", "Yields", "Example", "Examples", "Note", "Notes"}
)


def _may_be_header(line: str) -> bool:
    text = line.strip()
    return (text[:-1].rstrip() if text.endswith(":") else text) in _HEADERS


def parse_docstring(doc: str | None) -> tuple[str | None, dict[str, str]]:
    """The summary (text before any section) and per-parameter descriptions from a
    Google, NumPy or Sphinx style docstring."""
    if not doc:
        return None, {}
    lines = inspect.cleandoc(doc).splitlines()
    if "---" not in doc and ":param" not in doc and not any(_may_be_header(line) for line in lines):
        return "\n".join(lines).strip() or None, {}
    summary: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for i, line in enumerate(lines):
        m = re.match(_SECTION, line)
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if m or (re.match(_NUMPY_RULE, nxt) and line.strip()):
            section = (m.group(1) if m else line.strip()).lower()
            current = None
            continue
        if re.match(_NUMPY_RULE, line):
            continue
        sp = re.match(_SPHINX, line)
        if sp:
            section, current = "sphinx", sp.group(1)
            params[current] = sp.group(2).strip()
            continue
        if section is None:
            summary.append(line)
            continue
        if section in ("args", "arguments", "parameters", "params", "sphinx"):
            am = re.match(_ARG_LINE, line)
            indent = len(line) - len(line.lstrip())
            if am and (section != "parameters" or indent == 0 or am.group(3)):
                current = am.group(1)
                params[current] = am.group(3).strip()
            elif current and line.strip():
                params[current] = (params[current] + " " + line.strip()).strip()
    text = "\n".join(summary).strip()
    return (text or None), params


# --- JSON -> Python conversion ------------------------------------------------------------

Converter = Callable[[Any], Any]
_PLAIN = (str, int, float, bool, list, dict, Any, object, inspect.Parameter.empty)


def _needs_pydantic(tp: Any) -> bool:
    if _is_pydantic_model(tp):
        return True
    return any(_needs_pydantic(a) for a in typing.get_args(tp) if not isinstance(a, (str, int, float)))


def _is_plain(tp: Any) -> bool:
    tp = _strip_annotated(tp)
    if tp in _PLAIN or tp is None or tp is _NoneType:
        return True
    origin = typing.get_origin(tp)
    if origin in (list, dict, Union, types.UnionType):
        return all(_is_plain(a) for a in typing.get_args(tp))
    return origin is Literal


def _not_a_path(value: Any) -> Any:
    raise ValueError(f"expected a path string, not {type(value).__name__}")


def _decode_hook(tp: type, value: Any) -> Any:
    """Types msgspec does not convert itself (a ``Path`` inside a structure)."""
    if _path_class(tp) and isinstance(value, str):
        return tp(value)
    raise NotImplementedError  # msgspec's dec_hook protocol: "not a type this hook converts"


def encode_hook(value: Any) -> Any:
    """What msgspec does not encode itself, as JSON: paths as strings."""
    if _path_class(type(value)):
        return str(value)
    # msgspec's enc_hook protocol: NotImplementedError means "cannot encode this value".
    raise NotImplementedError(f"objects of type {type(value).__name__} are not JSON")


def converter_for(tp: Any) -> Converter | None:
    """A function turning validated JSON into a value of ``tp``, or None when the JSON
    value can be passed as is. Converters raise ``ValueError`` on values they reject."""
    if _is_plain(tp):
        if _strip_annotated(tp) is float:
            return lambda v: float(v) if type(v) is int else v
        return None
    if _needs_pydantic(tp):
        import pydantic

        adapter = pydantic.TypeAdapter(tp)
        return adapter.validate_python
    bare = _strip_annotated(tp)
    if _path_class(bare):
        return lambda v: bare(v) if isinstance(v, str) else _not_a_path(v)

    def convert(value: Any) -> Any:
        return msgspec.convert(value, bare, strict=False, dec_hook=_decode_hook)

    return convert
