"""How a document's operations become tools' schemas: OpenAPI 3.0's ``nullable`` and
boolean bounds, ``example``, formats and enums kept, local references inlined and a
recursive one kept finite through ``$defs``, references that point nowhere refused; the
arguments' names (collisions between places settled by one rule, a body that is not an
object as ``body``), the tools' names, and the route maps' rules."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcpkit import Client
from mcpkit.openapi import OpenAPIError, RouteMap, from_openapi

BASE = "http://127.0.0.1:9"  # nothing is called in these tests


def doc(paths: dict[str, Any], version: str = "3.0.3", schemas: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"openapi": version, "info": {"title": "t", "version": "1"}, "paths": paths, "components": {"schemas": schemas or {}}}


def op(**fields: Any) -> dict[str, Any]:
    return {"responses": {"200": {"description": "ok"}}, **fields}


async def tools_of(document: dict[str, Any], **options: Any) -> dict[str, Any]:
    async with Client(from_openapi(document, base_url=BASE, **options)) as client:
        return {tool.name: tool for tool in (await client.list_tools()).tools}


def query(name: str, schema: dict[str, Any], required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": "query", "schema": schema, "required": required}


async def test_openapi_30_keywords_become_json_schema_2020_12() -> None:
    params = [
        query("a", {"type": "string", "nullable": True, "enum": ["x", "y"]}),
        query("b", {"type": "integer", "minimum": 0, "exclusiveMinimum": True, "maximum": 9, "exclusiveMaximum": False}),
        query("c", {"type": "string", "format": "date-time", "example": "2026-12-02T00:00:00Z"}),
        query("d", {"allOf": [{"$ref": "#/components/schemas/Id"}], "nullable": True}),
        query("e", {"type": "string", "format": "uuid", "discriminator": {"propertyName": "x"}, "xml": {"name": "e"}}),
    ]
    tools = await tools_of(doc({"/t": {"get": op(operationId="t", parameters=params)}}, schemas={"Id": {"type": "integer"}}))
    assert tools["t"].input_schema["properties"] == {
        "a": {"type": ["string", "null"], "enum": ["x", "y", None]},
        "b": {"type": "integer", "exclusiveMinimum": 0, "maximum": 9},
        "c": {"type": "string", "format": "date-time", "examples": ["2026-12-02T00:00:00Z"]},
        "d": {"anyOf": [{"allOf": [{"type": "integer"}]}, {"type": "null"}]},
        "e": {"type": "string", "format": "uuid"},
    }


async def test_openapi_31_schemas_pass_as_they_are() -> None:
    params = [query("a", {"type": ["string", "null"], "exclusiveMinimum": 3, "examples": ["q"]})]
    tools = await tools_of(doc({"/t": {"get": op(operationId="t", parameters=params)}}, version="3.1.0"))
    assert tools["t"].input_schema["properties"] == {"a": {"type": ["string", "null"], "exclusiveMinimum": 3, "examples": ["q"]}}


async def test_a_recursive_reference_is_kept_finite_in_defs() -> None:
    schemas = {
        "Node": {
            "type": "object",
            "required": ["label"],
            "properties": {"label": {"type": "string"}, "next": {"$ref": "#/components/schemas/Node"}},
        }
    }
    body = {"required": True, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Node"}}}}
    tools = await tools_of(doc({"/n": {"post": op(operationId="n", requestBody=body)}}, schemas=schemas))
    node = {
        "type": "object",
        "required": ["label"],
        "properties": {"label": {"type": "string"}, "next": {"$ref": "#/$defs/Node"}},
    }
    assert tools["n"].input_schema == {
        "type": "object",
        "properties": {"label": {"type": "string"}, "next": {"$ref": "#/$defs/Node"}},
        "required": ["label"],
        "$defs": {"Node": node},
    }


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("#/components/schemas/Missing", "points to nothing"),
        ("other.json#/components/schemas/Id", "only local references"),
    ],
)
def test_a_reference_that_cannot_be_resolved_is_refused(ref: str, message: str) -> None:
    params = [query("a", {"$ref": ref})]
    with pytest.raises(OpenAPIError, match=message):
        from_openapi(doc({"/t": {"get": op(parameters=params)}}), base_url=BASE)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"swagger": "2.0", "paths": {}}, r"only OpenAPI 3\.0 and 3\.1 .*Swagger 2\.0"),
        ({"openapi": "4.0.0", "paths": {}}, "only OpenAPI 3.0 and 3.1"),
    ],
)
def test_other_versions_are_refused(document: dict[str, Any], message: str) -> None:
    with pytest.raises(OpenAPIError, match=message):
        from_openapi(document, base_url=BASE)


def test_a_base_url_is_needed() -> None:
    with pytest.raises(ValueError, match="base_url"):
        from_openapi({**doc({}), "servers": [{"url": "/relative"}]})
    server = from_openapi(
        {**doc({}), "servers": [{"url": "https://{region}.example.com/v1", "variables": {"region": {"default": "eu"}}}]}
    )
    assert server.document.base_url() == "https://eu.example.com/v1"


async def test_colliding_argument_names_are_settled_by_place() -> None:
    params = [
        {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}},
        query("id", {"type": "string"}),
        {"name": "id", "in": "header", "schema": {"type": "string"}},
    ]
    body_schema = {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}, "name": {"type": "string"}}}
    body = {"required": True, "content": {"application/json": {"schema": body_schema}}}
    tools = await tools_of(doc({"/x/{id}": {"put": op(operationId="put x", parameters=params, requestBody=body)}}))
    schema = tools["put_x"].input_schema
    assert list(schema["properties"]) == ["id", "id__query", "id__header", "id__body", "name"]
    assert schema["required"] == ["id", "id__body"]


async def test_a_body_that_is_no_object_is_one_argument() -> None:
    body = {"content": {"application/json": {"schema": {"type": "array", "items": {"type": "integer"}}}}, "description": "ids"}
    params = [query("body", {"type": "boolean"})]
    tools = await tools_of(doc({"/b": {"post": op(operationId="b", parameters=params, requestBody=body)}}))
    assert tools["b"].input_schema["properties"] == {
        "body": {"type": "boolean"},
        "body__body": {"type": "array", "items": {"type": "integer"}, "description": "ids"},
    }


async def test_names_from_operation_ids_or_method_and_path_never_twice() -> None:
    paths = {
        "/users/{user_id}/pets": {"get": op(), "post": op(operationId="add pet!")},
        "/users/{user_id}/Pets": {"get": op(operationId="get_users_user_id_pets")},
        "/äö": {"get": op(operationId="ünïcode")},
    }
    tools = await tools_of(doc(paths))
    assert list(tools) == ["get_users_user_id_pets", "add_pet", "get_users_user_id_pets_2", "n_code"]


async def test_route_maps_include_exclude_and_rename() -> None:
    paths = {
        "/a": {"get": op(operationId="a", tags=["public"]), "delete": op(operationId="a_delete", tags=["public"])},
        "/b": {"get": op(operationId="b", tags=["admin"])},
        "/c": {"post": op(operationId="c")},
    }
    maps = [
        RouteMap(methods=["DELETE"], kind="exclude"),
        RouteMap(operation_ids=["c"], name="make_c"),
        RouteMap(tags=["public"]),
        RouteMap(kind="exclude"),  # everything else
    ]
    tools = await tools_of(doc(paths), route_maps=maps)
    assert list(tools) == ["a", "make_c"]


def test_route_maps_that_cannot_be_followed_are_refused() -> None:
    paths = {"/a": {"get": op(), "post": op()}, "/q": {"get": op(parameters=[query("x", {"type": "string"}, required=True)])}}
    with pytest.raises(OpenAPIError, match="matches two operations: GET /a and POST /a"):
        from_openapi(doc(paths), base_url=BASE, route_maps=[RouteMap(pattern="^/a$", name="one")])
    with pytest.raises(OpenAPIError, match="only GET operations can be resources, not POST /a"):
        from_openapi(doc(paths), base_url=BASE, route_maps=[RouteMap(pattern="^/a$", kind="resource")])
    with pytest.raises(OpenAPIError, match="GET /q needs x, which a resource URI cannot carry"):
        from_openapi(doc(paths), base_url=BASE, route_maps=[RouteMap(pattern="^/q$", kind="resource")])
    with pytest.raises(ValueError, match="kind"):
        RouteMap(kind="prompt")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not one string"):
        RouteMap(tags="public")


def test_a_document_from_a_json_file(tmp_path: Any) -> None:
    path = tmp_path / "api.json"
    path.write_text(json.dumps({**doc({"/t": {"get": op(operationId="t")}}), "servers": [{"url": "http://127.0.0.1:9/v1"}]}))
    server = from_openapi(path)
    assert (server.info.name, server.info.version) == ("t", "1")  # the document's title and version
    yaml_file = tmp_path / "api.yaml"
    yaml_file.write_text("openapi: 3.0.3\n")
    with pytest.raises(OpenAPIError, match=r"not a JSON document .* parse YAML yourself"):
        from_openapi(yaml_file, base_url=BASE)
