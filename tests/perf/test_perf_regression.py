"""The performance regression check: mcpkit stays well ahead of the official SDK (``mcp``
2.3.0, from the test extra) on stdio echo, HTTP echo and ``tools/list`` of 500 tools.

It runs ``benchmarks/run.py check`` (docs/performance.md): both servers side by side, short
bursts of load alternating between them, ratios of requests/s held to floors set far below
what a quiet machine shows, so that a loaded machine does not fail it; a check below its
floor is run once more before it fails. Every answer is checked. It takes about 30 s on
two quiet cores, under a minute on a loaded one.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mcpkit.runtime.threads import run_sync
from mcpkit.server.validate import _Simple, compile_schema
from support.paths import ROOT

pytestmark = pytest.mark.timeout(300)  # the check; the other tests take well under a second

#: The floors the check holds mcpkit to (benchmarks/mcpbench/check.py), by check id.
FLOORS = {"stdio_echo_c1": 3.0, "http_echo_c16": 1.5, "stdio_list500": 8.0}


def test_mcpkit_stays_ahead_of_the_official_sdk(tmp_path: Path) -> None:
    report = tmp_path / "check.json"
    command = [sys.executable, str(ROOT / "benchmarks" / "run.py"), "check", "--json", str(report)]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=280, check=False)
    summary = proc.stderr.strip()
    assert report.exists(), f"the check did not finish (exit {proc.returncode}):\n{summary}"
    checks = {c["id"]: c for c in json.loads(report.read_text())["checks"]}
    assert {k: c["floor"] for k, c in checks.items()} == FLOORS
    failed = [c for c in checks.values() if not c["passed"]]
    assert not failed, (
        "mcpkit fell below its floor against the official SDK (a performance regression, or a machine "
        "too loaded to measure: rerun `python benchmarks/run.py check`, and compare with the table of "
        f"docs/performance.md):\n{summary}"
    )
    assert proc.returncode == 0, summary


# --------------------------------------------------------------------------- fast paths answer as the slow ones

_FLAT = [
    {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "default": 1},
            "x": {"anyOf": [{"type": "number"}, {"type": "null"}], "default": None},
            "mode": {"type": "string", "enum": ["a", "b"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "flag": {"type": ["boolean", "null"]},
        },
        "required": ["n"],
        "additionalProperties": False,
    },
]
_INSTANCES: list[Any] = [
    {"text": "t"},
    {"text": 1},
    {},
    {"text": "t", "other": 1},
    {"n": 1},
    {"n": True},
    {"n": 2.0},
    {"n": 2.5},
    {"n": 1, "x": 1.5},
    {"n": 1, "x": float("nan")},
    {"n": 1, "x": float("inf")},
    {"n": 1, "x": None},
    {"n": 1, "mode": "a"},
    {"n": 1, "mode": "c"},
    {"n": 1, "mode": 1},
    {"n": 1, "tags": ["a", "b"]},
    {"n": 1, "tags": ["a", 2]},
    {"n": 1, "flag": None},
    {"n": 1, "flag": 0},
    {"n": 1, "unknown": 0},
    [],
    "text",
]


@pytest.mark.parametrize("schema", _FLAT)
def test_the_validators_fast_path_answers_as_the_full_check(schema: dict[str, Any]) -> None:
    fast = compile_schema(schema, trusted=True)
    assert isinstance(fast, _Simple)
    assert fast._plan is not None
    full = _Simple(schema)
    full._plan = None  # the full check alone
    answers = [(fast.describe(i), full.describe(i)) for i in _INSTANCES]
    assert all(a == b for a, b in answers), answers
    assert any(a is None for a, _ in answers)
    assert any(a is not None for a, _ in answers)


def test_plain_def_calls_finishing_together_each_get_their_own_outcome() -> None:
    def work(i: int) -> int:
        if i % 7 == 0:
            raise ValueError(f"no {i}")
        return i * 2

    async def main() -> None:
        outcomes = await asyncio.wait_for(asyncio.gather(*(run_sync(work, i) for i in range(200)), return_exceptions=True), 30)
        for i, out in enumerate(outcomes):
            if i % 7 == 0:
                assert isinstance(out, ValueError)
                assert str(out) == f"no {i}"
            else:
                assert out == i * 2
        slow = asyncio.ensure_future(run_sync(time.sleep, 0.2))
        await asyncio.sleep(0.01)
        slow.cancel()
        with pytest.raises(asyncio.CancelledError):
            await slow
        assert await asyncio.wait_for(run_sync(work, 1), 5) == 2  # the pool still answers

    for _ in range(3):  # a fresh loop each time: each has its own delivery
        asyncio.run(main())


def test_large_answers_and_those_sent_behind_them_arrive_whole() -> None:
    """Answers of 1 MiB and more are written straight from their bytes (transports/pipes.py),
    and every answer sent while one is still going out waits behind it: over a real stdio
    pipe, to a client that reads slowly, each answer arrives whole, none cut into another."""
    script = ROOT / "benchmarks" / "servers" / "mcpkit_server.py"
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
        time.sleep(0.3)  # the answers fill the pipe: the server waits for the client
        answers = []
        for _ in range(len(calls) + 1):
            line = b""
            while not line.endswith(b"\n"):
                chunk = proc.stdout.readline(200_000)  # slowly, a piece at a time
                assert chunk, "the server closed its stdout"
                line += chunk
                time.sleep(0.001)
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


def test_http_is_served_on_httptools_and_uvloop_when_installed() -> None:
    """The test extra installs the http extra's stack: run_uvicorn's default is the guard
    over uvicorn's httptools protocol on uvloop (docs/http.md, "The HTTP stack"); h11 is
    still there when asked for, guarded the same way, and a protocol class replaces the guard."""
    from uvicorn.protocols.http.h11_impl import H11Protocol
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    from mcpkit import Server
    from mcpkit.transports.http.server.uvicorn import guarded_protocol, uvicorn_config

    app = Server("stack", "1.0.0").asgi_app()
    config = uvicorn_config(app, max_connections=7)
    assert config.loop == "auto"
    loop_factory = config.get_loop_factory()
    assert loop_factory is not None
    loop = loop_factory()
    try:
        assert type(loop).__module__.startswith("uvloop")
    finally:
        loop.close()
    default = config.http
    assert isinstance(default, type)
    assert issubclass(default, HttpToolsProtocol)
    assert default._max_connections == 7  # type: ignore[attr-defined]
    forced = uvicorn_config(app, http="h11", header_timeout=2.0).http
    assert isinstance(forced, type)
    assert issubclass(forced, H11Protocol)
    assert forced._header_timeout == 2.0  # type: ignore[attr-defined]
    assert uvicorn_config(app, http=H11Protocol).http is H11Protocol
    with pytest.raises(ValueError, match="http must be"):
        guarded_protocol(1.0, 1.0, 1, http="zttp")
