"""Acceptance of issue 25: a host's group of servers nobody here wrote, from one JSON file,
over real processes and loopback HTTP.

Five servers in one ``mcpServers`` file: a FastMCP server over stdio that sleeps 7 s before
serving; one that exits at start (its stderr says why); mcpkit's resilient server, which
dies mid-call and comes back; ``@modelcontextprotocol/server-everything`` over Streamable
HTTP; and an official-SDK server over HTTP that listens only after 7 s. Every healthy one
lists and calls while the broken one is reported; the one that dies is restarted, its
read-only call in flight sent again; 200 calls mixed across the group all come back right;
the group's tools exported in each LLM format round-trip through a recorded model tool
call. And the slow servers connect in every era with the default options.

Sleeps are long (7 s) and deadlines the defaults: outcomes are asserted, never durations.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpkit import ClientGroup, ClientOptions, ConnectionClosed, McpError, RetryPolicy, TextContent
from mcpkit.host.llm import FORMATS
from support.eras import LEGACY, MODERN
from support.payloads import CALL_IDS, recorded
from support.peers import EVERYTHING, PEERS
from support.ports import free_port
from support.processes import listening, server_command, stop
from support.resilient import logged
from support.waiting import until

pytestmark = pytest.mark.timeout(240)

DELAY = "7"  # seconds a slow server sleeps before serving
LIMIT = 180.0  # seconds for a whole test body
BROKEN = "import sys; print('cannot start: WEATHER_API_KEY is not set', file=sys.stderr); sys.exit(1)"


def text(result: Any) -> str:
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, TextContent), result
    return block.text


@pytest.fixture(scope="module")
def everything_url(node: str) -> Iterator[str]:
    port = free_port()
    command = [node, str(PEERS / "node_modules" / EVERYTHING / "dist" / "index.js"), "streamableHttp"]
    with listening(command, port, env={**os.environ, "PORT": str(port)}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
        yield f"http://127.0.0.1:{port}/mcp"


@contextlib.contextmanager
def slow_http(script: str) -> Iterator[str]:
    """``script`` serving Streamable HTTP on a free port once it has slept: its URL at once
    (nothing listens there yet)."""
    port = free_port()
    command = server_command("slow_start", DELAY, script, "--http", str(port))
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc)


def entry(command: list[str]) -> dict[str, Any]:
    return {"command": command[0], "args": command[1:]}


async def test_five_servers_from_one_file(everything_url: str, tmp_path: Path) -> None:
    log = tmp_path / "flaky.log"
    progress: list[tuple[str, float]] = []
    with slow_http("official_features.py") as official_url:
        config = tmp_path / "mcp.json"
        config.write_text(
            json.dumps(
                {
                    "mcpServers": {
                        "slow": entry(server_command("slow_start", DELAY, "fastmcp_server.py")),
                        "weather": {"command": sys.executable, "args": ["-c", BROKEN]},
                        "flaky": entry(server_command("resilient", str(log))),
                        "everything": {"type": "http", "url": everything_url},
                        "official": {"url": official_url},
                    }
                }
            )
        )
        group = ClientGroup.from_config(
            config,
            ClientOptions(retry=RetryPolicy(3, initial_delay=0.05)),
            on_progress=lambda server, value, total, message: progress.append((server, value)),
        )
        with anyio.fail_after(LIMIT):
            async with group:
                servers = group.servers
                assert {name: s.state for name, s in servers.items()} == {
                    "slow": "ready",
                    "weather": "failed",
                    "flaky": "ready",
                    "everything": "ready",
                    "official": "ready",
                }, {name: s.error for name, s in servers.items()}
                weather = servers["weather"].error
                assert weather is not None
                assert "cannot start: WEATHER_API_KEY is not set" in weather
                assert (servers["slow"].era, servers["everything"].era, servers["official"].era) == ("modern", "legacy", "modern")

                tools = {tool.name for tool in await group.list_tools()}
                assert {"slow.echo", "slow.add", "flaky.lookup", "everything.echo", "official.echo", "official.add"} <= tools
                assert {t.split(".")[0] for t in tools} == {"slow", "flaky", "everything", "official"}
                assert {r.uri for r in await group.list_resources()} >= {"data://one", "data://hello"}
                assert text(await group.call_tool("slow.echo", {"text": "a"})) == "a"
                assert text(await group.call_tool("everything.echo", {"message": "b"})) == "Echo: b"
                assert (await group.call_tool("official.add", {"a": 2, "b": 40})).structured_content == {"result": 42}
                assert (await group.read_resource("data://hello")).contents[0].text == "hello world"
                greeting = await group.get_prompt("slow.greet", {"name": "Ada"})
                assert greeting.messages[0].content.text == "Greet Ada in a plain style."  # type: ignore[union-attr]
                ran = await group.call_tool("everything.trigger-long-running-operation", {"duration": 0.2, "steps": 2})
                assert "completed" in text(ran)
                assert progress == [("everything", 1), ("everything", 2)]

                # flaky dies mid-call and comes back; nobody else notices
                lookup = asyncio.create_task(group.call_tool("flaky.lookup", {"tag": "x"}))
                await until(lambda: logged(log, "lookup x") == 1, what="the lookup running")
                with pytest.raises(ConnectionClosed):
                    await group.call_tool("flaky.crash")
                assert text(await group.call_tool("everything.echo", {"message": "during"})) == "Echo: during"
                assert text(await lookup).startswith("lookup x by ")
                await until(lambda: group.state("flaky").healthy, what="flaky ready again")
                assert group.state("flaky").restarts == 1

                # 200 calls mixed across the group: every one answered, and right
                async def one(i: int) -> tuple[int, str]:
                    kind = i % 4
                    if kind == 0:
                        return i, text(await group.call_tool("slow.echo", {"text": f"s{i}"}))
                    if kind == 1:
                        return i, text(await group.call_tool("everything.echo", {"message": f"e{i}"}))
                    if kind == 2:
                        return i, text(await group.call_tool("official.echo", {"text": f"o{i}"}))
                    return i, text(await group.call_tool("flaky.record", {"text": f"f{i}"}))

                answers = dict(await asyncio.gather(*(one(i) for i in range(200))))
                expected = {i: (f"s{i}", f"Echo: e{i}", f"o{i}", "recorded")[i % 4] for i in range(200)}
                assert answers == expected
                assert all(logged(log, f"record f{i}") == 1 for i in range(3, 200, 4))

                # the group's tools offered to a model and a recorded call made, in each format
                for fmt in FORMATS:
                    offered = await group.llm_tools(fmt)
                    names = [d["name"] if fmt != "openai" else d["function"]["name"] for d in offered.definitions]
                    assert "everything_echo" in names
                    assert "official_add" in names
                    response = recorded(fmt, ("everything_echo", {"message": fmt}), ("official_add", {"a": 1, "b": 2}))
                    calls = offered.calls(response)
                    assert [(c.id, c.name) for c in calls] == list(
                        zip(CALL_IDS[fmt], ("everything.echo", "official.add"), strict=True)
                    )
                    results = [await group.call_tool(c.name, c.arguments) for c in calls]
                    back = [offered.result(c, r) for c, r in zip(calls, results, strict=True)]
                    said = json.dumps(back)
                    assert f"Echo: {fmt}" in said
                    assert "3" in said
                    assert all(CALL_IDS[fmt][i] in json.dumps(back[i]) for i in range(2))

                with pytest.raises(McpError, match=r"not up: weather \(failed\)"):
                    await group.call_tool("weather.forecast")


@pytest.mark.parametrize(
    "pinned", [pytest.param(None, id="auto"), pytest.param(MODERN, id="modern"), pytest.param(LEGACY, id="legacy")]
)
async def test_slow_servers_connect_in_every_era_without_tuning(pinned: str | None, tmp_path: Path) -> None:
    with slow_http("official_features.py") as url:
        doc = {
            "servers": {
                "fast": {"type": "stdio", **entry(server_command("slow_start", DELAY, "fastmcp_server.py"))},
                "official": {"type": "stdio", **entry(server_command("slow_start", DELAY, "official_features.py"))},
                "web": {"type": "http", "url": url},
            }
        }
        changed: list[tuple[str, str]] = []
        options = ClientOptions(protocol_version=pinned)
        with anyio.fail_after(LIMIT):
            async with ClientGroup.from_config(doc, options, on_list_changed=lambda s, k: changed.append((s, k))) as group:
                states = group.servers
                assert {name: s.state for name, s in states.items()} == dict.fromkeys(states, "ready"), {
                    name: s.error for name, s in states.items()
                }
                era = "legacy" if pinned == LEGACY else "modern"
                assert {s.era for s in states.values()} == {era}
                for server in states:
                    assert text(await group.call_tool(f"{server}.echo", {"text": server})) == server
                # a server that announces a new tool (modern: on the group's listen stream;
                # legacy: on its session) has it in the group's list
                changed.clear()
                assert text(await group.call_tool("official.grow", {"name": "grown"})) == "grew grown"
                await until(lambda: ("official", "tools") in changed, timeout=30, what="the official server's change")
                assert "official.grown" in {tool.name for tool in await group.list_tools()}
                assert text(await group.call_tool("official.grown")) == "I am grown"
