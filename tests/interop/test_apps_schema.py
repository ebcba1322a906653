"""What mcpkit sends for the MCP Apps extension holds to the extension's own published
JSON Schema (``@modelcontextprotocol/ext-apps``'s ``./schema.json``, pinned in
tests/support/peers.py): a view's ``_meta.ui`` as listed and as read, a tool's
``_meta.ui``, the client's declaration, in both eras over a real client and server, and
every view <-> host message the bridge and :func:`ui_message` build. The constants are
checked against the package's type declarations."""

from __future__ import annotations

import re
from typing import Any

import jsonschema_rs
import pytest

from mcpkit import Client, ClientOptions, Context, Server
from mcpkit.client.apps import AppBridge
from mcpkit.protocol import app_views, apps
from mcpkit.protocol.types import CallToolResult, TextContent
from support.peers import EXT_APPS, EXT_APPS_PREFIX

ERAS = [None, "2025-11-25"]  # the default probe (the modern era), and the legacy handshake

#: The package's definition for each method mcpkit knows.
DEFINITIONS = {
    "ui/initialize": "McpUiInitializeRequest",
    "ui/open-link": "McpUiOpenLinkRequest",
    "ui/download-file": "McpUiDownloadFileRequest",
    "ui/message": "McpUiMessageRequest",
    "ui/request-display-mode": "McpUiRequestDisplayModeRequest",
    "ui/update-model-context": "McpUiUpdateModelContextRequest",
    "ui/resource-teardown": "McpUiResourceTeardownRequest",
    "ui/notifications/initialized": "McpUiInitializedNotification",
    "ui/notifications/size-changed": "McpUiSizeChangedNotification",
    "ui/notifications/request-teardown": "McpUiRequestTeardownNotification",
    "ui/notifications/tool-input": "McpUiToolInputNotification",
    "ui/notifications/tool-input-partial": "McpUiToolInputPartialNotification",
    "ui/notifications/tool-result": "McpUiToolResultNotification",
    "ui/notifications/tool-cancelled": "McpUiToolCancelledNotification",
    "ui/notifications/host-context-changed": "McpUiHostContextChangedNotification",
    "ui/notifications/sandbox-proxy-ready": "McpUiSandboxProxyReadyNotification",
    "ui/notifications/sandbox-resource-ready": "McpUiSandboxResourceReadyNotification",
}

#: Params for each method, as a view or host would send them.
SAMPLES: dict[str, dict[str, Any]] = {
    "ui/initialize": {
        "appInfo": {"name": "view", "version": "1.0.0"},
        "appCapabilities": {"availableDisplayModes": ["inline", "fullscreen"]},
        "protocolVersion": app_views.APPS_PROTOCOL_VERSION,
    },
    "ui/open-link": {"url": "https://example.com/"},
    "ui/download-file": {
        "contents": [{"type": "resource", "resource": {"uri": "file:///r.csv", "mimeType": "text/csv", "text": "a,b"}}]
    },
    "ui/message": {"role": "user", "content": [{"type": "text", "text": "show March"}]},
    "ui/request-display-mode": {"mode": "fullscreen"},
    "ui/update-model-context": {"content": [{"type": "text", "text": "March picked"}], "structuredContent": {"month": 3}},
    "ui/resource-teardown": {},
    "ui/notifications/initialized": {},
    "ui/notifications/size-changed": {"width": 600, "height": 344},
    "ui/notifications/request-teardown": {},
    "ui/notifications/tool-input": {"arguments": {"series": "sales"}},
    "ui/notifications/tool-input-partial": {"arguments": {"series": "sa"}},
    "ui/notifications/tool-result": {"content": [{"type": "text", "text": "ok"}], "structuredContent": {"bars": []}},
    "ui/notifications/tool-cancelled": {"reason": "user action"},
    # Not containerDimensions: the package's schema renders its two-sided union with
    # "additionalProperties": false on every branch, so it accepts only {} there.
    "ui/notifications/host-context-changed": {"theme": "dark", "displayMode": "fullscreen", "locale": "en-GB"},
    "ui/notifications/sandbox-proxy-ready": {},
    "ui/notifications/sandbox-resource-ready": {
        "html": "<!DOCTYPE html><html></html>",
        "csp": {"connectDomains": ["https://api.example.com"]},
        "permissions": {"camera": {}},
    },
}


