"""``mcpkit proxy``: a server command served over Streamable HTTP, a URL served over stdio,
and the servers of a host's configuration through one proxy, each to clients of both eras
(the command and the servers are real processes)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

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


@pytest.mark.parametrize("era", ERAS)
async def test_the_servers_of_a_host_configuration_through_one_proxy(era: str, tmp_path: Path) -> None:
    """``mcpkit --config FILE proxy``: a stdio server and an HTTP server of an
    ``mcpServers`` file, each under its name, served over HTTP; a disabled one is left out."""
    up = free_port()
    with listening(server_command("composed", "--http", str(up)), up):
        command, *args = server_command("composed")
        config = tmp_path / "servers.json"
        config.write_text(
            json.dumps(
                {
                    "mcpServers": {
                        "local": {"command": command, "args": args},
                        "remote": {"type": "http", "url": f"http://127.0.0.1:{up}/mcp"},
                        "off": {"command": command, "args": args, "disabled": True},
                    }
                }
            )
        )
        port = free_port()
        proxy = [*MCPKIT, "--config", str(config), "proxy", "--http", "--port", str(port), "--era", "legacy"]
        with listening(proxy, port, timeout=30, env=measured(), stderr=subprocess.PIPE) as proc:
            async with Client(HttpTransport(f"http://127.0.0.1:{port}/mcp"), ClientOptions(protocol_version=era)) as client:
                names = {tool.name for tool in await client.list_all_tools()}
                assert {"local_weather_forecast", "remote_weather_forecast", "local_hello", "remote_hello"} <= names
                assert not any(name.startswith("off_") for name in names)
                for prefix in ("local", "remote"):
                    result = await client.call_tool(f"{prefix}_weather_forecast", {"city": "Oslo"})
                    assert isinstance(result.content[0], TextContent)
                    assert result.content[0].text == "Oslo: 21 C"
            assert proc.poll() is None


def test_config_usage_errors(tmp_path: Path) -> None:
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"a b": {"command": "python"}, "ok": {"command": "python"}}}))
    bad_name = mcpkit("--config", str(config), "proxy")
    assert bad_name.returncode == 64
    assert "prefix" in bad_name.stderr
    assert mcpkit("--config", str(config), "proxy", "--server", "missing").returncode == 64
    assert mcpkit("--config", str(config), "proxy", "python x.py").returncode == 64
    assert mcpkit("--config", str(tmp_path / "absent.json"), "proxy").returncode == 64
    assert mcpkit("proxy", "python x.py", "--server", "ok").returncode == 64
