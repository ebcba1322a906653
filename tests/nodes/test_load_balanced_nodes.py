"""Several nodes behind a load balancer (docs/deploy.md): three uvicorn node processes
(tests/support/servers/node_app.py) sharing a real redis-server, behind a real HAProxy that
round-robins every request; some steps aim requests at one node directly.

The figures of docs/deploy.md come from here: the kill and restart tests print what
failed and how long recovery took, the throughput test the requests per second with 1,
2 and 3 nodes (``pytest -s`` shows them).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from mcpkit import (
    Client,
    ClientOptions,
    ElicitResult,
    HttpTransport,
    McpError,
    NodeMessage,
    RedisStore,
    SessionRecord,
    StoreUnavailable,
    TaskRecord,
    TaskStoreFull,
)
from mcpkit.stores.bus import Change
from support.eras import LEGACY, MODERN
from support.nodes import Node, RawSession, Redis, SseReader, haproxy, haproxy_config, load, require_binaries, tool_call
from support.ports import free_port
from support.waiting import until, wait_until
from support.wire import modern

pytestmark = pytest.mark.timeout(120)


@dataclass
class Deployment:
    redis: Redis
    nodes: list[Node]
    port: int  # HAProxy over all three nodes
    ports: dict[int, int]  # HAProxy over the first n nodes, by n, keeping connections alive (benchmarks)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def node(self, label: str) -> Node:
        return next(n for n in self.nodes if n.label == label)

    def revive(self) -> None:
        """Start again every node that was killed, and wait until each is ready."""
        dead = [n for n in self.nodes if not n.alive]
        for n in dead:
            n.start()
        for n in dead:
            n.wait()
        self.balanced()

    def balanced(self) -> None:
        """Return once HAProxy sends requests to every node again (its health checks have
        seen the revived ones up): modern calls through it, until each node has answered."""
        labels = {n.label for n in self.nodes}
        seen: set[str] = set()

        def every_node_answers() -> bool:
            body, headers = modern("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
            with contextlib.suppress(httpx.HTTPError, KeyError, ValueError):
                reply = httpx.post(self.url, json=body, headers=headers, timeout=5).json()
                seen.add(reply["result"]["content"][0]["text"].split()[1])
            return seen == labels

        wait_until(every_node_answers, timeout=30, what="HAProxy sends traffic to every node")


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    require_binaries()
    directory: Path = tmp_path_factory.mktemp("nodes")
    redis = Redis(directory)
    redis.start()
    nodes = [Node(label, redis.url, directory / f"node-{label}.log") for label in "ABC"]
    try:
        for n in nodes:
            n.start()
        for n in nodes:
            n.wait()
        port, ports = free_port(), {n: free_port() for n in (1, 2, 3)}
        config = haproxy_config({port: nodes, **{ports[n]: nodes[:n] for n in (1, 2, 3)}}, keep_alive=tuple(ports.values()))
        with haproxy(config, directory, [port, *ports.values()]):
            yield Deployment(redis, nodes, port, ports)
    finally:
        for n in nodes:
            if n.alive:
                n.kill()
        redis.kill()


@pytest.fixture(autouse=True)
def _every_node_up_again(deployment: Deployment) -> Iterator[None]:
    """A test that stops a node and then fails does not leave the next tests a node short."""
    yield
    if not all(n.alive for n in deployment.nodes):
        deployment.revive()


def client(url: str, era: str, **options: Any) -> tuple[Client, HttpTransport]:
    transport = HttpTransport(url)
    return Client(transport, ClientOptions(**{"protocol_version": era, "request_timeout": 10, **options})), transport


def answer_word(word: str) -> Any:
    def on_elicit(request: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"word": word})

    return on_elicit


# --- the stores themselves --------------------------------------------------------------------


async def test_the_redis_stores(deployment: Deployment) -> None:
    """Session records, bounded event streams (replay, follow, end once), tasks (bounded,
    newest version kept), the bus and node messages between two stores of one Redis."""
    one = RedisStore(deployment.redis.url, prefix=f"direct{os.getpid()}", heartbeat=0.2, max_events_per_stream=3, max_tasks=2)
    two = RedisStore(deployment.redis.url, prefix=f"direct{os.getpid()}", heartbeat=0.2)
    try:
        await one.start()
        await two.start()
        record = SessionRecord(session_id="s1", protocol_version=LEGACY, resource_uris=["note://a"], log_level="info")
        await one.sessions.create(record, 60)
        with pytest.raises(ValueError, match="exists"):
            await two.sessions.create(record, 60)
        loaded = await two.sessions.load("s1", 60)
        assert loaded is not None
        assert (loaded.resource_uris, loaded.log_level) == (["note://a"], "info")
        await two.sessions.delete("s1")
        assert await one.sessions.load("s1", 60) is None
        assert await one.sessions.node_alive(two.node_id)

        ids = [await one.events.store_event("s1-get", f"m{i}".encode()) for i in range(5)]
        replayed: list[tuple[str, bytes]] = []

        async def collect(event_id: str, message: bytes) -> None:
            replayed.append((event_id, message))

        assert await two.events.replay_events_after(ids[0], collect) is None  # trimmed: 3 kept
        assert await two.events.replay_events_after(ids[2], collect) == "s1-get"
        assert replayed == [(ids[3], b"m3"), (ids[4], b"m4")]
        cursor = two.events.entry_of(ids[4])
        assert cursor is not None
        assert await one.events.end_stream("s1-get", b"last")
        assert not await two.events.end_stream("s1-get", b"again")  # ended once
        events, _, ended = await two.events.follow("s1-get", cursor)
        assert ([m for _, m in events], ended) == ([b"last"], True)

        now = time.time()
        task = TaskRecord(task_id="t1", status="working", created_at=now, updated_at=now, ttl=60, poll_interval=1)
        await one.tasks.create(task)
        await one.tasks.save(msgspec.structs.replace(task, status="completed", version=2))
        await one.tasks.save(msgspec.structs.replace(task, status="failed", version=1))  # older: ignored
        got = await two.tasks.get("t1")
        assert got is not None
        assert (got.status, got.version) == ("completed", 2)
        await one.tasks.create(msgspec.structs.replace(task, task_id="t2"))
        with pytest.raises(TaskStoreFull):
            await one.tasks.create(msgspec.structs.replace(task, task_id="t3"))

        heard: list[Change] = []
        messages: list[NodeMessage] = []
        two.bus.subscribe(heard.append)
        two.sessions.listen(messages.append)
        prefix = two.prefix  # the channels stores/redis/ documents; Redis itself says when two listens on both

        async def two_listens() -> bool:
            counts = dict(await one.redis.pubsub_numsub(f"{prefix}:changes", f"{prefix}:node:{two.node_id}"))
            return all(count >= 1 for count in counts.values())

        await until(two_listens, what="the second store subscribed to its channels")
        one.bus.publish(Change("resource", "note://b"))
        await one.sessions.send(two.node_id, NodeMessage(kind="cancel", session_id="s9", sender=one.node_id, body=b"{}"))
        await until(lambda: heard and messages, what="the change and the node message delivered")
        assert heard == [Change("resource", "note://b")]
        assert [(m.kind, m.session_id) for m in messages] == [("cancel", "s9")]
        await two.aclose()
        assert not await one.sessions.node_alive(two.node_id)  # leaving removes the heartbeat at once
    finally:
        await one.aclose()
        await two.aclose()
    down = RedisStore(f"redis://127.0.0.1:{free_port()}/0", timeout=0.5)
    try:
        with pytest.raises(StoreUnavailable):
            await down.sessions.load("s1", 60)
        with pytest.raises(StoreUnavailable):
            await down.events.store_event("s1-1", b"x")
    finally:
        await down.aclose()


# --- legacy: any node serves any request of a session -----------------------------------------


async def test_a_legacy_session_is_served_by_every_node(deployment: Deployment) -> None:
    """initialize on one node, then 1,000 calls round-robined over the three: every answer
    right, every node used, one session throughout."""
    c, transport = client(deployment.url, LEGACY)
    async with c:
        session = transport.session_id
        assert session is not None
        served: Counter[str] = Counter()

        async def worker(start: int) -> None:
            for i in range(start, 1000, 10):
                value, node = (await c.call_tool("add", {"a": i, "b": 1})).content[0].text.split()  # type: ignore[union-attr]
                assert int(value) == i + 1
                served[node] += 1

        started = time.monotonic()
        await asyncio.gather(*(worker(k) for k in range(10)))
        elapsed = time.monotonic() - started
        assert sum(served.values()) == 1000
        assert set(served) == {"A", "B", "C"}
        assert min(served.values()) >= 250, served
        assert transport.session_id == session
    print(f"\n1,000 legacy calls over 3 nodes, 10 at a time: {elapsed:.2f} s ({1000 / elapsed:.0f}/s), by node {dict(served)}")


async def test_the_get_stream_on_one_node_hears_changes_made_on_the_others(deployment: Deployment) -> None:
    """The GET stream is open on A; tools on B and C announce resource updates; A delivers
    them. Then A is killed, and the stream resumes on another node with Last-Event-ID."""
    a, b, c = (deployment.node(x) for x in "ABC")
    async with httpx.AsyncClient(timeout=10) as http:
        raw = RawSession(http)
        await raw.initialize(a.url)
        assert (await raw.request(b.url, "resources/subscribe", {"uri": "note://x"}))["result"] == {}
        async with raw.stream(a.url) as stream:
            await stream.opened()  # the GET's node now delivers the session's changes
            assert await raw.call(b.url, "touch", {"uri": "note://x"}) == "B"
            assert await raw.call(c.url, "touch", {"uri": "note://x"}) == "C"
            assert await raw.call(c.url, "touch", {"uri": "note://other"}) == "C"  # not subscribed
            for _ in range(2):
                event = await stream.next()
                assert event == {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "note://x"}}
            last = stream.last_id
            assert last is not None
            a.kill()
        try:
            # the client comes back through the load balancer: B or C takes the stream over
            async with raw.stream(deployment.url, last_event_id=last) as resumed:
                resync = await resumed.until(lambda e: e["method"] == "notifications/resources/updated")
                assert {e["method"] for e in resync} <= {
                    "notifications/resources/updated", "notifications/tools/list_changed",
                    "notifications/prompts/list_changed", "notifications/resources/list_changed",
                }
                await raw.call(deployment.url, "touch", {"uri": "note://x"})
                later = await resumed.until(lambda e: e["method"] == "notifications/resources/updated")
                assert later[-1]["params"] == {"uri": "note://x"}
            # the session itself survived its first node
            assert (await raw.call(deployment.url, "add", {"a": 1, "b": 2})).startswith("3 ")
        finally:
            deployment.revive()


async def test_an_answer_posted_to_another_node_reaches_the_waiting_handler(deployment: Deployment) -> None:
    """The handler runs on B and asks; the client's answer is POSTed to C; C routes it to B."""
    b, c = deployment.node("B"), deployment.node("C")
    async with httpx.AsyncClient(timeout=10) as http:
        raw = RawSession(http)
        await raw.initialize(b.url, capabilities={"elicitation": {}})
        rid = raw.next_id()
        call = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": "ask", "arguments": {}}}
        async with raw.stream(b.url, "POST", call) as stream:
            question = await stream.next()
            assert question["method"] == "elicitation/create"
            answer = {"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"word": "hello"}}}
            assert await raw.post_message(c.url, answer) == 202
            result = await stream.next()
        assert result["id"] == rid
        assert result["result"]["content"][0]["text"] == "hello B"
    # and through the load balancer with the mcpkit client: every answer finds its handler
    cl, _ = client(deployment.url, LEGACY, on_elicit=answer_word("yes"))
    async with cl:
        answers = [(await cl.call_tool("ask")).content[0].text for _ in range(9)]  # type: ignore[union-attr]
    assert {a.split()[0] for a in answers} == {"yes"}
    assert {a.split()[1] for a in answers} == {"A", "B", "C"}


async def test_a_cancellation_posted_to_another_node_cancels_the_handler(deployment: Deployment) -> None:
    b, c = deployment.node("B"), deployment.node("C")
    async with httpx.AsyncClient(timeout=10) as http:
        raw = RawSession(http)
        await raw.initialize(b.url)
        rid = raw.next_id()
        call = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": "slow", "arguments": {"seconds": 30}}}
        started = time.monotonic()
        post = asyncio.ensure_future(http.post(b.url, json=call, headers=raw.headers()))

        async def running_on_b() -> bool:
            return int(await raw.call(b.url, "running")) > 0

        await until(running_on_b, what="slow runs on B")
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}}
        assert await raw.post_message(c.url, cancel) == 202
        reply = (await post).json()
        assert reply["error"]["code"] == -32800
        assert time.monotonic() - started < 15  # cancelled: not the handler's 30 s


