"""Servers that are slow to start (issue 25): a FastMCP server and an official-SDK server,
each made to sleep 7 s before serving (tests/support/servers/slow_start.py), are reached
over stdio in every era without tuning anything.

The old probe gave up after ``discover_timeout`` (5 s), fell back to ``initialize`` and met
a server that had meanwhile answered the probe and committed to 2026-07-28: ``-32022:
connection is serving the 2026-07-28 protocol; the initialize handshake is not accepted``.
Now silence is not an answer: past ``discover_timeout`` the client sends ``initialize`` as
well and takes the first answer that decides, and a -32022 that names a modern revision is
the era the server serves. The sleep is long and the deadlines the defaults: outcomes are
asserted, never durations.
"""

from __future__ import annotations

import sys

import anyio
import pytest

from mcpkit import Client, ClientOptions, StdioTransport, TextContent
from support.eras import LEGACY, MODERN
from support.processes import server_command

DELAY = "7"  # seconds before the server reads its stdin: past the 5 s probe
LIMIT = 90.0  # seconds for a whole test body
SERVERS = {"fastmcp": "fastmcp_server.py", "official": "official_features.py"}
PINNED = [pytest.param(None, id="auto"), pytest.param(MODERN, id="modern"), pytest.param(LEGACY, id="legacy")]


@pytest.mark.parametrize("pinned", PINNED)
@pytest.mark.parametrize("server", list(SERVERS))
async def test_a_slow_server_connects_in_every_era_with_the_default_options(server: str, pinned: str | None) -> None:
    transport = StdioTransport(server_command("slow_start", DELAY, SERVERS[server]), stderr="capture")
    with anyio.fail_after(LIMIT):
        async with Client(transport, ClientOptions(protocol_version=pinned)) as client:
            assert client.era == ("legacy" if pinned == LEGACY else "modern")
            result = await client.call_tool("echo", {"text": "late but there"})
            assert isinstance(result.content[0], TextContent)
            assert result.content[0].text == "late but there"
            if pinned == MODERN:  # no handshake: discover() tells who the server is
                assert client.server_info is None
                await client.discover()
            assert client.server_info is not None
            assert "tools" in client.server_capabilities


async def test_a_process_that_never_answers_times_out_saying_what_to_tune() -> None:
    """Neither question answered: a :class:`RequestTimeout` that names the settings, not a
    legacy era concluded from silence."""
    from mcpkit import RequestTimeout

    silent = StdioTransport([sys.executable, "-c", "import sys; sys.stdin.read()"])
    with anyio.fail_after(LIMIT), pytest.raises(RequestTimeout) as caught:
        async with Client(silent, ClientOptions(discover_timeout=0.5, request_timeout=2)):
            pass
    message = caught.value.message
    assert "server/discover" in message
    assert "initialize" in message
    assert "request_timeout" in message
    assert "--timeout" in message
