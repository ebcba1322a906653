"""A bounded soak: a real mcpkit server over stdio and one over Streamable HTTP, driven
for ``--minutes`` (default 10) with mixed valid and hostile traffic in both eras, on
127.0.0.1 only. See bench/README.md.

    .venv/bin/python bench/soak.py [--minutes 10] [--seed 1234] [--max-growth-mb 30]

Traffic, all at once:

* valid: tools/call, tools/list, resources/read in the modern era and on a legacy
  session, over both transports; every one must succeed;
* the hostile inputs of tests/hostile/test_fuzz.py (tests/servers/hostile_fuzz_cases.py);
* the attacks of the hardening issue: unknown tools with ~8 KB names (modern), legacy
  requests refused for a bad ``MCP-Protocol-Version``, deep nesting and huge numbers,
  clients that stop reading their responses for a while (a stdio burst, raw HTTP
  sockets), legacy sessions opened and abandoned, GET streams held open, and dropped SSE
  responses resumed with ``Last-Event-ID``.

The servers' RSS is sampled every ``--sample-seconds``. The summary gives RSS at start,
after warm-up and at the end, the slope after warm-up (least squares, MB/min), requests
per kind and errors. Exit status 1 if either server's RSS grew by more than
``--max-growth-mb`` after warm-up, a valid request failed, a server answered 5xx or hung,
or a server died; else 0.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import socket
import sys
import time
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "tests" / "servers" / "hostile_fuzz_server.py"


def _load_cases() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hostile_fuzz_cases", ROOT / "tests" / "servers" / "hostile_fuzz_cases.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


fz = _load_cases()


class Stats:
    """Counts per kind, failures of valid requests and of the servers, RSS samples."""

    def __init__(self) -> None:
        self.requests: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.examples: dict[str, str] = {}
        self.rss: dict[str, list[tuple[float, float]]] = {"stdio": [], "http": []}

    def count(self, kind: str, n: int = 1) -> None:
        self.requests[kind] += n

    def error(self, kind: str, detail: str) -> None:
        self.errors[kind] += 1
        self.examples.setdefault(kind, detail[:500])


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# =================================================================================================
# stdio
# =================================================================================================


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


VALID_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("tools/call", {"name": "echo", "arguments": {"text": "soak"}}, "content"),
    ("tools/list", {}, "tools"),
    ("resources/read", {"uri": "data://hello"}, "contents"),
]


def check_valid(msg: dict[str, Any], key: str) -> str | None:
    result = msg.get("result")
    if not isinstance(result, dict) or key not in result or result.get("isError"):
        return json.dumps(msg)[:300]
    return None


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


def headers(message: Any, era: str, session_id: str | None) -> dict[str, str]:
    return {k.decode(): v.decode() for k, v in fz.headers_for(message, era, session_id)}


def messages_of(resp: httpx.Response) -> list[Any]:
    if resp.headers.get("content-type", "").startswith("text/event-stream"):
        out = []
        for block in resp.text.replace("\r\n", "\n").split("\n\n"):
            data = [line[5:].removeprefix(" ") for line in block.split("\n") if line.startswith("data:")]
            if data and "".join(data):
                out.append(json.loads("\n".join(data)))
        return out
    return [resp.json()] if resp.content else []


async def open_session(http: httpx.AsyncClient, url: str) -> str:
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": fz.initialize_params()}
    resp = await http.post(url, json=init, headers={"accept": fz.ACCEPT, "content-type": "application/json"})
    resp.raise_for_status()
    session_id = str(resp.headers["mcp-session-id"])
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    await http.post(url, json=note, headers=headers(note, "legacy", session_id))
    return session_id


async def http_valid(http: httpx.AsyncClient, url: str, stats: Stats, until: float) -> None:
    """Valid requests in both eras, one legacy session kept open (re-opened after a 404)."""
    session_id = await open_session(http, url)
    n = 0
    while time.monotonic() < until:
        for era in ("modern", "legacy"):
            for method, params, key in VALID_CALLS:
                n += 1
                message = fz.valid_request(era, f"v-{n}", method, params)
                kind = f"valid http {era} {method}"
                try:
                    resp = await http.post(
                        url, json=message, headers=headers(message, era, session_id if era == "legacy" else None)
                    )
                    msgs = [m for m in messages_of(resp) if isinstance(m, dict) and "method" not in m]
                except (httpx.HTTPError, ValueError) as exc:
                    stats.error(kind, f"{type(exc).__name__}: {exc}")
                    continue
                stats.count(f"valid http {era}")
                if resp.status_code == 404 and era == "legacy":
                    stats.count("legacy session re-opened after 404")
                    session_id = await open_session(http, url)
                elif resp.status_code != 200 or len(msgs) != 1 or check_valid(msgs[0], key) is not None:
                    stats.error(kind, f"HTTP {resp.status_code}: {resp.text[:300]}")


async def http_fuzz(http: httpx.AsyncClient, url: str, stats: Stats, seed: int, until: float) -> None:
    """The fuzz test's cases; a 5xx or a hang is an error."""
    session_id = await open_session(http, url)
    number = 0
    while time.monotonic() < until:
        rng = fz.case_rng(seed, "soak-http", number)
        case = fz.make_case(rng, number, rng.choice(["modern", "legacy"]), session_id, http=True)
        number += 1
        for body in case.bodies:
            content = body if case.http_method == "POST" else None
            try:
                async with http.stream(case.http_method, url, content=content, headers=case.headers) as resp:
                    if not (case.http_method == "GET" and resp.status_code == 200):
                        await resp.aread()
            except httpx.HTTPError as exc:
                stats.error("http fuzz: no answer", f"{type(exc).__name__}: {exc} for {case.describe()}")
                continue
            stats.count("http fuzz")
            if resp.status_code >= 500:
                stats.error("http fuzz: 5xx", f"HTTP {resp.status_code} for {case.describe()}")


