"""A stdio client that supervises its server (docs/timeouts-and-retries.md): restarts
after a crash, with back-off and a bounded rate; calls in flight fail with
``ConnectionClosed`` and only the idempotent ones are sent again; the client negotiates
anew and re-opens its subscriptions; and a request whose deadline passes while its bytes
wait behind a stalled write is never sent. Over real server processes
(tests/support/servers/resilient.py, which logs every start and call to a file)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from mcpkit import (
    Client,
    ClientEvent,
    ClientOptions,
    ConnectionClosed,
    ConnectionLost,
    ReconnectFailed,
    RequestTimeout,
    RestartPolicy,
    RetryPolicy,
    ServerRestarted,
    StdioTransport,
)
from mcpkit.transports.restart import CrashLog
from support.eras import ERAS, LEGACY
from support.processes import server_command
from support.waiting import until

pytestmark = pytest.mark.timeout(60)


def lines(log: Path) -> list[str]:
    return log.read_text(encoding="utf-8").splitlines()


def starts(log: Path) -> list[tuple[int, float]]:
    return [(int(pid), float(at)) for _, pid, at in (line.split() for line in lines(log) if line.startswith("start "))]


class Watch:
    """Collects the client's events; ``wait(kind)`` waits (bounded) for one of a kind."""

    def __init__(self) -> None:
        self.events: list[ClientEvent] = []
        self._arrived = asyncio.Event()

    def __call__(self, event: ClientEvent) -> None:
        self.events.append(event)
        self._arrived.set()

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]

    async def wait(self, kind: str, timeout: float = 10.0) -> ClientEvent:
        async with asyncio.timeout(timeout):
            while True:
                found = [e for e in self.events if e.kind == kind]
                if found:
                    return found[-1]
                self._arrived.clear()
                await self._arrived.wait()


def supervised(log: Path, *extra: str, policy: RestartPolicy | None = None) -> StdioTransport:
    return StdioTransport(
        server_command("resilient", str(log), *extra), stderr="capture", restart=policy or RestartPolicy(initial_delay=0.05)
    )


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "server.log"
    path.write_text("")
    return path


async def started_call(client: Client, name: str, tag: str) -> asyncio.Task[Any]:
    """Start ``name(tag)`` and return its task once the server reports it is under way."""
    under_way = asyncio.Event()
    task = asyncio.create_task(client.call_tool(name, {"tag": tag}, on_progress=lambda *_: under_way.set()))
    async with asyncio.timeout(10):
        await under_way.wait()
    return task


@pytest.mark.parametrize("era", ERAS)
async def test_a_killed_server_is_restarted_and_only_idempotent_calls_are_sent_again(era: str, log: Path) -> None:
    watch = Watch()
    transport = supervised(log)
    options = ClientOptions(protocol_version=era, retry=RetryPolicy(3, initial_delay=0.01), on_event=watch, request_timeout=10)
    async with Client(transport, options) as client:
        await client.list_tools()  # learns that lookup is read-only
        first_pid = transport.pid
        lookup = await started_call(client, "lookup", "a")
        charge = await started_call(client, "charge", "a")
        assert transport.pid is not None
        os.kill(transport.pid, signal.SIGKILL)  # mid-stream: both calls are in flight
        await watch.wait("disconnect")
        after = asyncio.create_task(client.call_tool("pid"))  # made while reconnecting: sent once the client is back
        looked_up, charged, pid = await asyncio.gather(lookup, charge, after, return_exceptions=True)
        assert isinstance(charged, ConnectionClosed), charged
        assert not isinstance(looked_up, BaseException), looked_up
        assert looked_up.content[0].text == f"lookup a by {transport.pid}"
        assert not isinstance(pid, BaseException), pid
        assert pid.structured_content == {"result": transport.pid}
        assert transport.pid != first_pid
        assert client.era == ("modern" if era.startswith("2026") else "legacy")
        assert client.is_connected
    seen = lines(log)
    assert seen.count("charge a") == 1  # the server's own record: never sent again
    assert seen.count("lookup a") == 2  # once per process
    assert [pid for pid, _ in starts(log)] == [first_pid, pid.structured_content["result"]]
    assert transport.restarts == 1
    kinds = watch.kinds()
    for kind in ("disconnect", "restart", "reconnect", "retry"):
        assert kind in kinds, kinds
    restarted = next(e for e in watch.events if isinstance(e, ServerRestarted))
    assert (restarted.restart, restarted.delay) == (1, 0.05)
    lost = next(e for e in watch.events if isinstance(e, ConnectionLost))
    assert "server" in lost.reason
    assert kinds.index("disconnect") < kinds.index("restart") < kinds.index("reconnect")