# --- modern: stateless, any node -----------------------------------------------------------------


async def test_input_rounds_continue_on_another_node(deployment: Deployment) -> None:
    a, b = deployment.node("A"), deployment.node("B")
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call",
               "Mcp-Name": "ask"}
    params: dict[str, Any] = {"name": "ask", "arguments": {}, "_meta": meta}
    async with httpx.AsyncClient(timeout=10) as http:
        first = (await http.post(a.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params},
                                 headers=headers)).json()["result"]
        assert first["resultType"] == "input_required"
        retry = {**params, "requestState": first["requestState"],
                 "inputResponses": {"word": {"action": "accept", "content": {"word": "again"}}}}
        done = (await http.post(b.url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": retry},
                                headers=headers)).json()["result"]
    assert done["content"][0]["text"] == "again B"
    cl, _ = client(deployment.url, MODERN, on_elicit=answer_word("round"))
    async with cl:
        answers = [(await cl.call_tool("ask")).content[0].text for _ in range(6)]  # type: ignore[union-attr]
    assert {a.split()[0] for a in answers} == {"round"}


async def test_a_subscription_hears_changes_made_on_every_node(deployment: Deployment) -> None:
    cl, _ = client(deployment.url, MODERN)
    async with cl, cl.listen(resource_uris=["note://y"]) as changes:
        made = [await cl.call_tool("touch", {"uri": "note://y"}) for _ in range(3)]
        assert {r.content[0].text for r in made} == {"A", "B", "C"}  # type: ignore[union-attr]
        for _ in range(3):
            change = await asyncio.wait_for(changes.__anext__(), 10)
            assert (change.kind, change.uri) == ("resource", "note://y")


