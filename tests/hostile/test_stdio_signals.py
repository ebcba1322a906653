"""SIGINT and SIGTERM to a server process, over stdio and over HTTP (issue 24, finding 15;
docs/lifespan.md, "Stopping").

Before, over stdio: SIGINT printed a ``KeyboardInterrupt`` traceback and the process died
of the signal (-2), SIGTERM killed it at once (-15) without answering the call in flight;
over HTTP, SIGINT printed the same traceback (-2) and SIGTERM exited -15. After, on both:
reading stops, a call that finishes within the grace is answered, one that does not is
answered -32603 "Server shutting down: the request was cancelled", the process exits 0
and prints nothing; a second signal forces the exit, 130 or 143.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
from typing import Any

import httpx
import pytest

from support.ports import free_port
from support.processes import listening, server_command
from support.wire import META, modern

pytestmark = pytest.mark.timeout(60)

SIGNALS = pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
SHUTTING_DOWN = {"code": -32603, "message": "Server shutting down: the request was cancelled"}


def _line(rid: int, method: str, params: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": {**params, "_meta": META}}).encode() + b"\n"


def _stdio_server(grace: float, *flags: str) -> subprocess.Popen[bytes]:
    command = server_command("hostile_edge", "stdio", str(grace), *flags)
    return subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _napping(proc: subprocess.Popen[bytes], seconds: float) -> None:
    """Start a call of ``nap(seconds)`` and return once its handler runs."""
    assert proc.stdin is not None
    assert proc.stdout is not None
    assert proc.stderr is not None
    proc.stdin.write(_line(1, "tools/list", {}))
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 1  # the server is up and reading
    proc.stdin.write(_line(2, "tools/call", {"name": "nap", "arguments": {"seconds": seconds}}))
    proc.stdin.flush()
    assert proc.stderr.readline() == b"napping\n"


def _answer_then_exit(proc: subprocess.Popen[bytes]) -> tuple[int, dict[str, Any], list[bytes], str]:
    """After the signal: the answer to the call in flight; then a request written once it
    has come (reading has stopped: it must stay unanswered), and the exit: (exit status,
    the answer, what else was written, stderr)."""
    assert proc.stdin is not None
    assert proc.stdout is not None
    answer = json.loads(proc.stdout.readline())
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.write(_line(3, "tools/list", {}))
        proc.stdin.flush()
    out, err = proc.communicate(timeout=30)
    return proc.returncode, answer, out.splitlines(), err.decode(errors="replace")


@SIGNALS
def test_stdio_answers_the_call_in_flight_then_exits_0(sig: signal.Signals) -> None:
    proc = _stdio_server(grace=20)
    _napping(proc, 2)
    proc.send_signal(sig)
    status, answer, rest, err = _answer_then_exit(proc)
    assert (status, rest, err) == (0, [], "")
    assert (answer["id"], answer["result"]["content"][0]["text"]) == (2, "slept")


@SIGNALS
def test_stdio_cancels_and_answers_what_outlasts_the_grace_then_exits_0(sig: signal.Signals) -> None:
    proc = _stdio_server(grace=0.5)
    _napping(proc, 60)
    proc.send_signal(sig)
    status, answer, rest, err = _answer_then_exit(proc)
    assert (status, rest, err) == (0, [], "")
    assert answer == {"jsonrpc": "2.0", "id": 2, "error": SHUTTING_DOWN}


@SIGNALS
def test_stdio_a_second_signal_forces_the_exit(sig: signal.Signals) -> None:
    proc = _stdio_server(60, "log")  # the server logs when it has the signal: the second must come apart
    assert proc.stderr is not None
    _napping(proc, 60)
    proc.send_signal(sig)
    assert b"stopping once the requests in progress are answered" in proc.stderr.readline()
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + sig, err
    assert err.decode(errors="replace").splitlines() == [f"mcpkit.server: {sig.name} again: stopping at once"]
    assert [json.loads(line)["id"] for line in out.splitlines()] in ([], [2])  # the forced stop answers what it can


@SIGNALS
def test_http_exits_0_after_a_graceful_stop(sig: signal.Signals) -> None:
    port = free_port()
    with listening(server_command("hostile_edge", "http", str(port)), port, stderr=subprocess.PIPE) as proc:
        body, headers = modern("tools/call", {"name": "echo", "arguments": {"text": "up"}})
        assert httpx.post(f"http://127.0.0.1:{port}/mcp", json=body, headers=headers, timeout=10).status_code == 200
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    assert (proc.returncode, err.decode(errors="replace")) == (0, "")
