"""The programs of examples/ run as the docs say and show what they promise: the
error-handling walkthrough (as the README says, over stdio and over HTTP) and the resilient
client (a supervised server, retries, a fallback)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from support.paths import ROOT

WALKTHROUGH = ROOT / "examples" / "error_handling.py"

EXPECTED = [
    "tool error (isError: true): Intentional error: test error",
    "tool error (isError: true): Application error with code 42",
    "tool error (isError: true): KeyError: 'required_field'",
    "McpError -32602 (sent by the server): Unknown tool: no_such_tool",
    "Invalid arguments for tool throw_error",
    "McpError -32602 (sent by the server): Widget id must be 8 hexadecimal digits",
    "ok: Hello from the error demo!",
    "McpError -32603 (sent by the server): Internal error",
    "Resource not found",
    "McpError -32601 (sent by the server): Method not found: tools/frobnicate",
    "RequestTimeout -32001 (raised locally): Request timed out",
    "asyncio.CancelledError in the caller",
    "asked Delete every file matching '*.log'?",
    "Nothing deleted: the user chose 'decline'.",
    "ok: Success: still here",
]


@pytest.mark.parametrize("args", [[], ["--http"]], ids=["stdio", "http"])
def test_walkthrough(args: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, str(WALKTHROUGH), *args], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = " ".join(proc.stdout.split())  # undo the transcript's line wrapping
    for line in EXPECTED:
        assert " ".join(line.split()) in out, f"missing from the transcript: {line}\n{proc.stdout}"
    # secrets from the failing resource and prompt handlers never reach the client
    assert "/srv/secret" not in proc.stdout
    assert "/srv/prompts" not in proc.stdout
    assert "speaking 2026-07-28 (modern era)" in proc.stdout


def test_the_resilient_client_example_runs() -> None:
    """examples/resilient_client.py: a supervised server, retries, and a fallback once the client gives up."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "resilient_client.py")],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert out.splitlines() == [
        "quote: ACME 42.00",
        "order: ConnectionClosed, not sent again",
        "quote after the restart: ACME 42.00",
        "the feed crashed: the client restarted it",
        "fallback: cached quote ACME 41.50",
        "events: attempt=3 disconnect=2 restart=1 reconnect=1 reconnect_failed=1",
    ], proc.stderr
