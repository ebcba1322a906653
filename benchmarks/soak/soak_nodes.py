"""A bounded soak of several nodes behind HAProxy with Redis (docs/deploy.md), on 127.0.0.1.

Three node processes (tests/support/servers/node_app.py), a redis-server with an append-only file
and HAProxy, as in tests/nodes/test_load_balanced_nodes.py. Legacy and modern clients call ``add`` without
pause while, every ``--kill-every`` seconds, a random node is killed with SIGKILL and
started again, and every ``--redis-every`` seconds Redis is killed and restarted after
1.5 s. At the end it prints what was answered, what failed (by error) and the longest run
of failures after each event, and exits 1 if an answer was wrong or a session was lost.

    .venv/bin/python benchmarks/soak/soak_nodes.py                  # 5 minutes
    .venv/bin/python benchmarks/soak/soak_nodes.py --minutes 1      # a quick check
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from mcpkit import Client, ClientOptions, HttpTransport, McpError
from support.eras import LEGACY, MODERN
from support.nodes import Node, Redis, haproxy, haproxy_config, require_binaries
from support.ports import free_port


class Tally:
    def __init__(self) -> None:
        self.ok = 0
        self.failed: Counter[str] = Counter()
        self.wrong = 0
        self.lost_sessions = 0
        self.failure_times: list[float] = []


async def caller(url: str, era: str, until: float, tally: Tally, tag: int) -> None:
    transport = HttpTransport(url)
    async with Client(transport, ClientOptions(protocol_version=era, request_timeout=10)) as client:
        session = transport.session_id
        i = 0
        while time.monotonic() < until:
            i += 1
            try:
                text = (await client.call_tool("add", {"a": tag * 10_000_000 + i, "b": 1})).content[0].text  # type: ignore[union-attr]
            except McpError as exc:
                tally.failed[str(exc)[:60]] += 1
                tally.failure_times.append(time.monotonic())
                continue
            if int(text.split()[0]) != tag * 10_000_000 + i + 1:
                tally.wrong += 1
            tally.ok += 1
        if era == LEGACY and transport.session_id != session:
            tally.lost_sessions += 1


async def chaos(
    nodes: list[Node], redis: Redis, until: float, kill_every: float, redis_every: float, events: list[tuple[float, str]]
) -> None:
    next_kill, next_redis = time.monotonic() + kill_every, time.monotonic() + redis_every
    while time.monotonic() < until - 5:
        await asyncio.sleep(0.2)
        now = time.monotonic()
        if now >= next_kill:
            victim = random.choice(nodes)
            events.append((now, f"kill -9 node {victim.label}"))
            victim.kill()
            victim.start()
            await asyncio.to_thread(victim.wait)
            next_kill = now + kill_every
        if now >= next_redis:
            events.append((now, "Redis killed"))
            redis.kill()
            await asyncio.sleep(1.5)
            redis.start()
            next_redis = now + redis_every


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--clients", type=int, default=4, help="clients per era")
    parser.add_argument("--kill-every", type=float, default=20.0)
    parser.add_argument("--redis-every", type=float, default=60.0)
    args = parser.parse_args()
    require_binaries()
    directory = Path(tempfile.mkdtemp(prefix="soak-nodes-"))
    redis = Redis(directory)
    redis.start()
    nodes = [Node(label, redis.url, directory / f"node-{label}.log") for label in "ABC"]
    try:
        for n in nodes:
            n.start()
        for n in nodes:
            n.wait()
        port = free_port()
        with haproxy(haproxy_config({port: nodes}), directory, [port]):
            url = f"http://127.0.0.1:{port}/mcp"
            until = time.monotonic() + args.minutes * 60
            tallies = {LEGACY: Tally(), MODERN: Tally()}
            events: list[tuple[float, str]] = []
            await asyncio.gather(
                chaos(nodes, redis, until, args.kill_every, args.redis_every, events),
                *(caller(url, era, until, tallies[era], k) for era in tallies for k in range(args.clients)),
            )
    finally:
        for n in nodes:
            if n.alive:
                n.kill()
        redis.kill()
    for era, tally in tallies.items():
        print(f"{era}: {tally.ok} answered, {sum(tally.failed.values())} failed, {tally.wrong} wrong, "
              f"{tally.lost_sessions} sessions lost")
        for text, count in tally.failed.most_common(5):
            print(f"    {count} x {text}")
    for at, what in events:
        after = [t - at for tally in tallies.values() for t in tally.failure_times if 0 <= t - at < 10]
        print(f"{what}: {len(after)} failures within 10 s, the last {max(after, default=0):.2f} s after")
    print(f"logs in {directory}")
    bad = any(t.wrong or t.lost_sessions for t in tallies.values())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
