"""Interop: mcpkit's client against @modelcontextprotocol/server-everything's task-based tool
(the 2025-11-25 experimental tasks: npm, pinned in tests/support/peers.py), over stdio and
Streamable HTTP."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mcpkit import (
    Client,
    ClientOptions,
    ElicitRequestParams,
    ElicitResult,
    HttpTransport,
    McpError,
    StdioTransport,
    TextContent,
)
from support.peers import EVERYTHING, PEERS
from support.ports import free_port
from support.processes import listening

LIMIT = 30.0


def text(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def _interpretation(request: ElicitRequestParams) -> ElicitResult:
    assert request.requested_schema is not None
    assert request.requested_schema["required"] == ["interpretation"]
    return ElicitResult(action="accept", content={"interpretation": "programming"})


@pytest.fixture(scope="module")
def everything_url(node: str) -> Iterator[str]:
    """server-everything's Streamable HTTP mode on a free loopback port."""
    port = free_port()
    command = [node, str(PEERS / "node_modules" / EVERYTHING / "dist" / "index.js"), "streamableHttp"]
    env = {**os.environ, "PORT": str(port)}
    with listening(command, port, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.mark.parametrize("where", ["stdio", "http"])
async def test_server_everything_task(everything: list[str], everything_url: str, where: str) -> None:
    """``simulate-research-query`` (``taskSupport: "required"``) from mcpkit's client: the
    task is created, polled, asks its question on ``tasks/result`` (answered by
    ``on_elicit``) and completes; another is cancelled."""
    transport = StdioTransport(everything, stderr="devnull") if where == "stdio" else HttpTransport(everything_url)
    async with asyncio.timeout(LIMIT), Client(transport, ClientOptions(on_elicit=_interpretation, request_timeout=10)) as client:
        assert client.era == "legacy"
        assert client.server_capabilities["tasks"]["requests"] == {"tools": {"call": {}}}
        started = time.monotonic()
        handle = await client.start_task("simulate-research-query", {"topic": "python", "ambiguous": True}, ttl=60)
        assert handle.task is not None
        assert (handle.status, handle.task.poll_interval_ms) == ("working", 1000)
        report = text(await handle.wait(timeout=LIMIT))
        assert report.startswith("# Research Report: python (programming)")
        assert "- **Clarification**: programming" in report
        assert time.monotonic() - started >= 3  # four stages of a second each, polled
        assert handle.task_id is not None
        assert (await client.get_task(handle.task_id)).status == "completed"
        doomed = await client.start_task("simulate-research-query", {"topic": "doom"})
        await doomed.cancel()
        with pytest.raises(McpError) as cancelled:
            await doomed.wait(timeout=LIMIT)
        assert cancelled.value.code == -32800
        assert doomed.task_id is not None
        assert (await client.get_task(doomed.task_id)).status == "cancelled"
