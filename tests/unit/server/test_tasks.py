"""The tasks extension (docs/tasks.md) through the public API: mcpkit's server and client
in memory, over stdio and over real HTTP (tests/support/servers/tasks.py; those cases are
e2e). Against server-everything's task-based tool: tests/interop/test_server_everything_tasks.py.

A task that outlives its client's connection and is fetched after reconnecting; cancel
(explicit, and a call given up on); time to live; 200 concurrent tasks; questions
answered with ``tasks/update`` (by the callbacks, and by hand, partly); failures; unknown
ids; a client without the extension; status notifications on ``subscriptions/listen``;
the store's bound; a task seen by its owner only. Every test body runs under a deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from types import ModuleType
from typing import Any

import pytest

from mcpkit import (
    Client,
    ClientOptions,
    Context,
    ElicitRequestParams,
    ElicitResult,
    FunctionVerifier,
    HttpTransport,
    InMemoryTaskStore,
    McpError,
    RequestTimeout,
    ResourceServer,
    Server,
    StdioTransport,
    Task,
    TaskRecord,
    TaskStoreFull,
    TextContent,
)
from support.eras import LEGACY, MODERN
from support.ports import free_port
from support.processes import listening, load_server, server_command
from support.serving import serve_in_thread
from support.transports import HTTP, MEMORY, TRANSPORTS
from support.waiting import until as eventually_true

LIMIT = 30.0
EXTENSION = "io.modelcontextprotocol/tasks"


def text(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def accept_name(name: str = "Ada") -> Any:
    def on_elicit(request: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="accept", content={"name": name})

    return on_elicit


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    port = free_port()
    with listening(server_command("tasks", "--http", str(port)), port):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture
def mem() -> ModuleType:
    """tests/support/servers/tasks.py, imported afresh: its server and what its handlers saw."""
    return load_server("tasks")


@pytest.fixture
def connect(request: pytest.FixtureRequest, mem: ModuleType) -> Any:
    @contextlib.asynccontextmanager
    async def make(kind: str, era: str = MODERN, **options: Any) -> AsyncIterator[Client]:
        options.setdefault("request_timeout", 10)
        opts = ClientOptions(protocol_version=era, **options)
        if kind == "memory":
            client = Client(mem.server, opts)
        elif kind == "stdio":
            client = Client(StdioTransport(server_command("tasks"), stderr="devnull"), opts)
        else:
            client = Client(HttpTransport(request.getfixturevalue("http_url")), opts)  # started on first use
        async with client:
            yield client

    return make


async def eventually(check: Callable[[], bool]) -> None:
    """Return once ``check()`` holds (the test's deadline bounds the wait)."""
    while True:
        if check():
            return
        await asyncio.sleep(0.01)


async def until(client: Client, task_id: str, predicate: Any) -> Task:
    """Poll ``tasks/get`` until ``predicate(task)`` holds."""
    while True:
        task = await client.get_task(task_id)
        if predicate(task):
            return task
        await asyncio.sleep(0.01)


# --- the basic flow ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_a_call_that_becomes_a_task(connect: Any, kind: str) -> None:
    """``call_tool`` follows a task to its end; ``start_task`` hands it over: the handle has
    the id at once, ``wait()`` the result, ``get_task`` the inlined result afterwards; the
    handler's progress message is the task's status message while it works."""
    async with asyncio.timeout(LIMIT), connect(kind) as client:
        assert (await client.discover()).capabilities["extensions"] == {EXTENSION: {}}
        assert text(await client.call_tool("work", {"seconds": 0.01, "label": "a"})) == "a done in 0.01 s (task True)"
        handle = await client.start_task("work", {"seconds": 0.3, "label": "b"})
        assert handle.task_id is not None
        assert handle.task is not None
        assert (handle.status, handle.task.ttl_ms, handle.task.poll_interval_ms) == ("working", 3_600_000, 20)
        working = await until(client, handle.task_id, lambda t: t.status_message is not None)
        assert (working.status, working.status_message) == ("working", "b: half way")
        assert text(await handle.wait()) == "b done in 0.3 s (task True)"
        done = await client.get_task(handle.task_id)
        assert done.status == "completed"
        assert done.result == {"resultType": "complete", "content": [{"type": "text", "text": "b done in 0.3 s (task True)"}]}
        assert (done.input_requests, done.error, done.result_type) == (None, None, "complete")
        assert text(await client.call_tool("quick")) == "quick"  # a plain tool stays plain
        with pytest.raises(McpError) as invalid:  # refused at once: no task is made for it
            await client.start_task("work", {"seconds": "soon"})
        assert invalid.value.code == -32602


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_a_client_without_the_extension_gets_plain_results(connect: Any, kind: str) -> None:
    """A client that did not declare the extension (or a legacy-era one) gets the result
    itself; a tool that must be a task and the tasks/* requests say -32021 (legacy: the
    requests do not exist, -32601)."""
    async with asyncio.timeout(LIMIT):
        async with connect(kind, tasks=False) as client:
            assert text(await client.call_tool("work", {"seconds": 0.01, "label": "p"})) == "p done in 0.01 s (task False)"
            with pytest.raises(McpError) as refused:
                await client.call_tool("only_as_task", {"n": 2})
            assert refused.value.code == -32021
            assert refused.value.data == {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}
            with pytest.raises(McpError) as gated:  # get_task would declare the extension
                await client.send_request("tasks/get", {"taskId": "anything"})
            assert gated.value.code == -32021
            handle = await client.start_task("only_as_task", {"n": 21})  # declares it for this one call
            assert handle.task_id is not None
            assert text(await handle.wait()) == "42"
        async with connect(kind, LEGACY) as legacy:
            assert "extensions" not in legacy.server_capabilities
            assert text(await legacy.call_tool("work", {"seconds": 0.01, "label": "l"})) == "l done in 0.01 s (task False)"
            with pytest.raises(McpError) as required:
                await legacy.call_tool("only_as_task", {"n": 2})
            assert required.value.code == -32021
            with pytest.raises(McpError) as missing:
                await legacy.get_task("anything")
            assert missing.value.code == -32601
            at_once = await legacy.start_task("work", {"seconds": 0.01, "label": "x"})
            assert (at_once.task_id, at_once.status) == (None, "completed")
            assert text(await at_once.wait()) == "x done in 0.01 s (task False)"


@pytest.mark.e2e
async def test_a_task_outlives_its_connection(http_url: str, mem: ModuleType) -> None:
    """A task started on one connection is fetched, by its id alone, on another: over HTTP
    (the server process lives on) and in memory (the same server object)."""
    async with asyncio.timeout(LIMIT):
        for make in (lambda: HttpTransport(http_url), lambda: mem.server):
            async with Client(make(), ClientOptions(request_timeout=10)) as first:
                handle = await first.start_task("work", {"seconds": 0.3, "label": "survivor"})
                task_id = handle.task_id
            assert task_id is not None
            async with Client(make(), ClientOptions(request_timeout=10)) as second:
                assert (await second.get_task(task_id)).status == "working"
                assert text(await second.task(task_id).wait(timeout=10)) == "survivor done in 0.3 s (task True)"
                assert (await second.get_task(task_id)).status == "completed"


# --- cancellation and time to live ------------------------------------------------------------


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_cancel(connect: Any, kind: str, mem: ModuleType) -> None:
    """``tasks/cancel`` cancels the handler: the task ends ``cancelled`` and ``wait()``
    raises -32800; cancelling a task that has ended is acknowledged and changes nothing."""
    async with asyncio.timeout(LIMIT), connect(kind) as client:
        handle = await client.start_task("work", {"seconds": 60, "label": "doomed"})
        await handle.cancel()
        with pytest.raises(McpError) as cancelled:
            await handle.wait()
        assert (cancelled.value.code, cancelled.value.data) == (-32800, {"taskId": handle.task_id})
        assert handle.task_id is not None
        task = await client.get_task(handle.task_id)
        assert (task.status, task.status_message, task.result, task.error) == ("cancelled", "The task was cancelled", None, None)
        if kind == "memory":
            assert ("cancelled", "doomed") in mem.EVENTS
        finished = await client.start_task("work", {"seconds": 0.01, "label": "done"})
        await finished.wait()
        assert finished.task_id is not None
        await client.cancel_task(finished.task_id)
        assert (await client.get_task(finished.task_id)).status == "completed"


async def test_a_call_given_up_on_cancels_its_task(mem: ModuleType) -> None:
    """``call_tool`` whose deadline passes while it follows a task cancels the task."""
    async with asyncio.timeout(LIMIT), Client(mem.server) as client:
        with pytest.raises(RequestTimeout):
            await client.call_tool("work", {"seconds": 60, "label": "abandoned"}, timeout=0.2)
        await eventually(lambda: ("cancelled", "abandoned") in mem.EVENTS)


async def test_time_to_live() -> None:
    """A task is kept for its time to live, then forgotten (-32602); one still running
    then is cancelled."""
    server = Server("ttl", task_ttl=0.3, task_poll_interval=0.01)
    seen: list[str] = []

    @server.tool(task=True)
    async def sleepy(seconds: float) -> str:
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        return "awake"

    async with asyncio.timeout(LIMIT), Client(server) as client:
        quick = await client.start_task("sleepy", {"seconds": 0.01})
        assert quick.task is not None
        assert quick.task.ttl_ms == 300
        assert text(await quick.wait()) == "awake"
        long = await client.start_task("sleepy", {"seconds": 60})

        async def forgotten(handle: Any) -> McpError | None:
            assert handle.task_id is not None
            try:
                await client.get_task(handle.task_id)
            except McpError as exc:
                return exc
            return None

        for handle in (quick, long):  # once their 0.3 s have passed
            gone = await eventually_true(lambda handle=handle: forgotten(handle), what="the task is forgotten")
            assert gone.code == -32602
            assert "not found" in gone.message
        await eventually_true(lambda: seen == ["cancelled"], what="the task still running is cancelled")


def test_the_in_memory_store() -> None:
    """Bounded, forgets expired tasks, never goes back to an older version."""
    now = [1000.0]
    store = InMemoryTaskStore(max_tasks=2, clock=lambda: now[0])

    def record(task_id: str, version: int = 0, status: str = "working") -> TaskRecord:
        return TaskRecord(
            task_id=task_id, status=status, created_at=now[0], updated_at=now[0], ttl=10, poll_interval=1, version=version
        )

    async def run() -> None:
        await store.create(record("a"))
        await store.create(record("b"))
        with pytest.raises(TaskStoreFull):
            await store.create(record("c"))
        await store.save(record("a", 2, "completed"))
        await store.save(record("a", 1, "working"))  # older: ignored
        found = await store.get("a")
        assert found is not None
        assert found.status == "completed"
        now[0] += 11
        assert await store.get("a") is None
        await store.create(record("c"))  # the expired ones made room
        assert len(store) == 1

    asyncio.run(run())


async def test_the_store_bound() -> None:
    """Past the store's bound a task tool answers at once; one that must be a task gets
    -32603 (HTTP 503 over HTTP)."""
    server = Server("full", task_store=InMemoryTaskStore(max_tasks=1))

    @server.tool(task=True)
    async def maybe(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "ran"

    @server.tool(task="required")
    async def must() -> str:
        return "ran"

    async with asyncio.timeout(LIMIT), Client(server) as client:
        holder = await client.start_task("maybe", {"seconds": 60})
        assert holder.task_id is not None
        at_once = await client.start_task("maybe", {"seconds": 0.01})
        assert at_once.task_id is None
        assert text(await at_once.wait()) == "ran"
        with pytest.raises(McpError) as full:
            await client.call_tool("must")
        assert full.value.code == -32603
        await holder.cancel()


@pytest.mark.parametrize("kind", [MEMORY, HTTP])
async def test_many_concurrent_tasks(connect: Any, kind: str) -> None:
    """200 tasks at once, each followed to its end by ``call_tool``. Over HTTP that is 200
    polls in flight on a loaded machine's server: a minute for each, and for the whole."""
    async with asyncio.timeout(3 * LIMIT), connect(kind, request_timeout=60) as client:
        results = await asyncio.gather(*(client.call_tool("work", {"seconds": 0.05, "label": f"t{i}"}) for i in range(200)))
    assert [text(r) for r in results] == [f"t{i} done in 0.05 s (task True)" for i in range(200)]


# --- questions ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_questions_answered_by_the_callbacks(connect: Any, kind: str) -> None:
    """A task that asks is ``input_required``; ``wait()`` (and ``call_tool``) answer with
    the client's callbacks, sent with ``tasks/update``."""
    async with asyncio.timeout(LIMIT), connect(kind, on_elicit=accept_name("Ada")) as client:
        assert text(await client.call_tool("greet")) == "Hello, Ada!"
        assert text(await client.call_tool("two_questions")) == "Ada and Ada"


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_questions_answered_by_hand(connect: Any, kind: str) -> None:
    """``tasks/get`` lists the open questions; ``tasks/update`` may answer some of them
    (the rest stay), ignores keys that are not open, and refuses an answer of the wrong
    shape with -32602."""
    async with asyncio.timeout(LIMIT), connect(kind, capabilities={"elicitation": {}}) as client:
        handle = await client.start_task("two_questions")
        assert handle.task_id is not None
        task = await until(client, handle.task_id, lambda t: len(t.input_requests or {}) == 2)
        assert task.status == "input_required"
        assert task.input_requests is not None
        assert {k: r.method for k, r in task.input_requests.items()} == {"a": "elicitation/create", "b": "elicitation/create"}
        assert task.input_requests["a"].params["message"] == "First?"
        with pytest.raises(McpError) as malformed:
            await handle.respond({"a": {"action": "maybe"}})
        assert malformed.value.code == -32602
        await handle.respond({"a": {"action": "accept", "content": {"name": "Ann"}}, "zzz": {"ignored": True}})
        after = await client.get_task(handle.task_id)
        assert (after.status, list(after.input_requests or {})) == ("input_required", ["b"])
        await client.update_task(handle.task_id, {"b": {"action": "accept", "content": {"name": "Bob"}}})
        assert text(await handle.wait()) == "Ann and Bob"


@pytest.mark.parametrize("kind", [MEMORY, HTTP])
async def test_asked_first_then_a_task(connect: Any, kind: str) -> None:
    """A handler asks in an input round, then becomes a task with ``ctx.start_task()``
    (only for a client of the extension); ``call_tool`` does both for the caller."""
    async with asyncio.timeout(LIMIT):
        async with connect(kind, on_elicit=accept_name("Eve")) as client:
            assert text(await client.call_tool("ask_then_task")) == "Eve (as a task: True)"
            handle = await client.start_task("ask_then_task")
            assert handle.task_id is not None
            assert text(await handle.wait()) == "Eve (as a task: True)"
        async with connect(kind, on_elicit=accept_name("Eve"), tasks=False) as plain:
            assert text(await plain.call_tool("ask_then_task")) == "Eve (as a task: False)"


# --- failures and unknown ids ---------------------------------------------------------------


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_failures(connect: Any, kind: str) -> None:
    """A tool error completes the task (``isError``); a protocol error fails it, inlined
    and raised as it would have been; an HTTP 503 from the handler fails it with -32603
    and a reference only."""
    async with asyncio.timeout(LIMIT), connect(kind) as client:
        failed_tool = await client.call_tool("tool_error")
        assert (failed_tool.is_error, text(failed_tool)) == (True, "no luck")
        handle = await client.start_task("protocol_error")
        with pytest.raises(McpError) as refused:
            await handle.wait()
        assert (refused.value.code, refused.value.message) == (-32000, "the backend refused")
        assert handle.task_id is not None
        task = await client.get_task(handle.task_id)
        assert (task.status, task.status_message, task.error, task.result) == (
            "failed",
            "the backend refused",
            {"code": -32000, "message": "the backend refused"},
            None,
        )
        with pytest.raises(McpError) as crashed:
            await client.call_tool("crash")
        assert crashed.value.code == -32603
        assert crashed.value.message == "Internal error"
        assert set(crashed.value.data) == {"reference"}


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_unknown_task_ids(connect: Any, kind: str) -> None:
    async with asyncio.timeout(LIMIT), connect(kind) as client:
        for call in (
            client.get_task("no-such-task"),
            client.cancel_task("no-such-task"),
            client.update_task("no-such-task", {}),
            client.task("no-such-task").wait(),
        ):
            with pytest.raises(McpError) as unknown:
                await call
            assert unknown.value.code == -32602
            assert unknown.value.message == "Failed to retrieve task: Task not found (or expired)"


# --- notifications ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [MEMORY, HTTP])
async def test_status_notifications(connect: Any, kind: str) -> None:
    """``subscriptions/listen`` with ``taskIds`` delivers ``notifications/tasks``: the whole
    task at each change, tagged with the subscription; ids the client may not see are
    left out of the acknowledgement; a client without the extension gets -32021."""
    heard: list[tuple[str, dict[str, Any]]] = []
    options = {"on_elicit": accept_name("Nia"), "on_notification": lambda method, params: heard.append((method, params))}
    async with asyncio.timeout(LIMIT), connect(kind, **options) as client:
        handle = await client.start_task("greet")
        assert handle.task_id is not None
        listen = asyncio.ensure_future(
            client.send_request("subscriptions/listen", {"notifications": {"taskIds": [handle.task_id, "unknown"]}})
        )
        await eventually(lambda: any(method == "notifications/subscriptions/acknowledged" for method, _ in heard))
        assert text(await handle.wait()) == "Hello, Nia!"
        await eventually(lambda: any(p.get("status") == "completed" for m, p in heard if m == "notifications/tasks"))
        listen.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await listen
    ack = next(params for method, params in heard if method == "notifications/subscriptions/acknowledged")
    assert ack["notifications"] == {"taskIds": [handle.task_id]}
    changes = [params for method, params in heard if method == "notifications/tasks"]
    assert all(change["taskId"] == handle.task_id and "_meta" in change for change in changes)
    statuses = [change["status"] for change in changes]
    assert statuses[-1] == "completed"
    assert "working" in statuses  # back to work after the answer
    assert changes[-1]["result"]["content"][0]["text"] == "Hello, Nia!"
    async with asyncio.timeout(LIMIT), connect(kind, tasks=False) as plain:
        with pytest.raises(McpError) as refused:
            await plain.send_request("subscriptions/listen", {"notifications": {"taskIds": ["x"]}})
        assert refused.value.code == -32021


async def test_tool_registration_checks_the_task_mode() -> None:
    server = Server("modes")
    with pytest.raises(ValueError, match="task must be"):
        server.tool(task="sometimes")(lambda: "x")  # type: ignore[arg-type]

    @server.tool
    async def plain(ctx: Context) -> str:
        try:
            await ctx.start_task()
        except RuntimeError as exc:
            return str(exc)
        return "became a task"

    async with Client(server) as client:
        assert "extensions" not in (await client.discover()).capabilities  # no tool runs as a task
        assert text(await client.call_tool("plain")).startswith("ctx.start_task() needs a tool registered with task=")


@pytest.mark.e2e  # over protected HTTP
async def test_a_task_belongs_to_whoever_started_it() -> None:
    """Over protected HTTP a task is visible to the principal that created it only: to
    another one its id is unknown (-32602), for gets, answers, cancels and waits; a listen
    of another principal that names it is not agreed to it and hears nothing of it — not
    its changes, not its result — while the owner's listen hears it to its end."""
    server = Server("owned", task_poll_interval=0.02)
    gates = {"alice": threading.Event(), "bob": threading.Event()}

    @server.tool(task=True)
    async def slow(ctx: Context, who: str) -> str:
        await ctx.report_progress(1, 2, f"{who}: started")
        await eventually(gates[who].is_set)  # set from the test's thread
        return f"{who}'s secret result"

    def verify(token: str) -> dict[str, Any] | None:
        return {"sub": token, "scope": "mcp"} if token in ("alice", "bob") else None

    auth = ResourceServer(
        resource="http://placeholder/mcp", authorization_servers=["https://as.example"], verifier=FunctionVerifier(verify)
    )
    heard: dict[str, list[tuple[str, dict[str, Any]]]] = {"alice": [], "bob": []}
    with serve_in_thread(server.asgi_app(auth=auth)) as port:
        url = f"http://127.0.0.1:{port}/mcp"

        def as_(who: str) -> Client:
            options = ClientOptions(
                request_timeout=10, on_notification=lambda method, params: heard[who].append((method, params))
            )
            return Client(HttpTransport(url, headers={"Authorization": f"Bearer {who}"}), options)

        def told(who: str) -> list[dict[str, Any]]:
            return [params for method, params in heard[who] if method == "notifications/tasks"]

        async with asyncio.timeout(LIMIT), as_("alice") as alice, as_("bob") as bob:
            handle = await alice.start_task("slow", {"who": "alice"})
            mine = await bob.start_task("slow", {"who": "bob"})
            task_id, bobs = handle.task_id, mine.task_id
            assert task_id is not None
            assert bobs is not None
            for call in (
                lambda: bob.get_task(task_id),
                lambda: bob.update_task(task_id, {}),
                lambda: bob.cancel_task(task_id),
                lambda: bob.task(task_id).wait(),
            ):
                with pytest.raises(McpError) as hidden:
                    await call()
                assert hidden.value.code == -32602
            listens = [
                asyncio.ensure_future(
                    client.send_request("subscriptions/listen", {"notifications": {"taskIds": [task_id, bobs]}})
                )
                for client in (alice, bob)
            ]
            acknowledged = "notifications/subscriptions/acknowledged"
            await eventually(lambda: all(any(m == acknowledged for m, _ in heard[who]) for who in heard))
            gates["alice"].set()
            assert text(await handle.wait()) == "alice's secret result"
            await eventually(lambda: any(p["status"] == "completed" for p in told("alice")))
            gates["bob"].set()  # alice's task ended first: had bob's listen been told of it, he would have heard it by now
            assert text(await mine.wait()) == "bob's secret result"
            await eventually(lambda: any(p["status"] == "completed" for p in told("bob")))
            for listen in listens:
                listen.cancel()
            await asyncio.gather(*listens, return_exceptions=True)
    acks = {who: next(p for m, p in heard[who] if m == "notifications/subscriptions/acknowledged") for who in heard}
    assert acks["alice"]["notifications"] == {"taskIds": [task_id]}
    assert acks["bob"]["notifications"] == {"taskIds": [bobs]}
    assert {p["taskId"] for p in told("alice")} == {task_id}
    assert {p["taskId"] for p in told("bob")} == {bobs}
    assert "alice's secret result" not in repr(heard["bob"])
    assert told("alice")[-1]["result"]["content"][0]["text"] == "alice's secret result"
