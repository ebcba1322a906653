"""A bounded soak: a real mcpkit server over stdio and one over Streamable HTTP, driven
for ``--minutes`` (default 10) with mixed valid and hostile traffic in both eras, on
127.0.0.1 only. See benchmarks/soak/README.md.

    .venv/bin/python benchmarks/soak/soak.py [--minutes 10] [--seed 1234] [--max-growth-mb 30]

Traffic, all at once:

* valid: tools/call, tools/list, resources/read in the modern era and on a legacy
  session, over both transports; every one must succeed;
* the hostile inputs of tests/hostile/test_fuzz.py (tests/support/servers/hostile_fuzz_cases.py);
* the attacks of the hardening issue: unknown tools with ~8 KB names (modern), legacy
  requests refused for a bad ``MCP-Protocol-Version``, deep nesting and huge numbers,
  clients that stop reading their responses for a while (a stdio burst, raw HTTP
  sockets), legacy sessions opened and abandoned, GET streams held open, and dropped SSE
  responses resumed with ``Last-Event-ID``;
* authorization (soak_auth.py): a JWT-verifying server whose key set goes up, down and
  hangs in turn, and an introspecting one, each sent a valid token (always served) and
  floods of forged ones (refused);
* the store attacks of issue 24, on a third server (soak_store.py): tasks with 1 MB
  inputs and 2 MB results, URIs that make template matchers backtrack, floods of
  ``subscriptions/listen`` (oversized, the biggest accepted, more than allowed).

The servers' RSS is sampled every ``--sample-seconds``. The summary gives RSS at start,
after warm-up and at the end, the slope after warm-up (least squares, MB/min), requests
per kind and errors. Exit status 1 if a server's RSS grew by more than
``--max-growth-mb`` after warm-up or its slope passed ``--max-slope`` MB/min, a valid
request failed, a server answered 5xx (but a 503 with ``Retry-After`` past a bound) or
hung, or a server died; else 0.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any

import httpx
from soak_auth import auth_flap, auth_forged, auth_servers, auth_valid
from soak_common import Stats, rss_mb
from soak_http import (
    attack_get_streams,
    attack_requests,
    attack_resume,
    attack_sessions,
    attack_slow_readers,
    http_fuzz,
    http_valid,
    start_http_server,
)
from soak_stdio import start_stdio_server, stdio_driver
from soak_store import attack_listens, attack_tasks, attack_templates, start_store_server


async def sample(stats: Stats, pids: dict[str, int], every: float, until: float, start: float) -> None:
    while True:
        for name, pid in pids.items():
            try:
                stats.rss[name].append((time.monotonic() - start, rss_mb(pid)))
            except (OSError, RuntimeError):
                stats.error(f"{name} server died", "its /proc entry is gone")
        if time.monotonic() >= until:
            return
        await asyncio.sleep(min(every, max(until - time.monotonic(), 0)))


GRACE = 90.0  # seconds a driver may take to notice the end before it counts as hung


async def run_workers(workers: list[Any], stats: Stats, deadline: float) -> None:
    """Run the drivers; one that raises, or is still running ``GRACE`` s after the end, is an error."""
    tasks = {asyncio.ensure_future(worker): getattr(worker, "__name__", str(worker)) for worker in workers}
    done, pending = await asyncio.wait(tasks, timeout=max(deadline - time.monotonic(), 0))
    for task in pending:
        frames = "; ".join(f"{f.f_code.co_name}:{f.f_lineno}" for f in task.get_stack())
        stats.error("a driver hung", f"{tasks[task]} at {frames}")
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    for task in done:
        if task.exception() is not None:
            exc = task.exception()
            stats.error("a driver crashed", f"{tasks[task]}: {type(exc).__name__}: {exc}")


async def soak(args: argparse.Namespace, stats: Stats) -> None:
    start = time.monotonic()
    until = start + args.minutes * 60
    http_proc, url = await start_http_server()
    store_proc, store_url = await start_store_server()
    pids = {"http": http_proc.pid, "store": store_proc.pid}
    limits = httpx.Limits(max_connections=50, max_keepalive_connections=20)
    try:
        async with httpx.AsyncClient(timeout=30, limits=limits) as http, auth_servers(stats) as (backend, auth_urls, auth_procs):
            stdio_proc = await start_stdio_server()
            pids["stdio"] = stdio_proc.pid
            pids.update({name: proc.pid for name, proc in auth_procs.items()})
            workers = [
                auth_flap(backend, stats, until),
                auth_valid(http, backend, auth_urls, stats, until),
                auth_forged(http, backend, auth_urls, stats, until),
                stdio_driver(stdio_proc, stats, args.seed, until),
                http_valid(http, url, stats, until),
                http_fuzz(http, url, stats, args.seed, until),
                attack_requests(http, url, stats, until),
                attack_slow_readers(url, stats, until),
                attack_sessions(http, url, stats, until, args.abandon_rate),
                attack_get_streams(http, url, stats, until),
                attack_resume(http, url, stats, until),
                attack_tasks(http, store_url, stats, until),
                attack_templates(http, store_url, stats, until),
                attack_listens(store_url, stats, until),
                sample(stats, pids, args.sample_seconds, until, start),
            ]
            await run_workers(workers, stats, until + GRACE)
            for name, proc in (("http", http_proc), ("store", store_proc)):
                if proc.returncode is not None:
                    stats.error(f"{name} server died", f"exit status {proc.returncode}")
    finally:
        for proc in (http_proc, store_proc):
            if proc.returncode is None:
                proc.terminate()
            await proc.wait()


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, MB) points, in MB per minute."""
    if len(points) < 2:
        return 0.0
    mean_t = sum(t for t, _ in points) / len(points)
    mean_m = sum(m for _, m in points) / len(points)
    var = sum((t - mean_t) ** 2 for t, _ in points)
    return 60 * sum((t - mean_t) * (m - mean_m) for t, m in points) / var if var else 0.0


