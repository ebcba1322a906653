"""A :class:`ClientGroup` from a host's configuration file, over real processes and loopback
HTTP (issue 25): servers started at once; one that exits at start is reported with its
stderr while the others serve; one that dies mid-call is restarted and serves again, the
others untouched; an HTTP server that is not listening yet is waited for; VS Code's format
with its ``${env:...}`` and ``${input:...}`` references. mcpkit's own servers
(tests/support/servers/); tests/interop/test_host.py does the same with third-party ones."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpkit import ClientGroup, ClientOptions, ConnectionClosed, RequestTimeout, RetryPolicy, ServerState, TextContent
from support.eras import ERAS
from support.ports import free_port
from support.processes import server_command
from support.resilient import logged, resilient_server
from support.waiting import until

pytestmark = pytest.mark.timeout(120)

BROKEN = ["-c", "import sys; print('fatal: OPENWEATHER_KEY is not set', file=sys.stderr); sys.exit(1)"]


def text(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent), result
    return block.text


def stdio(script: str, *args: str) -> dict[str, Any]:
    command, *rest = server_command(script, *args)
    return {"command": command, "args": rest}


def write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(json.dumps(doc, indent=2))
    return path


@pytest.mark.parametrize("era", ERAS)
async def test_a_claude_desktop_file_of_four_servers(era: str, tmp_path: Path) -> None:
    log = tmp_path / "flaky.log"
    port = free_port()
    config = write(
        tmp_path / "claude_desktop_config.json",
        {
            "mcpServers": {
                "notes": stdio("interop_target"),
                "weather": {"command": sys.executable, "args": BROKEN},
                "flaky": stdio("resilient", str(log)),
                "web": {"url": f"http://127.0.0.1:{port}/mcp"},
            }
        },
    )
    states: list[ServerState] = []
    options = ClientOptions(protocol_version=era, retry=RetryPolicy(3, initial_delay=0.05))
    async with (
        resilient_server(tmp_path / "web.log", port),
        ClientGroup.from_config(config, options, on_state=states.append) as group,
    ):
        servers = group.servers
        assert {name: s.state for name, s in servers.items()} == {
            "notes": "ready",
            "weather": "failed",
            "flaky": "ready",
            "web": "ready",
        }
        weather = servers["weather"]
        assert weather.error is not None
        assert "fatal: OPENWEATHER_KEY is not set" in weather.error
        assert weather.restarts == 3  # the first start is supervised too, then given up on
        assert group.stderr("weather")[-1] == "fatal: OPENWEATHER_KEY is not set"
        assert servers["notes"].server_info is not None
        assert servers["notes"].tools == 8
        names = {tool.name for tool in await group.list_tools()}
        assert {"notes.echo", "flaky.lookup", "web.lookup"} <= names
        assert not any(name.startswith("weather.") for name in names)
        assert text(await group.call_tool("notes.echo", {"text": "hi"})) == "hi"
        assert text(await group.call_tool("web.record", {"text": "over http"})) == "recorded"
        # flaky dies mid-call: the read-only call in flight is sent again once it is back,
        # the charge is not; the other servers serve all along
        lookup = asyncio.create_task(group.call_tool("flaky.lookup", {"tag": "t1"}))
        charge = asyncio.create_task(group.call_tool("flaky.charge", {"tag": "t1"}))
        await until(lambda: logged(log, "lookup t1") == 1 and logged(log, "charge t1") == 1, what="both calls running")
        with pytest.raises(ConnectionClosed):
            await group.call_tool("flaky.crash")
        meanwhile = await asyncio.gather(*(group.call_tool("notes.echo", {"text": str(i)}) for i in range(10)))
        assert [text(r) for r in meanwhile] == [str(i) for i in range(10)]
        looked_up, charged = await asyncio.gather(lookup, charge, return_exceptions=True)
        assert isinstance(charged, ConnectionClosed), charged
        assert not isinstance(looked_up, BaseException), looked_up
        assert text(looked_up).startswith("lookup t1 by ")
        await until(lambda: group.state("flaky").healthy, what="flaky back")
        assert group.state("flaky").restarts == 1
        assert text(await group.call_tool("flaky.record", {"text": "after"})) == "recorded"
    flaky = [s.state for s in states if s.name == "flaky"]
    assert flaky[:2] == ["starting", "ready"]
    assert "reconnecting" in flaky
    assert flaky[-1] == "closed"
    assert logged(log, "lookup t1") == 2
    assert logged(log, "charge t1") == 1


async def test_an_http_server_not_listening_yet_is_waited_for(tmp_path: Path) -> None:
    port = free_port()
    go = tmp_path / "go"
    events: list[tuple[str, str]] = []
    group = ClientGroup.from_config(
        {"mcpServers": {"late": {"url": f"http://127.0.0.1:{port}/mcp"}, "notes": stdio("interop_target")}},
        on_event=lambda server, event: events.append((server, event.kind)),
    )
    async with resilient_server(tmp_path / "log", port, go=go):
        try:
            await group.start(wait=False)
            await until(lambda: ("late", "reconnecting") in events, what="an attempt to reach the late server")
            await until(lambda: group.state("notes").healthy, what="the other server")
            assert group.state("late").state == "starting"
            assert text(await group.call_tool("notes.echo", {"text": "not blocked"})) == "not blocked"
            go.touch()
            assert (await group.call_tool("late.pid", timeout=60)).structured_content is not None  # waits for its start
            assert group.state("late").healthy
        finally:
            await group.close()


async def test_a_vs_code_file_with_env_and_input_references(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPKIT_TEST_GREETING", "from the environment")
    command, *args = server_command("environment")
    config = write(
        tmp_path / "mcp.json",
        {
            "inputs": [{"type": "promptString", "id": "token", "description": "An API token", "password": True}],
            "servers": {
                "env": {
                    "type": "stdio",
                    "command": command,
                    "args": args,
                    "env": {"GREETING": "${env:MCPKIT_TEST_GREETING}", "TOKEN": "${input:token}"},
                },
                "unanswered": {"type": "stdio", "command": command, "args": args, "env": {"TOKEN": "${input:other}"}},
            },
        },
    )
    async with ClientGroup.from_config(config, inputs={"token": "t-42"}) as group:
        env = json.loads(text(await group.call_tool("env.environment")))
        assert (env["GREETING"], env["TOKEN"]) == ("from the environment", "t-42")
        assert "PATH" in env  # merged over a safe part of ours
        unanswered = group.state("unanswered")
        assert unanswered.state == "failed"
        assert unanswered.error is not None
        assert "${input:other} needs an answer" in unanswered.error


@pytest.mark.parametrize("era", ERAS)
async def test_deadlines_and_cancellation_are_the_servers_clients(era: str) -> None:
    """A call through the group has its client's deadline, and cancelling it cancels the
    request on the wire (the server saw it cancelled)."""
    servers = {"basic": stdio("basic"), "notes": stdio("interop_target")}
    async with ClientGroup.from_config({"mcpServers": servers}, ClientOptions(protocol_version=era)) as group:
        with pytest.raises(RequestTimeout):
            await group.call_tool("basic.sleep", {"seconds": 30}, timeout=0.5)
        call = asyncio.create_task(group.call_tool("basic.sleep", {"seconds": 30, "tag": "c1"}))
        assert text(await group.call_tool("basic.wait_for", {"tag": "c1", "state": "started", "timeout": 20})) == "started"
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert text(await group.call_tool("basic.wait_for", {"tag": "c1", "state": "cancelled", "timeout": 20})) == "cancelled"
        assert text(await group.call_tool("notes.echo", {"text": "still here"})) == "still here"


async def test_a_failed_server_is_started_again_on_request(tmp_path: Path) -> None:
    log = tmp_path / "log"
    servers = {"once": stdio("resilient", str(log), "--fail-first", "1"), "notes": stdio("interop_target")}
    async with ClientGroup.from_config({"mcpServers": servers}, restart=False) as group:
        assert group.state("once").state == "failed"
        assert "cannot start: attempt 1" in (group.state("once").error or "")
        await group.restart("once")
        assert group.state("once").healthy
        assert (await group.call_tool("once.pid")).structured_content is not None
        with pytest.raises(RuntimeError, match="cannot start"):
            await ClientGroup.from_config({"mcpServers": {"bad": {"command": "x", "env": {"A": "${NOPE}"}}}}).restart("bad")


async def test_the_deprecated_http_sse_transport_of_a_vs_code_file(tmp_path: Path) -> None:
    port = free_port()
    doc = {"servers": {"old": {"type": "sse", "url": f"http://127.0.0.1:{port}/sse"}}}
    async with resilient_server(tmp_path / "log", port, sse=True), ClientGroup.from_config(doc) as group:
        state = group.state("old")
        assert (state.state, state.era) == ("ready", "legacy")
        assert text(await group.call_tool("old.record", {"text": "over sse"})) == "recorded"
    assert logged(tmp_path / "log", "record over sse") == 1
