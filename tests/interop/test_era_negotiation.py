"""Era negotiation against servers that are not mcpkit: the server/discover probe,
and the fall back to initialize on any non-modern error or on silence (docs/api.md, Client)."""

from __future__ import annotations

import sys
import time

import pytest

from mcpkit import Client, ClientOptions, StdioTransport
from support.paths import SERVERS


@pytest.mark.parametrize("mode", ["error", "silent"])
async def test_legacy_server_falls_back_to_initialize(mode: str) -> None:
    transport = StdioTransport([sys.executable, str(SERVERS / "legacy_raw.py"), mode])
    started = time.monotonic()
    async with Client(transport, ClientOptions(discover_timeout=0.5, request_timeout=30)) as client:
        assert (client.era, client.protocol_version) == ("legacy", "2025-06-18")
        assert client.server_info is not None
        assert client.server_info.name == "legacy-raw"
        result = await client.call_tool("echo", {"text": "hi"})
        assert result.content[0].text == "hi"  # type: ignore[union-attr]
    # a silent server costs the probe's timeout (0.5 s), not a call's (30 s)
    assert time.monotonic() - started < 10


async def test_official_sdk_server_is_modern_over_stdio() -> None:
    """The official `mcp` server (2.3.0) speaks 2026-07-28: the probe finds it modern."""
    code = (
        "from mcp.server.mcpserver import MCPServer\n"
        "s = MCPServer('official')\n"
        "@s.tool()\n"
        "def echo(text: str) -> str:\n"
        "    return text\n"
        "s.run()\n"
    )
    async with Client(StdioTransport([sys.executable, "-c", code], stderr="devnull")) as client:
        assert client.era == "modern"
        result = await client.call_tool("echo", {"text": "x"})
        assert not result.is_error


async def test_a_slow_starting_server_is_not_taken_for_legacy() -> None:
    """The probe waits ``discover_timeout``, not the per-call ``request_timeout``: a server
    that takes 3 s to start is still found modern by a client whose calls time out after
    2 s (with the old ``min(...)`` it was silently driven into the legacy era)."""
    script = str(SERVERS / "basic.py")
    code = f"import runpy, sys, time\ntime.sleep(3)\nsys.argv = [{script!r}]\nrunpy.run_path({script!r}, run_name='__main__')\n"
    transport = StdioTransport([sys.executable, "-c", code], stderr="devnull")
    async with Client(transport, ClientOptions(request_timeout=2.0, discover_timeout=15)) as client:
        assert client.era == "modern"
        assert (await client.ping()) is None