def summary(args: argparse.Namespace, stats: Stats) -> int:
    """Print the summary; return the exit status."""
    warmup = min(60.0, args.minutes * 60 * 0.2)
    failed = False
    print(
        f"soak: {args.minutes} min, seed {args.seed}, warm-up {warmup:.0f} s, "
        f"bounds {args.max_growth_mb} MB and {args.max_slope} MB/min after warm-up"
    )
    for name, points in stats.rss.items():
        after = [p for p in points if p[0] >= warmup] or points[-1:]
        if not after:
            print(f"  {name:5}: no RSS samples")
            failed = True
            continue
        growth = after[-1][1] - after[0][1]
        peak = max(m for _, m in points)
        print(
            f"  {name:5} RSS MB: start {points[0][1]:.1f}, after warm-up {after[0][1]:.1f}, end {after[-1][1]:.1f}, "
            f"peak {peak:.1f}; growth after warm-up {growth:+.1f}, slope {slope(after):+.2f} MB/min ({len(points)} samples)"
        )
        failed |= growth > args.max_growth_mb or slope(after) > args.max_slope
    print("  requests:")
    for kind, count in sorted(stats.requests.items()):
        print(f"    {count:9d}  {kind}")
    print(f"  errors: {sum(stats.errors.values())}")
    for kind, count in sorted(stats.errors.items()):
        print(f"    {count:9d}  {kind}: e.g. {stats.examples[kind]}")
    failed |= bool(stats.errors)
    print("soak: FAILED" if failed else "soak: OK")
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0, help="how long to run (default 10)")
    parser.add_argument("--seed", type=int, default=1234, help="the fuzz seed (default 1234)")
    parser.add_argument("--max-growth-mb", type=float, default=30.0, help="RSS growth allowed after warm-up, per server (30)")
    parser.add_argument("--max-slope", type=float, default=1.0, help="RSS slope allowed after warm-up, MB/min, per server (1)")
    parser.add_argument("--sample-seconds", type=float, default=5.0, help="RSS sampling interval (default 5)")
    parser.add_argument("--abandon-rate", type=float, default=2.0, help="legacy sessions abandoned per second (default 2)")
    args = parser.parse_args()
    stats = Stats()
    asyncio.run(soak(args, stats))
    return summary(args, stats)


if __name__ == "__main__":
    sys.exit(main())
