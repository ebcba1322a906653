"""Interop with FastMCP (PyPI ``fastmcp``, pinned in the ``test`` extra), over stdio and
Streamable HTTP.

1. FastMCP's client against mcpkit (tests/support/servers/interop_target.py) in both of its
   modes, ``mode="legacy"`` (``initialize``: 2025-11-25) and ``mode="auto"``
   (``server/discover``: 2026-07-28): list, call (success and every error kind), read,
   get a prompt, progress, logging; and its automatic pagination over mcpkit's pages
   (tests/support/servers/dynamic.py lists three per page).
2. mcpkit's client against a FastMCP server (tests/support/servers/fastmcp_server.py, pages of
   two), at 2026-07-28, at 2025-11-25 and negotiated: list every page, call, read, get,
   progress, logging.

Every test body runs under a deadline.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import mcp_types as mt
import pytest
from fastmcp import Client as FastClient
from fastmcp.client.logging import LogMessage
from fastmcp.client.transports import PythonStdioTransport
from fastmcp.exceptions import ToolError as FastToolError
from mcp.shared.exceptions import MCPError

from mcpkit import Client, ClientOptions, HttpTransport, McpError, StdioTransport, TextContent
from support.eras import ERAS, LEGACY, MODERN
from support.paths import SERVERS
from support.ports import free_port
from support.processes import listening, server_command

WHERE = ["stdio", "http"]
MODES = [pytest.param("auto", id="auto"), pytest.param("legacy", id="legacy")]
ERA_OF_MODE = {"auto": MODERN, "legacy": LEGACY}
LIMIT = 60.0  # seconds for a whole test body (a spawned FastMCP server gets 30 s to start)


def serve(script: str, **popen: Any) -> Iterator[str]:
    port = free_port()
    with listening(server_command(script, "--http", str(port)), port, **popen):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def target_url() -> Iterator[str]:
    yield from serve("interop_target")


@pytest.fixture(scope="module")
def dynamic_url() -> Iterator[str]:
    yield from serve("dynamic")


@pytest.fixture(scope="module")
def fastmcp_url() -> Iterator[str]:
    yield from serve("fastmcp_server", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


# =============================================================================================
# 1. FastMCP's client against mcpkit
# =============================================================================================


@contextlib.asynccontextmanager
async def fast_client(where: str, mode: str, script: str, url: str, **settings: Any) -> AsyncIterator[FastClient[Any]]:
    """FastMCP's client on an mcpkit server script: spawned over stdio, or at ``url``."""
    transport: Any = url
    if where == "stdio":
        with open(os.devnull, "w") as devnull:  # noqa: ASYNC230 - opening /dev/null does not block
            transport = PythonStdioTransport(SERVERS / f"{script}.py", python_cmd=sys.executable, log_file=devnull)
            async with FastClient(transport, mode=mode, timeout=10, **settings) as client:
                yield client
        return
    async with FastClient(transport, mode=mode, timeout=10, **settings) as client:
        yield client


