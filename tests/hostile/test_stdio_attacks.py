"""Hostile clients of a real mcpkit server process over stdio, and of the engine.

* JSON nested far deeper than the decoder's recursion limit is a parse error (-32700,
  id null), answered at once, and the server goes on serving. (Before: ``RecursionError``
  escaped the engine and the request was never answered; its caller waited for its
  deadline.)
* A client that writes requests and never reads the responses cannot grow the server:
  the server stops reading once ``max_in_flight`` requests are unanswered. (Before:
  +66 MB within 1.5 s of 30,000 requests; after: +1.5 MB.) The same holds for a flood
  of malformed lines, each of which gets an error reply: the server stops reading while
  its output backs up. (Before: +31 MB for 300,000 lines; after: +12 KB.)
* Closing stdin while reading is paused still shuts the server down within
  ``shutdown_grace``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mcpkit.protocol.engine import Engine
from mcpkit.protocol.events import Reply, RequestReceived
from mcpkit.runtime.peer import Peer
from mcpkit.transports.memory import memory_pair
from mcpkit.transports.stdio.process import StdioTransport
from support.eras import MODERN
from support.processes import rss_kib, server_command

pytestmark = pytest.mark.timeout(60)

META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
DEEP = 100_000


def call_line(rid: int, name: str = "echo", arguments: dict[str, Any] | None = None) -> bytes:
    params = {"name": name, "arguments": {"text": "x"} if arguments is None else arguments, "_meta": META}
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}).encode() + b"\n"


class Proc:
    """The test's end of the pipes to ``tests/support/servers/hostile_stdio.py``."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        assert proc.stdin is not None
        assert proc.stdout is not None
        assert proc.stderr is not None
        self.stdin, self.stdout, self.stderr = proc.stdin, proc.stdout, proc.stderr

    async def write(self, data: bytes) -> None:
        self.stdin.write(data)
        await self.stdin.drain()

    async def read(self, timeout: float = 10.0) -> dict[str, Any]:
        line = await asyncio.wait_for(self.stdout.readline(), timeout)
        assert line, "the server closed its stdout"
        out = json.loads(line)
        assert isinstance(out, dict)
        return out

    async def assert_alive(self, rid: int = 999_999_999) -> None:
        await self.write(call_line(rid, arguments={"text": "alive"}))
        out = await self.read()
        assert out["id"] == rid, out
        assert out["result"]["content"] == [{"type": "text", "text": "alive"}], out

    async def stderr_lines(self, text: bytes, count: int, timeout: float = 10.0) -> None:
        """Wait until the server wrote ``count`` stderr lines equal to ``text``."""
        seen = 0
        while seen < count:
            line = await asyncio.wait_for(self.stderr.readline(), timeout)
            assert line, "the server closed its stderr"
            seen += line.rstrip(b"\n") == text


async def spawn(*args: str) -> Proc:
    proc = await asyncio.create_subprocess_exec(
        *server_command("hostile_stdio", *args),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=1 << 20,
    )
    return Proc(proc)


async def stop(p: Proc) -> None:
    if p.proc.returncode is None:
        try:
            p.stdin.close()
        except (BrokenPipeError, ConnectionResetError):
            pass
        try:
            await asyncio.wait_for(p.proc.wait(), 5.0)
        except TimeoutError:
            p.proc.kill()
            await p.proc.wait()


@pytest.fixture
async def server() -> AsyncIterator[Proc]:
    p = await spawn()
    try:
        yield p
    finally:
        await stop(p)


# --- finding 1: nesting ------------------------------------------------------------------------


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


HOSTILE_LINES = {
    "params": b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":' + nested(DEEP) + b"}}",
    "id": b'{"jsonrpc":"2.0","id":' + nested(DEEP) + b',"method":"ping"}',
    "method": b'{"jsonrpc":"2.0","id":1,"method":' + nested(DEEP) + b"}",
    "unknown-member": b'{"x":' + b'{"a":' * DEEP + b"1" + b"}" * DEEP + b',"jsonrpc":"2.0","id":1,"method":"ping"}',
    "result": b'{"jsonrpc":"2.0","id":1,"result":' + nested(DEEP) + b"}",
    "error": b'{"jsonrpc":"2.0","id":1,"error":' + nested(DEEP) + b"}",
}
HOSTILE_NOTES = {
    "progress": b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":' + nested(DEEP) + b"}}",
    "cancelled": b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":' + nested(DEEP) + b"}}",
}


@pytest.mark.parametrize("line", list(HOSTILE_LINES.values()), ids=list(HOSTILE_LINES))
def test_engine_answers_deep_nesting_with_a_parse_error(line: bytes) -> None:
    engine = Engine()
    engine.start_request("tools/list", None, deadline=10.0)  # so that a response to id 1 is expected
    ev = engine.receive(line)
    assert isinstance(ev, Reply), ev
    out = json.loads(ev.data)
    assert (out["id"], out["error"]["code"]) == (None, -32700), out
    # the engine is unharmed: the next message is served
    assert isinstance(engine.receive(b'{"jsonrpc":"2.0","id":2,"method":"ping"}'), RequestReceived)