# --- failures ---------------------------------------------------------------------------------------


async def _legacy_load(url: str, stop: asyncio.Event, results: dict[str, Any], tag: int) -> None:
    """One legacy client calling ``add`` until ``stop`` is set; it records its connection in
    ``results["connected"]`` (the test waits for every one before it breaks anything)."""
    c, transport = client(url, LEGACY, request_timeout=5)
    async with c:
        results.setdefault("connected", []).append(tag)
        session = transport.session_id
        i = 0
        while not stop.is_set():
            i += 1
            try:
                text = (await c.call_tool("add", {"a": tag * 1_000_000 + i, "b": 1})).content[0].text  # type: ignore[union-attr]
            except McpError as exc:
                results["failed"].append((time.monotonic(), exc.code, str(exc)[:120]))
                continue
            value = int(text.split()[0])
            assert value == tag * 1_000_000 + i + 1, "an answer to another request"
            results["ok"].append(time.monotonic())
        results["sessions"].append(session == transport.session_id)


async def progressed(progress: float, total: float | None, message: str | None) -> None:
    return None


async def test_a_node_killed_under_load(deployment: Deployment) -> None:
    """kill -9 of one node while four legacy clients call: only the requests in flight on
    it fail, no answer goes to the wrong request, no session is lost, and a request whose
    SSE stream was on it gets an error from the node its client resumes on."""
    results: dict[str, Any] = {"ok": [], "failed": [], "sessions": [], "connected": []}
    stop = asyncio.Event()
    finished: list[float] = []

    async def streaming(c: Client) -> Any:
        try:
            return await c.call_tool("steps", {"n": 40, "pause": 0.1}, on_progress=progressed)
        finally:
            finished.append(time.monotonic())

    c, _ = client(deployment.url, LEGACY, request_timeout=15)
    async with c:
        streams = [asyncio.ensure_future(streaming(c)) for _ in range(3)]
        workers = [asyncio.ensure_future(_legacy_load(deployment.url, stop, results, tag)) for tag in range(4)]
        await until(lambda: len(results["connected"]) == 4 and len(results["ok"]) >= 40, timeout=30, what="the load runs")
        victim = deployment.node("C")
        killed_at = time.monotonic()
        victim.kill()
        await asyncio.sleep(3)  # the load goes on for 3 s at least (a duration, not a condition) ...
        await until(lambda: sum(t > killed_at for t in results["ok"]) >= 10, timeout=30, what="calls answered after the kill")
        stop.set()  # ... and until ten calls were answered after the kill
        await asyncio.gather(*workers)
        outcomes = await asyncio.gather(*streams, return_exceptions=True)
    deployment.revive()
    failed = results["failed"]
    after = [t for t in results["ok"] if t > killed_at]
    recovered = max(0.0, max((t for t, *_ in failed), default=killed_at) - killed_at)
    errors = [o for o in outcomes if isinstance(o, BaseException)]
    error_after = min(finished) - killed_at if errors else 0.0
    print(f"\nkill -9 under load: {len(results['ok'])} calls answered, {len(failed)} failed "
          f"({[text for _, _, text in failed]}), the last {recovered:.2f} s after the kill; "
          f"{len(errors)} of 3 streaming calls failed, {error_after:.1f} s after the kill: {[str(e)[:90] for e in errors]}")
    assert results["sessions"] == [True] * 4  # no session lost
    assert len(failed) <= 4, failed  # at most the request in flight on the victim, per client
    assert recovered < 5.0  # the failures stop once HAProxy sees the node gone (0.5 s on a quiet machine)
    assert len(after) >= 10  # the deployment serves on
    for outcome in outcomes:  # the ones that ran on the victim failed with an error, the others finished
        assert isinstance(outcome, McpError) or outcome.content[0].text in {"A", "B"}  # type: ignore[union-attr]
    assert all("stopped before answering" in str(e) for e in errors), errors
    assert error_after < 10  # the streaming calls on the victim fail, rather than wait out their 15 s deadline


