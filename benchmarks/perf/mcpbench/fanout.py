"""The fan-out workload: one change announced to many modern ``subscriptions/listen``
streams over Streamable HTTP (docs/subscriptions.md), the time from the change to the last
delivery.

Each subscriber is a keep-alive connection of its own that POSTs one modern
``subscriptions/listen`` for ``bench://counter`` (the server's ``--listen`` features) and
reads the SSE answer as it comes: first ``notifications/subscriptions/acknowledged``, then
one ``notifications/resources/updated`` per change, each tagged with the subscription's
id. Once every subscriber is acknowledged, a control connection calls ``touch`` (which
changes the resource and announces it) over and over, one change at a time: a change's
time runs from sending that call to reading the last subscriber's notification of it.

Every delivery is checked: a notification of another resource, one without the
subscription's id, a stream that ends, or a subscriber that heard a change more or less
often than it was made is wrong; so is a ``touch`` answer other than ``touched <n>``.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .http import HttpPeer
from .procs import BenchError, cpu_seconds, free_port, peak_rss_mb, spawn_http, stop
from .servers import Server
from .wire import MODERN, MODERN_META, Op, Request, _text, _why_not
from .workloads import Workload

if TYPE_CHECKING:
    from .load import Settings

URI = "bench://counter"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
now = time.perf_counter_ns


class Touch(Request):
    """``tools/call touch``: the answer must be ``touched <n>`` for the n-th change."""

    tool = "touch"

    def __init__(self) -> None:
        self.expected = 0

    def body(self, rid: int, meta: bytes, cursor: str | None = None) -> bytes:
        return b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"touch","arguments":{}%s}}' % (rid, meta)

    def judge(self, rid: int, msg: dict[str, Any], op: Op) -> str | None:
        text = _text(msg)
        if text is None:
            return _why_not(msg)
        return None if text == f"touched {self.expected}" else f"answered {text[:40]!r}, expected 'touched {self.expected}'"


class Subscriber:
    """One listen stream: its connection, its subscription id, and what it has heard."""

    def __init__(self, port: int, rid: int) -> None:
        self.port, self.rid = port, rid
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.id: object = None  # the id the acknowledgement tags (mcpkit: the listen's request id)
        self.acknowledged = asyncio.Event()
        self.heard = 0  # updates of URI
        self.last = 0  # when the latest was read (ns)
        self.problem: str | None = None
        self.changed: asyncio.Event = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port, limit=1 << 20)
        params = b'{"notifications":{"resourceSubscriptions":["%s"]}%s}' % (URI.encode(), MODERN_META)
        body = b'{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":%s}' % (self.rid, params)
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nAccept: application/json, text/event-stream\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nMCP-Protocol-Version: {MODERN}\r\n"
            "Mcp-Method: subscriptions/listen\r\n\r\n"
        )
        self.writer.write(head.encode("latin-1") + body)
        self.task = asyncio.create_task(self._read())

    def _fail(self, why: str) -> None:
        if self.problem is None:
            self.problem = why
        self.acknowledged.set()
        self.changed.set()

    async def _read(self) -> None:
        assert self.reader is not None
        reader = self.reader
        try:
            lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            status = int(lines[0].split(" ", 2)[1])
            headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
            if status != 200 or not headers.get("content-type", "").startswith("text/event-stream"):
                body = await reader.read(500)
                return self._fail(f"listen refused: HTTP {status} {body[:200]!r}")
            chunked = headers.get("transfer-encoding", "").lower() == "chunked"
            buffer = b""
            while True:
                if chunked:
                    size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                    if size == 0:
                        return self._fail("the listen stream ended")
                    data = await reader.readexactly(size + 2)
                    buffer += data[:-2]
                else:
                    data = await reader.read(65536)
                    if not data:
                        return self._fail("the listen stream ended")
                    buffer += data
                buffer = buffer.replace(b"\r\n", b"\n")
                *events, buffer = buffer.split(b"\n\n")
                for event in events:
                    payload = [line[5:].removeprefix(b" ") for line in event.split(b"\n") if line.startswith(b"data:")]
                    if payload:
                        self._message(json.loads(b"\n".join(payload)))
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
            if self.writer is not None:  # not closed by us
                self._fail(f"reading the listen stream failed: {exc!r}")

    def _message(self, msg: Any) -> None:
        if not isinstance(msg, dict):
            return self._fail(f"not a JSON-RPC message: {str(msg)[:120]}")
        method, params = msg.get("method"), msg.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        tag = meta.get(SUBSCRIPTION_ID) if isinstance(meta, dict) else None
        if method == "notifications/subscriptions/acknowledged":
            if tag is None:
                return self._fail(f"acknowledged without a subscription id: {str(msg)[:160]}")
            self.id = tag
            self.acknowledged.set()
        elif method == "notifications/resources/updated":
            if not isinstance(params, dict) or params.get("uri") != URI or tag is None or tag != self.id:
                return self._fail(f"an update not of {URI} for subscription {self.id}: {str(msg)[:160]}")
            self.heard += 1
            self.last = now()
            self.changed.set()
        elif "id" in msg and "method" not in msg:
            self._fail(f"the listen was answered (ended): {str(msg)[:160]}")
        # other notifications (a list change, a log message) are not what it watches: ignored

    def close(self) -> None:
        writer, self.writer = self.writer, None
        if writer is not None:
            writer.close()
        if self.task is not None:
            self.task.cancel()


async def _change(control: HttpPeer, touch: Touch, subscribers: list[Subscriber], n: int, timeout: float) -> int:
    """Make change ``n``; the ns from sending it to the last subscriber's delivery."""
    call, meta = control.caller(touch, None)
    touch.expected = n
    for s in subscribers:
        s.changed.clear()
    rid = 1_000_000 + n
    t0 = now()
    answer = await call(touch.body(rid, meta), rid)
    reason = touch.judge(rid, answer, Op())
    if reason is not None:
        raise BenchError(f"touch: {reason}")

    async def delivered(s: Subscriber) -> None:
        while s.heard < n and s.problem is None:
            await s.changed.wait()
            s.changed.clear()

    try:
        await asyncio.wait_for(asyncio.gather(*(delivered(s) for s in subscribers)), timeout)
    except TimeoutError:
        missing = sum(1 for s in subscribers if s.heard < n)
        raise BenchError(f"change {n}: {missing} of {len(subscribers)} subscribers not told within {timeout:.0f} s") from None
    broken = [s.problem for s in subscribers if s.problem is not None]
    if broken:
        raise BenchError(f"change {n}: {len(broken)} subscribers failed, e.g. {broken[0]}")
    return max(s.last for s in subscribers) - t0


