"""The MCP Apps extension (docs/apps.md) over a real client and server in memory: views
registered and checked, tools linked to them, the capability both sides declare, the
client's ``tool_ui``, the host-side :class:`AppBridge` (the view's requests answered,
forwarded or refused as the extension says), and app-only tools left out of what a model
is offered."""

from __future__ import annotations

import base64
from typing import Any

import msgspec
import pytest

from mcpkit import AppBridge, Client, ClientOptions, Context, LlmTools, McpError, Server, UiCsp, UiResourceMeta
from mcpkit.protocol import app_views, apps

ERAS = [None, "2025-11-25"]
VIEW = "<!DOCTYPE html><html><body>chart</body></html>"


def _server() -> Server:
    server = Server("apps", "1.0.0")
    server.add_ui("ui://chart/view.html", VIEW, csp={"connectDomains": ["https://api.example.com"]}, prefers_border=True)

    @server.tool(ui="ui://chart/view.html")
    def chart(series: str) -> str:
        """Draw a series."""
        return f"chart of {series}"

    @server.tool(ui="ui://chart/view.html", visibility=["app"])
    def refresh(series: str) -> str:
        return f"fresh {series}"

    @server.tool(ui="ui://chart/view.html", visibility=["model"])
    def summary() -> str:
        return "summary"

    @server.tool
    def plain() -> str:
        return "plain"

    return server


# --- registration ---------------------------------------------------------------------------