async def test_redis_restarted_under_load(deployment: Deployment) -> None:
    """While Redis is down, legacy requests get a clear 503 (never a hang) and modern ones
    go on; after it is back, everything works again, and every answer was right."""
    results: dict[str, Any] = {"ok": [], "failed": [], "sessions": [], "connected": []}
    modern_ok: list[float] = []
    stop = asyncio.Event()

    async def modern_load() -> None:
        c, _ = client(deployment.url, MODERN, request_timeout=5)
        async with c:
            i = 0
            while not stop.is_set():
                i += 1
                text = (await c.call_tool("add", {"a": i, "b": 1})).content[0].text  # type: ignore[union-attr]
                assert int(text.split()[0]) == i + 1
                modern_ok.append(time.monotonic())

    workers = [asyncio.ensure_future(_legacy_load(deployment.url, stop, results, tag)) for tag in range(3)]
    modern = asyncio.ensure_future(modern_load())
    await until(lambda: len(results["connected"]) == 3 and len(results["ok"]) >= 30 and modern_ok, timeout=30,
                what="the legacy and modern load runs")
    down_at = time.monotonic()
    deployment.redis.kill()
    await asyncio.sleep(1.5)  # down for 1.5 s at least (a duration) ...
    await until(lambda: results["failed"] and any(t > down_at for t in modern_ok), timeout=30,
                what="legacy calls refused and modern ones answered while Redis is down")
    deployment.redis.start()  # ... and until both eras have shown what Redis being down does to them
    up_at = time.monotonic()

    def served_again() -> bool:
        last_failure = max(t for t, *_ in results["failed"])
        return any(t > max(up_at, last_failure) for t in results["ok"])

    await until(served_again, timeout=30, what="legacy calls answered again after Redis is back")
    await asyncio.sleep(1)  # and a second more of load
    stop.set()
    await asyncio.gather(*workers, modern)
    failed = results["failed"]
    recovered = max(0.0, max((t for t, *_ in failed), default=up_at) - up_at)
    print(f"\nRedis down {up_at - down_at:.1f} s under load: legacy {len(results['ok'])} answered, {len(failed)} failed "
          f"with {Counter(text.partition(':')[0] for _, _, text in failed)}, the last {recovered:.2f} s after Redis was back; "
          f"modern answered {sum(down_at < t < up_at for t in modern_ok)} calls while it was down")
    assert results["sessions"] == [True] * 3  # the records outlived the restart
    assert failed, "nothing noticed that Redis was down"
    assert all("503" in text or "unreachable" in text.lower() for _, _, text in failed), failed[:3]
    assert recovered < 10.0
    assert any(t > up_at + recovered for t in results["ok"])
    assert any(down_at < t < up_at for t in modern_ok)  # the modern era does not need Redis (each call must succeed)


