"""Interop over the deprecated HTTP+SSE transport (2024-11-05): mcpkit's client
(``SseTransport``, and ``HttpTransport``'s fallback to it) against foreign servers.

1. ``@modelcontextprotocol/server-everything`` (npm, pinned in tests/support/peers.py) in its
   ``sse`` mode (``GET /sse``, ``POST /message?sessionId=...``; a POST to ``/sse`` gets
   Express's 404): initialize, list tools, call ``echo``, read a resource, its
   server-to-client requests (``roots/list`` after initialize, ``sampling/createMessage``
   mid-call) answered by mcpkit's callbacks, and progress on the stream.
2. The official Python SDK (PyPI ``mcp==2.3.0``, tests/support/servers/sse_official.py:
   ``MCPServer`` over ``sse_app()``; a POST to ``/sse`` gets 405): call a tool, sample
   mid-call, read a resource.

Against both, ``HttpTransport(url)`` with the default options falls back: its first POST
is refused, the GET of the same URL opens the old transport, and the client ends up in
the legacy era there. Every test body runs under a deadline.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from mcpkit import (
    Client,
    ClientOptions,
    CreateMessageParams,
    CreateMessageResult,
    HttpTransport,
    Root,
    SseTransport,
    TextContent,
    Transport,
)
from support.peers import EVERYTHING, PEERS
from support.ports import free_port
from support.processes import listening, server_command

LIMIT = 30.0  # seconds for a whole test body
DOC = "demo://resource/static/document/features.md"
KINDS = ["sse", "fallback"]


@pytest.fixture(scope="module")
def everything_sse(node: str) -> Iterator[str]:
    """server-everything's SSE mode on a free loopback port: the URL of its stream."""
    port = free_port()
    command = [node, str(PEERS / "node_modules" / EVERYTHING / "dist" / "index.js"), "sse"]
    env = {**os.environ, "PORT": str(port)}
    with listening(command, port, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
        yield f"http://127.0.0.1:{port}/sse"


@pytest.fixture(scope="module")
def official_sse() -> Iterator[str]:
    """tests/support/servers/sse_official.py (the official SDK's ``sse_app()``): its stream's URL."""
    port = free_port()
    with listening(server_command("sse_official", str(port)), port, stderr=subprocess.DEVNULL):
        yield f"http://127.0.0.1:{port}/sse"


def transport(kind: str, url: str) -> Transport:
    return SseTransport(url) if kind == "sse" else HttpTransport(url)


class Model:
    """mcpkit's sampling callback: a model that echoes, recording what it was asked."""

    def __init__(self) -> None:
        self.asked: list[CreateMessageParams] = []

    async def __call__(self, request: CreateMessageParams) -> CreateMessageResult:
        self.asked.append(request)
        said = request.messages[-1].content["text"]
        return CreateMessageResult(role="assistant", content={"type": "text", "text": f"echo {said}"}, model="m-kit")


def text(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


@pytest.mark.parametrize("kind", KINDS)
async def test_server_everything(everything_sse: str, kind: str) -> None:
    model = Model()
    roots = [Root(uri="file:///srv/a", name="a")]
    options = ClientOptions(request_timeout=10, on_sample=model, roots=roots)
    progress: list[tuple[float, float | None]] = []
    with anyio.fail_after(LIMIT):
        async with Client(transport(kind, everything_sse), options) as client:
            assert (client.era, client.protocol_version) == ("legacy", "2025-11-25")
            assert client.server_info is not None
            assert client.server_info.name == "mcp-servers/everything"
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert {"echo", "get-roots-list", "trigger-sampling-request"} <= tools
            assert text(await client.call_tool("echo", {"message": "over SSE"})) == "Echo: over SSE"
            document = await client.read_resource(DOC)
            listed_roots = text(await client.call_tool("get-roots-list"))
            sampled = text(await client.call_tool("trigger-sampling-request", {"prompt": "2+2?", "maxTokens": 20}))
            done = await client.call_tool(
                "trigger-long-running-operation",
                {"duration": 0.3, "steps": 3},
                on_progress=lambda value, total, message: progress.append((value, total)),
            )
    assert document.contents[0].text is not None
    assert document.contents[0].text.startswith("# Everything Server - Features")
    assert "URI: file:///srv/a" in listed_roots  # roots/list, asked by the server, answered by a POST
    assert json.loads(sampled.split("result:", 1)[1])["content"]["text"] == "echo Resource trigger-sampling-request context: 2+2?"
    assert len(model.asked) == 1
    assert text(done) == "Long running operation completed. Duration: 0.3 seconds, Steps: 3."
    assert progress == [(1, 3), (2, 3), (3, 3)]


@pytest.mark.parametrize("kind", KINDS)
async def test_official_sdk(official_sse: str, kind: str) -> None:
    model = Model()
    with anyio.fail_after(LIMIT):
        async with Client(transport(kind, official_sse), ClientOptions(request_timeout=10, on_sample=model)) as client:
            assert (client.era, client.protocol_version) == ("legacy", "2025-11-25")
            assert client.server_info is not None
            assert client.server_info.name == "official-sse-test"
            echoed = await client.call_tool("echo", {"text": "hi"})
            asked = await client.call_tool("ask", {"question": "6*7?"})
            hello = await client.read_resource("data://hello")
    assert text(echoed) == "echo: hi"
    assert text(asked) == "echo 6*7?"
    assert [m.content["text"] for m in model.asked[0].messages] == ["6*7?"]
    assert hello.contents[0].text == "hello over SSE"