async def post_expect(
    http: httpx.AsyncClient, url: str, stats: Stats, kind: str, message: Any, hdrs: dict[str, str]
) -> httpx.Response:
    """POST ``message``; a 5xx is an error of ``kind``."""
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    resp = await http.post(url, content=body, headers=hdrs)
    stats.count(kind)
    if resp.status_code >= 500:
        stats.error(f"{kind}: 5xx", f"HTTP {resp.status_code}: {resp.text[:200]}")
    return resp


async def attack_requests(http: httpx.AsyncClient, url: str, stats: Stats, until: float) -> None:
    """~8 KB unknown tool names (modern); legacy requests refused for a bad
    MCP-Protocol-Version, each followed by a valid request with the same id (which must
    succeed: a refused request leaves nothing behind); deep nesting; huge numbers."""
    session_id = await open_session(http, url)
    n = 0
    while time.monotonic() < until:
        n += 1
        call = fz.valid_request("modern", n, "tools/call", {"name": "t" * 8192 + str(n), "arguments": {}})
        await post_expect(http, url, stats, "http unknown 8 KB tool", call, headers(call, "modern", None))
        listing = fz.valid_request("legacy", f"refused-{n}", "tools/list", {})
        bad = {**headers(listing, "legacy", session_id), "mcp-protocol-version": "1999-01-01"}
        await post_expect(http, url, stats, "http refused legacy", listing, bad)
        resp = await post_expect(
            http, url, stats, "valid http legacy after refusal", listing, headers(listing, "legacy", session_id)
        )
        msgs = messages_of(resp) if resp.status_code == 200 else []
        if resp.status_code == 404:
            session_id = await open_session(http, url)
        elif len(msgs) != 1 or check_valid(msgs[-1], "tools") is not None:
            stats.error("valid http legacy after refusal", f"HTTP {resp.status_code}: {resp.text[:300]}")
        deep = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"a":' + b"[" * 2000 + b"]" * 2000 + b"}}"
        await post_expect(http, url, stats, "http deep nesting", deep, headers(call, "modern", None))
        huge = fz.valid_request("modern", n, "tools/call", {"name": "region", "arguments": {"region": "eu", "query": "q"}})
        number = ["9" * 400, "9" * 5000, "1e999", "-1e999"][n % 4]
        raw = json.dumps(huge).replace('"query": "q"', '"query": "q", "shard": ' + number).encode()
        await post_expect(http, url, stats, "http huge number", raw, headers(huge, "modern", None))


async def attack_slow_readers(url: str, stats: Stats, until: float, sockets: int = 20, hold: float = 3.0) -> None:
    """Raw connections that POST a streaming request and then read nothing for ``hold`` s."""
    port = int(url.split(":")[2].split("/")[0])
    n = 0
    while time.monotonic() < until:
        writers = []
        for _ in range(sockets):
            n += 1
            message = fz.valid_request("modern", n, "tools/call", {"name": "pause", "arguments": {"ms": 50}, "_meta": {}})
            message["params"]["_meta"] = {**fz.META, "progressToken": n}
            body = json.dumps(message).encode()
            head = "".join(f"{k}: {v}\r\n" for k, v in headers(message, "modern", None).items())
            request = f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n{head}content-length: {len(body)}\r\n\r\n"
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError as exc:
                stats.error("http slow reader: connect", str(exc))
                continue
            writer.write(request.encode() + body)
            writers.append(writer)
        stats.count("http slow readers (3 s unread)", len(writers))
        await asyncio.sleep(hold)  # the point: nobody reads
        for writer in writers:
            writer.close()


async def attack_sessions(http: httpx.AsyncClient, url: str, stats: Stats, until: float, rate: float) -> None:
    """Legacy sessions opened and abandoned (never DELETEd), ``rate`` per second."""
    while time.monotonic() < until:
        try:
            await open_session(http, url)
            stats.count("http sessions abandoned")
        except httpx.HTTPStatusError as exc:
            stats.count(f"http session refused {exc.response.status_code}")
            if exc.response.status_code >= 500 and exc.response.status_code != 503:
                stats.error("http session: 5xx", str(exc))
        await asyncio.sleep(1 / rate)


