"""Hostile: a modern client calling tools that do not exist, each with a new ~8 KB name,
must not grow the server. The header rules that ``Mcp-Param-*`` headers are checked
against are computed once per registered tool; an unknown name leaves nothing behind.
(Before the fix every such call added an entry to a cache that was never evicted:
+158 MB over 20,000 calls.)"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from conftest import MODERN, SERVERS

pytestmark = pytest.mark.timeout(60)

META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server() -> Iterator[tuple[str, int]]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(SERVERS / "httpsrv_basic.py"), str(port)], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            assert proc.poll() is None, "server exited"
            assert time.monotonic() < deadline, "server did not start listening within 20 s"
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp", proc.pid
    finally:
        proc.terminate()
        proc.wait(10)


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
        before = _rss_kib(pid)
        for i in range(calls):
            resp = _call(http, url, f"t{i:06d}-" + "x" * 8000)
            assert resp.status_code == 400
            error = resp.json()["error"]
            assert error["code"] == -32602
            assert len(error["message"]) <= 300  # "Unknown tool: …", bounded
        growth_mib = (_rss_kib(pid) - before) / 1024
        assert _call(http, url, "echo").status_code == 400  # known tool, missing argument: still served
    # ~8 KB per call would be ~20 MB here; a flat process stays within allocator noise.
    assert growth_mib < 6, f"RSS grew by {growth_mib:.1f} MiB over {calls} calls"