def text_of(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, mt.TextContent)
    return block.text


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("where", WHERE)
async def test_fastmcp_client_round_trip(target_url: str, where: str, mode: str) -> None:
    reported: list[tuple[float, float | None, str | None]] = []
    logs: list[tuple[str, Any]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reported.append((progress, total, message))

    async def on_log(message: LogMessage) -> None:
        logs.append((message.level, message.data))

    with anyio.fail_after(LIMIT):
        async with fast_client(where, mode, "interop_target", target_url, log_handler=on_log) as client:
            assert client.session.protocol_version == ERA_OF_MODE[mode]
            tools = await client.list_tools()
            whoami = await client.call_tool("whoami")
            added = await client.call_tool("add", {"a": 2, "b": 40})
            chatty = await client.call_tool("chatty", {"steps": 2}, progress_handler=on_progress)
            resources = await client.list_resources()
            templates = await client.list_resource_templates()
            hello = await client.read_resource("note://hello")
            blob = await client.read_resource("data://bytes")
            prompts = await client.list_prompts()
            prompt = await client.get_prompt("greet", {"name": "Ada"})
    assert [tool.name for tool in tools] == ["echo", "whoami", "add", "chatty", "refuse", "crash", "deny", "explode"]
    assert text_of(whoami) == f"{'modern' if mode == 'auto' else 'legacy'} {ERA_OF_MODE[mode]} fastmcp"
    assert added.structured_content == {"sum": 42}
    assert added.data.sum == 42  # FastMCP builds an object from the output schema
    assert text_of(chatty) == "2 steps"
    assert reported == [(1, 2, "step 1"), (2, 2, "step 2")]
    assert logs == [("info", "chatty: 2 steps")]
    assert [r.uri for r in resources] == ["note://hello", "data://bytes", "note://broken"]
    assert [t.uri_template for t in templates] == ["note://{id}"]
    assert isinstance(hello[0], mt.TextResourceContents)
    assert hello[0].text == "Hello, interop!"
    assert isinstance(blob[0], mt.BlobResourceContents)
    assert blob[0].blob == "AAEC/w=="
    assert [p.name for p in prompts] == ["greet"]
    assert isinstance(prompt.messages[0].content, mt.TextContent)
    assert prompt.messages[0].content.text == "Greet Ada in a plain style."


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("where", WHERE)
async def test_fastmcp_client_sees_every_error_kind(target_url: str, where: str, mode: str) -> None:
    """Tool errors raise FastMCP's ``ToolError`` from ``call_tool`` (and come back as
    ``isError`` results from ``call_tool_mcp``); protocol errors raise ``MCPError``."""
    with anyio.fail_after(LIMIT):
        async with fast_client(where, mode, "interop_target", target_url) as client:
            with pytest.raises(FastToolError, match=r"^not today$"):
                await client.call_tool("refuse", {"reason": "not today"})
            crashed = await client.call_tool_mcp("crash", {})
            errors: dict[str, MCPError] = {}
            for name, call in [
                ("unknown", client.call_tool("no_such_tool")),
                ("arguments", client.call_tool("add", {"a": 1})),
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
    assert crashed.is_error
    assert text_of(crashed) == "the tool broke"
    seen = {name: (error.error.code, error.error.message) for name, error in errors.items()}
    assert seen == {
        "unknown": (-32602, "Unknown tool: no_such_tool"),
        "arguments": (-32602, "Invalid arguments for tool add: missing required argument 'b'"),
        "deny": (-32050, "Quota exhausted"),
        "explode": (-32603, "Upstream failed"),
        "resource": (-32602, "Resource not found"),
        "broken": (-32603, "Internal error"),
        "prompt": (-32602, "Invalid arguments for prompt greet: missing required argument 'name'"),
    }
    assert errors["deny"].error.data == {"retryAfter": 5}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("where", WHERE)
async def test_fastmcp_client_follows_mcpkit_pages(dynamic_url: str, where: str, mode: str) -> None:
    with anyio.fail_after(LIMIT):
        async with fast_client(where, mode, "dynamic", dynamic_url) as client:
            first = await client.list_tools_mcp()
            tools = await client.list_tools()
    assert first.next_cursor is not None
    assert [tool.name for tool in first.tools] == ["add_tools", "remove_tools", "toggle"]
    assert [tool.name for tool in tools] == ["add_tools", "remove_tools", "toggle", "touch", "census"]


# =============================================================================================
# 2. mcpkit's client against a FastMCP server
# =============================================================================================


@contextlib.asynccontextmanager
async def kit_on_fastmcp(where: str, era: str | None, url: str, **options: Any) -> AsyncIterator[Client]:
    """mcpkit's client on the FastMCP server, at revision ``era`` (None: negotiated)."""
    transport: Any = HttpTransport(url)
    if where == "stdio":
        transport = StdioTransport(server_command("fastmcp_server"), stderr="devnull")
    # FastMCP takes seconds to import: the spawned server gets 30 s to answer the probe or the
    # handshake (the probe must not time out into the legacy era on a loaded machine).
    options = {"request_timeout": 30, "discover_timeout": 30, **options}
    async with Client(transport, ClientOptions(protocol_version=era, **options)) as client:
        assert (client.era, client.protocol_version) == (("legacy", LEGACY) if era == LEGACY else ("modern", MODERN))
        yield client


@pytest.mark.parametrize("era", [*ERAS, pytest.param(None, id="probe")])
@pytest.mark.parametrize("where", WHERE)
async def test_mcpkit_client_on_fastmcp_server(fastmcp_url: str, where: str, era: str | None) -> None:
    logs: list[tuple[str, Any]] = []
    progress: list[tuple[float, float | None, str | None]] = []
    with anyio.fail_after(LIMIT):
        async with kit_on_fastmcp(
            where, era, fastmcp_url, log_level="info", on_log=lambda level, data, logger: logs.append((level, data))
        ) as client:
            first = await client.list_tools()
            tools = await client.list_all_tools()
            resources = await client.list_all_resources()
            templates = await client.list_all_resource_templates()
            prompts = await client.list_all_prompts()
            echoed = await client.call_tool("echo", {"text": "hi"})
            added = await client.call_tool("add", {"a": 2, "b": 3})
            refused = await client.call_tool("refuse", {"reason": "not today"})
            unknown = await client.call_tool("no_such_tool")
            chatty = await client.call_tool(
                "chatty", {"steps": 2}, on_progress=lambda value, total, message: progress.append((value, total, message))
            )
            read = await client.read_resource("data://two")
            templated = await client.read_resource("note://7")
            with pytest.raises(McpError) as missing:
                await client.read_resource("nowhere://at-all")
            prompt = await client.get_prompt("greet", {"name": "Ada"})
            with pytest.raises(McpError) as no_name:
                await client.get_prompt("greet")
    assert first.next_cursor is not None
    assert [tool.name for tool in first.tools] == ["echo", "add"]
    assert [tool.name for tool in tools] == ["echo", "add", "chatty", "refuse"]
    assert [r.uri for r in resources] == ["data://one", "data://two", "data://three"]
    assert [t.uri_template for t in templates] == ["note://{id}"]
    assert [p.name for p in prompts] == ["greet"]
    assert echoed.content == [TextContent(text="hi")]
    assert added.structured_content == {"result": 5}
    assert (refused.is_error, refused.content) == (True, [TextContent(text="not today")])
    assert (unknown.is_error, unknown.content) == (True, [TextContent(text="Unknown tool: 'no_such_tool'")])
    assert chatty.content == [TextContent(text="2 steps")]
    assert progress == [(1, 2, "step 1"), (2, 2, "step 2")]
    assert logs == [("info", {"msg": "chatty: 2 steps", "extra": None})]
    assert read.contents[0].text == "two"
    assert templated.contents[0].text == "note 7"
    assert (missing.value.code, missing.value.message) == (-32602, "Resource not found: 'nowhere://at-all'")
    assert prompt.messages[0].content == TextContent(text="Greet Ada in a plain style.")
    assert (no_name.value.code, no_name.value.message) == (-32602, "Missing required arguments: {'name'}")
