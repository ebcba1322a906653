"""``mcpkit proxy``: a server command served over Streamable HTTP, and a URL served over
stdio, each to clients of both eras (the command and the servers are real processes)."""

from __future__ import annotations

import subprocess

import pytest

from mcpkit import Client, ClientOptions, HttpTransport, StdioTransport, TextContent
from support.cli import MCPKIT, mcpkit, measured
from support.eras import ERAS
from support.ports import free_port
from support.processes import listening, server_command

COMPOSED = " ".join(server_command("composed"))


@pytest.mark.parametrize("era", ERAS)
async def test_a_command_served_over_http(era: str) -> None:
    port = free_port()
    command = [*MCPKIT, "proxy", COMPOSED, "--http", "--port", str(port), "--era", "legacy"]
    with listening(command, port, timeout=30, env=measured(), stderr=subprocess.PIPE) as proc:
        async with Client(HttpTransport(f"http://127.0.0.1:{port}/mcp"), ClientOptions(protocol_version=era)) as client:
            result = await client.call_tool("weather_forecast", {"city": "Oslo"})
            assert isinstance(result.content[0], TextContent)
            assert result.content[0].text == "Oslo: 21 C"
        assert proc.poll() is None


@pytest.mark.parametrize("era", ERAS)
async def test_a_url_served_over_stdio(era: str) -> None:
    port = free_port()
    with listening(server_command("composed", "--http", str(port)), port):
        command = [*MCPKIT, "proxy", f"http://127.0.0.1:{port}/mcp"]
        transport = StdioTransport(command, env=measured(), stderr="devnull")
        async with Client(transport, ClientOptions(protocol_version=era)) as client:
            assert "weather_forecast" in {tool.name for tool in await client.list_all_tools()}
            result = await client.call_tool("hello")
            assert isinstance(result.content[0], TextContent)
            assert result.content[0].text == "hello from composed"


def test_usage_errors() -> None:
    assert mcpkit("proxy", "  ").returncode == 64
    assert mcpkit("proxy", "python x.py", "--port", "1").returncode == 64
