"""Interop with the official Python SDK (PyPI ``mcp==2.3.0``, pinned in the ``test``
extra), over stdio and Streamable HTTP, in both of its modes: ``mode="legacy"`` (the
``initialize`` handshake, 2025-11-25) and ``mode="auto"`` (``server/discover``, which
an mcpkit server answers: 2026-07-28).

1. The official client against mcpkit's tests/support/servers/interop_target.py: list, call
   (success and every error kind), read, get a prompt, complete, progress, logging.
2. (issue 9) The official client hears list changes and resource updates from mcpkit's
   dynamic server (tests/support/servers/dynamic.py): in the legacy era the session's
   ``notifications/tools/list_changed`` and, after ``resources/subscribe``,
   ``notifications/resources/updated``; in the modern era the same through its
   ``client.listen(...)`` (``subscriptions/listen``), which ends gracefully when mcpkit
   stops. It also pages through a list mcpkit cuts in pages of three.
3. mcpkit's client against the official SDK's server (tests/support/servers/official_features.py):
   list, call, read, get, complete, the tools list-changed notice (both eras) and
   resource updates (modern era).

Every test body runs under a deadline.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import mcp_types as mt
import pytest
from mcp.client.client import Client as OfficialClient
from mcp.client.session import IncomingMessage
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.subscriptions import ResourceUpdated, ToolsListChanged

from mcpkit import Client, ClientOptions, HttpTransport, McpError, StdioTransport, SubscriptionEvent, TextContent
from support.eras import ERAS, LEGACY, MODERN
from support.paths import SERVERS
from support.ports import free_port
from support.processes import listening, server_command

WHERE = ["stdio", "http"]
MODES = [pytest.param("auto", id="auto"), pytest.param("legacy", id="legacy")]
ERA_OF_MODE = {"auto": MODERN, "legacy": LEGACY}
LIMIT = 60.0  # seconds for a whole test body (a spawned official server gets 30 s to start on a loaded machine)


def serve(script: str) -> Iterator[str]:
    port = free_port()
    with listening(server_command(script, "--http", str(port)), port):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def target_url() -> Iterator[str]:
    yield from serve("interop_target")


@pytest.fixture(scope="module")
def dynamic_url() -> Iterator[str]:
    yield from serve("dynamic")


@pytest.fixture(scope="module")
def official_url() -> Iterator[str]:
    yield from serve("official_features")


@contextlib.asynccontextmanager
async def official(where: str, mode: str, script: str, url: str, **settings: Any) -> AsyncIterator[OfficialClient]:
    """The official client on an mcpkit server script: spawned over stdio, or at ``url``."""
    settings.setdefault("read_timeout_seconds", 10)
    with open(os.devnull, "w") as devnull:  # noqa: ASYNC230 - opening /dev/null does not block
        server: Any = url
        if where == "stdio":
            params = StdioServerParameters(command=sys.executable, args=[str(SERVERS / f"{script}.py")])
            server = stdio_client(params, errlog=devnull)
        async with OfficialClient(server, mode=mode, **settings) as client:
            assert client.protocol_version == ERA_OF_MODE[mode]
            yield client


def text_of(result: mt.CallToolResult | mt.GetPromptResult) -> str:
    block = result.content[0] if isinstance(result, mt.CallToolResult) else result.messages[0].content
    assert isinstance(block, mt.TextContent)
    return block.text


# =============================================================================================
# 1. The official client against mcpkit
# =============================================================================================


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("where", WHERE)
async def test_official_client_round_trip(target_url: str, where: str, mode: str) -> None:
    """Modern era: the client's ``log_level`` asks for log messages in each request's
    ``_meta``; legacy era: mcpkit sends them until the client sets a level."""
    reported: list[tuple[float, float | None, str | None]] = []
    logs: list[tuple[str, Any]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reported.append((progress, total, message))

    async def on_log(params: mt.LoggingMessageNotificationParams) -> None:
        logs.append((params.level, params.data))

    with anyio.fail_after(LIMIT):
        async with official(where, mode, "interop_target", target_url, logging_callback=on_log, log_level="info") as client:
            assert client.server_info is not None
            assert (client.server_info.name, client.server_info.version) == ("interop", "1.2.3")
            assert client.instructions == "A server for interop tests."
            tools = await client.list_tools()
            whoami = await client.call_tool("whoami")
            added = await client.call_tool("add", {"a": 2, "b": 40})
            chatty = await client.call_tool("chatty", {"steps": 3}, progress_callback=on_progress)
            resources = await client.list_resources()
            templates = await client.list_resource_templates()
            hello = await client.read_resource("note://hello")
            templated = await client.read_resource("note://7")
            blob = await client.read_resource("data://bytes")
            prompts = await client.list_prompts()
            prompt = await client.get_prompt("greet", {"name": "Ada", "style": "poet"})
            greet = mt.PromptReference(type="ref/prompt", name="greet")
            completion = await client.complete(greet, {"name": "style", "value": "p"})
    assert [tool.name for tool in tools.tools] == ["echo", "whoami", "add", "chatty", "refuse", "crash", "deny", "explode"]
    assert text_of(whoami) == f"{'modern' if mode == 'auto' else 'legacy'} {ERA_OF_MODE[mode]} mcp"
    assert added.structured_content == {"sum": 42}
    assert text_of(chatty) == "3 steps"
    assert reported == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert logs == [("info", "chatty: 3 steps")]
    assert [r.uri for r in resources.resources] == ["note://hello", "data://bytes", "note://broken"]
    assert [t.uri_template for t in templates.resource_templates] == ["note://{id}"]
    assert isinstance(hello.contents[0], mt.TextResourceContents)
    assert hello.contents[0].text == "Hello, interop!"
    assert isinstance(templated.contents[0], mt.TextResourceContents)
    assert templated.contents[0].text == "note 7"
    assert isinstance(blob.contents[0], mt.BlobResourceContents)
    assert blob.contents[0].blob == "AAEC/w=="
    assert [p.name for p in prompts.prompts] == ["greet"]
    assert text_of(prompt) == "Greet Ada in a poet style."
    assert completion.completion.values == ["plain", "pirate", "poet"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("where", WHERE)
async def test_official_client_sees_every_error_kind(target_url: str, where: str, mode: str) -> None:
    with anyio.fail_after(LIMIT):
        async with official(where, mode, "interop_target", target_url) as client:
            refused = await client.call_tool("refuse", {"reason": "not today"})
            crashed = await client.call_tool("crash")
            errors: dict[str, MCPError] = {}
            for name, call in [
                ("unknown", client.call_tool("no_such_tool")),
                ("arguments", client.call_tool("add", {"a": "one", "b": 2})),
                ("deny", client.call_tool("deny")),
                ("explode", client.call_tool("explode")),
                ("resource", client.read_resource("nowhere://at-all")),
                ("broken", client.read_resource("note://broken")),
                ("prompt", client.get_prompt("greet")),
            ]:
                with pytest.raises(MCPError) as caught:
                    await call
                errors[name] = caught.value
            assert text_of(await client.call_tool("echo", {"text": "still here"})) == "still here"
    assert (refused.is_error, text_of(refused)) == (True, "not today")
    assert (crashed.is_error, text_of(crashed)) == (True, "the tool broke")
    seen = {name: (error.error.code, error.error.message) for name, error in errors.items()}
    assert seen == {
        "unknown": (-32602, "Unknown tool: no_such_tool"),
        "arguments": (-32602, "Invalid arguments for tool add: argument 'a': \"one\" is not of type \"integer\""),
        "deny": (-32050, "Quota exhausted"),
        "explode": (-32603, "Upstream failed"),
        "resource": (-32602, "Resource not found"),
        "broken": (-32603, "Internal error"),
        "prompt": (-32602, "Invalid arguments for prompt greet: missing required argument 'name'"),
    }
    assert errors["deny"].error.data == {"retryAfter": 5}
    assert errors["resource"].error.data == {"uri": "nowhere://at-all"}
    assert set(errors["broken"].error.data) == {"reference"}


# =============================================================================================
# 2. The official client hears changes from mcpkit's dynamic server (issue 9)
# =============================================================================================


@pytest.mark.parametrize("where", WHERE)
async def test_official_client_pages_through_a_list(dynamic_url: str, where: str) -> None:
    """mcpkit lists three tools per page here; the official client follows ``nextCursor``."""
    names: list[str] = []
    with anyio.fail_after(LIMIT):
        async with official(where, "auto", "dynamic", dynamic_url) as client:
            cursor: str | None = None
            for _ in range(10):
                page = await client.list_tools(cursor=cursor)
                names += [tool.name for tool in page.tools]
                cursor = page.next_cursor
                if cursor is None:
                    break
    assert names == ["add_tools", "remove_tools", "toggle", "touch", "census"]


@pytest.mark.parametrize("where", WHERE)
async def test_official_legacy_client_hears_list_changes_and_updates(dynamic_url: str, where: str) -> None:
    """Legacy era: the session hears ``notifications/tools/list_changed`` (one notice for
    four tools added together) and, after ``resources/subscribe``,
    ``notifications/resources/updated`` for the URI it subscribed to — and nothing more
    after ``resources/unsubscribe``."""
    heard: list[str] = []
    arrived = anyio.Event()

    async def on_message(message: IncomingMessage) -> None:
        nonlocal arrived
        if isinstance(message, mt.ToolListChangedNotification):
            heard.append("tools")
        elif isinstance(message, mt.ResourceUpdatedNotification):
            heard.append(message.params.uri)
        else:
            return
        arrived.set()
        arrived = anyio.Event()

    async def until(wanted: list[str]) -> None:
        with anyio.fail_after(10):
            while heard != wanted:
                await arrived.wait()

    prefix = f"official_{where}"
    with anyio.fail_after(LIMIT):
        async with official(where, "legacy", "dynamic", dynamic_url, message_handler=on_message) as client:
            assert client.server_capabilities.tools is not None
            assert client.server_capabilities.tools.list_changed is True
            assert client.server_capabilities.resources is not None
            assert client.server_capabilities.resources.subscribe is True
            await client.call_tool("add_tools", {"count": 4, "prefix": prefix})
            await until(["tools"])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)  # removed in 2026-07-28: this is the legacy era
                await client.subscribe_resource("note://1")
                await client.call_tool("touch", {"uris": ["note://1", "note://2"], "times": 2})
                await until(["tools", "note://1", "note://1"])
                await client.unsubscribe_resource("note://1")
            await client.call_tool("touch", {"uris": ["note://1"]})
            await client.call_tool("remove_tools", {"count": 4, "prefix": prefix})
            await until(["tools", "note://1", "note://1", "tools"])  # the update after unsubscribing never came


@pytest.mark.parametrize("where", WHERE)
async def test_official_modern_client_listens(dynamic_url: str, where: str) -> None:
    """Modern era: the official client's ``listen`` (``subscriptions/listen``) is
    acknowledged by mcpkit with what it asked for, and gets a tools list-changed event and
    the updates of the URI it watches, not of the others."""
    events: list[Any] = []
    prefix = f"listen_{where}"
    with anyio.fail_after(LIMIT):
        async with official(where, "auto", "dynamic", dynamic_url) as client:
            async with client.listen(tools_list_changed=True, resource_subscriptions=["note://1"]) as subscription:
                assert subscription.honored.tools_list_changed is True
                assert subscription.honored.resource_subscriptions == ["note://1"]
                await client.call_tool("add_tools", {"count": 2, "prefix": prefix})
                await client.call_tool("touch", {"uris": ["note://2", "note://1"]})
                async for event in subscription:
                    events.append(event)
                    if len(events) == 2:
                        break
            tools = await client.list_tools()
            assert f"{prefix}_1" in [tool.name for tool in tools.tools] or tools.next_cursor is not None
            await client.call_tool("remove_tools", {"count": 2, "prefix": prefix})
    # Two kinds of change have no order between them: mcpkit gathers list changes for
    # 10 ms into one notice, and sends resource updates at once.
    assert sorted(events, key=repr) == [ResourceUpdated(uri="note://1"), ToolsListChanged()]


async def test_official_modern_listen_ends_gracefully_when_mcpkit_stops() -> None:
    """When mcpkit's HTTP server is stopped (SIGTERM), it answers the open
    ``subscriptions/listen`` request: the official client's iteration simply ends,
    rather than raising ``SubscriptionLost``."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with listening(server_command("dynamic", "--http", str(port)), port) as process, anyio.fail_after(LIMIT):
        async with official("http", "auto", "dynamic", url) as client, client.listen(tools_list_changed=True) as subscription:
            await client.call_tool("add_tools", {"count": 1, "prefix": "before_stop"})
            events = [await subscription.__anext__()]
            process.terminate()
            events += [event async for event in subscription]
    assert events == [ToolsListChanged()]


