"""Interop: a FastMCP server (PyPI ``fastmcp``, tests/support/servers/fastmcp_asking.py,
spawned over stdio) behind an mcpkit ``Proxy`` that speaks only the legacy era to it
(FastMCP asks its client only on a legacy connection), served over Streamable HTTP to
mcpkit clients of both eras. A 2026-07-28 client gets FastMCP's elicitation as an input
round: the proxy holds FastMCP's call between the client's rounds and hands the answer to
the waiting request. The proxy's tag selection reads FastMCP's own tags.

Every test body runs under a deadline.
"""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from mcpkit import (
    CallToolResult,
    Client,
    ClientOptions,
    ElicitRequestParams,
    ElicitResult,
    HttpTransport,
    McpError,
    Proxy,
    StdioTransport,
    TextContent,
)
from support.eras import ERAS, LEGACY
from support.processes import server_command
from support.serving import serve_in_thread

LIMIT = 60.0


@pytest.fixture(scope="module")
def proxy_url() -> Iterator[str]:
    proxy = Proxy(
        lambda: StdioTransport(server_command("fastmcp_asking"), stderr="devnull"),
        client_options=ClientOptions(protocol_version=LEGACY, request_timeout=30),
        exclude_tags=["admin"],
    )
    with serve_in_thread(proxy.asgi_app()) as port:
        yield f"http://127.0.0.1:{port}/mcp"


def _text(result: CallToolResult) -> str:
    assert not result.is_error, result
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


@pytest.mark.parametrize("era", ERAS)
async def test_fastmcps_elicitation_reaches_a_client_of_either_era(proxy_url: str, era: str) -> None:
    asked: list[str] = []

    def answer(request: ElicitRequestParams) -> ElicitResult:
        asked.append(request.message)
        return ElicitResult(action="accept", content={"name": "Ada"})

    with anyio.fail_after(LIMIT):
        options = ClientOptions(protocol_version=era, on_elicit=answer, request_timeout=30)
        async with Client(HttpTransport(proxy_url), options) as client:
            assert client.protocol_version == era
            assert _text(await client.call_tool("greet")) == "Hello, Ada!"
    assert asked == ["What is your name?"]


@pytest.mark.parametrize("era", ERAS)
async def test_a_declined_question_reaches_fastmcp_as_declined(proxy_url: str, era: str) -> None:
    with anyio.fail_after(LIMIT):
        options = ClientOptions(protocol_version=era, on_elicit=lambda _: ElicitResult(action="decline"), request_timeout=30)
        async with Client(HttpTransport(proxy_url), options) as client:
            assert _text(await client.call_tool("greet")) == "no name: decline"


@pytest.mark.parametrize("era", ERAS)
async def test_the_selection_reads_fastmcps_tags(proxy_url: str, era: str) -> None:
    with anyio.fail_after(LIMIT):
        async with Client(HttpTransport(proxy_url), ClientOptions(protocol_version=era, request_timeout=30)) as client:
            assert [tool.name for tool in await client.list_all_tools()] == ["greet"]
            with pytest.raises(McpError) as refused:
                await client.call_tool("wipe")
            assert refused.value.code == -32602
