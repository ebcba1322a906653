"""The operations of a document: each method of each path, with its parameters (the
path item's merged with the operation's), its JSON request body and its successful
response, dereferenced, in the document's order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from .document import Document, OpenAPIError

__all__ = ["Operation", "Parameter", "Body", "Success", "operations", "METHODS"]

#: The HTTP methods a path item may describe, in the order they are read.
METHODS: Final = ("get", "put", "post", "delete", "options", "head", "patch", "trace")

Location = Literal["path", "query", "header", "cookie"]
#: Header parameters that OpenAPI says are ignored: the media types and the security schemes say them.
_IGNORED_HEADERS: Final = frozenset({"accept", "content-type", "authorization"})


@dataclass(frozen=True)
class Parameter:
    """One parameter: ``name`` where it goes (``location``), its (OpenAPI) schema."""

    name: str
    location: Location
    required: bool
    schema: Any
    description: str | None = None
    explode: bool = True  # for arrays in the query: ?a=1&a=2 (form, explode) or ?a=1,2


@dataclass(frozen=True)
class Body:
    """The request body, sent as ``media_type`` (JSON)."""

    media_type: str
    schema: Any
    required: bool
    description: str | None = None


@dataclass(frozen=True)
class Success:
    """The first 2xx response the operation describes: its JSON schema if it has one,
    and whether JSON is all it may answer with (else its schema is no output schema)."""

    status: str
    media_type: str | None
    schema: Any
    only_json: bool = False


@dataclass(frozen=True)
class Operation:
    """One operation of the document (``method`` in lower case)."""

    method: str
    path: str
    operation_id: str | None
    summary: str | None
    description: str | None
    tags: tuple[str, ...]
    parameters: tuple[Parameter, ...]
    body: Body | None
    success: Success | None
    deprecated: bool = False
    extensions: Mapping[str, Any] = field(default_factory=dict)


def operations(document: Document) -> list[Operation]:
    """Every operation of ``document``, in its order. Raises :class:`OpenAPIError` for
    a reference that points nowhere; a parameter in an unknown place is left out."""
    found: list[Operation] = []
    for path, item in (document.data.get("paths") or {}).items():
        item = document.deref(item)
        if not isinstance(item, Mapping):
            continue
        shared = _parameters(document, item.get("parameters") or ())
        for method in METHODS:
            op = item.get(method)
            if not isinstance(op, Mapping):
                continue
            own = _parameters(document, op.get("parameters") or ())
            merged = {(p.name, p.location): p for p in shared} | {(p.name, p.location): p for p in own}
            found.append(
                Operation(
                    method=method,
                    path=str(path),
                    operation_id=str(op["operationId"]) if op.get("operationId") else None,
                    summary=op.get("summary") or item.get("summary"),
                    description=op.get("description") or item.get("description"),
                    tags=tuple(str(t) for t in op.get("tags") or ()),
                    parameters=tuple(merged.values()),
                    body=_body(document, op.get("requestBody")),
                    success=_success(document, op.get("responses") or {}),
                    deprecated=bool(op.get("deprecated")),
                    extensions={k: v for k, v in op.items() if str(k).startswith("x-")},
                )
            )
    return found


def _parameters(document: Document, raw: Any) -> list[Parameter]:
    if not isinstance(raw, (list, tuple)):
        raise OpenAPIError("'parameters' is not a list")
    params = []
    for entry in raw:
        p = document.deref(entry)
        if not isinstance(p, Mapping) or p.get("in") not in ("path", "query", "header", "cookie") or not p.get("name"):
            continue
        if p["in"] == "header" and str(p["name"]).lower() in _IGNORED_HEADERS:
            continue  # OpenAPI: described elsewhere (the media types, the security schemes)
        schema = p.get("schema")
        if schema is None and isinstance(p.get("content"), Mapping) and p["content"]:
            schema = next(iter(p["content"].values())).get("schema")
        location: Location = p["in"]
        style = p.get("style", "form")
        params.append(
            Parameter(
                name=str(p["name"]),
                location=location,
                required=bool(p.get("required")) or location == "path",
                schema=schema if schema is not None else {},
                description=p.get("description"),
                explode=bool(p.get("explode", style == "form")),
            )
        )
    return params


def _json_type(media_type: str) -> bool:
    base = media_type.split(";", 1)[0].strip().lower()
    return base == "application/json" or base.endswith("+json")


def _body(document: Document, raw: Any) -> Body | None:
    if raw is None:
        return None
    body = document.deref(raw)
    content = body.get("content") if isinstance(body, Mapping) else None
    if not isinstance(content, Mapping):
        return None
    for media_type, entry in content.items():
        if _json_type(str(media_type)) and isinstance(entry, Mapping):
            return Body(str(media_type), entry.get("schema", {}), bool(body.get("required")), body.get("description"))
    return None  # forms and uploads are not offered as arguments


def _success(document: Document, responses: Any) -> Success | None:
    if not isinstance(responses, Mapping):
        return None
    codes = sorted(str(c) for c in responses if str(c).startswith("2"))
    if not codes:
        return None
    status = codes[0]
    response = document.deref(responses[status] if status in responses else responses[int(status)])
    content = response.get("content") if isinstance(response, Mapping) else None
    if isinstance(content, Mapping):
        only_json = all(_json_type(str(m)) for m in content)
        for media_type, entry in content.items():
            if _json_type(str(media_type)) and isinstance(entry, Mapping):
                return Success(status, str(media_type), entry.get("schema"), only_json)
        if content:
            return Success(status, str(next(iter(content))), None)
    return Success(status, None, None)
