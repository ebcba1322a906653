"""``client.discover()`` fills in what the server said about itself (issue 25): with a
pinned modern revision nothing is negotiated, so ``server_info``, ``server_capabilities``
and ``instructions`` are empty until ``discover()`` — which then fills them in, as
docs/eras.md says. Over a real server process (tests/interop/test_slow_start.py checks the
same of FastMCP's and the official SDK's)."""

from __future__ import annotations

from mcpkit import Client, ClientOptions, StdioTransport
from support.eras import MODERN
from support.processes import server_command


async def test_discover_fills_in_the_server_facts_of_a_pinned_modern_client() -> None:
    transport = StdioTransport(server_command("interop_target"), stderr="devnull")
    async with Client(transport, ClientOptions(protocol_version=MODERN)) as client:
        assert client.server_info is None
        assert client.server_capabilities == {}
        found = await client.discover()
        assert client.server_info is not None
        assert (client.server_info.name, client.server_info.version) == ("interop", "1.2.3")
        assert client.server_capabilities == found.capabilities
        assert "tools" in client.server_capabilities
        assert client.instructions == "A server for interop tests."
