"""A node behind HAProxy dies, with kept-alive client connections (docs/deploy.md): only the
calls on that node fail, the rest go on, and the client carries on through HAProxy. Two
processes of tests/support/servers/resilient.py behind Debian's HAProxy (from
scripts/setup_tests.py)."""

from __future__ import annotations

import asyncio
import contextlib
import types
from pathlib import Path

import pytest

from mcpkit import (
    Client,
    ClientOptions,
    ConnectionClosed,
    HttpTransport,
    RetryPolicy,
)
from support.eras import MODERN
from support.nodes import haproxy, haproxy_config, require_binaries
from support.ports import free_port
from support.resilient import Events, logged, resilient_server
from support.waiting import until

pytestmark = pytest.mark.timeout(90)


async def test_a_node_dying_behind_haproxy_with_keep_alive_costs_only_its_requests(tmp_path: Path) -> None:
    """Two nodes behind HAProxy without ``option httpclose`` (docs/deploy.md): when one
    dies mid-request, HAProxy closes those kept-alive client connections without a
    response. Only the calls on that node fail (ConnectionClosed, never sent again); the
    calls on the other node go on, and the same client carries on through HAProxy."""
    require_binaries()
    logs = {"A": tmp_path / "a.log", "B": tmp_path / "b.log"}  # each node's log says which calls it runs
    ports = {"A": free_port(), "B": free_port()}
    front = free_port()
    seen = Events()
    async with contextlib.AsyncExitStack() as stack:
        procs = {label: await stack.enter_async_context(resilient_server(logs[label], p)) for label, p in ports.items()}
        nodes = [types.SimpleNamespace(label=label, port=p) for label, p in ports.items()]
        stack.enter_context(haproxy(haproxy_config({front: nodes}, keep_alive=(front,)), tmp_path, [front]))
        options = ClientOptions(protocol_version=MODERN, retry=RetryPolicy(4, initial_delay=0.1), on_event=seen)
        async with Client(HttpTransport(f"http://127.0.0.1:{front}/mcp"), options) as client:
            await client.list_tools()
            await asyncio.gather(*(client.call_tool("pid") for _ in range(6)))  # six kept-alive connections
            tags = [f"c{i}" for i in range(6)]
            charges = {tag: asyncio.create_task(client.call_tool("charge", {"tag": tag})) for tag in tags}

            def on(label: str) -> set[str]:
                return {tag for tag in tags if logged(logs[label], f"charge {tag}")}

            await until(lambda: on("A") | on("B") == set(tags), what="every charge reached a node")
            on_a, on_b = on("A"), on("B")
            assert on_a  # round robin: some run on A,
            assert on_b  # the others on B
            assert not on_a & on_b
            procs["A"].kill()
            await procs["A"].wait()
            await until(lambda: all(charges[tag].done() for tag in on_a), what="the calls on A failed")
            for tag in on_a:
                assert isinstance(charges[tag].exception(), ConnectionClosed), charges[tag].exception()
            assert not any(charges[tag].done() for tag in on_b)  # the calls on B still run
            assert client.is_connected
            pids = {(await client.call_tool("pid")).structured_content["result"] for _ in range(6)}
            assert pids == {procs["B"].pid}  # HAProxy sends everything to B now
            assert not any(charges[tag].done() for tag in on_b)
            for task in charges.values():
                task.cancel()
            await asyncio.gather(*charges.values(), return_exceptions=True)
    assert all(logged(logs["A"], f"charge {tag}") + logged(logs["B"], f"charge {tag}") == 1 for tag in tags)  # none sent again
    assert seen.of("disconnect") == []
