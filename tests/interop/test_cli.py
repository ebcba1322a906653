"""Interop: the mcpkit command against @modelcontextprotocol/server-everything, and mcpkit dev
with the MCP Inspector (both npm, pinned in tests/support/peers.py)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import urllib.request
from pathlib import Path

import pytest

from support import peers
from support.cli import APP, MCPKIT, as_json, mcpkit, run_in_pty
from support.ports import free_port
from support.processes import wait_port

pytestmark = pytest.mark.timeout(60)


def test_against_server_everything(everything: list[str]) -> None:
    target = " ".join(everything)
    listed = mcpkit("list", target, "--json", timeout=60)
    assert listed.returncode == 0, listed.stderr
    tools = [t["name"] for t in as_json(listed)["tools"]]
    assert {"echo", "get-sum", "trigger-long-running-operation"} <= set(tools)
    echoed = mcpkit("call", target, "echo", '{"message": "hi from mcpkit"}', timeout=60)
    assert echoed.returncode == 0, echoed.stderr
    assert "hi from mcpkit" in echoed.stdout
    total = as_json(mcpkit("call", target, "get-sum", "-a", "a=2", "-a", "b=40", "--json", timeout=60))
    assert "42" in total["content"][0]["text"]
    assert mcpkit("call", target, "no-such-tool", timeout=60).returncode in (1, 2)
    code, screen = run_in_pty([*MCPKIT, "call", target, "trigger-long-running-operation", '{"duration": 1, "steps": 4}'])
    assert code == 0, screen
    assert "Long running operation completed" in screen
    assert "4/4" in screen
    assert "━" in screen


@pytest.mark.timeout(180)
def test_dev_serves_the_app_and_the_inspector(inspector: peers.Inspector, tmp_path: Path) -> None:
    port, ui_port = free_port(), free_port()
    env = {**os.environ, "MCPKIT_INSPECTOR_DIR": str(peers.INSPECTOR_PREFIX), "HOME": str(tmp_path)}
    command = [*MCPKIT, "dev", APP, "--port", str(port), "--inspector-port", str(ui_port), "--no-open"]
    proc = subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        wait_port(ui_port, proc, 90)
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/", timeout=10) as page:
            assert page.status == 200
            assert b"<html" in page.read().lower()
        called = mcpkit("call", f"http://127.0.0.1:{port}/mcp", "echo", "-a", "text=dev")
        assert (called.returncode, called.stdout) == (0, "dev\n"), called.stderr
        proc.send_signal(signal.SIGINT)
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stdout is not None
        output = proc.stdout.read().decode(errors="replace")
        proc.stdout.close()
    assert "MCP Inspector" in output
    for closed in (port, ui_port):
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", closed), 0.5).close()
