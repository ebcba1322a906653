"""The soak's stdio part: a real server process driven with valid requests, the fuzz
cases, unknown 8 KB tool names, and bursts of requests left unread for a while."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from soak_common import SERVER, VALID_CALLS, Stats, check_valid, fz


class StdioClient:
    """A spawned server's pipes; responses are routed to waiters by id. ``reading`` can be
    cleared to stop reading stdout (a client that does not read its responses)."""

    def __init__(self, proc: asyncio.subprocess.Process, stats: Stats) -> None:
        self.proc = proc
        self.stats = stats
        self.waiters: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self.reading = asyncio.Event()
        self.reading.set()
        self.task = asyncio.create_task(self._read())
        self.ids = 0
        self.next_burst = time.monotonic() + BURST_EVERY / 3

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while True:
            await self.reading.wait()
            line = await self.proc.stdout.readline()
            if not line:
                return
            try:
                msg = json.loads(line)
            except ValueError:
                self.stats.error("stdio: a line that is not JSON", line[:200].decode(errors="replace"))
                continue
            if isinstance(msg, dict) and "method" not in msg:
                waiter = self.waiters.pop(msg.get("id"), None) if isinstance(msg.get("id"), (int, str)) else None
                if waiter is not None and not waiter.done():
                    waiter.set_result(msg)

    async def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        await asyncio.wait_for(self.proc.stdin.drain(), 30)

    def expect(self, rid: str) -> asyncio.Future[dict[str, Any]]:
        waiter: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.waiters[rid] = waiter
        return waiter

    async def call(self, era: str, method: str, params: dict[str, Any], timeout: float = 30) -> dict[str, Any]:
        self.ids += 1
        rid = f"v-{self.ids}"
        waiter = self.expect(rid)
        await self.write(json.dumps(fz.valid_request(era, rid, method, params)).encode() + b"\n")
        try:
            return await asyncio.wait_for(waiter, timeout)
        finally:
            self.waiters.pop(rid, None)


async def stdio_valid(client: StdioClient, stats: Stats, era: str) -> None:
    for method, params, key in VALID_CALLS:
        try:
            msg = await client.call(era, method, params)
        except TimeoutError:
            stats.error(f"valid stdio {era} {method}", "no response within 30 s")
            continue
        stats.count(f"valid stdio {era}")
        if problem := check_valid(msg, key):
            stats.error(f"valid stdio {era} {method}", problem)


BURST_EVERY = 30.0  # seconds between stdio bursts that are not read for 2 s


async def stdio_hostile(client: StdioClient, stats: Stats, rng: Any, number: int) -> None:
    """A fuzz case, an unknown ~8 KB tool name, or (every ``BURST_EVERY`` s) a burst of
    2,000 requests whose responses are not read for 2 s."""
    roll = rng.random()
    if time.monotonic() >= client.next_burst:
        client.next_burst = time.monotonic() + BURST_EVERY
        burst = 2000
        client.reading.clear()
        lines = [fz.valid_request("modern", f"burst-{number}-{i}", "tools/call", VALID_CALLS[0][1]) for i in range(burst)]
        waiters = [client.expect(str(m["id"])) for m in lines]
        writing = asyncio.create_task(client.write(b"".join(json.dumps(m).encode() + b"\n" for m in lines)))
        await asyncio.sleep(2)  # the point: a client that does not read for a while (its writes stall)
        client.reading.set()
        await writing
        done, _ = await asyncio.wait(waiters, timeout=60)
        stats.count("stdio burst unread 2 s", burst)
        if len(done) != burst:
            stats.error("valid stdio burst", f"{burst - len(done)} of {burst} requests unanswered after 60 s")
        return
    if roll < 0.2:
        name = "t" * 8192 + str(number)
        msg = await client.call("modern", "tools/call", {"name": name, "arguments": {}})
        stats.count("stdio unknown 8 KB tool")
        if "error" not in msg:
            stats.error("stdio unknown 8 KB tool", json.dumps(msg)[:300])
        return
    case = fz.make_case(rng, number, rng.choice(["modern", "legacy"]))
    await client.write(b"".join(body + b"\n" for body in case.bodies))
    stats.count("stdio fuzz")


async def start_stdio_server() -> asyncio.subprocess.Process:
    pipe = asyncio.subprocess.PIPE
    return await asyncio.create_subprocess_exec(
        sys.executable, str(SERVER), stdin=pipe, stdout=pipe, stderr=asyncio.subprocess.DEVNULL
    )


async def stdio_driver(proc: asyncio.subprocess.Process, stats: Stats, seed: int, until: float) -> None:
    client = StdioClient(proc, stats)
    try:
        init = await client.call("legacy", "initialize", fz.initialize_params())
        assert "result" in init, init
        await client.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        number = 0
        while time.monotonic() < until:
            rng = fz.case_rng(seed, "soak-stdio", number)
            await stdio_valid(client, stats, rng.choice(["modern", "legacy"]))
            await stdio_hostile(client, stats, rng, number)
            number += 1
            if proc.returncode is not None:
                stats.error("stdio server died", f"exit status {proc.returncode}")
                return
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
        client.task.cancel()
        await asyncio.gather(client.task, return_exceptions=True)


# =================================================================================================
# Streamable HTTP
# =================================================================================================