@pytest.mark.parametrize("line", list(HOSTILE_NOTES.values()), ids=list(HOSTILE_NOTES))
def test_engine_refuses_a_deeply_nested_notification(line: bytes) -> None:
    """Unreadable, so a parse error (it cannot be told from a request); the request it
    names is not touched."""
    engine = Engine()
    out = engine.start_request("tools/call", {}, deadline=10.0, progress=True)
    engine.mark_sent(out)
    ev = engine.receive(line)
    assert isinstance(ev, Reply), ev
    assert json.loads(ev.data)["error"]["code"] == -32700
    assert out.id in engine.outgoing


def test_engine_bounds_the_text_of_a_malformed_nested_peer_error() -> None:
    """An error object that decodes but is not an error object (a list nested nearly as
    deep as the decoder allows) becomes a bounded -32603, whatever the stack depth."""
    engine = Engine()
    out = engine.start_request("tools/list", None, deadline=10.0)
    outcomes = set()
    for depth in [100, *range(900, 1001)]:  # across the decoder's limit, whatever it is from this stack
        rid = out.id
        ev = engine.receive(b'{"jsonrpc":"2.0","id":%d,"error":%s}' % (rid, nested(depth)))
        if isinstance(ev, Reply):  # deeper than the decoder goes: a parse error
            assert json.loads(ev.data)["error"]["code"] == -32700
            outcomes.add("parse error")
            continue
        error = getattr(ev, "error", None)
        assert error is not None
        assert error.code == -32603
        assert len(json.dumps(error.data)) < 400
        outcomes.add("malformed error")
        out = engine.start_request("tools/list", None, deadline=10.0)
    assert outcomes == {"parse error", "malformed error"}


async def test_a_deeply_nested_request_is_answered_at_once(server: Proc) -> None:
    await server.assert_alive()
    for name, line in {**HOSTILE_NOTES, **HOSTILE_LINES}.items():
        started = time.monotonic()
        await server.write(line + b"\n")
        out = await server.read(timeout=15.0)
        assert (out["id"], out["error"]["code"]) == (None, -32700), (name, out)
        await server.assert_alive()  # the next message is the answer to the next request
        assert time.monotonic() - started < 10, name  # at once: before it was never answered


# --- finding 2: backpressure ---------------------------------------------------------------------

FLOOD = 30_000


async def flood_and_measure(server: Proc, data: bytes) -> tuple[int, asyncio.Task[None]]:
    """Write ``data`` without reading stdout; after a 1.5 s window (the time the server had
    to take in what it would), return its RSS growth in KiB and the writer task."""
    await server.assert_alive()
    before = rss_kib(server.proc.pid)
    writer = asyncio.ensure_future(server.write(data))
    await asyncio.wait({writer}, timeout=1.5)
    return rss_kib(server.proc.pid) - before, writer


async def test_requests_without_reading_responses_do_not_grow_the_server(server: Proc) -> None:
    data = b"".join(call_line(rid) for rid in range(1, FLOOD + 1))
    growth, writer = await flood_and_measure(server, data)
    seen: set[int] = set()
    started = time.monotonic()
    while len(seen) < FLOOD:  # now read everything: every request gets exactly one answer
        out = await server.read()
        assert out["result"]["content"] == [{"type": "text", "text": "x"}], out
        assert out["id"] not in seen
        seen.add(out["id"])
    await asyncio.wait_for(writer, 10.0)
    await server.assert_alive()
    assert time.monotonic() - started < 20
    print(f"RSS growth while the client did not read: {growth} KiB")
    assert growth < 30 * 1024, f"RSS grew by {growth} KiB while the client did not read"


async def test_malformed_lines_without_reading_replies_do_not_grow_the_server(server: Proc) -> None:
    count = 300_000
    growth, writer = await flood_and_measure(server, b"x\n" * count)
    lines = errors = 0
    partial = b""
    while lines < count:
        chunk = await asyncio.wait_for(server.stdout.read(1 << 16), 10.0)
        assert chunk, "the server closed its stdout"
        head, newline, partial = (partial + chunk).rpartition(b"\n")
        if newline:
            lines += head.count(b"\n") + 1
            errors += head.count(b'"code":-32700')
    assert (lines, errors, partial) == (count, count, b"")
    await asyncio.wait_for(writer, 10.0)
    await server.assert_alive()
    print(f"RSS growth while the client did not read: {growth} KiB")
    assert growth < 30 * 1024, f"RSS grew by {growth} KiB while the client did not read"