# =============================================================================================
# 3. mcpkit's client against the official SDK's server
# =============================================================================================


@contextlib.asynccontextmanager
async def kit_on_official(where: str, era: str | None, url: str) -> AsyncIterator[Client]:
    """mcpkit's client on the official server, at revision ``era`` (None: negotiated)."""
    transport: Any = HttpTransport(url)
    if where == "stdio":
        transport = StdioTransport(server_command("official_features"), stderr="devnull")
    async with Client(transport, ClientOptions(protocol_version=era, request_timeout=30)) as client:
        assert client.era == ("legacy" if era == LEGACY else "modern")
        yield client


@pytest.mark.parametrize("era", [*ERAS, pytest.param(None, id="probe")])
@pytest.mark.parametrize("where", WHERE)
async def test_mcpkit_client_on_official_server(official_url: str, where: str, era: str | None) -> None:
    """List, call (success, a tool that raises, an unknown tool), read (text, template,
    unknown), get a prompt, complete; ``era=None`` lets mcpkit probe (``server/discover``:
    the official server speaks 2026-07-28)."""
    with anyio.fail_after(LIMIT):
        async with kit_on_official(where, era, official_url) as client:
            if era is None:
                assert client.protocol_version == MODERN
                assert client.server_info is not None
                assert client.server_info.name == "official-features"
            tools = await client.list_all_tools()
            echoed = await client.call_tool("echo", {"text": "hi"})
            added = await client.call_tool("add", {"a": 2, "b": 3})
            failed = await client.call_tool("fail", {"message": "nope"})
            unknown_tool = await client.call_tool("no_such_tool")
            resources = await client.list_all_resources()
            templates = await client.list_all_resource_templates()
            hello = await client.read_resource("data://hello")
            templated = await client.read_resource("note://7")
            with pytest.raises(McpError) as unknown_resource:
                await client.read_resource("nowhere://at-all")
            prompts = await client.list_all_prompts()
            prompt = await client.get_prompt("greet", {"name": "Ada"})
            completion = await client.complete({"type": "ref/prompt", "name": "greet"}, "style", "p")
    assert [tool.name for tool in tools][:5] == ["echo", "add", "fail", "grow", "touch"]  # then any grown ones
    assert echoed.content == [TextContent(text="hi")]
    assert added.structured_content == {"result": 5}
    assert failed.is_error  # the official server masks the exception's text
    assert failed.content == [TextContent(text="Error executing tool fail")]
    assert unknown_tool.is_error  # the official server answers an unknown tool with a tool error
    assert unknown_tool.content == [TextContent(text="Unknown tool: no_such_tool")]
    assert [r.uri for r in resources] == ["data://hello"]
    assert [t.uri_template for t in templates] == ["note://{id}"]
    assert hello.contents[0].text == "hello world"
    assert templated.contents[0].text == "note 7"
    assert (unknown_resource.value.code, unknown_resource.value.message) == (-32602, "Unknown resource: nowhere://at-all")
    assert [p.name for p in prompts] == ["greet"]
    assert prompt.messages[0].content == TextContent(text="Greet Ada in a plain style.")
    assert completion.completion.values == ["plain", "pirate", "poet"]


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("where", WHERE)
async def test_mcpkit_client_hears_official_changes(official_url: str, where: str, era: str) -> None:
    """``grow`` registers a tool and tells the client (modern: ``subscriptions/listen``
    subscribers; legacy: the session): ``client.listen(tools=True)`` yields the change.
    Resource updates (``touch``): the modern era delivers them to a ``listen`` that names
    the URI; the official server has no ``resources/subscribe`` in the legacy era (its
    capabilities say ``subscribe: false``), so mcpkit's ``listen`` raises its -32601."""
    name = f"grown_{where}_{era.replace('-', '_')}"
    with anyio.fail_after(LIMIT):
        async with kit_on_official(where, era, official_url) as client:
            async with client.listen(tools=True) as changes:
                await client.call_tool("grow", {"name": name})
                change = await changes.__anext__()
            assert change == SubscriptionEvent(kind="tools")
            assert name in [tool.name for tool in await client.list_all_tools()]
            if era == MODERN:
                async with client.listen(resource_uris=["data://hello"]) as changes:
                    assert changes.acknowledged == {"resourceSubscriptions": ["data://hello"]}
                    await client.call_tool("touch", {"uri": "data://hello"})
                    assert await changes.__anext__() == SubscriptionEvent(kind="resource", uri="data://hello")
            else:
                assert client.server_capabilities["resources"]["subscribe"] is False
                with pytest.raises(McpError) as refused:
                    async with client.listen(resource_uris=["data://hello"]):
                        pass
                assert refused.value.code == -32601
