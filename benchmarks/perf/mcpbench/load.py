"""Timed phases of requests, and one measurement of one server (a fresh process each time).

A phase keeps a fixed number of operations in flight for a given time, then stops
starting new ones and waits for those in flight: requests/s is the operations completed
over the time from the first start to the last answer. Every answer is judged; a wrong
answer, a lost one (the phase timed out, or the server died) or an answer to a request
never sent makes the measurement invalid.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import fanout
from .http import Call, HttpPeer, Session
from .procs import BenchError, cpu_seconds, free_port, peak_rss_mb, spawn_http, stop
from .servers import Server
from .stdio import StdioPeer
from .wire import MODERN_META, Echo, ListTools, Op, Request
from .workloads import Workload

_IDS = itertools.count(1)
now = time.perf_counter_ns


@dataclass
class Settings:
    warmup: float = 0.5  # seconds of unmeasured load first, per measurement
    seconds: float = 3.0  # measured seconds
    spawns: int = 5  # startup: measured spawns per measurement (after one unmeasured)
    imports: int = 5  # import: measured imports per measurement (after one unmeasured)
    timeout: float = 120.0  # a phase that has not ended this long after its time is lost
    logs: Path | None = None  # a folder for the servers' stderr (default: discarded)


@dataclass
class Tally:
    latencies: list[int] = field(default_factory=list)  # ns, one per operation
    wrong: int = 0
    lost: int = 0
    problems: list[str] = field(default_factory=list)
    payload: int = 0  # bytes of tool result received, for MB/s
    started: int = 0
    ended: int = 0

    def problem(self, text: str) -> None:
        if len(self.problems) < 5:
            self.problems.append(text)

    def summary(self) -> dict[str, Any]:
        ops = len(self.latencies)
        seconds = (self.ended - self.started) / 1e9 if self.ended > self.started else 0.0
        lat = sorted(self.latencies)
        return {
            "ops": ops,
            "seconds": round(seconds, 3),
            "rps": round(ops / seconds, 1) if seconds else None,
            "mb_s": round(self.payload / seconds / 1e6, 1) if seconds and self.payload else None,
            "p50_ms": round(percentile(lat, 0.50) / 1e6, 3) if lat else None,
            "p99_ms": round(percentile(lat, 0.99) / 1e6, 3) if lat else None,
            "wrong": self.wrong,
            "lost": self.lost,
            "valid": self.wrong == 0 and self.lost == 0 and ops > 0,
            "problems": self.problems,
        }


def percentile(ordered: list[int], q: float) -> int:
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


async def phase(
    calls: Sequence[tuple[Call, bytes]], request: Request, seconds: float, min_ops: int = 1, timeout: float = 120.0
) -> Tally:
    """One worker per entry of ``calls`` (a send-and-wait function and the ``_meta`` its
    bodies carry) keeps one operation in flight until ``seconds`` have passed and at
    least ``min_ops`` operations have started."""
    tally = Tally()
    started = 0
    deadline = now() + int(seconds * 1e9)

    async def worker(call: Call, meta: bytes) -> None:
        nonlocal started
        body_of, judge = request.body, request.judge
        while now() < deadline or started < min_ops:
            started += 1
            rid = next(_IDS)
            op = Op()
            t0 = now()
            body = body_of(rid, meta)
            while True:
                try:
                    answer = await call(body, rid)
                except BenchError as exc:
                    tally.lost += 1
                    tally.problem(str(exc))
                    return
                reason = judge(rid, answer, op)
                if reason is None and op.cursor is not None:  # another page of the same listing
                    rid = next(_IDS)
                    body, op.cursor = request.body(rid, meta, op.cursor), None
                    continue
                break
            tally.ended = now()
            tally.latencies.append(tally.ended - t0)
            if reason is None:
                tally.payload += request.payload
            else:
                tally.wrong += 1
                tally.problem(reason)

    tally.started = now()
    tasks = [asyncio.ensure_future(worker(call, meta)) for call, meta in calls]
    done, pending = await asyncio.wait(tasks, timeout=seconds + timeout)
    for task in pending:
        task.cancel()
    if pending:
        tally.lost += len(pending)  # each had one operation in flight
        tally.problem(f"no answer within {seconds + timeout:.0f} s")
    for task in done:
        if task.exception() is not None:
            tally.lost += 1
            tally.problem(repr(task.exception()))
    return tally


def _result(server: Server, tally: Tally, cpu: tuple[float | None, float | None], peak: float | None) -> dict[str, Any]:
    out = {"server": server.name, **tally.summary(), "peak_rss_mb": peak}
    cpu0, cpu1 = cpu
    if cpu0 is not None and cpu1 is not None and out["ops"]:
        out["cpu_us_per_op"] = round((cpu1 - cpu0) / out["ops"] * 1e6, 1)
    return out


def _log(settings: Settings, workload: Workload, server: Server) -> Path | None:
    return settings.logs / f"{workload.id}.{server.name}.log" if settings.logs else None


async def measure_stdio(server: Server, workload: Workload, settings: Settings) -> dict[str, Any]:
    assert workload.request is not None
    peer = StdioPeer(server.argv(workload.tools, extra=workload.flags), _log(settings, workload, server))
    await peer.start()
    try:
        if server.era == "legacy":
            await peer.initialize(capabilities=workload.request.capabilities)
        meta = MODERN_META if server.era == "modern" else b""
        calls = [(peer.call, meta)] * workload.concurrency
        warm = await phase(calls, workload.request, settings.warmup, 1, settings.timeout)
        if not warm.summary()["valid"]:
            raise BenchError(f"warm-up failed: {warm.problems}")
        cpu0 = cpu_seconds(peer.pid)
        tally = await phase(calls, workload.request, settings.seconds, workload.min_ops, settings.timeout)
        cpu1 = cpu_seconds(peer.pid)
        peak = peak_rss_mb(peer.pid)
    finally:
        await peer.close()
    if peer.unknown_ids:
        tally.wrong += peer.unknown_ids
        tally.problem(f"{peer.unknown_ids} answers to ids never sent")
    return {**_result(server, tally, (cpu0, cpu1), peak), "protocol_version": peer.protocol_version or server.era}


async def measure_http(server: Server, workload: Workload, settings: Settings) -> dict[str, Any]:
    assert workload.request is not None
    port = free_port()
    proc = await spawn_http(server.argv(workload.tools, port, workload.flags), port, _log(settings, workload, server))
    peers = [HttpPeer(port) for _ in range(workload.concurrency)]
    try:
        sessions: list[Session | None] = [None] * len(peers)
        if server.era == "legacy":
            sessions = list(await asyncio.gather(*(p.initialize(next(_IDS)) for p in peers)))
        calls = [p.caller(workload.request, s) for p, s in zip(peers, sessions, strict=True)]
        warm = await phase(calls, workload.request, settings.warmup, 1, settings.timeout)
        if not warm.summary()["valid"]:
            raise BenchError(f"warm-up failed: {warm.problems}")
        cpu0 = cpu_seconds(proc.pid)
        tally = await phase(calls, workload.request, settings.seconds, workload.min_ops, settings.timeout)
        cpu1 = cpu_seconds(proc.pid)
        peak = peak_rss_mb(proc.pid)
        for p, s in zip(peers, sessions, strict=True):
            if s is not None:
                await p.delete(s)
    finally:
        for p in peers:
            p.close()
        await stop(proc)
    version = sessions[0].version if sessions[0] is not None else "2026-07-28"
    out = _result(server, tally, (cpu0, cpu1), peak)
    return {**out, "protocol_version": version, "reconnects": sum(p.reconnects for p in peers)}


async def measure_client(client: Server, workload: Workload, settings: Settings, target: Server) -> dict[str, Any]:
    """A client workload: a fresh ``target`` server (a floor), then the client process
    (``clients/*.py``) calling echo against it for the warm-up and the measured time. The
    client checks every answer and reports its calls, latencies, its own CPU time over the
    measured phase and its peak RSS (clients/_loop.py); a wrong answer, a client that
    fails or prints no figures makes the measurement invalid."""
    budget = settings.warmup + settings.seconds + settings.timeout
    port = None
    proc = None
    if workload.transport == "http":
        port = free_port()
        proc = await spawn_http(target.argv(port=port), port, _log(settings, workload, target))
        where = ["--http", f"http://127.0.0.1:{port}/mcp"]
    else:
        where = ["--stdio", " ".join(target.argv())]
    argv = [*client.argv(), *where, "-c", str(workload.concurrency), "--seconds", str(settings.seconds)]
    argv += ["--warmup", str(settings.warmup)]
    try:
        child = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            out, err = await asyncio.wait_for(child.communicate(), budget)
        except TimeoutError:
            child.kill()
            await child.wait()
            raise BenchError(f"the client did not finish within {budget:.0f} s") from None
    finally:
        if proc is not None:
            await stop(proc)
    lines = [line for line in out.decode().splitlines() if line.startswith("{")]
    if child.returncode != 0 or not lines:
        raise BenchError(f"the client exited {child.returncode}: {err.decode()[-400:]}")
    got = json.loads(lines[-1])
    wrong = int(got["wrong"])
    return {
        "server": client.name,
        "ops": got["calls"],
        "seconds": got["seconds"],
        "rps": got["calls_per_s"],
        "p50_ms": got["p50_ms"],
        "p99_ms": got["p99_ms"],
        "peak_rss_mb": got["peak_rss_mb"],
        "cpu_us_per_op": got["cpu_us_per_call"],
        "wrong": wrong,
        "lost": 0,
        "valid": wrong == 0 and got["calls"] > 0,
        "problems": got["problems"],
    }


async def measure_startup(server: Server, workload: Workload, settings: Settings) -> dict[str, Any]:
    """Spawn -> the answer to the first request (initialize; for the modern era, an echo),
    ``settings.spawns`` times after one unmeasured spawn; the median, in ms."""
    times: list[float] = []
    peak = None
    for i in range(settings.spawns + 1):
        peer = StdioPeer(server.argv(workload.tools), _log(settings, workload, server))
        t0 = now()
        await peer.start()
        try:
            if server.era == "legacy":
                await peer.initialize()
            else:
                rid = next(_IDS)
                answer = await asyncio.wait_for(peer.call(Echo().body(rid, MODERN_META), rid), 60)
                if Echo().judge(rid, answer, Op()) is not None:
                    raise BenchError(f"wrong first answer: {str(answer)[:200]}")
            elapsed = (now() - t0) / 1e6
            if i:
                times.append(elapsed)
            if i == settings.spawns:  # one real call, so the peak includes what a first call loads
                rid = next(_IDS)
                meta = MODERN_META if server.era == "modern" else b""
                await asyncio.wait_for(peer.call(ListTools(1).body(rid, meta), rid), 60)
                peak = peak_rss_mb(peer.pid)
        finally:
            await peer.close()
    value = statistics.median(times)
    return {
        "server": server.name,
        "startup_ms": round(value, 1),
        "samples_ms": [round(t, 1) for t in times],
        "ops": len(times),
        "peak_rss_mb": peak,
        "valid": True,
        "problems": [],
    }


_IMPORT_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \| (\s*)(\S+)")


async def _imports(server: Server, settings: Settings, args: list[str], figure: Callable[[str, str], float]) -> list[float]:
    """Run ``python ARGS`` ``settings.imports`` times (after one unmeasured run) and read
    each run's figure from its stdout and stderr. Raises ``BenchError`` if a run fails."""
    times: list[float] = []
    for i in range(settings.imports + 1):
        proc = await asyncio.create_subprocess_exec(
            server.python, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        out, err = await proc.communicate()
        if proc.returncode != 0:
            raise BenchError(f"{server.import_stmt!r} failed: {err.decode()[-300:]}")
        if i:
            times.append(figure(out.decode(), err.decode()))
    return times


def _import_result(server: Server, metric: str, times: list[float], digits: int) -> dict[str, Any]:
    return {
        "server": server.name,
        metric: round(statistics.median(times), digits),
        "samples_ms": [round(t, digits) for t in times],
        "ops": len(times),
        "valid": True,
        "problems": [],
    }


async def measure_import(server: Server, workload: Workload, settings: Settings) -> dict[str, Any]:
    """``python -X importtime`` of the server's import statement: the cumulative time of
    everything it imported (the top-level entries after a marker), median of several runs."""
    assert server.import_stmt is not None
    code = f"import sys; sys.stderr.write('@@bench\\n'); {server.import_stmt}"

    def cumulative_ms(out: str, err: str) -> float:
        after = err.split("@@bench\n", 1)[-1]
        return sum(int(m[2]) for m in _IMPORT_LINE.finditer(after) if m[3] == "") / 1000

    times = await _imports(server, settings, ["-X", "importtime", "-c", code], cumulative_ms)
    return _import_result(server, "import_ms", times, 1)


async def measure_import_cpu(server: Server, workload: Workload, settings: Settings) -> dict[str, Any]:
    """The CPU time (user and system, ``time.process_time``) of the server's import
    statement alone in a fresh interpreter, median of several runs: the interpreter's own
    start-up is left out, so that the ratio to ``import asyncio, msgspec`` is the import's."""
    assert server.import_stmt is not None
    code = f"import time, sys\nt0 = time.process_time()\n{server.import_stmt}\nsys.stdout.write(repr(time.process_time() - t0))\n"
    times = await _imports(server, settings, ["-c", code], lambda out, err: float(out) * 1000)
    return _import_result(server, "import_cpu_ms", times, 2)


async def measure(server: Server, workload: Workload, settings: Settings, target: Server | None = None) -> dict[str, Any]:
    """One measurement of one server (of a client workload: one client, against
    ``target``) on one workload. Never raises for the server's failures: those come back
    as an invalid result saying why."""
    try:
        if workload.kind == "client":
            assert target is not None
            return await measure_client(server, workload, settings, target)
        if workload.kind == "fanout":
            return await fanout.measure_fanout(server, workload, settings, _log(settings, workload, server))
        if workload.kind == "startup":
            return await measure_startup(server, workload, settings)
        if workload.kind == "import":
            return await measure_import(server, workload, settings)
        if workload.kind == "import_cpu":
            return await measure_import_cpu(server, workload, settings)
        if workload.transport == "http":
            return await measure_http(server, workload, settings)
        return await measure_stdio(server, workload, settings)
    except (BenchError, OSError, EOFError, TimeoutError, ValueError) as exc:  # ValueError: not JSON
        print(f"  {server.name}: {exc!r}", file=sys.stderr)
        return {"server": server.name, "valid": False, "problems": [f"{type(exc).__name__}: {exc}"], "ops": 0}