async def measure_fanout(server: Server, workload: Workload, settings: Settings, log: Path | None) -> dict[str, Any]:
    port = free_port()
    proc = await spawn_http(server.argv(port=port, extra=workload.flags), port, log)
    subscribers = [Subscriber(port, i + 1) for i in range(workload.subscribers)]
    control = HttpPeer(port)
    times: list[int] = []
    wrong, problems = 0, []
    try:
        for i in range(0, len(subscribers), 100):  # open them in batches: a burst of 1,000 connects overflows the backlog
            batch = subscribers[i : i + 100]
            await asyncio.gather(*(s.open() for s in batch))
            await asyncio.wait_for(asyncio.gather(*(s.acknowledged.wait() for s in batch)), settings.timeout)
        broken = [s.problem for s in subscribers if s.problem is not None]
        if broken:
            raise BenchError(f"{len(broken)} listens failed, e.g. {broken[0]}")
        touch, n = Touch(), 0
        deadline = now() + int(settings.warmup * 1e9)
        while n == 0 or now() < deadline:  # warm-up: at least one change
            n += 1
            await _change(control, touch, subscribers, n, settings.timeout)
        cpu0 = cpu_seconds(proc.pid)
        started = now()
        deadline = started + int(settings.seconds * 1e9)
        while not times or now() < deadline:
            n += 1
            times.append(await _change(control, touch, subscribers, n, settings.timeout))
        ended = now()
        cpu1 = cpu_seconds(proc.pid)
        peak = peak_rss_mb(proc.pid)
        await asyncio.sleep(0.05)  # a duplicate delivery of the last change would show here
        extra = [s for s in subscribers if s.heard != n or s.problem is not None]
        if extra:
            wrong += len(extra)
            problems.append(f"{len(extra)} subscribers heard {extra[0].heard} changes of {n}: {extra[0].problem}")
    finally:
        control.close()
        for s in subscribers:
            s.close()
        await stop(proc)
    ordered = sorted(times)
    out: dict[str, Any] = {
        "server": server.name,
        "ops": len(times),
        "seconds": round((ended - started) / 1e9, 3),
        "fanout_ms": round(statistics.median(times) / 1e6, 3),
        "p50_ms": round(statistics.median(times) / 1e6, 3),
        "p99_ms": round(ordered[min(len(ordered) - 1, max(0, round(0.99 * len(ordered)) - 1))] / 1e6, 3),
        "peak_rss_mb": peak,
        "subscribers": len(subscribers),
        "wrong": wrong,
        "lost": 0,
        "valid": wrong == 0 and bool(times),
        "problems": problems,
    }
    if cpu0 is not None and cpu1 is not None:
        out["cpu_us_per_op"] = round((cpu1 - cpu0) / len(times) * 1e6, 1)
    return out