def test_a_tool_must_link_to_a_registered_view() -> None:
    server = Server("apps")
    with pytest.raises(
        ValueError, match=r"tool 'chart' links to the UI resource 'ui://chart/view.html', which is not registered"
    ):

        @server.tool(ui="ui://chart/view.html")
        def chart() -> str:
            return ""

    @server.resource("ui://not/a-view.html")
    def text() -> str:
        return "not html for a host"

    with pytest.raises(ValueError, match="not served as text/html;profile=mcp-app"):
        server.add_tool("other", None, {"type": "object"}, lambda arguments: "", ui="ui://not/a-view.html")
    with pytest.raises(ValueError, match="fixed ui:// URI"):
        server.add_ui("https://example.com/view.html", VIEW)
    with pytest.raises(ValueError, match="fixed ui:// URI"):
        server.add_ui("ui://chart/{id}.html", VIEW)
    server.add_ui("ui://chart/view.html", VIEW)
    with pytest.raises(ValueError, match="already registered"):
        server.add_ui("ui://chart/view.html", VIEW)
    with pytest.raises(ValueError, match='visibility must name "model", "app" or both'):
        server.add_tool("bad", None, {"type": "object"}, lambda arguments: "", ui="ui://chart/view.html", visibility=["agent"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="visibility must name"):
        server.add_tool("empty", None, {"type": "object"}, lambda arguments: "", visibility=[])
    with pytest.raises(ValueError, match="unknown CSP field 'scriptDomains'"):
        server.add_ui("ui://chart/other.html", VIEW, csp={"scriptDomains": ["https://x"]})
    with pytest.raises(ValueError, match="unknown UI permission 'usb'"):
        server.add_ui("ui://chart/other.html", VIEW, permissions=["usb"])
    with pytest.raises(TypeError, match="not one string"):
        server.add_ui("ui://chart/other.html", VIEW, csp={"connectDomains": "https://x"})
    with pytest.raises(ValueError, match="not in meta as well"):
        server.add_tool("twice", None, {"type": "object"}, lambda a: "", ui="ui://chart/view.html", meta={"ui": {}})


def test_a_linked_view_cannot_be_removed_before_its_tools() -> None:
    server = _server()
    with pytest.raises(ValueError, match=r"linked to by the tools \['chart', 'refresh', 'summary'\]"):
        server.remove_resource("ui://chart/view.html")
    for name in ("chart", "refresh", "summary"):
        server.remove_tool(name)
    server.remove_resource("ui://chart/view.html")


async def test_the_extension_is_declared_only_with_a_view() -> None:
    async with Client(Server("none")) as client:
        assert "extensions" not in client.server_capabilities
    server = Server("disabled")
    server.add_ui("ui://a/view.html", VIEW)
    server.disable("resource", "ui://a/view.html")
    async with Client(server, ClientOptions(protocol_version="2025-11-25")) as client:
        assert client.server_capabilities["extensions"] == {apps.APPS_EXTENSION: {}}


async def test_the_extension_is_declared_beside_tasks() -> None:
    server = _server()

    @server.tool(task=True)
    async def slow() -> str:
        return "done"

    async with Client(server) as client:
        assert client.era == "modern"
        assert set(client.server_capabilities["extensions"]) == {apps.APPS_EXTENSION, "io.modelcontextprotocol/tasks"}


async def test_a_handler_may_give_its_contents_their_own_meta() -> None:
    from mcpkit.protocol.types import ResourceContents

    server = Server("own")

    @server.ui_resource("ui://own/view.html", prefers_border=False)
    def view() -> ResourceContents:
        return ResourceContents(
            uri="ui://own/view.html", mime_type=apps.UI_MIME_TYPE, text=VIEW, meta={"ui": {"domain": "x.example"}}
        )

    @server.ui_resource("ui://own/default.html", prefers_border=False)
    def default(ctx: Context) -> str:
        return f"<html>{ctx.method}</html>"

    async with Client(server) as client:
        (own,) = (await client.read_resource("ui://own/view.html")).contents
        assert own.meta == {"ui": {"domain": "x.example"}}
        (given,) = (await client.read_resource("ui://own/default.html")).contents
        assert given.meta == {"ui": {"prefersBorder": False}}
        assert given.text == "<html>resources/read</html>"


# --- the client side --------------------------------------------------------------------------


@pytest.mark.parametrize("version", ERAS, ids=["modern", "legacy"])
async def test_the_client_declares_the_types_it_renders(version: str | None) -> None:
    seen: list[tuple[str, ...]] = []
    server = Server("caps")

    @server.tool
    def look(ctx: Context) -> str:
        seen.append(apps.client_ui_mime_types(ctx.client_capabilities))
        return ""

    for option, expected in [
        (False, ()),
        (True, (apps.UI_MIME_TYPE,)),
        (("text/html;profile=mcp-app", "x/y"), (apps.UI_MIME_TYPE, "x/y")),
    ]:
        async with Client(server, ClientOptions(protocol_version=version, apps=option)) as client:
            await client.call_tool("look")
        assert seen.pop() == expected
    with pytest.raises(ValueError, match="apps is True, False or a tuple"):
        ClientOptions(apps=())


async def test_tool_ui_reads_the_view_and_its_meta() -> None:
    async with Client(_server(), ClientOptions(apps=True)) as client:
        ui = await client.tool_ui("chart")
        assert ui is not None
        assert (ui.uri, ui.html, ui.mime_type, ui.visibility) == (
            "ui://chart/view.html",
            VIEW,
            apps.UI_MIME_TYPE,
            ("model", "app"),
        )
        assert ui.meta == UiResourceMeta(csp=UiCsp(connect_domains=["https://api.example.com"]), prefers_border=True)
        listed = {t.name: t for t in await client.list_all_tools()}
        assert await client.tool_ui(listed["plain"]) is None
        assert (await client.tool_ui(listed["refresh"])).visibility == ("app",)  # type: ignore[union-attr]
        with pytest.raises(KeyError):
            await client.tool_ui("missing")


async def test_tool_ui_falls_back_to_the_listing_and_decodes_blobs() -> None:
    """A server of another SDK may put ``_meta.ui`` on the listing only, and send the page
    base64-encoded; one whose 'view' is not the MCP Apps type is refused."""
    from mcpkit.protocol.types import ResourceContents

    server = Server("foreign")

    @server.resource("ui://f/view.html", mime_type=apps.UI_MIME_TYPE, meta={"ui": {"domain": "f.example"}})
    def view() -> ResourceContents:
        return ResourceContents(
            uri="ui://f/view.html", mime_type=apps.UI_MIME_TYPE, blob=base64.b64encode(VIEW.encode()).decode()
        )

    @server.resource("ui://f/text.html", mime_type="text/html")
    def text() -> str:
        return VIEW

    server.add_tool("t", None, {"type": "object"}, lambda a: "", meta={"ui/resourceUri": "ui://f/view.html"})
    server.add_tool("u", None, {"type": "object"}, lambda a: "", meta={"ui": {"resourceUri": "ui://f/text.html"}})
    async with Client(server) as client:
        ui = await client.tool_ui("t")  # the deprecated flat key alone
        assert ui is not None
        assert ui.html == VIEW
        assert ui.meta == UiResourceMeta(domain="f.example")
        with pytest.raises(ValueError, match="served as 'text/html', not text/html;profile=mcp-app"):
            await client.tool_ui("u")


def test_the_meta_readers() -> None:
    assert apps.tool_ui_meta(None) is None
    assert apps.tool_ui_meta({"ui": {"resourceUri": 3}}) is None  # malformed: ignored
    both = apps.tool_ui_meta({"ui": {"visibility": ["app"]}, "ui/resourceUri": "ui://a"})
    assert both == apps.UiToolMeta(resource_uri="ui://a", visibility=["app"])
    assert apps.tool_ui_meta({"ui": {"resourceUri": "ui://nested"}, "ui/resourceUri": "ui://flat"}).resource_uri == "ui://nested"  # type: ignore[union-attr]
    assert apps.client_ui_mime_types({"extensions": {apps.APPS_EXTENSION: {"mimeTypes": "x"}}}) == ()
    with pytest.raises(ValueError, match="not a method of the MCP Apps extension"):
        app_views.ui_message("ui/nope")
    with pytest.raises(msgspec.ValidationError):
        app_views.ui_message("ui/open-link", {"href": "https://x"})


# --- the bridge ---------------------------------------------------------------------------------


def _request(id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


INIT = _request(
    1,
    "ui/initialize",
    {"appInfo": {"name": "v", "version": "1"}, "appCapabilities": {}, "protocolVersion": app_views.APPS_PROTOCOL_VERSION},
)


@pytest.mark.parametrize("version", ERAS, ids=["modern", "legacy"])
async def test_the_bridge_forwards_what_the_extension_lets_a_view_send(version: str | None) -> None:
    async with Client(_server(), ClientOptions(apps=True, protocol_version=version)) as client:
        ui = await client.tool_ui("chart")
        assert ui is not None
        bridge = AppBridge(client, ui)
        with pytest.raises(RuntimeError, match="initialized"):
            bridge.tool_input({"series": "sales"})
        answer = await bridge.handle(INIT)
        assert answer is not None
        result = answer["result"]
        assert result["protocolVersion"] == app_views.APPS_PROTOCOL_VERSION
        assert result["hostCapabilities"] == {"serverTools": {}, "serverResources": {}, "logging": {}}
        assert result["hostContext"]["toolInfo"]["tool"]["name"] == "chart"
        assert bridge.app_info is not None
        assert bridge.app_info.name == "v"
        assert await bridge.handle({"jsonrpc": "2.0", "method": "ui/notifications/initialized"}) is None
        assert bridge.initialized.is_set()

        called = await bridge.handle(_request(2, "tools/call", {"name": "refresh", "arguments": {"series": "a"}}))
        assert called == {
            "jsonrpc": "2.0",
            "id": 2,
            "result": {**called["result"], "content": [{"type": "text", "text": "fresh a"}]},
        }  # type: ignore[index]
        assert "resultType" not in called["result"]  # type: ignore[index]
        both = await bridge.handle(_request(3, "tools/call", {"name": "chart", "arguments": {"series": "b"}}))
        assert both["result"]["content"][0]["text"] == "chart of b"  # type: ignore[index]
        refused = await bridge.handle(_request(4, "tools/call", {"name": "summary"}))
        assert refused == {
            "jsonrpc": "2.0",
            "id": 4,
            "error": {"code": -32602, "message": "Tool not available to this app: summary", "data": {"name": "summary"}},
        }
        unknown = await bridge.handle(_request(5, "tools/call", {"name": "nope"}))
        assert unknown["error"]["code"] == -32602  # type: ignore[index]
        bad_args = await bridge.handle(_request(6, "tools/call", {"name": "refresh", "arguments": {}}))
        assert bad_args["error"]["code"] == -32602  # type: ignore[index]
        assert "Invalid arguments for tool refresh" in bad_args["error"]["message"]  # type: ignore[index]

        read = await bridge.handle(_request(7, "resources/read", {"uri": "ui://chart/view.html"}))
        assert read["result"]["contents"][0]["text"] == VIEW  # type: ignore[index]
        assert not {"ttlMs", "cacheScope", "resultType"} & set(read["result"])  # type: ignore[index]
        missing = await bridge.handle(_request(8, "resources/read", {"uri": "ui://chart/none.html"}))
        assert missing["error"]["code"] in (-32602, -32002)  # type: ignore[index]
        assert await bridge.handle(_request(9, "ping")) == {"jsonrpc": "2.0", "id": 9, "result": {}}


async def test_the_bridge_answers_the_view_by_the_hosts_callbacks() -> None:
    opened: list[str] = []
    messages: list[app_views.MessageParams] = []
    logs: list[tuple[Any, ...]] = []
    sizes: list[tuple[Any, ...]] = []

    async def on_message(params: app_views.MessageParams) -> None:
        messages.append(params)

    async with Client(_server()) as client:
        ui = await client.tool_ui("chart")
        assert ui is not None
        bridge = AppBridge(
            client,
            ui,
            host_context={"theme": "dark"},
            on_open_link=lambda url: opened.append(url) or url.startswith("https:"),
            on_message=on_message,
            on_model_context=lambda params: None,
            on_display_mode=lambda mode: "inline",
            on_size_changed=lambda width, height: sizes.append((width, height)),
            on_log=lambda level, data, logger: logs.append((level, data, logger)),
        )
        answer = await bridge.handle(INIT)
        assert answer["result"]["hostCapabilities"] == {  # type: ignore[index]
            "openLinks": {},
            "serverTools": {},
            "serverResources": {},
            "logging": {},
            "updateModelContext": {"text": {}, "structuredContent": {}},
            "message": {"text": {}},
        }
        assert answer["result"]["hostContext"]["theme"] == "dark"  # type: ignore[index]
        assert (await bridge.handle(_request(2, "ui/open-link", {"url": "https://example.com"})))["result"] == {}  # type: ignore[index]
        assert (await bridge.handle(_request(3, "ui/open-link", {"url": "javascript:alert(1)"})))["result"] == {"isError": True}  # type: ignore[index]
        assert opened == ["https://example.com", "javascript:alert(1)"]
        sent = await bridge.handle(_request(4, "ui/message", {"role": "user", "content": [{"type": "text", "text": "hi"}]}))
        assert sent["result"] == {}  # type: ignore[index]
        assert messages[0].content[0].text == "hi"  # type: ignore[union-attr]
        context = await bridge.handle(_request(5, "ui/update-model-context", {"structuredContent": {"month": 3}}))
        assert context["result"] == {}  # type: ignore[index]
        assert bridge.model_context is not None
        assert bridge.model_context.structured_content == {"month": 3}
        mode = await bridge.handle(_request(6, "ui/request-display-mode", {"mode": "fullscreen"}))
        assert mode["result"] == {"mode": "inline"}  # type: ignore[index]
        no_download = await bridge.handle(_request(7, "ui/download-file", {"contents": []}))
        assert no_download["error"] == {"code": -32601, "message": "Method not found: ui/download-file"}  # type: ignore[index]
        bad = await bridge.handle(_request(8, "ui/open-link", {"href": "x"}))
        assert bad["error"]["code"] == -32602  # type: ignore[index]
        assert (await bridge.handle(_request(9, "ui/unknown")))["error"]["code"] == -32601  # type: ignore[index]
        assert (await bridge.handle({"id": 10, "method": "ping"}))["error"]["code"] == -32600  # type: ignore[index]

        await bridge.handle({"jsonrpc": "2.0", "method": "ui/notifications/size-changed", "params": {"width": 10, "height": 20}})
        await bridge.handle({"jsonrpc": "2.0", "method": "ui/notifications/size-changed", "params": {"width": "wide"}})  # dropped
        await bridge.handle({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "drawn"}})
        assert sizes == [(10, 20)]
        assert bridge.size == (10, 20)
        assert logs == [("info", "drawn", None)]

        await bridge.handle({"jsonrpc": "2.0", "method": "ui/notifications/initialized"})
        changed = bridge.host_context_changed({"displayMode": "fullscreen"})
        assert changed == {
            "jsonrpc": "2.0",
            "method": "ui/notifications/host-context-changed",
            "params": {"displayMode": "fullscreen"},
        }
        assert bridge.host_context.theme == "dark"
        assert bridge.host_context.display_mode == "fullscreen"
        teardown = bridge.teardown()
        assert teardown["method"] == "ui/resource-teardown"
        assert not bridge.torn_down.is_set()
        assert await bridge.handle({"jsonrpc": "2.0", "id": teardown["id"] + 1, "result": {}}) is None
        assert not bridge.torn_down.is_set()
        assert await bridge.handle({"jsonrpc": "2.0", "id": teardown["id"], "result": {}}) is None
        assert bridge.torn_down.is_set()


async def test_a_failing_call_reaches_the_view_as_the_servers_error() -> None:
    server = Server("failing")
    server.add_ui("ui://f/view.html", VIEW)

    @server.tool(ui="ui://f/view.html")
    def broken() -> str:
        raise McpError(-32099 + 99, "no such thing", {"why": "test"})  # -32000

    async with Client(server) as client:
        ui = await client.tool_ui("broken")
        assert ui is not None
        bridge = AppBridge(client, ui)
        answer = await bridge.handle(_request(1, "tools/call", {"name": "broken"}))
        assert answer == {
            "jsonrpc": "2.0",
            "id": 1,
            "error": {"code": -32000, "message": "no such thing", "data": {"why": "test"}},
        }


def test_app_only_tools_are_not_offered_to_a_model() -> None:
    from mcpkit.protocol.types import Tool

    tools = [
        Tool(name="chart", input_schema={"type": "object"}, meta={"ui": {"resourceUri": "ui://c"}}),
        Tool(name="refresh", input_schema={"type": "object"}, meta={"ui": {"resourceUri": "ui://c", "visibility": ["app"]}}),
        Tool(name="plain", input_schema={"type": "object"}),
    ]
    offered = LlmTools(tools, "anthropic")
    assert [d["name"] for d in offered.definitions] == ["chart", "plain"]
    assert offered.hidden == ["refresh"]
    (call,) = offered.calls({"content": [{"type": "tool_use", "id": "1", "name": "refresh", "input": {}}]})
    assert call.error is not None


async def test_a_mounted_servers_tools_keep_their_link() -> None:
    """A mount prefixes resource URIs (``ui://p/chart/view.html``); the links of the mounted
    tools follow, and the view is read through the parent."""
    outer = Server("outer")
    outer.mount(_server(), prefix="p")
    async with Client(outer, ClientOptions(apps=True)) as client:
        assert client.server_capabilities["extensions"] == {apps.APPS_EXTENSION: {}}
        tools = {t.name: t for t in await client.list_all_tools()}
        assert tools["p_chart"].meta["ui"] == {"resourceUri": "ui://p/chart/view.html"}
        assert tools["p_chart"].meta[apps.RESOURCE_URI_META_KEY] == "ui://p/chart/view.html"
        assert tools["p_refresh"].meta["ui"] == {"resourceUri": "ui://p/chart/view.html", "visibility": ["app"]}
        assert tools["p_plain"].meta is None or "ui" not in tools["p_plain"].meta
        ui = await client.tool_ui("p_chart")
        assert ui is not None
        assert (ui.uri, ui.html, ui.meta.prefers_border) == ("ui://p/chart/view.html", VIEW, True)
        bridge = AppBridge(client, ui)
        answer = await bridge.handle(_request(1, "tools/call", {"name": "p_refresh", "arguments": {"series": "x"}}))
        assert answer is not None
        assert answer["result"]["content"] == [{"type": "text", "text": "fresh x"}]


def test_the_blocking_client_reads_a_view_too() -> None:
    from mcpkit import SyncClient

    with SyncClient(_server(), ClientOptions(apps=True)) as client:
        ui = client.tool_ui("chart")
        assert ui is not None
        assert ui.html == VIEW
        assert client.tool_ui("plain") is None


async def test_a_proxy_passes_the_views_through() -> None:
    from mcpkit import Proxy

    proxy = Proxy(_server())
    async with Client(proxy, ClientOptions(apps=True)) as client:
        assert client.server_capabilities["extensions"] == {apps.APPS_EXTENSION: {}}
        ui = await client.tool_ui("chart")
        assert ui is not None
        assert (ui.html, ui.meta.prefers_border) == (VIEW, True)
        assert LlmTools(await client.list_all_tools()).hidden == ["refresh"]


# --- a host's own failures ------------------------------------------------------------------


def _host_bug(*args: Any) -> Any:
    raise RuntimeError("host bug: secret=/etc/host.conf")


async def test_a_failing_callback_is_an_answer_not_a_raise(caplog: pytest.LogCaptureFixture) -> None:
    """What a host callback raises never leaves ``handle``: a request is answered -32603
    (``isError: true`` for the actions, update-model-context included) without the
    exception's text, and a notification is dropped; the detail goes to the log."""
    async with Client(_server()) as client:
        ui = await client.tool_ui("chart")
        assert ui is not None
        bridge = AppBridge(
            client,
            ui,
            on_open_link=_host_bug,
            on_model_context=_host_bug,
            on_display_mode=_host_bug,
            on_size_changed=_host_bug,
            on_teardown_request=_host_bug,
            on_log=_host_bug,
        )
        context = await bridge.handle(_request(1, "ui/update-model-context", {"structuredContent": {"a": 1}}))
        assert context == {"jsonrpc": "2.0", "id": 1, "result": {"isError": True}}
        assert bridge.model_context is None  # not accepted, so not kept
        link = await bridge.handle(_request(2, "ui/open-link", {"url": "https://example.com"}))
        assert link == {"jsonrpc": "2.0", "id": 2, "result": {"isError": True}}
        mode = await bridge.handle(_request(3, "ui/request-display-mode", {"mode": "fullscreen"}))
        assert mode == {"jsonrpc": "2.0", "id": 3, "error": {"code": -32603, "message": "Internal error"}}
        assert bridge.host_context.display_mode == "inline"
        for notification in [
            {"jsonrpc": "2.0", "method": "ui/notifications/size-changed", "params": {"width": 1, "height": 2}},
            {"jsonrpc": "2.0", "method": "ui/notifications/request-teardown"},
            {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}},
        ]:
            assert await bridge.handle(notification) is None
        assert bridge.size == (1, 2)
        assert "host bug" in caplog.text