async def test_a_read_only_call_is_retried_after_a_crash_without_a_tool_list_first(log: Path) -> None:
    """Issue 25: the client learns the tool's annotations when it first needs them (the
    crash), so a read-only call is retried though nobody listed the tools before."""
    transport = supervised(log)
    options = ClientOptions(retry=RetryPolicy(3, initial_delay=0.01), request_timeout=10)
    async with Client(transport, options) as client:
        lookup = await started_call(client, "lookup", "b")
        charge = await started_call(client, "charge", "b")
        assert transport.pid is not None
        os.kill(transport.pid, signal.SIGKILL)
        looked_up, charged = await asyncio.gather(lookup, charge, return_exceptions=True)
        assert isinstance(charged, ConnectionClosed), charged  # learned too: not read-only
        assert not isinstance(looked_up, BaseException), looked_up
        assert looked_up.content[0].text == f"lookup b by {transport.pid}"
    seen = lines(log)
    assert seen.count("lookup b") == 2
    assert seen.count("charge b") == 1


async def test_a_server_that_dies_while_first_connecting_fails_with_its_stderr(log: Path) -> None:
    """Issue 25: the first start is not supervised by default, but its failure says why."""
    transport = supervised(log, "--fail-first", "1")
    with pytest.raises(ConnectionClosed) as caught:
        async with Client(transport):
            pass
    message = caught.value.message
    assert "exited (code 2)" in message
    assert "stderr: cannot start: attempt 1" in message
    assert len(starts(log)) == 1


async def test_supervise_start_restarts_a_server_that_dies_while_first_connecting(log: Path) -> None:
    watch = Watch()
    transport = supervised(log, "--fail-first", "2", policy=RestartPolicy(initial_delay=0.05, supervise_start=True))
    async with Client(transport, ClientOptions(on_event=watch)) as client:
        assert (await client.call_tool("pid")).structured_content == {"result": transport.pid}
    assert len(starts(log)) == 3
    assert transport.restarts == 2
    restarted = [e for e in watch.events if isinstance(e, ServerRestarted)]
    assert [e.restart for e in restarted] == [1, 2]
    assert "cannot start: attempt 1" in restarted[0].reason


async def test_supervise_start_gives_up_with_the_policy_and_the_stderr(log: Path) -> None:
    policy = RestartPolicy(max_restarts=2, initial_delay=0.05, supervise_start=True)
    transport = supervised(log, "--fail-first", "9", policy=policy)
    with pytest.raises(ConnectionClosed) as caught:
        async with Client(transport):
            pass
    message = caught.value.message
    assert message.startswith("The server process crashed 3 times within 60 s; not restarting it again (last: ")
    assert "cannot start: attempt 3" in message
    assert message.count("stderr: ") == 1
    assert len(starts(log)) == 3


async def test_a_server_that_keeps_crashing_is_restarted_with_back_off_then_given_up_on(log: Path) -> None:
    watch = Watch()
    policy = RestartPolicy(max_restarts=2, window=60, initial_delay=0.2, multiplier=2.0)
    transport = supervised(log, "--crash-after", "1", policy=policy)  # every start after the first exits at once
    async with Client(transport, ClientOptions(on_event=watch, request_timeout=10)) as client:
        with pytest.raises(ConnectionClosed):
            await client.call_tool("crash")
        failed = await watch.wait("reconnect_failed")
        with pytest.raises(ConnectionClosed) as caught:
            await client.ping()
        assert not client.is_connected
    assert isinstance(failed, ReconnectFailed)
    message = caught.value.message
    assert message.startswith("The server process crashed 3 times within 60 s; not restarting it again (last: ")
    assert "exited (code 3)" in message
    assert message == failed.error.message
    times = [at for _, at in starts(log)]
    assert len(times) == 3  # the first start, then two restarts that crashed at once
    assert times[1] - times[0] >= 0.2
    assert times[2] - times[1] >= 0.4  # the back-off doubled
    assert [(e.restart, e.delay) for e in watch.events if isinstance(e, ServerRestarted)] == [(1, 0.2), (2, 0.4)]
    assert "reconnect" not in watch.kinds()


async def test_a_restarted_server_that_never_answers_counts_as_a_crash_and_is_stopped(log: Path) -> None:
    watch = Watch()
    policy = RestartPolicy(max_restarts=1, initial_delay=0.05)
    transport = supervised(log, "--hang-after", "1", policy=policy)
    transport.shutdown_timeout = 0.2
    options = ClientOptions(protocol_version=LEGACY, on_event=watch, request_timeout=3.0)  # the first start must make it
    async with Client(transport, options) as client:
        with pytest.raises(ConnectionClosed):
            await client.call_tool("crash")
        failed = await watch.wait("reconnect_failed")
        hung = transport.pid
        assert hung is not None
        assert transport.returncode is not None  # the silent process was stopped, not left behind
        assert not client.is_connected
    assert isinstance(failed, ReconnectFailed)
    assert "crashed 2 times" in failed.error.message
    assert "Request timed out" in failed.error.message
    assert len(starts(log)) in (1, 2)  # under load the new process may not even have logged its start


