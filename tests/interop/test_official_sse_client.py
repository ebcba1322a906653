"""Interop: the official Python SDK's client (PyPI ``mcp==2.3.0``, pinned in the ``test``
extra) over its deprecated HTTP+SSE transport (``mcp.client.sse.sse_client``) against
mcpkit's server with ``asgi_app(sse_transport=True)`` (tests/support/servers/sse_target.py,
under uvicorn on 127.0.0.1).

In both of the client's modes — ``"legacy"`` (``initialize``) and ``"auto"`` (a
``server/discover`` probe, which the HTTP+SSE transport answers with an error, then
``initialize``) — it initializes, lists and calls tools, hears log messages, reads a
resource and answers the server's questions (elicitation, sampling, roots); with authorization it passes its bearer token on
both endpoints; mounted under a prefix in Starlette, it follows the endpoint event there.
Every test body runs under a deadline.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import mcp_types as mt
import pytest
from mcp.client.client import Client as OfficialClient
from mcp.client.sse import sse_client

from support.eras import LEGACY
from support.ports import free_port
from support.processes import listening, server_command
from support.serving import serve_in_thread

pytestmark = pytest.mark.timeout(60)
LIMIT = 30.0  # seconds for a whole test body
MODES = [pytest.param("legacy", id="legacy"), pytest.param("auto", id="auto")]


def _serve(*args: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    with listening(server_command("sse_target", "--http", str(port), *args), port) as proc:
        yield f"http://127.0.0.1:{port}/sse", proc


@pytest.fixture(scope="module")
def sse_url() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    yield from _serve()


@pytest.fixture(scope="module")
def guarded_url() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    yield from _serve("--auth")


def text_of(result: mt.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, mt.TextContent)
    return block.text


@pytest.mark.parametrize("mode", MODES)
async def test_official_sse_client_round_trip(sse_url: tuple[str, Any], mode: str) -> None:
    url, proc = sse_url
    asked: list[str] = []
    logs: list[Any] = []

    async def on_elicit(context: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        asked.append(params.message)
        return mt.ElicitResult(action="accept", content={"name": "Ada"})

    async def on_log(params: mt.LoggingMessageNotificationParams) -> None:
        logs.append(params.data)

    async def on_sample(context: Any, params: mt.CreateMessageRequestParams) -> mt.CreateMessageResult:
        said = params.messages[-1].content
        text = said.text if isinstance(said, mt.TextContent) else "?"
        return mt.CreateMessageResult(role="assistant", content=mt.TextContent(type="text", text=f"echo {text}"), model="m1")

    async def on_roots(context: Any) -> mt.ListRootsResult:
        return mt.ListRootsResult.model_validate({"roots": [{"uri": "file:///a"}, {"uri": "file:///b"}]})

    callbacks = {"elicitation_callback": on_elicit, "sampling_callback": on_sample, "list_roots_callback": on_roots}

    with anyio.fail_after(LIMIT):
        async with OfficialClient(
            sse_client(url), mode=mode, logging_callback=on_log, read_timeout_seconds=10, **callbacks
        ) as client:
            assert client.protocol_version == LEGACY
            assert client.server_info is not None
            assert client.server_info.name == "sse-target"
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert {"echo", "chatty", "ask_name"} <= tools
            assert text_of(await client.call_tool("echo", {"text": "over the old transport"})) == "over the old transport"
            assert text_of(await client.call_tool("chatty", {"steps": 2})) == "done"
            read = await client.read_resource("note://hello")
            content = read.contents[0]
            assert isinstance(content, mt.TextResourceContents)
            assert content.text == "Hello, SSE!"
            assert text_of(await client.call_tool("ask_name")) == "Hello, Ada!"
            assert asked == ["What is your name?"]
            assert text_of(await client.call_tool("ask_model", {"question": "2+2?"})) == "m1: echo 2+2?"
            assert text_of(await client.call_tool("roots")) == "file:///a,file:///b"
            # both log messages arrived before the call's response
            assert logs == ["step 1", "step 2"]
    assert proc.poll() is None


async def test_official_sse_client_with_a_bearer_token(guarded_url: tuple[str, Any]) -> None:
    url, _ = guarded_url
    with anyio.fail_after(LIMIT):
        with pytest.raises(httpx2.HTTPStatusError) as refused:  # without a token: 401 on GET /sse
            async with OfficialClient(sse_client(url), mode="legacy", read_timeout_seconds=10):
                pass
        assert refused.value.response.status_code == 401
        transport = sse_client(url, headers={"authorization": "Bearer alice-token"})
        async with OfficialClient(transport, mode="legacy", read_timeout_seconds=10) as client:
            assert text_of(await client.call_tool("echo", {"text": "signed"})) == "signed"


@pytest.mark.parametrize("mode", MODES)
async def test_official_sse_client_under_a_mount_prefix(mode: str) -> None:
    """``Mount("/api/v1", app)`` in Starlette: the endpoint event names
    ``/api/v1/messages?...``, which the client checks against the stream's origin and
    POSTs to (with or without a trailing slash on the stream's URL)."""
    from starlette.applications import Starlette
    from starlette.routing import Mount

    from mcpkit import Server

    server = Server("mounted", "1.0.0")

    @server.tool
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    app = server.asgi_app(sse_transport=True)
    with serve_in_thread(Starlette(routes=[Mount("/api/v1", app=app)], lifespan=app.lifespan)) as port:
        with anyio.fail_after(LIMIT):
            for url in (f"http://127.0.0.1:{port}/api/v1/sse", f"http://127.0.0.1:{port}/api/v1/sse/"):
                async with OfficialClient(sse_client(url), mode=mode, read_timeout_seconds=10) as client:
                    assert client.protocol_version == LEGACY
                    assert text_of(await client.call_tool("echo", {"text": url})) == url
