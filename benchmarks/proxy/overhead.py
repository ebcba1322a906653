"""What a proxy adds to a call: sequential ``tools/call`` of a trivial tool, straight to a
server and through an mcpkit ``Proxy`` that spawns the same server over stdio, in both
eras, over stdio and over Streamable HTTP; latency per call and, over HTTP, the CPU time
per call of each process (docs/performance.md, "Proxy overhead").

``python benchmarks/proxy/overhead.py [--calls N]`` prints a Markdown table. The server is
tests/support/servers/composed.py's ``hello``; absolute times drift on shared machines:
read the differences between lines of one run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mcpkit import Client, ClientOptions, HttpTransport, StdioTransport

ROOT = Path(__file__).resolve().parents[2]
SERVER = str(ROOT / "tests" / "support" / "servers" / "composed.py")
PROXY = """
import sys
from mcpkit import ClientOptions, Proxy, StdioTransport
era, server = sys.argv[1], sys.argv[2]
proxy = Proxy(StdioTransport([sys.executable, server], stderr="devnull"), client_options=ClientOptions(protocol_version=era))
proxy.run("http", port=int(sys.argv[3])) if len(sys.argv) > 3 else proxy.run()
"""
ERAS = ("2025-11-25", "2026-07-28")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_port(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{proc.args} exited during start-up")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise SystemExit(f"{proc.args} did not listen on {port}")


def cpu(pid: int) -> tuple[float, float]:
    """Seconds of CPU of ``pid`` and of its children."""

    def of(p: int) -> float:
        fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    children = [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    return of(pid), sum(of(c) for c in children)


async def measure(transport: Any, era: str, calls: int, pid: int | None = None) -> tuple[float, tuple[float, float]]:
    """Microseconds per call, and per call of CPU (the process ``pid``, its children)."""
    async with Client(transport, ClientOptions(protocol_version=era)) as client:
        for _ in range(50):
            await client.call_tool("hello")
        before = cpu(pid) if pid is not None else (0.0, 0.0)
        start = time.perf_counter()
        for _ in range(calls):
            await client.call_tool("hello")
        elapsed = time.perf_counter() - start
        after = cpu(pid) if pid is not None else (0.0, 0.0)
    per_call = tuple((b - a) / calls * 1e6 for a, b in zip(before, after, strict=True))
    return elapsed / calls * 1e6, (per_call[0], per_call[1])


@contextlib.contextmanager
def serving(command: list[str]) -> Iterator[tuple[int, int]]:
    """``command PORT`` started and listening: its port and pid; terminated after."""
    port = free_port()
    proc = subprocess.Popen([*command, str(port)], stderr=subprocess.DEVNULL)
    try:
        wait_port(port, proc)
        yield port, proc.pid
    finally:
        proc.terminate()
        proc.wait()


async def over_http(command: list[str], era: str, calls: int) -> tuple[float, tuple[float, float]]:
    with serving(command) as (port, pid):
        return await measure(HttpTransport(f"http://127.0.0.1:{port}/mcp"), era, calls, pid)


async def main(calls: int) -> None:
    print("| era | path | µs per call | CPU µs per call: server (proxy) | CPU µs per call: upstream |")
    print("| --- | --- | --- | --- | --- |")
    for era in ERAS:
        direct, _ = await measure(StdioTransport([sys.executable, SERVER], stderr="devnull"), era, calls)
        proxied, _ = await measure(StdioTransport([sys.executable, "-c", PROXY, era, SERVER], stderr="devnull"), era, calls)
        print(f"| {era} | stdio, direct | {direct:.0f} | | |")
        print(f"| {era} | stdio, through a proxy | {proxied:.0f} | | |")
        direct, (server, _) = await over_http([sys.executable, SERVER, "--http"], era, calls)
        proxied, (proxy, upstream) = await over_http([sys.executable, "-c", PROXY, era, SERVER], era, calls)
        print(f"| {era} | HTTP, direct | {direct:.0f} | {server:.0f} | |")
        print(f"| {era} | HTTP, through a proxy (upstream over stdio) | {proxied:.0f} | {proxy:.0f} | {upstream:.0f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000)
    asyncio.run(main(parser.parse_args().calls))