async def test_update_model_context_follows_the_false_rule() -> None:
    refused: list[app_views.UpdateModelContextParams] = []

    async def on_model_context(params: app_views.UpdateModelContextParams) -> bool:
        refused.append(params)
        return params.structured_content != {"too": "big"}

    async with Client(_server()) as client:
        ui = await client.tool_ui("chart")
        assert ui is not None
        bridge = AppBridge(client, ui, on_model_context=on_model_context)
        kept = await bridge.handle(_request(1, "ui/update-model-context", {"structuredContent": {"month": 3}}))
        assert kept["result"] == {}  # type: ignore[index]
        no = await bridge.handle(_request(2, "ui/update-model-context", {"structuredContent": {"too": "big"}}))
        assert no["result"] == {"isError": True}  # type: ignore[index]
        assert len(refused) == 2
        assert bridge.model_context is not None
        assert bridge.model_context.structured_content == {"month": 3}  # the refused one is not kept


async def test_a_display_mode_the_host_does_not_have_falls_back_to_the_current_one() -> None:
    choices = iter(["bogus", "pip", "fullscreen", None])
    async with Client(_server()) as client:
        ui = await client.tool_ui("chart")
        assert ui is not None
        bridge = AppBridge(
            client,
            ui,
            host_context={"displayMode": "inline", "availableDisplayModes": ["inline", "fullscreen"]},
            on_display_mode=lambda mode: next(choices),
        )
        answers = []
        for i in range(4):
            answer = await bridge.handle(_request(i, "ui/request-display-mode", {"mode": "fullscreen"}))
            answers.append((answer["result"]["mode"], bridge.host_context.display_mode))  # type: ignore[index]
        # not a DisplayMode; a mode but not available here; available; the callback gave none
        assert answers == [("inline", "inline"), ("inline", "inline"), ("fullscreen", "fullscreen"), ("fullscreen", "fullscreen")]


