"""Hostile: a modern client calling tools that do not exist, each with a new ~8 KB name,
must not grow the server. The header rules that ``Mcp-Param-*`` headers are checked
against are computed once per registered tool; an unknown name leaves nothing behind.
(Before the fix every such call added an entry to a cache that was never evicted:
+158 MB over 20,000 calls.)"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest

from support.eras import MODERN
from support.paths import SERVERS
from support.ports import free_port
from support.processes import listening, rss_kib

pytestmark = pytest.mark.timeout(300)  # thousands of 8 KB requests: minutes on a loaded machine, never a verdict

META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


@pytest.fixture
def server() -> Iterator[tuple[str, int]]:
    port = free_port()
    with listening([sys.executable, str(SERVERS / "httpsrv_basic.py"), str(port)], port, stdout=subprocess.DEVNULL) as proc:
        yield f"http://127.0.0.1:{port}/mcp", proc.pid


def _call(http: httpx.Client, url: str, name: str) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": {}, "_meta": META}}
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": name,
    }
    return http.post(url, json=body, headers=headers)


def test_unknown_tool_names_do_not_grow_the_server(server: tuple[str, int]) -> None:
    url, pid = server
    calls = int(os.environ.get("MCPKIT_HOSTILE_CALLS", "2500"))
    with httpx.Client(timeout=10) as http:
        for i in range(300):  # warm-up: allocator arenas, caches of a bounded size
            assert _call(http, url, f"warm-{i:04d}-" + "w" * 8000).status_code == 400
        before = rss_kib(pid)
        for i in range(calls):
            resp = _call(http, url, f"t{i:06d}-" + "x" * 8000)
            assert resp.status_code == 400
            error = resp.json()["error"]
            assert error["code"] == -32602
            assert len(error["message"]) <= 300  # "Unknown tool: …", bounded
        growth_mib = (rss_kib(pid) - before) / 1024
        assert _call(http, url, "echo").status_code == 400  # known tool, missing argument: still served
    # ~8 KB per call would be ~20 MB here; a flat process stays within allocator noise.
    assert growth_mib < 6, f"RSS grew by {growth_mib:.1f} MiB over {calls} calls"