async def test_a_draining_node_hands_its_streams_over(deployment: Deployment) -> None:
    """SIGTERM: the node reports not ready, its GET streams end (the client resumes on
    another node), a call in progress still gets its answer, and it exits within its grace."""
    a = deployment.node("A")
    assert a.proc is not None
    async with httpx.AsyncClient(timeout=10) as http:
        raw = RawSession(http)
        await raw.initialize(a.url)
        slow = asyncio.ensure_future(raw.call(a.url, "slow", {"seconds": 4.0}))

        async def running_on_a() -> bool:
            return int(await raw.call(a.url, "running")) > 0

        await until(running_on_a, what="slow runs on A")
        async with raw.stream(a.url) as stream:
            await stream.opened()
            stopped_at = time.monotonic()
            a.proc.terminate()
            heard: list[dict[str, Any]] = []  # a notice sent to every session just before SIGTERM may still arrive
            with pytest.raises((httpx.HTTPError, StopAsyncIteration, TimeoutError)):
                await read_to_the_end(stream, heard)
            assert all("id" not in message for message in heard), heard  # nothing asked of this session
            assert not slow.done(), "the GET stream was not ended at once: only when the call in progress was over"
        ended = time.monotonic() - stopped_at
        assert await slow == "A"  # finished within the grace (10 s)
        a.proc.wait(20)
        exited = time.monotonic() - stopped_at
        print(f"\ndrain: the GET stream ended {ended:.2f} s after SIGTERM, the call in progress was answered, "
              f"the node exited after {exited:.2f} s")
        assert exited < 4 + 10  # once the call is over, not at the end of the grace or later
        assert (await raw.call(deployment.url, "add", {"a": 2, "b": 2})).startswith("4 ")  # the session goes on
    deployment.revive()


