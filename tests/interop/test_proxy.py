"""Interop: ``@modelcontextprotocol/server-everything`` (stdio, legacy era: 2025-11-25)
behind an mcpkit ``Proxy`` served over Streamable HTTP, called by the official Python
SDK's client (PyPI ``mcp``) in both of its modes — ``mode="legacy"`` (initialize,
2025-11-25) and ``mode="auto"`` (``server/discover``: 2026-07-28, so the proxy bridges the
eras). Tools, progress, errors, resources and templates, prompts and completions cross in
both, and so do the upstream server's questions (sampling, elicitation, roots): a
legacy client gets them as requests, a modern one as input rounds.

Every test body runs under a deadline.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import mcp_types as mt
import pytest
from mcp.client.client import Client as OfficialClient
from mcp.client.session import ClientRequestContext

from support.eras import LEGACY, MODERN
from support.peers import EVERYTHING, PEERS
from support.ports import free_port
from support.processes import listening, server_command

LIMIT = 60.0
MODES = [pytest.param("legacy", id="legacy"), pytest.param("auto", id="modern")]
ERA_OF_MODE = {"auto": MODERN, "legacy": LEGACY}
DOC = "demo://resource/static/document/features.md"


@pytest.fixture(scope="module")
def proxy_url(node: str) -> Iterator[str]:
    port = free_port()
    upstream = [node, str(PEERS / "node_modules" / EVERYTHING / "dist" / "index.js"), "stdio"]
    with listening(server_command("proxy_of", LEGACY, "per-client", str(port), *upstream), port, timeout=30):
        yield f"http://127.0.0.1:{port}/mcp"


async def _elicit(context: ClientRequestContext, params: mt.ElicitRequestParams) -> mt.ElicitResult:
    return mt.ElicitResult(action="accept", content={"name": "Ada", "check": True, "email": "ada@example.com"})


async def _sample(context: ClientRequestContext, params: mt.CreateMessageRequestParams) -> mt.CreateMessageResult:
    said = params.messages[-1].content
    text = said.text if isinstance(said, mt.TextContent) else "?"
    return mt.CreateMessageResult(role="assistant", content=mt.TextContent(type="text", text=f"echo {text}"), model="m-1")


async def _roots(context: ClientRequestContext) -> mt.ListRootsResult:
    return mt.ListRootsResult.model_validate({"roots": [{"uri": "file:///srv/a"}, {"uri": "file:///srv/b"}]})


@contextlib.asynccontextmanager
async def official(url: str, mode: str, **settings: Any) -> AsyncIterator[OfficialClient]:
    settings.setdefault("read_timeout_seconds", 20)
    async with OfficialClient(url, mode=mode, **settings) as client:
        assert client.protocol_version == ERA_OF_MODE[mode]
        yield client


def texts(result: mt.CallToolResult) -> list[str]:
    assert not result.is_error, result
    return [block.text for block in result.content if isinstance(block, mt.TextContent)]


@pytest.mark.parametrize("mode", MODES)
async def test_tools_progress_and_errors_cross(proxy_url: str, mode: str) -> None:
    progress: list[tuple[float, float | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total))

    with anyio.fail_after(LIMIT):
        async with official(proxy_url, mode) as client:
            tools: set[str] = set()
            cursor: str | None = None
            while True:  # the proxy pages by 3
                page = await client.list_tools(cursor=cursor)
                tools |= {tool.name for tool in page.tools}
                cursor = page.next_cursor
                if cursor is None:
                    break
            assert {"echo", "get-sum", "trigger-long-running-operation"} <= tools
            assert texts(await client.call_tool("echo", {"message": "hi"})) == ["Echo: hi"]
            assert texts(await client.call_tool("get-sum", {"a": 2, "b": 3.5})) == ["The sum of 2 and 3.5 is 5.5."]
            done = await client.call_tool(
                "trigger-long-running-operation", {"duration": 0.3, "steps": 3}, progress_callback=on_progress
            )
            assert texts(done) == ["Long running operation completed. Duration: 0.3 seconds, Steps: 3."]
            assert progress == [(1, 3), (2, 3), (3, 3)]
            structured = await client.call_tool("get-structured-content", {"location": "Chicago"})
            assert structured.structured_content == {"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82}
            bad = await client.call_tool("get-sum", {"a": "two"})  # the TypeScript SDK's tool error, as it sent it
            assert bad.is_error
            assert bad.content[0].text.startswith("MCP error -32602: Input validation error")  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", MODES)
async def test_resources_prompts_and_completions_cross(proxy_url: str, mode: str) -> None:
    with anyio.fail_after(LIMIT):
        async with official(proxy_url, mode) as client:
            first = await client.list_resources()
            assert len(first.resources) == 3
            assert first.next_cursor is not None
            document = await client.read_resource(DOC)
            assert str(document.contents[0].uri) == DOC
            text = await client.read_resource("demo://resource/dynamic/text/5")
            assert isinstance(text.contents[0], mt.TextResourceContents)
            assert "5" in text.contents[0].text
            templates = (await client.list_resource_templates()).resource_templates
            assert "demo://resource/dynamic/text/{resourceId}" in [t.uri_template for t in templates]
            prompt = await client.get_prompt("args-prompt", {"city": "Oslo", "state": "Viken"})
            content = prompt.messages[0].content
            assert isinstance(content, mt.TextContent)
            assert "Oslo" in content.text
            done = await client.complete(
                mt.PromptReference(type="ref/prompt", name="completable-prompt"), {"name": "department", "value": "E"}
            )
            assert "Engineering" in done.completion.values


@pytest.mark.parametrize("mode", MODES)
async def test_the_upstream_servers_questions_reach_the_client(proxy_url: str, mode: str) -> None:
    """A modern client is asked in input rounds: the proxy holds server-everything's
    call open between them (the era bridge)."""
    with anyio.fail_after(LIMIT):
        callbacks = {"elicitation_callback": _elicit, "sampling_callback": _sample, "list_roots_callback": _roots}
        async with official(proxy_url, mode, **callbacks) as client:
            roots = texts(await client.call_tool("get-roots-list"))[0]
            assert "URI: file:///srv/a" in roots
            assert "URI: file:///srv/b" in roots
            sampled = texts(await client.call_tool("trigger-sampling-request", {"prompt": "2+2?", "maxTokens": 20}))[0]
            assert json.loads(sampled.split("result:", 1)[1])["content"]["text"].startswith("echo ")
            elicited = texts(await client.call_tool("trigger-elicitation-request"))
            assert elicited[0] == "✅ User provided the requested information!"


async def test_log_messages_sent_between_calls_reach_a_legacy_client(proxy_url: str) -> None:
    """server-everything's simulated logging sends a message every 5 s, outside any call:
    the proxy hands each to the legacy client whose upstream session it came on."""
    logged: list[mt.LoggingMessageNotificationParams] = []
    returned = anyio.Event()
    later = anyio.Event()

    async def on_log(params: mt.LoggingMessageNotificationParams) -> None:
        logged.append(params)
        if returned.is_set():
            later.set()

    with anyio.fail_after(LIMIT):
        async with official(proxy_url, "legacy", logging_callback=on_log) as client:
            started = texts(await client.call_tool("toggle-simulated-logging"))[0]
            assert started.startswith("Started simulated")
            returned.set()
            await later.wait()  # one sent after the call was answered
            assert "message" in str(logged[-1].data)
            # No call after the wait: ending the session ends its upstream process and its logging.
