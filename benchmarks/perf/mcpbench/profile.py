"""Profiles of mcpkit's hot paths with py-spy (the ``bench`` extra pins it), summarised.

Each profile samples one process under load, only while a thread holds the GIL (py-spy
``--gil``: the Python work, without the time spent waiting for the next request, a lock
or a worker thread), and writes the collapsed stacks to
``.cache/bench/profiles/<date>/<name>.txt`` (open them in speedscope.app, or feed them to
flamegraph.pl) and a summary: the functions with the largest share of samples on their
own ("self") and below them ("total"), and the share of each package. Alongside: what one
request cost the process in CPU time (user and system: system time is the pipe and socket
syscalls the samples leave out) and in context switches (a thread hop costs two or more).

- ``server_stdio_echo_c1`` / ``_c32``: the mcpkit server over stdio, driven by the harness
  with echo at 1 and 32 in flight (legacy era, a plain ``def`` tool);
- ``server_stdio_error`` / ``server_stdio_blob``: the same with the tool that raises (1 in
  flight), and with the 10 MB result (1 in flight);
- ``server_http_echo`` / ``_modern``: the mcpkit server over HTTP, 16 connections, legacy
  sessions or modern stateless requests;
- ``client_stdio_echo`` / ``client_http_echo``: mcpkit's ``Client`` calling echo (the stdio
  floor as its server; over HTTP, the mcpkit server in the modern era).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import datetime
import re
import shutil
import sys
from pathlib import Path

from .http import HttpPeer
from .load import _IDS, phase
from .procs import BenchError, counters, free_port, per_op, spawn_http, stop
from .servers import BENCH, CACHE, Interpreters, Server, log, server
from .stdio import StdioPeer
from .wire import MODERN_META, Blob, Echo, Fail, Request
from .workloads import BLOB_SIZE

ECHO = Echo()
#: The stdio profiles: the request and how many are in flight.
STDIO = {
    "server_stdio_echo_c1": (ECHO, 1),
    "server_stdio_echo_c32": (ECHO, 32),
    "server_stdio_error": (Fail(), 1),
    "server_stdio_blob": (Blob(BLOB_SIZE), 1),
}
PROFILES = (
    *STDIO,
    "server_http_echo",
    "server_http_echo_modern",
    "client_stdio_echo",
    "client_http_echo",
)
_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^():]*)(?::(?P<line>\d+))?\)$")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seconds", type=float, default=8.0, help="seconds of load per profile")
    p.add_argument("--rate", type=int, default=500, help="py-spy samples per second")
    p.add_argument("--only", metavar="NAMES", help=f"comma-separated: {', '.join(PROFILES)}")
    p.add_argument("--top", type=int, default=15, help="functions listed per summary")
    p.add_argument("--out", type=Path, help="folder (default: .cache/bench/profiles/<date>)")


def py_spy() -> str:
    found = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(found).exists():
        raise SystemExit("py-spy is missing: pip install -e '.[bench]'")
    return found


def spy_argv(out: Path, rate: int) -> list[str]:
    return [py_spy(), "record", "--format", "raw", "--gil", "--rate", str(rate), "--output", str(out)]


async def attach(pid: int, out: Path, rate: int) -> asyncio.subprocess.Process:
    spy = await asyncio.create_subprocess_exec(
        *spy_argv(out, rate), "--pid", str(pid), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    await asyncio.sleep(1.0)  # py-spy attaches
    if spy.returncode is not None:
        raise BenchError(f"py-spy failed: {(await spy.stderr.read()).decode()[-400:] if spy.stderr else ''}")
    return spy


async def finish(spy: asyncio.subprocess.Process) -> None:
    """py-spy writes its output when the process it samples exits."""
    try:
        await asyncio.wait_for(spy.wait(), 30)
    except TimeoutError:
        spy.terminate()
        await spy.wait()


async def server_stdio(spec: Server, request: Request, concurrency: int, out: Path, args: argparse.Namespace) -> str:
    peer = StdioPeer(spec.argv())
    await peer.start()
    spy = None
    try:
        await peer.initialize()
        spy = await attach(peer.pid, out, args.rate)
        before = counters(peer.pid)
        tally = await phase([(peer.call, b"")] * concurrency, request, args.seconds)
        cost = per_op(before, counters(peer.pid), len(tally.latencies))
    finally:
        await peer.close()
        if spy is not None:
            await finish(spy)
    s = tally.summary()
    return f"{s['rps']} req/s while sampled, valid: {s['valid']}; {cost}"


async def server_http(spec: Server, modern: bool, out: Path, args: argparse.Namespace) -> str:
    port = free_port()
    proc = await spawn_http(spec.argv(port=port), port, None)
    peers = [HttpPeer(port) for _ in range(16)]
    spy = None
    try:
        sessions = [None] * 16 if modern else await asyncio.gather(*(p.initialize(next(_IDS)) for p in peers))
        calls = [p.caller(ECHO, s) for p, s in zip(peers, sessions, strict=True)]
        assert all(meta == (MODERN_META if modern else b"") for _, meta in calls)
        spy = await attach(proc.pid, out, args.rate)
        before = counters(proc.pid)
        tally = await phase(calls, ECHO, args.seconds)
        cost = per_op(before, counters(proc.pid), len(tally.latencies))
    finally:
        for p in peers:
            p.close()
        await stop(proc)
        if spy is not None:
            await finish(spy)
    s = tally.summary()
    return f"{s['rps']} req/s while sampled, valid: {s['valid']}; {cost}"


async def client(python: str, target: list[str], out: Path, args: argparse.Namespace) -> str:
    script = BENCH / "clients" / "mcpkit_client.py"
    proc = await asyncio.create_subprocess_exec(
        *spy_argv(out, args.rate),
        "--",
        python,
        str(script),
        *target,
        "--seconds",
        str(args.seconds),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await proc.communicate()
    if proc.returncode != 0:
        raise BenchError(f"the client failed: {stderr.decode()[-600:]}")
    lines = [line for line in stdout.decode().splitlines() if line.startswith("{")]  # py-spy talks on stdout too
    return f"the client: {lines[-1] if lines else '?'} (CPU per call over the measured phase)"


def summarise(raw: Path, top: int) -> str:
    """Self and total shares per function, and shares per package, of collapsed stacks."""
    own: collections.Counter[str] = collections.Counter()
    below: collections.Counter[str] = collections.Counter()
    area: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = [f for f in stack.split(";") if not f.startswith("process ") and not f.startswith("thread ")]
        names = [_name(f) for f in frames]
        if names:
            own[names[-1]] += n
            area[_area(frames[-1])] += n
        for name in set(names):
            below[name] += n
    if not total:
        return "no samples"

    def pct(c: int) -> str:
        return f"{100 * c / total:5.1f} %"

    lines = [f"{total} samples", "", "by package (where the sampled frame is):"]
    lines += [f"  {pct(c)}  {a}" for a, c in area.most_common()]
    lines += ["", "self (the function itself is running):"]
    lines += [f"  {pct(c)}  {f}" for f, c in own.most_common(top)]
    lines += ["", "total (the function or what it calls is running):"]
    outer = ("<module>", "main (", "run (", "Runner.run", "BaseEventLoop.run", "Server.run", "asyncio_run", "run_uvicorn")
    lines += [f"  {pct(c)}  {f}" for f, c in below.most_common() if not f.startswith(outer)][:top]
    return "\n".join(lines)


def _name(frame: str) -> str:
    m = _FRAME.match(frame)
    return f"{m['func']} ({m['file']})" if m else frame


def _area(frame: str) -> str:
    m = _FRAME.match(frame)
    path = m["file"] if m else frame
    if path.startswith("mcpkit/"):
        parts = path.split("/")
        return "/".join(parts[:2]) if len(parts) > 2 else path
    top = path.split("/")[0]
    if top.startswith("asyncio") or path in ("selectors.py", "events.py", "base_events.py"):
        return "asyncio"
    if top in ("threading.py", "concurrent", "queue.py") or path.startswith("concurrent/"):
        return "threads (threading, concurrent.futures)"
    if top.endswith(".py") or top in ("json", "logging", "email", "http", "urllib"):
        return f"stdlib: {top}"
    return top


async def main(args: argparse.Namespace, interpreters: Interpreters) -> int:
    folder = args.out or CACHE / "profiles" / datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    folder.mkdir(parents=True, exist_ok=True)
    mcpkit = server("mcpkit", interpreters)
    floor = server("floor", interpreters)
    chosen = [p for p in PROFILES if not args.only or p in args.only.split(",")]
    report = []
    for name in chosen:
        out = folder / f"{name}.txt"
        log(f"== {name}")
        try:
            note = await one(name, mcpkit, floor, out, args)
        except BenchError as exc:
            log(f"  failed: {exc}")
            return 1
        text = summarise(out, args.top) if out.exists() else "py-spy wrote nothing"
        report.append(f"## {name}\n\n{note}\n\n{text}\n")
        (folder / f"{name}.summary.txt").write_text(text + "\n")
        log(report[-1])
    (folder / "summary.md").write_text("\n".join(report))
    log(f"profiles in {folder} (<name>.txt: collapsed stacks for speedscope.app; summary.md)")
    return 0


async def one(name: str, mcpkit: Server, floor: Server, out: Path, args: argparse.Namespace) -> str:
    """Run the profile ``name``; what the load achieved, and what a request cost."""
    if name in STDIO:
        return await server_stdio(mcpkit, *STDIO[name], out, args)
    if name.startswith("server_http"):
        return await server_http(mcpkit, name.endswith("modern"), out, args)
    if name == "client_stdio_echo":
        return await client(mcpkit.python, ["--stdio", " ".join(floor.argv())], out, args)
    port = free_port()
    proc = await spawn_http(mcpkit.argv(port=port), port, None)
    try:
        return await client(mcpkit.python, ["--http", f"http://127.0.0.1:{port}/mcp", "--era", "modern", "-c", "16"], out, args)
    finally:
        await stop(proc)
