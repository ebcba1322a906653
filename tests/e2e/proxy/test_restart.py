"""The server behind a proxy crashes: the proxy's client restarts it by its transport's
policy (``StdioTransport(restart=True)``), and the proxy's clients go on calling."""

from __future__ import annotations

import os
import signal

import pytest

from mcpkit import Client, ClientOptions, McpError, Proxy, StdioTransport, TextContent
from support.eras import ERAS, LEGACY
from support.processes import server_command
from support.waiting import until


@pytest.mark.parametrize("era", ERAS)
async def test_a_crashed_upstream_server_is_restarted_and_served_again(era: str) -> None:
    upstream = StdioTransport(server_command("composed"), stderr="devnull", restart=True)
    proxy = Proxy(upstream, client_options=ClientOptions(protocol_version=LEGACY, request_timeout=20))
    async with Client(proxy, ClientOptions(protocol_version=era, request_timeout=30)) as client:
        first = await client.call_tool("weather_count")
        assert isinstance(first.content[0], TextContent)
        assert first.content[0].text == "1"
        pid = upstream.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)

        async def served_by_a_new_process() -> bool:
            try:
                result = await client.call_tool("weather_count")
            except McpError:
                return False  # the call that met the crash (not retried: count is not idempotent)
            return upstream.pid not in (None, pid) and isinstance(result.content[0], TextContent)

        await until(served_by_a_new_process, timeout=30, what="a call served by the restarted server")