async def read_to_the_end(stream: SseReader, heard: list[dict[str, Any]]) -> None:
    """Read ``stream``'s messages into ``heard`` until it ends (raises what ended it)."""
    while True:
        heard.append(await stream.next(timeout=10))


# --- throughput ---------------------------------------------------------------------------------


async def test_throughput_with_one_two_and_three_nodes(deployment: Deployment) -> None:
    """tools/call requests per second through HAProxy over 1, 2 and 3 nodes: modern, and
    legacy (32 sessions, each on a connection of its own), the best of two rounds; the node
    CPU each call costs, and how many cores the nodes used together.

    The machine has two cores, shared with HAProxy, Redis and this load generator, so
    how the rate scales with nodes is a figure to print, not to assert (speed is the
    benchmark's business, docs/performance.md): on httptools + uvloop one node already
    serves what the load generator can send. What is asserted is that every
    configuration serves, and that the load is spread: in the measured second, each node
    behind the balancer did at least half its fair share of the work (its CPU time)."""
    sessions = []
    async with httpx.AsyncClient(timeout=10) as http:
        for _ in range(32):
            raw = RawSession(http)
            await raw.initialize(deployment.url)
            sessions.append(raw.session_id)
    rates: dict[str, dict[int, float]] = {"modern": {}, "legacy": {}}
    per_call: dict[str, dict[int, float]] = {"modern": {}, "legacy": {}}
    cores: dict[str, dict[int, float]] = {"modern": {}, "legacy": {}}
    shares: dict[str, dict[int, list[float]]] = {"modern": {}, "legacy": {}}
    for round_ in range(2):
        for n, port in deployment.ports.items():
            for era in rates:
                requests = [tool_call(port, "add", {"a": 1, "b": 2}, sid if era == "legacy" else None) for sid in sessions]
                if round_ == 0:
                    await load(port, requests[:8], seconds=0.2)  # warm up
                before, started = [node.cpu_seconds() for node in deployment.nodes], time.monotonic()
                rate, count = await load(port, requests, seconds=1.0)
                each = [node.cpu_seconds() - b for node, b in zip(deployment.nodes, before, strict=True)]
                used = sum(each)
                if rate > rates[era].get(n, 0.0):
                    rates[era][n], per_call[era][n] = rate, used / count * 1e6
                    cores[era][n] = used / (time.monotonic() - started)
                    shares[era][n] = [e / used for e in each[:n]]
    for era in rates:
        print(f"\nthroughput, {era} tools/call over 32 connections: " + ", ".join(
            f"{n} node(s) {rates[era][n]:.0f}/s ({per_call[era][n]:.0f} µs node CPU per call, "
            f"nodes using {cores[era][n]:.2f} cores)" for n in rates[era]
        ))
    print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    for by_nodes in rates.values():
        assert min(by_nodes.values()) > 0, rates  # every configuration serves (load() saw every answer 200)
    for by_nodes in shares.values():
        for n, share in by_nodes.items():
            assert min(share) > 0.5 / n, shares  # roundrobin over kept-alive connections: each node serves
