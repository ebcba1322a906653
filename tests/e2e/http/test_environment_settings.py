"""``Server.run`` and ``mcpkit run`` serve by the ``MCPKIT_*`` variables
(docs/deploy.md#settings-from-the-environment): a stock server program, started with
only its environment changed, serves HTTP where the variables say, with their era and
limits; what the program's own call says wins; a bad value stops it before it serves."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mcpkit import Client, ClientOptions, HttpTransport, McpError, StdioTransport
from support.cli import MCPKIT, measured
from support.eras import MODERN
from support.ports import free_port
from support.processes import listening, server_command


def _env(**variables: str) -> dict[str, str]:
    return measured({**os.environ, **{f"MCPKIT_{k}": v for k, v in variables.items()}})


async def test_a_stdio_program_serves_http_where_the_environment_says() -> None:
    port = free_port()
    env = _env(TRANSPORT="http", PORT=str(port), PATH="/svc", ERAS="legacy")
    with listening(server_command("basic"), port, env=env, stderr=subprocess.PIPE):
        async with Client(HttpTransport(f"http://127.0.0.1:{port}/svc")) as client:
            assert (await client.call_tool("whoami")).content[0].text == "legacy 2025-11-25"
        with pytest.raises(McpError):  # MCPKIT_ERAS=legacy: the modern era is not served
            async with Client(HttpTransport(f"http://127.0.0.1:{port}/svc"), ClientOptions(protocol_version=MODERN)) as client:
                await client.call_tool("whoami")


async def test_the_limits_apply_over_stdio() -> None:
    """MCPKIT_TOOL_TIMEOUT ends a call that would sleep a minute; MCPKIT_ERAS=modern
    leaves the handshake of the legacy era unserved."""
    env = _env(TOOL_TIMEOUT="0.5", ERAS="modern")
    async with Client(StdioTransport(server_command("basic"), env=env)) as client:
        assert (await client.call_tool("whoami")).content[0].text == f"modern {MODERN}"
        result = await client.call_tool("sleep", {"seconds": 60})
        assert result.is_error
        assert "0.5" in result.content[0].text


def test_the_programs_own_call_wins() -> None:
    """``server.run("stdio")`` in the program: MCPKIT_TRANSPORT=http does not turn it
    into an HTTP server (it answers on stdin, and ends with it)."""
    program = "from mcpkit import Server\nServer('pinned').run('stdio')\n"
    env = _env(TRANSPORT="http", PORT=str(free_port()))
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}).encode() + b"\n"
    done = subprocess.run([sys.executable, "-c", program], input=ping, capture_output=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert (answer["id"], "result" in answer) == (1, True)


def test_a_bad_value_stops_the_program_naming_it() -> None:
    done = subprocess.run(server_command("basic"), capture_output=True, text=True, env=_env(PORT="80a"), timeout=60)
    assert done.returncode != 0
    assert "MCPKIT_PORT='80a' is not a port number" in done.stderr


async def test_mcpkit_run_serves_http_by_the_environment() -> None:
    port = free_port()
    env = _env(TRANSPORT="http", PORT=str(port))
    command = [*MCPKIT, "run", server_command("basic")[1]]
    with listening(command, port, env=env, stderr=subprocess.PIPE) as proc:
        async with Client(HttpTransport(f"http://127.0.0.1:{port}/mcp")) as client:
            assert (await client.call_tool("echo", {"text": "hi"})).content[0].text == "hi"
        assert proc.stderr is not None
        said = proc.stderr.readline().decode()
    assert said == f"mcpkit: serving {command[-1]} at http://127.0.0.1:{port}/mcp (Ctrl-C stops)\n"


def test_mcpkit_run_refuses_a_bad_variable_as_a_usage_error() -> None:
    done = subprocess.run(
        [*MCPKIT, "run", server_command("basic")[1], "--http"],
        capture_output=True, text=True, env=_env(MAX_SESSIONS="many"), timeout=60,
    )  # fmt: skip
    assert done.returncode == 64, done.stderr
    assert "cannot use the environment: MCPKIT_MAX_SESSIONS='many' is not a whole number" in done.stderr


def test_mcpkit_run_host_without_http_says_what_it_needs() -> None:
    command = [*MCPKIT, "run", server_command("basic")[1], "--port", "1"]
    done = subprocess.run(command, capture_output=True, text=True, env=_env(), timeout=60)
    assert done.returncode == 64
    assert "--host, --port and --path need --http (or MCPKIT_TRANSPORT=http)" in done.stderr