async def test_a_forwarded_request_that_fails_on_the_hosts_side_is_internal_error() -> None:
    """A transport failure (here: the connection closed under the bridge) reaches the view
    as -32603 without its detail, for the tool listing, the call and the read alike."""
    server = _server()
    async with Client(server) as client:
        ui = await client.tool_ui("chart")
        assert ui is not None
        listing = AppBridge(client, ui)
        calling = AppBridge(client, ui)
        primed = await calling.handle(_request(1, "tools/call", {"name": "refresh", "arguments": {"series": "a"}}))
        assert "result" in primed  # type: ignore[operator]
    internal = {"code": -32603, "message": "Internal error"}
    for bridge, message in [
        (listing, _request(2, "tools/call", {"name": "refresh", "arguments": {"series": "a"}})),  # tools/list fails
        (calling, _request(3, "tools/call", {"name": "refresh", "arguments": {"series": "a"}})),  # tools/call fails
        (calling, _request(4, "resources/read", {"uri": "ui://chart/view.html"})),
    ]:
        answer = await bridge.handle(message)
        assert answer == {"jsonrpc": "2.0", "id": message["id"], "error": internal}


async def test_cancelling_handle_still_cancels_it() -> None:
    import asyncio

    entered = asyncio.Event()

    async def on_model_context(params: app_views.UpdateModelContextParams) -> None:
        entered.set()
        await asyncio.Event().wait()

    async with Client(_server()) as client:
        ui = await client.tool_ui("chart")
        assert ui is not None
        bridge = AppBridge(client, ui, on_model_context=on_model_context)
        task = asyncio.ensure_future(bridge.handle(_request(1, "ui/update-model-context", {})))
        await entered.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_the_host_says_which_content_it_accepts_and_holds_the_view_to_it() -> None:
    """The ``message`` and ``updateModelContext`` capabilities name the content the host
    accepts (``{}`` would say none); a block in another modality is refused with -32602
    before it reaches the callback."""
    seen: list[Any] = []
    image = {"type": "image", "data": base64.b64encode(b"png").decode(), "mimeType": "image/png"}
    text = {"type": "text", "text": "March"}
    async with Client(_server()) as client:
        ui = await client.tool_ui("chart")
        assert ui is not None
        default = AppBridge(client, ui, on_message=seen.append, on_model_context=seen.append)
        init = await default.handle(INIT)
        capabilities = init["result"]["hostCapabilities"]  # type: ignore[index]
        assert (capabilities["message"], capabilities["updateModelContext"]) == (
            {"text": {}},
            {"text": {}, "structuredContent": {}},
        )
        ok = await default.handle(_request(2, "ui/message", {"role": "user", "content": [text]}))
        assert ok["result"] == {}  # type: ignore[index]
        refused = await default.handle(_request(3, "ui/message", {"role": "user", "content": [text, image]}))
        assert refused["error"] == {  # type: ignore[index]
            "code": -32602,
            "message": "Invalid params for ui/message: this host does not accept image (it accepts text)",
        }
        assert len(seen) == 1

        images = AppBridge(
            client,
            ui,
            on_message=seen.append,
            on_model_context=seen.append,
            message_modalities=["image", "text"],
            model_context_modalities=["text"],
        )
        capabilities = (await images.handle(INIT))["result"]["hostCapabilities"]  # type: ignore[index]
        assert (capabilities["message"], capabilities["updateModelContext"]) == ({"text": {}, "image": {}}, {"text": {}})
        assert (await images.handle(_request(2, "ui/message", {"role": "user", "content": [image]})))["result"] == {}  # type: ignore[index]
        structured = await images.handle(_request(3, "ui/update-model-context", {"structuredContent": {"month": 3}}))
        assert structured["error"]["code"] == -32602  # type: ignore[index]
        assert "does not accept structuredContent" in structured["error"]["message"]  # type: ignore[index]
        assert images.model_context is None
        assert len(seen) == 2
        with pytest.raises(ValueError, match="unknown content modality 'video'"):
            AppBridge(client, ui, message_modalities=["video"])  # type: ignore[list-item]
        with pytest.raises(TypeError, match="not one string"):
            AppBridge(client, ui, message_modalities="text")  # type: ignore[arg-type]


