"""``SyncClient``: the client's calls, blocking, on a loop thread of its own — from
three threads at once, with errors and deadlines as the async client has them, and
its server closed on ``close()``, on leaving ``with``, when collected and at
interpreter exit."""

from __future__ import annotations

import asyncio
import gc
import inspect
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mcpkit import ClientOptions, Context, McpError, RequestTimeout, Server, StdioTransport, SyncClient
from support.paths import SERVERS

pytestmark = pytest.mark.timeout(60)

APP = str(SERVERS / "cli_app.py")


def stdio(**options: object) -> SyncClient:
    return SyncClient(StdioTransport([sys.executable, APP], stderr="devnull"), ClientOptions(**options))  # type: ignore[arg-type]


def test_three_threads_at_once() -> None:
    server = Server("meet")
    arrived = 0
    everyone = asyncio.Event()

    @server.tool
    async def meet(who: str) -> str:
        nonlocal arrived
        arrived += 1
        if arrived == 3:
            everyone.set()
        await asyncio.wait_for(everyone.wait(), 10)  # only if all three calls are in flight together
        return f"met {who}"

    results: dict[str, str] = {}
    errors: list[BaseException] = []
    with SyncClient(server) as client:

        def worker(name: str) -> None:
            try:
                for i in range(5 if name != "a" else 1):  # the first three meet; the rest pass
                    results[f"{name}{i}"] = client.call_tool("meet", {"who": name}).content[0].text  # type: ignore[union-attr]
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(name,)) for name in "abc"]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert not errors, errors
        assert results["a0"] == "met a"
        assert results["b4"] == "met b"
        assert results["c4"] == "met c"


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
def test_a_plain_def_answering_callback_may_call_back(era: str) -> None:
    """``on_elicit`` (as ``on_sample`` and ``on_roots``) written as a plain ``def`` runs
    on a worker thread, not the client's: it may use the SyncClient to answer, here by
    calling another tool, in either era (the legacy question waits on the open call)."""
    server = Server("asks")

    @server.tool
    def default_city() -> str:
        return "Lyon"

    @server.tool
    async def travel(ctx: Context) -> str:
        answer = await ctx.elicit("Where to?", {"type": "object", "properties": {"city": {"type": "string"}}})
        return f"going to {answer.content['city']}"  # type: ignore[index]

    client: SyncClient

    def on_elicit(request: object) -> dict[str, object]:
        city = client.call_tool("default_city").content[0].text  # type: ignore[union-attr]
        return {"action": "accept", "content": {"city": city}}

    with SyncClient(server, ClientOptions(protocol_version=era, on_elicit=on_elicit)) as client:
        assert client.call_tool("travel").content[0].text == "going to Lyon"  # type: ignore[union-attr]


@pytest.mark.e2e
def test_calls_from_threads_over_stdio() -> None:
    with stdio() as client:
        assert client.era == "modern"
        out: list[str] = []
        lock = threading.Lock()

        def worker(n: int) -> None:
            for i in range(10):
                text = client.call_tool("echo", {"text": f"{n}-{i}"}).content[0].text  # type: ignore[union-attr]
                with lock:
                    out.append(text)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert sorted(out) == sorted(f"{n}-{i}" for n in range(3) for i in range(10))


@pytest.mark.e2e  # over stdio
def test_the_same_calls_blocking() -> None:
    with stdio(protocol_version="2025-11-25") as client:
        assert (client.era, client.protocol_version) == ("legacy", "2025-11-25")
        assert client.server_info is not None
        assert client.server_info.name == "cli-app"
        assert "tools" in client.server_capabilities
        client.ping()
        assert [t.name for t in client.list_tools().tools][:2] == ["echo", "fail"]
        assert len(client.list_all_tools()) == 6
        assert client.call_tool("fail", {"message": "no"}).is_error
        assert client.call_tool("squares", {"n": 3}).structured_content == {"result": [0, 1, 4]}
        assert client.read_resource("cli://note").contents[0].text == "remember the milk"
        assert [r.uri for r in client.list_resources().resources] == ["cli://note"]
        assert [t.uri_template for t in client.list_all_resource_templates()] == ["cli://items/{item}"]
        assert [p.name for p in client.list_all_prompts()] == ["greet"]
        assert "Ada" in client.get_prompt("greet", {"name": "Ada"}).messages[0].content.text  # type: ignore[union-attr]
        assert client.send_request("tools/list")["tools"][0]["name"] == "echo"
        seen: list[float] = []
        client.call_tool("steps", {"count": 3, "delay": 0.01}, on_progress=lambda p, t, m: seen.append(p))
        assert seen == [1, 2, 3]
        with pytest.raises(McpError) as err:
            client.call_tool("nope")
        assert err.value.code == -32602
        with pytest.raises(RequestTimeout):
            client.call_tool("sleep", {"seconds": 10}, timeout=0.3)
        client.set_logging_level("debug")
    assert client.closed
    with pytest.raises(RuntimeError, match="closed"):
        client.ping()
    client.close()  # idempotent