@pytest.mark.parametrize("era", ERAS)
async def test_subscriptions_are_reopened_after_a_restart(era: str, log: Path) -> None:
    watch = Watch()
    transport = supervised(log)
    client = Client(transport, ClientOptions(protocol_version=era, on_event=watch, request_timeout=10))
    async with client, client.listen(resource_uris=["data://x"]) as changes:
        await client.call_tool("touch", {"name": "x"})
        async with asyncio.timeout(5):
            assert (await anext(changes)).uri == "data://x"
        assert transport.pid is not None
        os.kill(transport.pid, signal.SIGKILL)
        await watch.wait("reconnect")
        async with asyncio.timeout(5):
            caught_up = await anext(changes)  # changes may have been missed: one per resource watched
        assert (caught_up.kind, caught_up.uri) == ("resource", "data://x")
        for _ in range(20):  # the new server has the subscription: its change notices arrive
            await client.call_tool("touch", {"name": "x"})
            try:
                async with asyncio.timeout(0.5):
                    change = await anext(changes)
                break
            except TimeoutError:
                continue  # modern: the stream may not be acknowledged yet
        else:
            pytest.fail("no change notice from the restarted server")
        assert (change.kind, change.uri) == ("resource", "data://x")


async def test_calls_wait_for_the_restart_and_closing_the_client_ends_the_wait(log: Path) -> None:
    watch = Watch()
    transport = supervised(log, policy=RestartPolicy(initial_delay=30.0, max_delay=30.0))
    client = Client(transport, ClientOptions(on_event=watch, request_timeout=20))
    await client.connect()
    try:
        assert transport.pid is not None
        os.kill(transport.pid, signal.SIGKILL)
        await watch.wait("restart")
        waiting = asyncio.create_task(client.call_tool("pid"))
        with pytest.raises(RequestTimeout):  # its own deadline passes first: never sent
            await client.call_tool("pid", timeout=0.2)
        assert not waiting.done()
    finally:
        started = time.monotonic()
        await client.close()
    with pytest.raises(ConnectionClosed, match="closed by the client"):
        await waiting
    assert time.monotonic() - started < 5.0
    assert len(starts(log)) == 1


async def test_without_restart_a_crash_ends_the_client_as_before(log: Path) -> None:
    watch = Watch()
    transport = StdioTransport(server_command("resilient", str(log)), stderr="devnull")
    async with Client(transport, ClientOptions(on_event=watch, retry=RetryPolicy(3))) as client:
        with pytest.raises(ConnectionClosed):
            await client.call_tool("crash")
        with pytest.raises(ConnectionClosed):
            await client.list_tools()  # idempotent, but nothing brings the connection back
        assert not client.is_connected
    assert watch.kinds() == ["attempt", "disconnect", "attempt"]  # crash was not listed: it might have been retried
    assert len(starts(log)) == 1


async def test_a_request_whose_deadline_passes_behind_a_stalled_write_is_never_sent(log: Path) -> None:
    transport = StdioTransport(server_command("resilient", str(log)), stderr="devnull")
    async with Client(transport, ClientOptions(request_timeout=30)) as client:
        await client.call_tool("record", {"text": "first"})
        assert transport.pid is not None
        os.kill(transport.pid, signal.SIGSTOP)  # the server stops reading its stdin
        try:
            big = asyncio.create_task(client.call_tool("record", {"text": "big " + "x" * 4_000_000}))
            # 4 MB do not fit in the pipe: the write stalls
            await until(lambda: transport.write_blocked, what="the write stalled")
            started = time.monotonic()
            with pytest.raises(RequestTimeout):
                await client.call_tool("record", {"text": "late"}, timeout=0.3)
            assert time.monotonic() - started < 10  # the deadline holds even though nothing can be written (30 s default)
        finally:
            os.kill(transport.pid, signal.SIGCONT)
        assert (await big).content[0].text == "recorded"
        await client.call_tool("record", {"text": "after"})
    recorded = [line for line in lines(log) if line.startswith("record")]
    assert recorded == ["record first", f"record big {'x' * 36}", "record after"]


def test_restart_policy_counts_crashes_within_its_window() -> None:
    crashes = CrashLog(RestartPolicy(max_restarts=3, window=10.0, initial_delay=0.5, multiplier=3.0, max_delay=2.0))
    assert [crashes.crashed(t) for t in (0.0, 1.0, 2.0)] == [0.5, 1.5, 2.0]
    assert crashes.crashed(3.0) is None  # a fourth crash within 10 s: give up
    assert crashes.crashed(30.0) == 0.5  # long after: the old crashes are forgotten
    assert crashes.restarts == 4
    for bad in (
        {"max_restarts": 0},
        {"window": 0},
        {"initial_delay": -1},
        {"initial_delay": 10.0, "max_delay": 5.0},
        {"multiplier": 0.5},
    ):
        with pytest.raises(ValueError):  # noqa: PT011
            RestartPolicy(**bad)  # type: ignore[arg-type]
    assert StdioTransport(["x"], restart=True).restart_policy == RestartPolicy()
    assert StdioTransport(["x"]).restart_policy is None