# --- the tool listing the bridge keeps ------------------------------------------------------


def _counting_lists(server: Server) -> list[str]:
    """The ``tools/list`` requests ``server`` answers, as they come."""
    listed: list[str] = []

    async def count(ctx: Context, call_next: Any) -> Any:
        if ctx.method == "tools/list":
            listed.append(ctx.method)
        return await call_next()

    server.use(count)
    return listed


def _add_late_tool(server: Server) -> None:
    @server.tool(ui="ui://chart/view.html", visibility=["app"])
    def late() -> str:
        return "late"


async def test_a_host_that_hears_list_changes_has_the_bridge_list_again() -> None:
    """Legacy era: the host's on_list_changed calls bridge.tools_changed(), and the next
    call from the view lists the tools again; a name already missed is not refetched."""
    import asyncio

    server = _server()
    listed = _counting_lists(server)
    bridges: list[AppBridge] = []
    changed = asyncio.Event()

    def on_list_changed(kind: str) -> None:
        if kind == "tools":
            for bridge in bridges:
                bridge.tools_changed()
            changed.set()

    options = ClientOptions(protocol_version="2025-11-25", on_list_changed=on_list_changed)
    async with Client(server, options) as client:
        ui = await client.tool_ui("chart")
        assert ui is not None
        bridge = AppBridge(client, ui)
        bridges.append(bridge)
        before = len(listed)
        for i in range(3):
            answer = await bridge.handle(_request(i, "tools/call", {"name": "nope"}))
            assert answer["error"]["code"] == -32602  # type: ignore[index]
        assert len(listed) - before == 1  # the first listing was fresh for "nope": not again
        _add_late_tool(server)
        await changed.wait()
        answer = await bridge.handle(_request(7, "tools/call", {"name": "late"}))
        assert answer["result"]["content"] == [{"type": "text", "text": "late"}]  # type: ignore[index]
        assert len(listed) - before == 2
        await bridge.handle(_request(8, "tools/call", {"name": "late"}))
        assert len(listed) - before == 2
        bridge.tools_changed()  # the host's own word for it, in any era
        await bridge.handle(_request(9, "tools/call", {"name": "late"}))
        assert len(listed) - before == 3


