"""Answers of 1 MiB and more over a real stdio pipe, to a client that reads slowly: each
arrives whole, and those sent behind it wait their turn (src/mcpkit/transports/stdio/pipes.py)."""

from __future__ import annotations

import fcntl
import json
import subprocess
import sys
import termios
import time
from typing import Any

from support.paths import ROOT
from support.waiting import wait_until


def _unread(pipe: Any) -> int:
    """How many bytes wait in ``pipe`` (the kernel's count: nothing is read)."""
    return int.from_bytes(fcntl.ioctl(pipe.fileno(), termios.FIONREAD, b"\0\0\0\0"), sys.byteorder)


def test_large_answers_and_those_sent_behind_them_arrive_whole() -> None:
    """Answers of 1 MiB and more are written straight from their bytes (transports/stdio/pipes.py),
    and every answer sent while one is still going out waits behind it: over a real stdio
    pipe, to a client that reads slowly, each answer arrives whole, none cut into another."""
    script = ROOT / "benchmarks" / "perf" / "servers" / "mcpkit_server.py"
    proc = subprocess.Popen(
        [sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    calls: list[tuple[str, dict[str, Any]]] = [
        ("blob", {"size": 3_000_000}),
        ("echo", {"text": "after the first"}),
        ("blob", {"size": 1_500_000}),
        ("echo", {"text": "after the second"}),
        ("blob", {"size": 10}),
    ]
    lines = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}]
    lines += [{"jsonrpc": "2.0", "method": "notifications/initialized"}]
    lines += [
        {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": name, "arguments": args}}
        for i, (name, args) in enumerate(calls, 1)
    ]
    try:
        proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in lines))
        proc.stdin.flush()
        # The answers fill the pipe (64 KiB on Linux): the server waits for the client.
        wait_until(lambda: _unread(proc.stdout) >= 65536, what="the server has filled its stdout pipe")
        answers = []
        for _ in range(len(calls) + 1):
            line = b""
            while not line.endswith(b"\n"):
                chunk = proc.stdout.readline(200_000)  # slowly, a piece at a time
                assert chunk, "the server closed its stdout"
                line += chunk
                time.sleep(0.001)  # a slow reader is what is tested: the server must wait for it
            answers.append(json.loads(line))
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()
    by_id = {a["id"]: a for a in answers}  # concurrent calls may finish in any order
    assert sorted(by_id) == list(range(len(calls) + 1))
    texts = [by_id[i]["result"]["content"][0]["text"] for i in range(1, len(calls) + 1)]
    expected = ["x" * 3_000_000, "after the first", "x" * 1_500_000, "after the second", "x" * 10]
    assert [len(t) for t in texts] == [len(e) for e in expected]
    assert texts == expected
