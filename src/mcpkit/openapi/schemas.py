"""OpenAPI Schema Objects as self-contained JSON Schema 2020-12: local ``$ref`` inlined
(a recursive one kept as a ``$ref`` into ``$defs``, so that the schema stays finite),
formats, enums and ``required`` kept, OpenAPI 3.0's ``nullable`` made a type list (and
its boolean ``exclusiveMinimum``/``exclusiveMaximum`` numbers), ``example`` made
``examples``, and the keywords that only mean something to OpenAPI (``discriminator``,
``xml``, ``externalDocs``) left out.

One :class:`SchemaConverter` serves one tool: what it put in ``defs`` belongs at the top
of the schema that holds the converted parts (:meth:`SchemaConverter.finish`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .document import Document, OpenAPIError

__all__ = ["SchemaConverter"]

#: Keywords whose value is one subschema.
_ONE: Final = frozenset(
    {
        "items",
        "additionalProperties",
        "not",
        "contains",
        "propertyNames",
        "if",
        "then",
        "else",
        "unevaluatedItems",
        "unevaluatedProperties",
        "additionalItems",
    }
)
#: Keywords whose value is a list of subschemas.
_MANY: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
#: Keywords whose value maps names to subschemas.
_NAMED: Final = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
#: OpenAPI's own keywords, which mean nothing to a JSON Schema validator or a model.
_DROPPED: Final = frozenset({"discriminator", "xml", "externalDocs", "example", "nullable"})
#: Subschemas converted per tool at most: a document that would inline into more is refused.
MAX_NODES: Final = 20_000


class SchemaConverter:
    """Converts the schemas of one tool; ``defs`` collects the recursive references'
    targets by name. Raises :class:`OpenAPIError` for a reference that points nowhere
    or a schema that inlines into more than 20,000 subschemas."""

    __slots__ = ("_document", "_nodes", "_stack", "defs")

    def __init__(self, document: Document) -> None:
        self._document = document
        self._stack: list[str] = []  # the references being inlined, outermost first
        self._nodes = 0
        self.defs: dict[str, Any] = {}

    def convert(self, schema: Any) -> Any:
        """``schema`` as JSON Schema 2020-12 (a new object; the document is not changed)."""
        if isinstance(schema, bool):
            return schema
        if not isinstance(schema, Mapping):
            return {}
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise OpenAPIError(f"a schema of this operation inlines into more than {MAX_NODES} subschemas")
        if "$ref" in schema:
            return self._reference(schema)
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key in _DROPPED:
                continue
            if key in _ONE:
                out[key] = self.convert(value)
            elif key in _MANY and isinstance(value, list):
                out[key] = [self.convert(v) for v in value]
            elif key in _NAMED and isinstance(value, Mapping):
                out[key] = {str(k): self.convert(v) for k, v in value.items()}
            else:
                out[key] = value
        if "example" in schema and "examples" not in schema:
            out["examples"] = [schema["example"]]
        if self._document.version == "3.0":
            _from_30(schema, out)
        return out

    def _reference(self, schema: Mapping[str, Any]) -> Any:
        ref = str(schema["$ref"])
        name = _def_name(ref)
        siblings = {k: v for k, v in schema.items() if k != "$ref"}  # 3.1 allows them beside $ref
        if ref in self._stack:  # recursion: point into $defs, which holds it once
            if name not in self.defs:
                self.defs[name] = True  # placeholder while the outer inlining finishes it
            ref_schema: dict[str, Any] = {"$ref": f"#/$defs/{name}"}
            return ref_schema
        target = self._document.lookup(ref)
        self._stack.append(ref)
        try:
            inlined = self.convert(target)
        finally:
            self._stack.pop()
        if name in self.defs and self.defs[name] is True:
            self.defs[name] = inlined  # it referred to itself: its $defs entry is the whole of it
        if siblings and self._document.version == "3.1":
            extra = self.convert(siblings)
            return {"allOf": [inlined, extra]} if extra else inlined
        return inlined

    def finish(self, schema: dict[str, Any]) -> dict[str, Any]:
        """``schema`` (built from converted parts) with the ``$defs`` they refer to."""
        if self.defs:
            schema = {**schema, "$defs": {**schema.get("$defs", {}), **self.defs}}
        return schema


def _def_name(ref: str) -> str:
    """The ``$defs`` name of a reference: its last token, made unambiguous by the path."""
    tokens = [t for t in ref.lstrip("#").split("/") if t]
    if len(tokens) >= 3 and tokens[:2] == ["components", "schemas"]:
        return "/".join(tokens[2:]).replace("/", "_").replace("~1", "_").replace("~0", "_")
    return "_".join(tokens).replace("~1", "_").replace("~0", "_") or "root"


def _from_30(schema: Mapping[str, Any], out: dict[str, Any]) -> None:
    """What OpenAPI 3.0 says otherwise than JSON Schema 2020-12, in ``out``."""
    for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        flag = schema.get(bound)
        if isinstance(flag, bool):
            del out[bound]
            if flag and limit in schema:
                out[bound] = out.pop(limit)
    if schema.get("nullable") is True:
        kind = out.get("type")
        if isinstance(kind, str):
            out["type"] = [kind, "null"]
        elif isinstance(kind, list) and "null" not in kind:
            out["type"] = [*kind, "null"]
        if isinstance(out.get("enum"), list) and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
        if kind is None and any(k in out for k in ("allOf", "anyOf", "oneOf")):
            out_copy = dict(out)
            out.clear()
            out["anyOf"] = [out_copy, {"type": "null"}]
