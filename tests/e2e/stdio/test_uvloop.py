"""Both sides of stdio under uvloop, whose transports do not derive from asyncio's
classes (and whose subprocess pipes do not say their pipe): a Proxy, a host or any client
running inside uvicorn's uvloop spawns stdio servers this way."""

from __future__ import annotations

import subprocess
import sys

import uvloop

from mcpkit import Client, ClientOptions, StdioTransport
from support.eras import LEGACY, MODERN
from support.paths import SERVERS

BASIC = str(SERVERS / "basic.py")
#: The basic server, served on uvloop: ``uvloop.run(server.serve_stdio())``.
ON_UVLOOP = (
    "import runpy, sys, uvloop; sys.argv = [sys.argv[1]]; "
    "server = runpy.run_path(sys.argv[0])['server']; uvloop.run(server.serve_stdio())"
)


async def _echo_through(command: list[str], version: str) -> tuple[str, str]:
    async with Client(StdioTransport(command), ClientOptions(protocol_version=version)) as client:
        echoed = await client.call_tool("echo", {"text": "x" * 300_000})  # a large answer: the bulk writer
        seen = await client.call_tool("whoami", {})
    return echoed.content[0].text, seen.content[0].text


def test_a_client_on_uvloop_spawns_and_calls_a_stdio_server() -> None:
    for version in (MODERN, LEGACY):
        echoed, seen = uvloop.run(_echo_through([sys.executable, BASIC], version))
        assert echoed == "x" * 300_000
        assert seen.endswith(version)


def test_a_server_on_uvloop_serves_stdio() -> None:
    for version in (MODERN, LEGACY):
        echoed, seen = uvloop.run(_echo_through([sys.executable, "-c", ON_UVLOOP, BASIC], version))
        assert echoed == "x" * 300_000
        assert seen.endswith(version)


def test_the_server_on_uvloop_exits_cleanly_when_stdin_closes() -> None:
    proc = subprocess.run([sys.executable, "-c", ON_UVLOOP, BASIC], input=b"", capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