async def test_the_memory_pair_holds_messages_while_the_peer_is_at_its_bound() -> None:
    client_end, server_end = memory_pair()
    limit, total = 4, 40
    gate, full, answered = asyncio.Event(), asyncio.Event(), asyncio.Event()
    running = peak = 0

    async def on_request(ev: RequestReceived) -> Any:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        if running == limit:
            full.set()
        await gate.wait()
        running -= 1
        return {}

    replies: list[bytes] = []

    def on_reply(data: bytes) -> None:
        replies.append(data)
        if len(replies) == total:
            answered.set()

    server_peer = Peer(server_end, on_request=on_request, max_in_flight=limit)
    await server_peer.start()
    await client_end.start(on_reply, lambda reason: None)
    for rid in range(total):  # all delivered on one loop turn, before any handler runs
        client_end.send(b'{"jsonrpc":"2.0","id":%d,"method":"x"}' % rid)
    await asyncio.wait_for(full.wait(), 5)
    assert (server_peer.in_flight, running, peak) == (limit, limit, limit)
    gate.set()
    await asyncio.wait_for(answered.wait(), 5)
    assert peak == limit
    assert server_peer.in_flight == 0
    assert sorted(json.loads(r)["id"] for r in replies) == list(range(total))
    await server_peer.close()


async def test_requests_cancelled_before_their_handlers_start_free_their_place() -> None:
    """A request and its cancellation on one loop turn: the handler never starts, no
    answer goes out, and the request stops counting towards ``max_in_flight`` (the
    peer's own bookkeeping runs when a handler ends; one that never started is counted
    out by the cancellation). Reading resumes, and the requests after it are served."""
    client_end, server_end = memory_pair()
    limit, cancelled = 3, 2
    started: list[Any] = []

    async def on_request(ev: RequestReceived) -> Any:
        started.append(ev.id)
        return {}

    replies: list[int] = []
    server_peer = Peer(server_end, on_request=on_request, max_in_flight=limit)
    await server_peer.start()
    await client_end.start(lambda data: replies.append(json.loads(data)["id"]), lambda reason: None)
    for rid in range(cancelled):  # cancelled on the turn they arrive, before their tasks run
        client_end.send(b'{"jsonrpc":"2.0","id":%d,"method":"x"}' % rid)
        client_end.send(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}' % rid)
    for _ in range(5):
        await asyncio.sleep(0)
    assert (started, replies, server_peer.in_flight) == ([], [], 0)
    for rid in range(cancelled, cancelled + 2 * limit):  # were they still counted, reading would pause for good
        client_end.send(b'{"jsonrpc":"2.0","id":%d,"method":"x"}' % rid)
    for _ in range(20):
        await asyncio.sleep(0)
    assert sorted(replies) == list(range(cancelled, cancelled + 2 * limit))
    assert server_peer.in_flight == 0
    await server_peer.close()


async def test_a_paused_spawned_process_transport_reads_nothing_until_resumed() -> None:
    """The client's side: paused, it hands on none of the server's answers and stops
    reading them, so the server, whose stdout backs up, stops reading too."""
    received: list[bytes] = []
    count = 12000  # answers of about 2 MB: more than the server's widened (1 MiB) stdout pipe holds
    all_in = asyncio.Event()

    def on_message(data: bytes) -> None:
        received.append(data)
        if len(received) == count:
            all_in.set()

    transport = StdioTransport(server_command("hostile_stdio"), stderr="devnull")
    transport.pause_reading()
    await transport.start(on_message, lambda reason: None)
    try:
        for rid in range(1, count + 1):
            transport.send(call_line(rid).rstrip(b"\n"))
        drained = asyncio.ensure_future(transport.drain())
        await asyncio.wait({drained}, timeout=1.5)  # the window in which an unpaused reader would take it all
        assert received == []
        assert not drained.done(), "the answers were read although the transport was paused"
        transport.resume_reading()
        await asyncio.wait_for(drained, 10)
        await asyncio.wait_for(all_in.wait(), 10)
        assert sorted(json.loads(m)["id"] for m in received) == list(range(1, count + 1))
    finally:
        await transport.close()


# --- finding 3: shutdown while reading is paused ------------------------------------------------


async def test_closing_stdin_while_reading_is_paused_exits_within_the_grace() -> None:
    limit, grace = 8, 0.5
    p = await spawn(str(limit), str(grace))
    try:
        await p.assert_alive()
        await p.write(b"".join(call_line(rid, "hold", {}) for rid in range(1, 3 * limit + 1)))
        await p.stderr_lines(b"held", limit)
        started = time.monotonic()
        p.stdin.close()
        code = await asyncio.wait_for(p.proc.wait(), 10.0)
        elapsed = time.monotonic() - started
        assert code == 0
        assert elapsed < grace + 2.0, f"the server took {elapsed:.2f} s to exit"
    finally:
        await stop(p)


if sys.platform != "linux":  # /proc and the pipe semantics these tests measure
    pytestmark = [pytestmark, pytest.mark.skip(reason="Linux only")]
