"""A tool's arguments for an operation: one input JSON Schema of the path, query,
header and cookie parameters and the JSON body's properties, and the way back from
the arguments a client sent to the HTTP request's parts.

Names collide when two places use the same one (a path ``id`` and a body ``id``); the
rule is deterministic: path parameters keep their name, then query, header, cookie
parameters and body properties in that order, and a later one that collides is named
``{name}__{place}`` (``id__body``), with a number after it in the unlikely case that
this is taken too. A body that is not an object (an array, a string, a ``oneOf``) is one
argument, ``body``, under the same rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from .operations import Operation
from .schemas import SchemaConverter

__all__ = ["Arguments", "RequestParts", "arguments_for"]

_ORDER: Final = ("path", "query", "header", "cookie")


@dataclass
class RequestParts:
    """What a call's arguments make of the request."""

    path: dict[str, Any] = field(default_factory=dict)
    query: dict[str, Any] = field(default_factory=dict)
    header: dict[str, Any] = field(default_factory=dict)
    cookie: dict[str, Any] = field(default_factory=dict)
    body: Any = None
    has_body: bool = False


@dataclass(frozen=True)
class Arguments:
    """The input schema, and each argument's place and name in the request."""

    schema: dict[str, Any]
    #: argument name -> (place, name there); place "body" with name None is the whole body
    places: Mapping[str, tuple[str, str | None]]
    #: an object body the operation requires: sent (``{}``) even when no property is given
    body_required: bool = False

    def split(self, arguments: Mapping[str, Any]) -> RequestParts:
        """The request's parts for these (validated) arguments; unknown ones are ignored."""
        parts = RequestParts()
        body: dict[str, Any] = {}
        for arg, value in arguments.items():
            place = self.places.get(arg)
            if place is None:
                continue
            where, name = place
            if where == "body":
                parts.has_body = True
                if name is None:
                    parts.body = value
                else:
                    body[name] = value
            else:
                getattr(parts, where)[name] = value
        if body or (self.body_required and not parts.has_body):
            parts.body, parts.has_body = body, True
        return parts


def arguments_for(op: Operation, converter: SchemaConverter) -> Arguments:
    """The arguments of ``op``, its schemas converted by ``converter`` (whose ``$defs``
    the returned schema holds)."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    places: dict[str, tuple[str, str | None]] = {}

    def claim(name: str, where: str) -> str:
        arg = name if name not in places else f"{name}__{where}"
        n = 2
        while arg in places:
            arg, n = f"{name}__{where}{n}", n + 1
        return arg

    for where in _ORDER:
        for p in op.parameters:
            if p.location != where:
                continue
            arg = claim(p.name, where)
            places[arg] = (where, p.name)
            converted = converter.convert(p.schema)
            if p.description and isinstance(converted, dict) and "description" not in converted:
                converted = {**converted, "description": p.description}
            properties[arg] = converted
            if p.required:
                required.append(arg)
    body_required = False
    if op.body is not None:
        body = converter.convert(op.body.schema)
        props = body.get("properties") if isinstance(body, dict) else None
        if (
            isinstance(body, dict)
            and body.get("type", "object") == "object"
            and isinstance(props, dict)
            and props
            and not ({"allOf", "anyOf", "oneOf", "$ref"} & body.keys())
        ):
            wanted = set(body.get("required") or ()) if op.body.required else set()
            for name, prop in props.items():
                arg = claim(name, "body")
                places[arg] = ("body", name)
                properties[arg] = prop
                if name in wanted:
                    required.append(arg)
            body_required = op.body.required
        else:
            arg = claim("body", "body")
            places[arg] = ("body", None)
            if op.body.description and isinstance(body, dict) and "description" not in body:
                body = {**body, "description": op.body.description}
            properties[arg] = body
            if op.body.required:
                required.append(arg)
    whole: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        whole["required"] = required
    return Arguments(converter.finish(whole), places, body_required)
