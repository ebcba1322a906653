"""Scale figures (not part of CI): many legacy sessions and idle SSE streams on one HTTP
server, and latency at 32 requests in flight.

For each server (started with ``--scale``: sessions kept, the session and connection caps lifted):

1. warm up on one session, and read the server's RSS;
2. open ``--sessions`` legacy sessions (``initialize`` + ``notifications/initialized``
   each, over a pool of connections): memory per session is the RSS it added;
3. load it with echo on 32 connections, each request on the next of those sessions in
   turn (every session answers at least once): requests/s, p50, p99;
3a. the live calls among them: ``--live`` connections (4 unless told), each request on
   the next session in turn, while every other session stays idle: p50 and p99 of a call
   that is not queued behind 31 others (the figure a held session's user sees);
4. open ``--streams`` more sessions and a ``GET`` SSE stream on each, every stream on a
   connection of its own, left idle: memory per stream is the RSS the streams added;
5. load it again with 32 connections while the streams are open, and check that every
   stream is still open afterwards (``--streams 0`` leaves 4 and 5 out).

It ends with stdio echo at 32 in flight (latency p50 and p99), mcpkit and the official SDK.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import time
from pathlib import Path
from typing import Any

from .http import Call, HttpPeer, Session
from .load import _IDS, Settings, Tally, measure, phase
from .procs import BenchError, free_port, memory_kb, raise_fd_limit, rss_mb, spawn_http, stop
from .servers import Interpreters, Server, log, server
from .wire import Echo
from .workloads import BY_ID

ECHO = Echo()


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sessions", type=int, default=1000, help="concurrent legacy sessions")
    p.add_argument("--streams", type=int, default=10_000, help="idle SSE streams (each on a session of its own)")
    p.add_argument("--servers", default="mcpkit,mcp", help="comma-separated: mcpkit, mcp, fastmcp")
    p.add_argument("--live", type=int, default=4, help="connections of the live-call phase among the sessions")
    p.add_argument("--seconds", type=float, default=3.0, help="measured seconds of each load phase")
    p.add_argument("--json", type=Path, help="write the figures here")


def rotating(peer: HttpPeer, sessions: itertools.cycle[Session]) -> Call:
    """A call that puts each request on the next session of the cycle."""

    async def call(body: bytes, rid: int) -> dict[str, Any]:
        status, _, messages = await peer.post(body, next(sessions).headers())
        for message in messages:
            if isinstance(message, dict) and message.get("id") == rid:
                return message
        return {"http_error": f"HTTP {status}: no answer with id {rid}"}

    return call


async def open_sessions(pool: list[HttpPeer], n: int) -> list[Session]:
    per = [n // len(pool) + (i < n % len(pool)) for i in range(len(pool))]

    async def one(peer: HttpPeer, k: int) -> list[Session]:
        return [await peer.initialize(next(_IDS)) for _ in range(k)]

    chunks = await asyncio.gather(*(one(p, k) for p, k in zip(pool, per, strict=True)))
    return [s for chunk in chunks for s in chunk]


async def open_streams(port: int, sessions: list[Session], batch: int = 250) -> list[HttpPeer]:
    streams: list[HttpPeer] = []
    for i in range(0, len(sessions), batch):
        peers = [HttpPeer(port) for _ in sessions[i : i + batch]]
        await asyncio.gather(*(p.open_stream(s) for p, s in zip(peers, sessions[i : i + batch], strict=True)))
        streams += peers
    return streams


def load_summary(tally: Tally) -> dict[str, Any]:
    s = tally.summary()
    return {k: s[k] for k in ("ops", "rps", "p50_ms", "p99_ms", "valid", "problems")}


async def settle(pid: int) -> float:
    """The RSS in MB once it has stopped moving (a short wait for the server to finish up)."""
    await asyncio.sleep(0.5)
    value = rss_mb(pid)
    if value is None:
        raise BenchError("the server is gone")
    return value


async def scale_one(spec: Server, args: argparse.Namespace) -> dict[str, Any]:
    port = free_port()
    proc = await spawn_http(spec.argv(port=port), port, None)
    pool = [HttpPeer(port) for _ in range(32)]
    streams: list[HttpPeer] = []
    out: dict[str, Any] = {"server": spec.name}
    try:
        warm = await pool[0].initialize(next(_IDS))
        await phase([pool[0].caller(ECHO, warm)], ECHO, 0.5)
        rss0 = await settle(proc.pid)

        t0 = time.perf_counter()
        sessions = await open_sessions(pool, args.sessions)
        rss1 = await settle(proc.pid)
        out["sessions"] = {
            "count": len(sessions),
            "opened_per_s": round(len(sessions) / (time.perf_counter() - t0)),
            "kb_each": round((rss1 - rss0) * 1024 / len(sessions), 1),
            "rss_mb": rss1,
        }
        cycle = itertools.cycle(sessions)
        tally = await phase([(rotating(p, cycle), b"") for p in pool], ECHO, args.seconds, min_ops=len(sessions))
        out["sessions"]["load_c32"] = load_summary(tally)
        tally = await phase([(rotating(p, cycle), b"") for p in pool[: args.live]], ECHO, args.seconds)
        out["sessions"]["live"] = load_summary(tally)
        out["sessions"]["rss_after_mb"] = await settle(proc.pid)
        out["sessions"]["peak_rss_mb"] = round(memory_kb(proc.pid).get("VmHWM", 0) / 1024, 1)
        log(f"  {spec.name}: {out['sessions']}")
        if not args.streams:
            out["valid"] = out["sessions"]["load_c32"]["valid"] and out["sessions"]["live"]["valid"]
            return out

        t0 = time.perf_counter()
        hosts = await open_sessions(pool, args.streams)
        rss2 = await settle(proc.pid)
        streams = await open_streams(port, hosts)
        rss3 = await settle(proc.pid)
        tally = await phase([(rotating(p, cycle), b"") for p in pool], ECHO, args.seconds, min_ops=len(sessions))
        alive = sum(s.stream_open() for s in streams)
        out["streams"] = {
            "count": len(streams),
            "seconds_to_open": round(time.perf_counter() - t0, 1),
            "kb_each": round((rss3 - rss2) * 1024 / len(streams), 1),
            "kb_each_session": round((rss2 - rss1) * 1024 / len(hosts), 1),
            "still_open_after_load": alive,
            "rss_mb": rss3,
            "load_c32": load_summary(tally),
        }
        log(f"  {spec.name}: {out['streams']}")
        out["valid"] = alive == len(streams) and all(
            f["valid"] for f in (out["sessions"]["load_c32"], out["sessions"]["live"], out["streams"]["load_c32"])
        )
    except (BenchError, OSError) as exc:
        out.update(valid=False, error=f"{type(exc).__name__}: {exc}")
        log(f"  {spec.name}: {out['error']}")
    finally:
        for p in streams + pool:
            p.close()
        await stop(proc, grace=10)
    return out


async def main(args: argparse.Namespace, interpreters: Interpreters) -> int:
    limit = raise_fd_limit()
    if limit < args.streams + 200:
        raise SystemExit(f"--streams {args.streams} needs more descriptors than the limit of {limit} allows")
    figures: dict[str, Any] = {"http": [], "stdio_c32": [], "live": args.live}
    for name in args.servers.split(","):
        log(f"== {name}: {args.sessions} sessions ({args.live} live), then {args.streams} idle SSE streams")
        figures["http"].append(await scale_one(server(name, interpreters, ("--scale",)), args))
    settings = Settings(seconds=args.seconds)
    for name in args.servers.split(","):
        result = await measure(server(name, interpreters), BY_ID["stdio_echo_c32"], settings)
        figures["stdio_c32"].append({k: result.get(k) for k in ("server", "rps", "p50_ms", "p99_ms", "valid", "problems")})
        log(f"  stdio echo, 32 in flight, {name}: {figures['stdio_c32'][-1]}")
    print(markdown(figures))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    return 0 if all(f.get("valid") for f in figures["http"] + figures["stdio_c32"]) else 1


def markdown(figures: dict[str, Any]) -> str:
    lines = [
        "| server | sessions | KB per session | RSS MB | echo, 32 connections over the sessions: req/s, p50 ms, p99 ms "
        f"| live calls ({figures['live']} connections over the sessions): req/s, p50 ms, p99 ms "
        "| idle SSE streams (still open after load) | KB per stream (per session at 11,000) "
        "| echo, 32 connections, with the streams: req/s, p50 ms, p99 ms |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for f in figures["http"]:
        if "error" in f:
            lines.append(f"| {f['server']} | failed: {f['error']} | | | | | | | |")
            continue
        s, t = f["sessions"], f.get("streams")
        a, live = s["load_c32"], s["live"]
        row = (
            f"| {f['server']} | {s['count']:,} | {s['kb_each']} | {s['rss_after_mb']:,.0f} | "
            f"{a['rps']:,.0f}, {a['p50_ms']}, {a['p99_ms']} | {live['rps']:,.0f}, {live['p50_ms']}, {live['p99_ms']} | "
        )
        if t is None:
            lines.append(row + "none | | |")
            continue
        b = t["load_c32"]
        lines.append(
            row + f"{t['count']:,} ({t['still_open_after_load']:,}) | {t['kb_each']} ({t['kb_each_session']}) | "
            f"{b['rps']:,.0f}, {b['p50_ms']}, {b['p99_ms']} |"
        )
    lines += ["", "| stdio echo, 32 in flight | req/s | p50 ms | p99 ms |", "| --- | --- | --- | --- |"]
    lines += [f"| {f['server']} | {f['rps']:,.0f} | {f['p50_ms']} | {f['p99_ms']} |" for f in figures["stdio_c32"]]
    return "\n".join(lines)