class _Relay:
    """A host's own requester that passes the real client's requests on but none of its
    notifications: the bridge cannot hear a change through it."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.list_all_tools = client.list_all_tools
        self.call_tool = client.call_tool
        self.read_resource = client.read_resource


async def test_without_change_notices_each_unknown_name_refetches_once() -> None:
    server = _server()
    listed = _counting_lists(server)
    async with Client(server) as client:
        ui = await client.tool_ui("chart")
        assert ui is not None
        bridge = AppBridge(_Relay(client), ui)  # type: ignore[arg-type]
        before = len(listed)
        for _ in range(3):
            await bridge.handle(_request(1, "tools/call", {"name": "nope"}))
        assert len(listed) - before == 1  # the first listing was fresh for "nope": not again
        _add_late_tool(server)
        answer = await bridge.handle(_request(2, "tools/call", {"name": "late"}))
        assert answer["result"]["content"] == [{"type": "text", "text": "late"}]  # type: ignore[index]
        assert len(listed) - before == 2  # a name the listing lacked: fetched again, once
        await bridge.handle(_request(3, "tools/call", {"name": "late"}))
        assert len(listed) - before == 2
        for i in range(100):  # bounded: past 64 names missed, an unknown one is answered from the cache
            await bridge.handle(_request(10 + i, "tools/call", {"name": f"other{i}"}))
        assert len(listed) - before == 2 + 63