class Schema:
    """Validators for the package's definitions, by name. Each definition is a document of
    its own (its ``$schema``, and the ``$defs`` its ``#/$defs/...`` references point into),
    so each is compiled alone."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self._validators: dict[str, Any] = {}

    def errors(self, definition: str, value: Any) -> list[str]:
        validator = self._validators.get(definition)
        if validator is None:
            validator = jsonschema_rs.validator_for(self.document["$defs"][definition])
            self._validators[definition] = validator
        return [f"{'/'.join(map(str, e.instance_path))}: {e.message}" for e in validator.iter_errors(value)]

    def check(self, definition: str, value: Any) -> None:
        errors = self.errors(definition, value)
        assert not errors, f"{definition} refuses {value!r}: {errors}"


@pytest.fixture(scope="module")
def schema(apps_schema: dict[str, Any]) -> Schema:
    return Schema(apps_schema)


def _server(seen: list[dict[str, Any]]) -> Server:
    server = Server("apps-schema", "1.0.0")
    server.add_ui(
        "ui://charts/full.html",
        "<!DOCTYPE html><html><body>full</body></html>",
        csp={
            "connectDomains": ["https://api.example.com", "wss://live.example.com"],
            "resource_domains": ["https://cdn.example.com"],
            "frameDomains": ["https://www.youtube.com"],
            "baseUriDomains": ["https://cdn.example.com"],
        },
        permissions=["camera", "microphone", "geolocation", "clipboardWrite"],
        domain="a904794854a047f6.example-host.com",
        prefers_border=False,
        tags=["charts"],
    )

    @server.ui_resource("ui://charts/plain.html")
    def plain() -> bytes:
        return b"<!DOCTYPE html><html><body>plain</body></html>"

    @server.tool(ui="ui://charts/full.html")
    def both(ctx: Context) -> str:
        """Visible to the model and the app (the default)."""
        seen.append(dict(ctx.client_capabilities or {}))
        return "both"

    @server.tool(ui="ui://charts/full.html", visibility=["model"])
    def model_only() -> str:
        return "model"

    @server.tool(ui="ui://charts/plain.html", visibility=["app"], tags=["internal"])
    def app_only() -> str:
        return "app"

    @server.tool(visibility=["model", "app"])
    def no_view() -> str:
        return "none"

    return server


@pytest.mark.parametrize("version", ERAS, ids=["modern", "legacy"])
async def test_what_the_server_and_client_send_holds_to_the_schema(schema: Schema, version: str | None) -> None:
    seen: list[dict[str, Any]] = []
    server = _server(seen)
    options = ClientOptions(apps=True, protocol_version=version)
    async with Client(server, options) as client:
        assert client.server_capabilities["extensions"] == {apps.APPS_EXTENSION: {}}
        tools = {t.name: t for t in await client.list_all_tools()}
        assert set(tools) == {"both", "model_only", "app_only", "no_view"}
        for tool in tools.values():
            schema.check("McpUiToolMeta", tool.meta["ui"])
        assert tools["app_only"].meta["ui"] == {"resourceUri": "ui://charts/plain.html", "visibility": ["app"]}
        assert tools["both"].meta[apps.RESOURCE_URI_META_KEY] == "ui://charts/full.html"
        assert "ui/resourceUri" not in tools["no_view"].meta

        listed = {r.uri: r for r in await client.list_all_resources()}
        full = listed["ui://charts/full.html"]
        assert full.mime_type == apps.UI_MIME_TYPE
        schema.check("McpUiResourceMeta", full.meta["ui"])
        assert full.meta["ui"]["csp"]["resourceDomains"] == ["https://cdn.example.com"]
        assert set(full.meta["ui"]["permissions"]) == {"camera", "microphone", "geolocation", "clipboardWrite"}
        assert "ui" not in (listed["ui://charts/plain.html"].meta or {})

        read = await client.read_resource("ui://charts/full.html")
        (contents,) = read.contents
        assert contents.mime_type == apps.UI_MIME_TYPE
        schema.check("McpUiResourceMeta", contents.meta["ui"])
        assert contents.meta["ui"] == full.meta["ui"]

        plain = await client.tool_ui("app_only")
        assert plain is not None
        assert plain.html.startswith("<!DOCTYPE html>")  # sent as a blob, decoded
        assert plain.visibility == ("app",)

        await client.call_tool("both")
        (declared,) = seen
        settings = declared["extensions"][apps.APPS_EXTENSION]
        schema.check("McpUiClientCapabilities", settings)
        assert settings == {"mimeTypes": [apps.UI_MIME_TYPE]}


async def test_the_bridge_speaks_the_schema(schema: Schema) -> None:
    """Every message the host side builds, and its answers to a view, hold to the schema."""
    server = _server([])
    async with Client(server, ClientOptions(apps=True)) as client:
        ui = await client.tool_ui("both")
        assert ui is not None
        bridge = AppBridge(
            client,
            ui,
            host_context={"theme": "light", "locale": "en-GB", "platform": "desktop"},
            on_open_link=lambda url: True,
            on_message=lambda params: None,
            on_model_context=lambda params: None,
        )
        init = {"jsonrpc": "2.0", "id": 1, "method": "ui/initialize", "params": SAMPLES["ui/initialize"]}
        schema.check("McpUiInitializeRequest", {"method": init["method"], "params": init["params"]})
        answer = await bridge.handle(init)
        assert answer is not None
        assert "result" in answer, answer
        schema.check("McpUiInitializeResult", answer["result"])
        capabilities = answer["result"]["hostCapabilities"]
        assert capabilities["openLinks"] == {}
        # The modalities the host accepts, each a key the package defines (not ``{}``: none).
        for name in ("message", "updateModelContext"):
            schema.check("McpUiSupportedContentBlockModalities", capabilities[name])
            assert "text" in capabilities[name]
        assert capabilities["updateModelContext"] == {"text": {}, "structuredContent": {}}
        every = AppBridge(client, ui, on_message=lambda p: None, message_modalities=app_views.CONTENT_MODALITIES)
        modalities = every.host_capabilities.message
        assert modalities is not None
        schema.check("McpUiSupportedContentBlockModalities", modalities)
        defined = schema.document["$defs"]["McpUiSupportedContentBlockModalities"]["properties"]
        assert list(modalities) == list(defined) == list(app_views.CONTENT_MODALITIES)
        await bridge.handle({"jsonrpc": "2.0", "method": "ui/notifications/initialized"})

        result = await client.call_tool("both")
        built = [
            bridge.tool_input_partial({"series": "sa"}),
            bridge.tool_input({"series": "sales"}),
            bridge.tool_result(result),
            bridge.tool_cancelled("user action"),
            bridge.host_context_changed({"theme": "dark"}),
            bridge.teardown(),
        ]
        for message in built:
            schema.check(DEFINITIONS[message["method"]], {"method": message["method"], "params": message["params"]})

        for method, result_definition in [
            ("ui/open-link", "McpUiOpenLinkResult"),
            ("ui/message", "McpUiMessageResult"),
            ("ui/request-display-mode", "McpUiRequestDisplayModeResult"),
        ]:
            answer = await bridge.handle({"jsonrpc": "2.0", "id": 2, "method": method, "params": SAMPLES[method]})
            assert answer is not None
            assert "result" in answer, answer
            schema.check(result_definition, answer["result"])


@pytest.mark.parametrize("method", sorted(DEFINITIONS))
def test_every_message_builds_to_the_schema(schema: Schema, method: str) -> None:
    """``ui_message`` builds each method's message from its params, and the package's
    definition accepts it (``jsonrpc`` and ``id`` are the JSON-RPC envelope, outside it)."""
    message = app_views.ui_message(
        method, SAMPLES[method], id=7 if method in app_views.VIEW_REQUESTS or method in app_views.HOST_REQUESTS else None
    )
    assert message["jsonrpc"] == "2.0"
    schema.check(DEFINITIONS[method], {"method": message["method"], "params": message["params"]})
    decoded = app_views.decode_ui_params(method, message["params"])
    assert app_views.ui_message(method, decoded)["params"] == message["params"]


def test_the_schema_refuses_what_the_extension_does_not_define(schema: Schema) -> None:
    """The validators are real: they refuse what the extension does not allow."""
    assert schema.errors("McpUiToolMeta", {"visibility": ["agent"]})
    assert schema.errors("McpUiToolMeta", {"resourceUri": "ui://x", "csp": {}})  # csp belongs on the resource
    assert schema.errors("McpUiResourceMeta", {"csp": {"scriptDomains": ["https://x"]}})
    assert schema.errors("McpUiClientCapabilities", {"mimeTypes": "text/html;profile=mcp-app"})


def test_the_methods_and_constants_are_the_packages() -> None:
    package = EXT_APPS_PREFIX / "node_modules" / EXT_APPS / "dist" / "src"
    spec = (package / "spec.types.d.ts").read_text()
    helpers = (package / "server" / "index.d.ts").read_text()
    constants = (package / "constants.d.ts").read_text() if (package / "constants.d.ts").exists() else ""
    declared = spec + constants + helpers
    methods = set(re.findall(r'method: "(ui/[^"]+)"', spec))
    assert methods == set(DEFINITIONS) == {*app_views.VIEW_REQUESTS, *app_views.HOST_REQUESTS, *app_views.NOTIFICATIONS}
    assert f'RESOURCE_MIME_TYPE = "{apps.UI_MIME_TYPE}"' in declared
    assert f'RESOURCE_URI_META_KEY = "{apps.RESOURCE_URI_META_KEY}"' in declared
    assert f'EXTENSION_ID = "{apps.APPS_EXTENSION}"' in declared
    assert f'LATEST_PROTOCOL_VERSION = "{app_views.APPS_PROTOCOL_VERSION}"' in declared


def test_a_text_result_is_a_tool_result_notification(schema: Schema) -> None:
    message = app_views.ui_message("ui/notifications/tool-result", CallToolResult(content=[TextContent(text="x")], is_error=True))
    schema.check("McpUiToolResultNotification", {"method": message["method"], "params": message["params"]})