def test_a_callback_cannot_call_back() -> None:
    server = Server("cb")

    @server.tool
    async def tick(ctx: Context) -> str:
        await ctx.report_progress(1, 1)
        return "ok"

    with SyncClient(server) as client:
        problems: list[BaseException] = []

        def on_progress(progress: float, total: float | None, message: str | None) -> None:
            try:
                client.ping()
            except RuntimeError as exc:
                problems.append(exc)

        assert client.call_tool("tick", on_progress=on_progress).content[0].text == "ok"  # type: ignore[union-attr]
        assert problems
        assert "own callbacks" in str(problems[0])


@pytest.mark.e2e
def test_a_failed_connection_raises_and_leaves_nothing_behind() -> None:
    before = threading.active_count()
    with pytest.raises(McpError):
        SyncClient(StdioTransport([sys.executable, "-c", "pass"], stderr="devnull"))
    deadline = time.monotonic() + 5
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() <= before


def _server_pids(marker: str) -> list[int]:
    out = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    return [int(pid) for pid in out.split()]


@pytest.mark.e2e
@pytest.mark.parametrize("how", ["exit", "collected"])
def test_the_server_is_closed_at_exit_and_when_collected(how: str, tmp_path: Path) -> None:
    marker = str(tmp_path / "marker.py")
    Path(marker).write_text(Path(APP).read_text())
    ending = "del client; import gc; gc.collect()" if how == "collected" else ""
    code = (
        "import sys\n"
        "from mcpkit import StdioTransport, SyncClient\n"
        f"client = SyncClient(StdioTransport([sys.executable, {marker!r}], stderr='devnull'))\n"
        "print(client.call_tool('echo', {'text': 'alive'}).content[0].text, flush=True)\n"
        f"{ending}\n"
        "print('end', flush=True)\n"
    )
    proc = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "alive\nend\n"
    assert proc.stderr == ""
    assert _server_pids(marker) == []


def test_collected_client_is_closed() -> None:
    server = Server("gc")
    client = SyncClient(server)
    runner = client._runner
    del client
    gc.collect()
    assert runner.closed
    assert not runner.thread.is_alive()


def test_call_tool_passes_the_retry_options_through() -> None:
    """``retry`` and ``idempotent`` reach the async client: a call that times out once is
    retried (it is said to be idempotent) and succeeds on its second attempt."""
    from mcpkit import RetryPolicy

    server = Server("flaky")
    calls = 0

    @server.tool
    async def flaky() -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            await asyncio.sleep(5)  # the first attempt outlives its deadline
        return f"attempt {calls}"

    with SyncClient(server) as client:
        policy = RetryPolicy(max_attempts=3, initial_delay=0.01)
        result = client.call_tool("flaky", timeout=0.5, retry=policy, idempotent=True)
    assert result.content[0].text == "attempt 2"  # type: ignore[union-attr]


# --- parity with the async client ------------------------------------------------------------------

#: Async methods of ``Client`` that ``SyncClient`` has no blocking twin of, on purpose.
NOT_BLOCKING = {
    "connect": "SyncClient connects in its constructor",
    "start_task": "a TaskHandle's methods are coroutines: start tasks with the async Client",
}


def _parameters(method: object) -> list[tuple[str, object, object, object]]:
    params = list(inspect.signature(method).parameters.values())  # type: ignore[arg-type]
    return [(p.name, p.kind, p.default, p.annotation) for p in params]


def test_every_async_call_has_a_blocking_twin_with_the_same_parameters() -> None:
    """The forwarders of ``SyncClient`` are written out by hand: each public coroutine
    method of ``Client`` has one, taking the same parameters (names, kinds, defaults,
    annotations), unless it is listed in ``NOT_BLOCKING`` with the reason."""
    from mcpkit import Client

    calls = {name: member for name, member in inspect.getmembers(Client, inspect.iscoroutinefunction) if not name.startswith("_")}
    assert set(NOT_BLOCKING) <= set(calls), "NOT_BLOCKING names a method Client does not have"
    missing = sorted(name for name in calls if name not in NOT_BLOCKING and not hasattr(SyncClient, name))
    assert missing == [], f"SyncClient lacks {missing}"
    for name, call in calls.items():
        if name in NOT_BLOCKING:
            continue
        blocking = getattr(SyncClient, name)
        assert not inspect.iscoroutinefunction(blocking), f"SyncClient.{name} is a coroutine"
        assert _parameters(blocking) == _parameters(call), f"SyncClient.{name} takes other parameters than Client.{name}"


def test_the_blocking_twins_of_roots_subscriptions_and_tasks() -> None:
    """The forwarders the parity test asked for reach the async client: roots, legacy
    subscriptions, and the requests about a task (here one the server does not know)."""
    from mcpkit import Root

    server = Server("twins")

    @server.resource("mem://a")
    def a() -> str:
        return "a"

    with SyncClient(server, ClientOptions(roots=[Root(uri="file:///tmp")])) as client:
        client.set_roots([Root(uri="file:///srv")])
        for ask in (client.get_task, client.cancel_task, lambda task_id: client.update_task(task_id, {})):
            with pytest.raises(McpError) as caught:
                ask("no-such-task")
            assert caught.value.code == -32602
    with SyncClient(server, ClientOptions(protocol_version="2025-11-25")) as client:
        client.subscribe_resource("mem://a")
        client.unsubscribe_resource("mem://a")
        with pytest.raises(RuntimeError, match="tasks/update is part of the 2026-07-28 tasks extension"):
            client.update_task("no-such-task", {})