async def attack_get_streams(http: httpx.AsyncClient, url: str, stats: Stats, until: float, hold: float = 5.0) -> None:
    """A GET stream on a fresh session, held open for ``hold`` s, then dropped."""
    while time.monotonic() < until:
        try:
            session_id = await open_session(http, url)
        except httpx.HTTPStatusError:
            await asyncio.sleep(hold)
            continue
        hdrs = {"accept": "text/event-stream", "mcp-session-id": session_id, "mcp-protocol-version": fz.LEGACY}
        async with http.stream("GET", url, headers=hdrs) as resp:
            stats.count(f"http GET stream held ({resp.status_code})")
            if resp.status_code >= 500:
                stats.error("http GET stream: 5xx", str(resp.status_code))
            await asyncio.sleep(hold)


async def resume_once(http: httpx.AsyncClient, url: str, session_id: str, n: int) -> str | None:
    """A legacy call whose SSE response is dropped after its first event, then resumed
    with ``Last-Event-ID``; returns what went wrong (None: the result arrived)."""
    rid = f"resume-{n}"
    message = fz.valid_request("legacy", rid, "tools/call", {"name": "pause", "arguments": {"ms": 100}})
    message["params"]["_meta"] = {"progressToken": rid}
    last_id = None
    async with http.stream("POST", url, json=message, headers=headers(message, "legacy", session_id)) as resp:
        if resp.status_code != 200 or not resp.headers.get("content-type", "").startswith("text/event-stream"):
            await resp.aread()
            return f"POST: HTTP {resp.status_code} {resp.headers.get('content-type')}: {resp.text[:200]}"
        async for line in resp.aiter_lines():
            if line.startswith("id:"):
                last_id = line[3:].strip()
                break  # drop the stream after its first event
    if last_id is None:
        return "the SSE response had no event id"
    hdrs = {
        "accept": "text/event-stream",
        "mcp-session-id": session_id,
        "mcp-protocol-version": fz.LEGACY,
        "last-event-id": last_id,
    }
    async with http.stream("GET", url, headers=hdrs) as resp:
        if resp.status_code != 200:
            await resp.aread()
            return f"GET with Last-Event-ID: HTTP {resp.status_code}: {resp.text[:200]}"
        async for line in resp.aiter_lines():
            if line.startswith("data:") and rid in line and '"result"' in line:
                return None
    return "the resumed stream ended without the result"


async def attack_resume(http: httpx.AsyncClient, url: str, stats: Stats, until: float) -> None:
    """Dropped legacy SSE responses resumed with ``Last-Event-ID`` (valid: must succeed)."""
    session_id = await open_session(http, url)
    n = 0
    while time.monotonic() < until:
        n += 1
        try:
            problem = await asyncio.wait_for(resume_once(http, url, session_id, n), 30)
        except (httpx.HTTPError, TimeoutError) as exc:
            problem = f"{type(exc).__name__}: {exc}"
        stats.count("valid http legacy resumption")
        if problem is not None and "HTTP 404" in problem:
            session_id = await open_session(http, url)
            stats.count("legacy session re-opened after 404")
        elif problem is not None:
            stats.error("valid http legacy resumption", problem)


# =================================================================================================
# running it
# =================================================================================================


async def start_http_server() -> tuple[asyncio.subprocess.Process, str]:
    port = free_port()
    proc = await asyncio.create_subprocess_exec(sys.executable, str(SERVER), str(port), stderr=asyncio.subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while True:
        if proc.returncode is not None or time.monotonic() > deadline:
            raise RuntimeError("the HTTP server did not start")
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            await asyncio.sleep(0.05)


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
    pids = {"http": http_proc.pid}
    limits = httpx.Limits(max_connections=50, max_keepalive_connections=20)
    try:
        async with httpx.AsyncClient(timeout=30, limits=limits) as http:
            stdio_proc = await start_stdio_server()
            pids["stdio"] = stdio_proc.pid
            workers = [
                stdio_driver(stdio_proc, stats, args.seed, until),
                http_valid(http, url, stats, until),
                http_fuzz(http, url, stats, args.seed, until),
                attack_requests(http, url, stats, until),
                attack_slow_readers(url, stats, until),
                attack_sessions(http, url, stats, until, args.abandon_rate),
                attack_get_streams(http, url, stats, until),
                attack_resume(http, url, stats, until),
                sample(stats, pids, args.sample_seconds, until, start),
            ]
            await run_workers(workers, stats, until + GRACE)
            if http_proc.returncode is not None:
                stats.error("http server died", f"exit status {http_proc.returncode}")
    finally:
        if http_proc.returncode is None:
            http_proc.terminate()
        await http_proc.wait()


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
    print(f"soak: {args.minutes} min, seed {args.seed}, warm-up {warmup:.0f} s, bound {args.max_growth_mb} MB after warm-up")
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
        failed |= growth > args.max_growth_mb
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
    parser.add_argument("--sample-seconds", type=float, default=5.0, help="RSS sampling interval (default 5)")
    parser.add_argument("--abandon-rate", type=float, default=2.0, help="legacy sessions abandoned per second (default 2)")
    args = parser.parse_args()
    stats = Stats()
    asyncio.run(soak(args, stats))
    return summary(args, stats)


if __name__ == "__main__":
    sys.exit(main())
