"""What every benchmark client shares (stdlib only, so that the clients of the other SDKs,
in their own virtual environments, import it too): the command line, the timed loop and
the JSON it prints.

A client connects with its library to ``--stdio CMD`` (it spawns the server) or ``--http
URL``, keeps ``-c N`` calls of ``echo`` in flight for ``--warmup`` seconds, then for
``--seconds``, and checks every answer: the text it sent (``w<worker>-<i>``) must come
back. It prints one JSON line: the calls of the measured phase, calls/s, the latency p50
and p99, the CPU time of this process per call over the measured phase only (user +
system, every thread), its peak RSS, and the wrong answers with the first few reasons.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import shlex
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

#: One echo through the library: the text sent -> the text of the answer's first block
#: (None for an error result or a block that is not text).
Echo = Callable[[str], Awaitable[str | None]]
Connect = Callable[[argparse.Namespace], AbstractAsyncContextManager[Echo]]


def parse_args(description: str, extra: Callable[[argparse.ArgumentParser], None] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=description)
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--stdio", metavar="CMD", help="spawn this server and speak stdio")
    target.add_argument("--http", metavar="URL", help="a Streamable HTTP endpoint")
    p.add_argument("-c", "--concurrency", type=int, default=1)
    p.add_argument("--seconds", type=float, default=5.0, help="measured seconds")
    p.add_argument("--warmup", type=float, default=0.0, help="unmeasured seconds first")
    if extra is not None:
        extra(p)
    args = p.parse_args()
    args.argv = shlex.split(args.stdio) if args.stdio else None
    return args


def _cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


async def _phase(echo: Echo, concurrency: int, seconds: float, tally: dict[str, Any]) -> None:
    deadline = time.perf_counter() + seconds

    async def worker(w: int) -> None:
        i = 0
        while time.perf_counter() < deadline:
            text = f"w{w}-{i}"
            t0 = time.perf_counter_ns()
            try:
                got = await echo(text)
            except Exception as exc:  # an error is a wrong answer, said once
                got = f"raised {exc!r}"[:160]
            tally["latencies"].append(time.perf_counter_ns() - t0)
            if got != text:
                tally["wrong"] += 1
                if len(tally["problems"]) < 5:
                    tally["problems"].append(f"sent {text!r}, got {got!r}"[:200])
            i += 1

    await asyncio.gather(*(worker(w) for w in range(concurrency)))


def _pct(ordered: list[int], q: float) -> float | None:
    if not ordered:
        return None
    return round(ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))] / 1e6, 3)


async def measure(args: argparse.Namespace, connect: Connect) -> dict[str, Any]:
    async with connect(args) as echo:
        warm: dict[str, Any] = {"latencies": [], "wrong": 0, "problems": []}
        await _phase(echo, args.concurrency, args.warmup, warm)
        tally: dict[str, Any] = {"latencies": [], "wrong": warm["wrong"], "problems": warm["problems"]}
        cpu0, t0 = _cpu(), time.perf_counter()
        await _phase(echo, args.concurrency, args.seconds, tally)
        elapsed, cpu1 = time.perf_counter() - t0, _cpu()
    calls = len(tally["latencies"])
    lat = sorted(tally["latencies"])
    use = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "calls": calls,
        "seconds": round(elapsed, 3),
        "calls_per_s": round(calls / elapsed, 1) if elapsed else None,
        "p50_ms": _pct(lat, 0.50),
        "p99_ms": _pct(lat, 0.99),
        "cpu_us_per_call": round((cpu1 - cpu0) / max(calls, 1) * 1e6, 1),
        "peak_rss_mb": round(use.ru_maxrss / 1024, 1),
        "wrong": tally["wrong"],
        "problems": tally["problems"],
    }


def main(description: str, connect: Connect, extra: Callable[[argparse.ArgumentParser], None] | None = None) -> None:
    args = parse_args(description, extra)
    print(json.dumps(asyncio.run(measure(args, connect))), flush=True)
