"""A real, published OpenAPI document — JupyterLab Server's REST API, as the
``jupyterlab-server`` wheel on PyPI ships it (tests/support/published.py) — turned into
a server: its tools' names, count and a few schemas, exactly; and the same document
with route maps making its GET routes resources and templates."""

from __future__ import annotations

from typing import Any

import pytest

from mcpkit import Client
from mcpkit.openapi import RouteMap, from_openapi
from support.published import jupyterlab_rest_api


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return jupyterlab_rest_api()


async def test_the_tools_of_jupyterlab_servers_api(document: dict[str, Any]) -> None:
    assert document["openapi"] == "3.0.3"
    server = from_openapi(document, base_url="http://127.0.0.1:8888")
    async with Client(server) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert list(tools) == [
        "get_lab_api_listings_40jupyterlab_extensionmanager-extension_lis",  # cut at 64 characters
        "get_lab_api_settings",
        "get_lab_api_settings_schema_name",
        "put_lab_api_settings_schema_name",
        "get_lab_api_themes_theme_file",
        "get_lab_api_translations",
        "get_lab_api_translations_locale",
        "get_lab_api_workspaces",
        "get_lab_api_workspaces_space_name",
        "put_lab_api_workspaces_space_name",
        "delete_lab_api_workspaces_space_name",
        "get_lab_api_licenses",
    ]
    licenses = tools["get_lab_api_licenses"]
    assert licenses.input_schema == {
        "type": "object",
        "properties": {
            "full_text": {"type": "boolean", "description": "Return full license texts"},
            "format": {
                "type": "string",
                "enum": ["csv", "json", "markdown"],
                "description": "The format in which to report licenses",
            },
            "bundles": {"type": "string", "description": "A regular expression to limit the names of bundles reported"},
            "download": {"type": "boolean", "description": "Whether to set a representative filename header"},
        },
    }
    assert licenses.output_schema is None  # it may answer CSV or Markdown too
    assert licenses.description == (
        "License report\n\nGet the third-party licenses for the core application and all federated\nextensions"
    )
    put_workspace = tools["put_lab_api_workspaces_space_name"]
    metadata = {
        "type": "object",
        "properties": {"id": {"type": "string"}, "last_modified": {"type": "string"}, "created": {"type": "string"}},
    }
    assert put_workspace.input_schema == {  # the body's $ref inlined, its properties beside the path's
        "type": "object",
        "properties": {
            "space_name": {"type": "string", "description": "Workspace name"},
            "data": {"type": "object"},
            "metadata": metadata,
        },
        "required": ["space_name"],
    }
    assert put_workspace.annotations is not None
    assert (put_workspace.annotations.read_only_hint, put_workspace.annotations.idempotent_hint) == (False, True)
    settings = tools["get_lab_api_settings_schema_name"].output_schema
    assert settings is not None
    assert settings["properties"]["warning"] == {"type": ["string", "null"]}  # 3.0's nullable
    assert settings["properties"]["schema"] == {"type": "object"}
    assert tools["delete_lab_api_workspaces_space_name"].annotations.destructive_hint is True  # type: ignore[union-attr]


async def test_its_get_routes_as_resources(document: dict[str, Any]) -> None:
    maps = [
        RouteMap(methods=["GET"], pattern=r"^/lab/api/(settings|workspaces)/", kind="resource"),
        RouteMap(pattern="listings|themes|licenses", kind="exclude"),
    ]
    server = from_openapi(document, base_url="http://127.0.0.1:8888", route_maps=maps, resource_scheme="jupyterlab")
    async with Client(server) as client:
        tools = [tool.name for tool in (await client.list_tools()).tools]
        resources = [(r.name, r.uri) for r in (await client.list_resources()).resources]
        templates = [(t.name, t.uri_template) for t in (await client.list_resource_templates()).resource_templates]
    assert tools == [
        "put_lab_api_settings_schema_name",
        "get_lab_api_translations",
        "get_lab_api_translations_locale",
        "put_lab_api_workspaces_space_name",
        "delete_lab_api_workspaces_space_name",
    ]
    assert resources == [
        ("get_lab_api_settings", "jupyterlab://lab/api/settings/"),
        ("get_lab_api_workspaces", "jupyterlab://lab/api/workspaces/"),
    ]
    assert templates == [
        ("get_lab_api_settings_schema_name", "jupyterlab://lab/api/settings/{schema_name}"),
        ("get_lab_api_workspaces_space_name", "jupyterlab://lab/api/workspaces/{space_name}"),
    ]
