"""The tasks extension's edges (src/mcpkit/server/tasks.py, docs/tasks.md), as a client or
an operator sees them: how a failed task's error is made (generic for what the server did
not choose to say), a task no process runs any more, a store that cannot take a task's
outcome or its status message, the store's bounds over HTTP, the wire's times and
intervals, and the logs an operator reads. In memory, and over real HTTP in this process
where the status code matters. Every test body runs under a deadline.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from mcpkit import (
    Client,
    ClientOptions,
    Context,
    FunctionVerifier,
    HttpError,
    InMemoryTaskStore,
    McpError,
    RequestTimeout,
    ResourceServer,
    Server,
    StoreUnavailable,
    TaskRecord,
    TaskStoreFull,
    TextContent,
)
from mcpkit.protocol.errors import flatten_text
from mcpkit.server.definitions.options import task_mode
from support.serving import serve_in_thread
from support.wire import modern

LIMIT = 30.0
EXTENSION = "io.modelcontextprotocol/tasks"
DECLARES = {"io.modelcontextprotocol/clientCapabilities": {"extensions": {EXTENSION: {}}}}
SECRET = "password=hunter2"


def text(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def polled(client: Client, task_id: str, predicate: Callable[[Any], bool]) -> Any:
    """Poll ``tasks/get`` until ``predicate(task)`` holds (the test's deadline bounds it)."""
    while True:
        task = await client.get_task(task_id)
        if predicate(task):
            return task
        await asyncio.sleep(0.01)


async def finished(client: Client, task_id: str) -> Any:
    """Poll ``tasks/get`` until the task is terminal."""
    return await polled(client, task_id, lambda t: t.status in ("completed", "failed", "cancelled"))


async def eventually(check: Callable[[], bool]) -> None:
    """Return once ``check()`` holds (the test's deadline bounds the wait)."""
    while True:
        if check():
            return
        await asyncio.sleep(0.01)


def records(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "mcpkit.server" and r.levelno == level]


# --- task modes ---------------------------------------------------------------------------------


def test_task_modes() -> None:
    assert [task_mode(t) for t in (True, "optional", "required", "deferred", False)] == [
        "optional",
        "optional",
        "required",
        "deferred",
        None,
    ]
    for wrong in ("sometimes", 1, None):
        message = "task must be True, False, 'optional', 'required' or 'deferred'"
        with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
            task_mode(wrong)  # type: ignore[arg-type]


# --- how a failed task's error is made --------------------------------------------------------


class Leaky:
    """A value whose conversion to JSON fails with a secret in its message (a pydantic model
    whose serializer raises, say): the tool's call fails outside the tool's own code."""

    def model_dump(self, **_: Any) -> Any:
        raise RuntimeError(SECRET)


def failing_server(gate: asyncio.Event | None = None, **options: Any) -> Server:
    """Tools that fail in each way; they wait for ``gate`` first, when there is one."""
    server = Server("failing", task_poll_interval=0.01, **options)

    async def opened() -> None:
        if gate is not None:
            await gate.wait()

    @server.tool(task=True)
    async def leaky() -> Any:
        await opened()
        return Leaky()

    @server.tool(task=True)
    async def outage() -> str:
        await opened()
        raise HttpError(503, SECRET)

    @server.tool(task=True)
    async def unanswered(ctx: Context) -> str:
        await opened()
        await ctx.elicit("Anyone?", {"type": "object", "properties": {}}, timeout=0.05)
        return "answered"

    @server.tool(task=True)
    async def chosen() -> str:
        raise McpError(-32000, "the backend\nrefused " + "y" * 500, {"retry": False})

    return server


async def test_a_failed_task_says_nothing_the_server_did_not_choose_to(caplog: pytest.LogCaptureFixture) -> None:
    """An exception that was not an ``McpError`` (conversion of the result failed, an HTTP
    503) and an error that arose inside the server (a question's deadline, a local
    ``RequestTimeout``) fail the task with -32603 "Internal error" and a reference that the
    server's log names; their text reaches neither ``tasks/get`` nor the listener."""
    caplog.set_level(logging.ERROR, "mcpkit")
    heard: list[tuple[str, dict[str, Any]]] = []
    options = ClientOptions(capabilities={"elicitation": {}}, on_notification=lambda m, p: heard.append((m, p)))
    gate = asyncio.Event()
    async with asyncio.timeout(LIMIT), Client(failing_server(gate), options) as client:
        handles = {tool: await client.start_task(tool) for tool in ("leaky", "outage", "unanswered")}
        ids = [h.task_id for h in handles.values()]
        listen = asyncio.ensure_future(client.send_request("subscriptions/listen", {"notifications": {"taskIds": ids}}))
        await eventually(lambda: any(m == "notifications/subscriptions/acknowledged" for m, _ in heard))
        gate.set()
        for tool, handle in handles.items():
            assert handle.task_id is not None
            task = await finished(client, handle.task_id)
            assert (task.status, task.status_message, task.result) == ("failed", "Internal error", None), tool
            assert task.error is not None
            assert (task.error["code"], task.error["message"], set(task.error["data"])) == (
                -32603,
                "Internal error",
                {"reference"},
            )
            reference = task.error["data"]["reference"]
            logged = {
                "leaky": f"handler for tools/call failed (reference {reference})",
                "outage": f"handler for tools/call (HTTP status 503) failed (reference {reference})",
                "unanswered": f"task handler for tools/call failed (reference {reference})",
            }
            assert logged[tool] in records(caplog, logging.ERROR), caplog.text  # what an operator looks up
            with pytest.raises(McpError) as raised:
                await handle.wait()
            assert (raised.value.code, raised.value.message) == (-32603, "Internal error")
        await eventually(lambda: sum(p.get("status") == "failed" for m, p in heard if m == "notifications/tasks") == 3)
        listen.cancel()
        await asyncio.gather(listen, return_exceptions=True)
    told = [p for m, p in heard if m == "notifications/tasks"]
    assert {p["taskId"] for p in told if p["status"] == "failed"} == set(ids)
    assert all(p["error"]["message"] == "Internal error" for p in told if p["status"] == "failed")
    assert SECRET not in repr(told)
    assert "timed out" not in repr(told).lower()


async def test_with_expose_internal_errors_a_failed_task_says_why() -> None:
    """``expose_internal_errors=True`` (development) puts the exception's text in the
    message instead, for a task as for a plain call; the reference stays."""
    async with (
        asyncio.timeout(LIMIT),
        Client(failing_server(expose_internal_errors=True), ClientOptions(capabilities={"elicitation": {}})) as client,
    ):
        for tool, message in (("leaky", SECRET), ("unanswered", str(RequestTimeout(None)))):
            handle = await client.start_task(tool)
            assert handle.task_id is not None
            task = await finished(client, handle.task_id)
            assert task.error is not None
            assert (task.status, task.error["code"], task.error["message"]) == ("failed", -32603, message)
            assert set(task.error["data"]) == {"reference"}
        outage = await client.start_task("outage")  # an HTTP status is collapsed all the same
        assert outage.task_id is not None
        assert (await finished(client, outage.task_id)).error["message"] == "Internal error"


async def test_an_error_the_handler_chose_is_kept_flattened_and_bounded() -> None:
    """An ``McpError`` the handler raised on purpose fails the task with that code and
    data; its message flattened to one line and bounded by ``max_error_text``."""
    async with asyncio.timeout(LIMIT), Client(failing_server(max_error_text=40)) as client:
        handle = await client.start_task("chosen")
        assert handle.task_id is not None
        task = await finished(client, handle.task_id)
        assert task.error is not None
        message = task.error["message"]
        assert message.startswith("the backend refused yyy")
        assert len(message) <= 40
        assert (task.status, task.status_message) == ("failed", message)
        assert (task.error["code"], task.error["data"]) == (-32000, {"retry": False})
        short = Server("short", task_poll_interval=0.01)

        @short.tool(task=True)
        async def refuse() -> str:
            raise McpError(-32000, "no", {"why": "busy"})

        async with Client(short) as other:
            refused = await other.start_task("refuse")
            assert refused.task_id is not None
            assert (await finished(other, refused.task_id)).error == {"code": -32000, "message": "no", "data": {"why": "busy"}}


# --- a task no process runs -------------------------------------------------------------------


def orphan(task_id: str, status: str, created_at: float, **fields: Any) -> TaskRecord:
    return TaskRecord(
        task_id=task_id, status=status, created_at=created_at, updated_at=created_at, ttl=600, poll_interval=0.5, **fields
    )


async def test_a_task_no_process_runs_is_cancelled_at_once() -> None:
    """A task in the shared store whose handler was lost with its process: ``tasks/cancel``
    marks it cancelled at once (its questions gone) and tells its listeners; an ended one
    is left as it is. The wire's times are the record's, in UTC to the millisecond."""
    store = InMemoryTaskStore()
    server = Server("restarted", task_store=store)

    @server.tool(task=True)
    async def anything() -> str:
        return "x"

    created = float(int(time.time()) - 1) + 0.25  # in the past, to the millisecond
    question = {"method": "elicitation/create", "params": {"message": "Still there?", "requestedSchema": {"type": "object"}}}
    await store.create(orphan("lost", "input_required", created, status_message="Waiting", input_requests={"q": question}))
    await store.create(orphan("ended", "completed", created, result={"content": []}))
    heard: list[tuple[str, dict[str, Any]]] = []
    options = ClientOptions(on_notification=lambda method, params: heard.append((method, params)))
    async with asyncio.timeout(LIMIT), Client(server, options) as client:
        before = await client.get_task("lost")
        stamp = datetime.fromtimestamp(int(created), UTC).strftime("%Y-%m-%dT%H:%M:%S") + ".250Z"
        assert (before.created_at, before.last_updated_at) == (stamp, stamp)
        assert (before.ttl_ms, before.poll_interval_ms) == (600_000, 500)
        assert before.input_requests is not None
        assert list(before.input_requests) == ["q"]
        listen = asyncio.ensure_future(
            client.send_request("subscriptions/listen", {"notifications": {"taskIds": ["lost", "lost"]}})
        )
        await eventually(lambda: any(method == "notifications/subscriptions/acknowledged" for method, _ in heard))
        await client.cancel_task("lost")
        after = await client.get_task("lost")
        assert (after.status, after.status_message, after.input_requests) == ("cancelled", "The task was cancelled", None)
        assert after.created_at == stamp
        assert after.last_updated_at > stamp
        await eventually(lambda: any(method == "notifications/tasks" for method, _ in heard))
        listen.cancel()
        await asyncio.gather(listen, return_exceptions=True)
        await client.cancel_task("ended")
        ended = await client.get_task("ended")
        assert (ended.status, ended.result) == ("completed", {"content": []})
    ack = next(params for method, params in heard if method == "notifications/subscriptions/acknowledged")
    assert ack["notifications"] == {"taskIds": ["lost"]}  # asked for twice, agreed to once
    told = [params for method, params in heard if method == "notifications/tasks"]
    assert [(t["taskId"], t["status"], t.get("inputRequests")) for t in told] == [("lost", "cancelled", None)]
    stored = await store.get("lost")
    assert stored is not None
    assert (stored.status, stored.version) == ("cancelled", 1)


async def test_the_default_intervals_in_milliseconds() -> None:
    """A server's defaults: an hour to live, a poll a second, exactly so on the wire."""
    server = Server("defaults")

    @server.tool(task=True)
    async def blink() -> str:
        return "x"

    async with asyncio.timeout(LIMIT), Client(server) as client:
        handle = await client.start_task("blink")
        assert handle.task is not None
        assert (handle.task.ttl_ms, handle.task.poll_interval_ms) == (3_600_000, 1000)


async def test_the_smallest_intervals_are_a_millisecond() -> None:
    """A time to live or poll interval under half a millisecond is sent as 1 ms, never 0."""
    server = Server("tiny", task_ttl=0.0004, task_poll_interval=0.0004)

    @server.tool(task=True)
    async def blink() -> str:
        return "x"

    async with asyncio.timeout(LIMIT), Client(server) as client:
        handle = await client.start_task("blink")
        assert handle.task is not None
        assert (handle.task.ttl_ms, handle.task.poll_interval_ms) == (1, 1)


# --- a store that cannot take it ----------------------------------------------------------------


class Refusing(InMemoryTaskStore):
    """Takes tasks, and refuses the records whose status is in ``refuse`` with ``error``."""

    def __init__(self, refuse: set[str], error: Exception) -> None:
        super().__init__()
        self.refuse, self.error = refuse, error

    async def save(self, record: TaskRecord) -> None:
        if record.status in self.refuse:
            raise self.error
        await super().save(record)


async def test_a_result_the_store_cannot_keep_fails_the_task(caplog: pytest.LogCaptureFixture) -> None:
    """The result does not fit: the task fails with -32603 saying so (docs/limits.md), the
    store is not left full, and a warning names the task."""
    caplog.set_level(logging.WARNING, "mcpkit")
    server = Server("small", task_store=InMemoryTaskStore(max_bytes=10_000), task_poll_interval=0.01)

    @server.tool(task=True)
    async def big(size: int) -> str:
        return "x" * size

    async with asyncio.timeout(LIMIT), Client(server) as client:
        handle = await client.start_task("big", {"size": 20_000})
        assert handle.task_id is not None
        task = await finished(client, handle.task_id)
        message = "The task's completed result could not be kept: the task store is full (10000 bytes)"
        assert (task.status, task.status_message, task.result) == ("failed", message, None)
        assert task.error == {"code": -32603, "message": message}
        with pytest.raises(McpError) as raised:
            await handle.wait()
        assert (raised.value.code, raised.value.message) == (-32603, message)
        assert text(await client.call_tool("big", {"size": 10})) == "x" * 10
    warnings = records(caplog, logging.WARNING)
    assert warnings == [f"task {handle.task_id}: its outcome could not be kept: the task store is full (10000 bytes)"]


@pytest.mark.parametrize(
    "error",
    [StoreUnavailable("redis is down"), TaskStoreFull("the task store is full (1 bytes)")],
    ids=["unavailable", "full"],
)
async def test_an_outcome_the_store_cannot_take_at_all_is_logged(caplog: pytest.LogCaptureFixture, error: Exception) -> None:
    """Neither the outcome nor the failure can be stored: the task stays as it was stored,
    a warning says why, and the server goes on."""
    caplog.set_level(logging.WARNING, "mcpkit")
    server = Server("down", task_store=Refusing({"completed", "failed"}, error), task_poll_interval=0.01)
    ran = asyncio.Event()

    @server.tool(task=True)
    async def job() -> str:
        ran.set()
        return "done"

    async with asyncio.timeout(LIMIT), Client(server) as client:
        handle = await client.start_task("job")
        assert handle.task_id is not None
        await ran.wait()
        expected = f"task {handle.task_id}: how it ended could not be stored: {error}"
        await eventually(lambda: expected in records(caplog, logging.WARNING))
        assert (await client.get_task(handle.task_id)).status == "working"
        with pytest.raises(McpError) as missing:
            await client.get_task("no-such-task")
        assert missing.value.code == -32602


async def test_a_status_message_the_store_cannot_take_is_dropped(caplog: pytest.LogCaptureFixture) -> None:
    """A progress message that does not fit is not kept (an info record says so); the task
    goes on and completes."""
    caplog.set_level(logging.INFO, "mcpkit")
    server = Server("chatty", task_store=InMemoryTaskStore(max_bytes=10_000), task_poll_interval=0.01, max_error_text=50_000)
    go_on = asyncio.Event()

    @server.tool(task=True)
    async def talk(ctx: Context) -> str:
        await ctx.report_progress(1, 3, "first")
        await ctx.report_progress(2, 3, "m" * 20_000)
        await go_on.wait()
        return "said"

    async with asyncio.timeout(LIMIT), Client(server) as client:
        handle = await client.start_task("talk")
        assert handle.task_id is not None
        dropped = f"task {handle.task_id}: a status message was not kept: the task store is full (10000 bytes)"
        await eventually(lambda: dropped in records(caplog, logging.INFO))
        assert (await client.get_task(handle.task_id)).status_message == "first"
        go_on.set()
        assert text(await handle.wait()) == "said"


# --- the store's bounds, over HTTP ----------------------------------------------------------------


def bounded_server(store: InMemoryTaskStore) -> Server:
    server = Server("bounded", task_store=store, task_poll_interval=0.01)

    @server.tool(task="required")
    async def must() -> str:
        await asyncio.sleep(LIMIT)
        return "ran"

    @server.tool(task="required")
    async def hold(data: str) -> str:
        await asyncio.sleep(LIMIT)
        return data[:1]

    @server.tool(task=True)
    async def may(ctx: Context) -> str:
        try:
            await ctx.start_task(required=True)
        except McpError as exc:
            return f"{exc.code} {exc.message}"
        return "a task"

    return server


def call(http: httpx.Client, url: str, method: str, params: dict[str, Any], token: str | None = None) -> httpx.Response:
    headers: dict[str, str | bytes | None] = {"authorization": f"Bearer {token}"} if token else {}
    if "taskId" in params:
        headers["mcp-name"] = params["taskId"]
    body, hdrs = modern(method, params, meta=DECLARES, headers=headers)
    return http.post(url, json=body, headers=hdrs)


def error_of(resp: httpx.Response) -> dict[str, Any]:
    import json

    text = resp.text
    if resp.headers.get("content-type", "").startswith("text/event-stream"):
        text = next(line[5:].strip() for line in text.splitlines() if line.startswith("data:") and line[5:].strip())
    error: dict[str, Any] = json.loads(text)["error"]
    return error


@pytest.mark.e2e
def test_the_store_bound_over_http(caplog: pytest.LogCaptureFixture) -> None:
    """At the store's bound a ``task="required"`` call gets -32603 with HTTP 503 and the
    documented message (docs/limits.md); a ``task=True`` tool runs as a plain call, and
    its ``ctx.start_task(required=True)`` gets that error; a warning says why no task was
    made. An unknown task id is -32602 with HTTP 400."""
    caplog.set_level(logging.WARNING, "mcpkit")
    server = bounded_server(InMemoryTaskStore(max_tasks=1))
    with serve_in_thread(server.asgi_app()) as port, httpx.Client(timeout=LIMIT) as http:
        url = f"http://127.0.0.1:{port}/mcp"
        first = call(http, url, "tools/call", {"name": "must"})
        assert first.status_code == 200, first.text
        full = call(http, url, "tools/call", {"name": "must"})
        assert full.status_code == 503, full.text
        message = "Too many tasks in progress: the task store is full (1 tasks); try again later"
        assert error_of(full) == {"code": -32603, "message": message}
        plain = call(http, url, "tools/call", {"name": "may"})
        assert plain.status_code == 200, plain.text
        assert f"-32603 {message}" in plain.text
        assert "no task created: the task store is full (1 tasks)" in records(caplog, logging.WARNING)
        unknown = call(http, url, "tasks/get", {"taskId": "nope"})
        assert unknown.status_code == 400, unknown.text
        assert error_of(unknown) == {"code": -32602, "message": "Failed to retrieve task: Task not found (or expired)"}


def _verify(token: str) -> dict[str, Any] | None:
    return {"sub": token, "scope": "mcp"} if token in ("alice", "bob") else None


def _auth() -> ResourceServer:
    return ResourceServer(
        resource="http://placeholder/mcp", authorization_servers=["https://as.example"], verifier=FunctionVerifier(_verify)
    )


@pytest.mark.e2e
def test_a_principals_bound_over_http() -> None:
    """At a principal's own bound a ``task="required"`` call gets 429 with the documented
    message; another principal's call is a task."""
    server = bounded_server(InMemoryTaskStore(max_tasks=10, max_tasks_per_principal=1))
    with serve_in_thread(server.asgi_app(auth=_auth())) as port, httpx.Client(timeout=LIMIT) as http:
        url = f"http://127.0.0.1:{port}/mcp"
        assert call(http, url, "tools/call", {"name": "must"}, "alice").status_code == 200
        again = call(http, url, "tools/call", {"name": "must"}, "alice")
        assert again.status_code == 429, again.text
        message = "Too many tasks in progress: this principal has 1 tasks, its bound; try again later"
        assert error_of(again) == {"code": -32603, "message": message}
        bob = call(http, url, "tools/call", {"name": "must"}, "bob")
        assert bob.status_code == 200, bob.text
        assert '"resultType":"task"' in bob.text.replace(" ", "")


# --- a deferred task's call given up on before it became one ---------------------------------------


async def test_a_deferred_call_given_up_on_before_it_became_a_task_cancels_its_handler() -> None:
    server = Server("deferred", task_poll_interval=0.01)
    seen: list[str] = []
    started = asyncio.Event()

    @server.tool(task="deferred")
    async def later(ctx: Context) -> str:
        started.set()
        try:
            await asyncio.sleep(LIMIT)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        await ctx.start_task()
        return "late"

    async with asyncio.timeout(LIMIT), Client(server) as client:
        with pytest.raises(RequestTimeout):
            await client.call_tool("later", timeout=0.2)
        async with asyncio.timeout(10):
            await eventually(lambda: seen == ["cancelled"])
        assert started.is_set()


# --- what a running task shows ----------------------------------------------------------------


async def test_a_task_waiting_for_an_answer_says_so() -> None:
    """A task's id is 24 characters (18 random bytes); while it waits for an answer its
    status message says so, and once answered it is ``working`` again without one."""
    server = Server("asking", task_poll_interval=0.01)
    answered = asyncio.Event()
    go_on = asyncio.Event()

    @server.tool(task=True)
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("Name?", {"type": "object", "properties": {"name": {"type": "string"}}}, key="name")
        answered.set()
        await go_on.wait()
        return f"hello {(answer.content or {}).get('name')}"

    async with asyncio.timeout(LIMIT), Client(server, ClientOptions(capabilities={"elicitation": {}})) as client:
        handle = await client.start_task("ask")
        assert handle.task_id is not None
        assert len(handle.task_id) == 24
        waiting = await polled(client, handle.task_id, lambda t: t.status == "input_required")
        assert (waiting.status_message, list(waiting.input_requests or {})) == ("Waiting for the client's input", ["name"])
        await client.update_task(handle.task_id, {"name": {"action": "accept", "content": {"name": "Ada"}}})
        await answered.wait()
        working = await client.get_task(handle.task_id)
        assert (working.status, working.status_message, working.input_requests) == ("working", None, None)
        go_on.set()
        assert text(await handle.wait()) == "hello Ada"


async def test_a_running_tasks_arguments_count_against_the_store() -> None:
    """While its handler runs, a task's arguments count against the store's bytes: a
    second such task does not fit (-32603, the documented message); once the first has
    ended, its arguments no longer count."""
    server = bounded_server(InMemoryTaskStore(max_bytes=10_000))
    async with asyncio.timeout(LIMIT), Client(server) as client:
        first = await client.start_task("hold", {"data": "x" * 6000})
        assert first.task_id is not None
        with pytest.raises(McpError) as full:
            await client.call_tool("hold", {"data": "y" * 6000})
        assert (full.value.code, full.value.message) == (
            -32603,
            "Too many tasks in progress: the task store is full (10000 bytes); try again later",
        )
        await first.cancel()
        await finished(client, first.task_id)
        second = await client.start_task("hold", {"data": "z" * 6000})
        assert second.task_id is not None
        await second.cancel()


class Clock:
    """``time`` for mcpkit.server.tasks whose hands a test moves (the store keeps its own)."""

    def __init__(self) -> None:
        self.ahead = 0.0

    def time(self) -> float:
        return time.time() + self.ahead


async def test_a_task_past_its_time_to_live_is_cancelled_and_logged(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once its time to live has passed, a task's handler is cancelled at once, the task
    recorded ``cancelled`` and an info record says so. (The server's clock jumps past the
    time to live as the handler starts; the store's does not, so the task can be read.)"""
    import mcpkit.server.tasks as tasks_module

    caplog.set_level(logging.INFO, "mcpkit")
    clock = Clock()
    monkeypatch.setattr(tasks_module, "time", clock)
    server = Server("brief", task_ttl=60, task_poll_interval=0.01)
    seen: list[str] = []

    @server.tool(task=True)
    async def late() -> str:
        clock.ahead = 120.0  # before the supervisor first looks
        try:
            await asyncio.Event().wait()  # until cancelled
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        seen.append("finished")
        return "too late"

    async with asyncio.timeout(LIMIT), Client(server) as client:
        handle = await client.start_task("late")
        assert handle.task_id is not None
        task = await finished(client, handle.task_id)
        assert (task.status, task.status_message) == ("cancelled", "The task was cancelled")
        assert seen == ["cancelled"]
    assert f"task {handle.task_id} outlived its time to live and was cancelled" in records(caplog, logging.INFO)


# --- modes, names, and the end of a task's call ------------------------------------------------


def modes_server() -> tuple[Server, dict[str, Any]]:
    server = Server("modes", task_poll_interval=0.01)
    seen: dict[str, Any] = {}
    gate = asyncio.Event()

    @server.tool(task="required", name="r" * 300)
    async def long_named() -> str:
        return "x"

    @server.tool(task="required")
    async def must() -> str:
        return "x"

    @server.tool(task=True)
    async def insist(ctx: Context) -> str:
        try:
            await ctx.start_task(required=True)
        except McpError as exc:
            return f"{exc.code} {exc.message}"
        return "a task"

    @server.tool(task="deferred")
    async def undecided(ctx: Context) -> str:
        seen["undecided"] = (ctx.task_id, asyncio.current_task().get_name())  # type: ignore[union-attr]
        return "answered itself"

    @server.tool(task="deferred")
    async def then_ask(ctx: Context) -> str:
        await ctx.start_task()
        answer = await ctx.elicit("Now?", {"type": "object", "properties": {}}, key="now")
        return answer.action

    @server.tool(task=True)
    async def named(ctx: Context) -> str:
        seen["ctx"] = ctx
        seen["named"] = asyncio.current_task().get_name()  # type: ignore[union-attr]
        seen["tasks"] = sorted(t.get_name() for t in asyncio.all_tasks() if t.get_name().startswith("mcpkit-task"))
        await gate.wait()
        return "named"

    seen["gate"] = gate
    return server, seen


async def test_a_client_without_the_extension_is_told_which_tool_needs_it() -> None:
    """-32021 names the tool (bounded to 256 characters), for a ``task="required"`` tool
    and for a handler's ``ctx.start_task(required=True)``."""
    server, _ = modes_server()
    async with asyncio.timeout(LIMIT), Client(server, ClientOptions(tasks=False)) as client:
        with pytest.raises(McpError) as refused:
            await client.call_tool("must")
        expected = f"Missing required client capability: tool 'must' needs the {EXTENSION} extension"
        assert (refused.value.code, refused.value.message) == (-32021, expected)
        with pytest.raises(McpError) as long:
            await client.call_tool("r" * 300)
        assert long.value.code == -32021
        assert long.value.message == (
            f"Missing required client capability: tool {flatten_text('r' * 300, 256)!r} needs the {EXTENSION} extension"
        )
        with pytest.raises(McpError) as gated:
            await client.send_request("tasks/get", {"taskId": "anything"})
        assert (gated.value.code, gated.value.message) == (
            -32021,
            f"Missing required client capability: tasks/* needs the {EXTENSION} extension",
        )
        assert (
            text(await client.call_tool("insist"))
            == f"-32021 Missing required client capability: tool 'insist' needs the {EXTENSION} extension"
        )


async def test_a_deferred_tool_is_a_plain_call_until_it_starts_a_task() -> None:
    """A ``task="deferred"`` tool that never calls ``ctx.start_task()`` answers its call
    itself (no task), though it runs on an asyncio task of its own ("mcpkit-tool")."""
    server, seen = modes_server()
    async with asyncio.timeout(LIMIT), Client(server) as client:
        at_once = await client.start_task("undecided")
        assert (at_once.task_id, at_once.status) == (None, "completed")
        assert text(await at_once.wait()) == "answered itself"
    assert seen["undecided"] == (None, "mcpkit-tool")


async def test_a_tasks_handler_and_its_supervisor_are_named_and_let_go(caplog: pytest.LogCaptureFixture) -> None:
    """The asyncio tasks are named for whoever reads a dump of them ("mcpkit-task" runs the
    handler, "mcpkit-task-supervisor" waits for it); once the task ended the handler's
    context is no task's any more, and asyncio logged nothing."""
    caplog.set_level(logging.WARNING)
    server, seen = modes_server()
    async with asyncio.timeout(LIMIT), Client(server) as client:
        handle = await client.start_task("named")
        assert handle.task_id is not None
        await eventually(lambda: "tasks" in seen)
        assert seen["named"] == "mcpkit-task"
        assert seen["tasks"] == ["mcpkit-task", "mcpkit-task-supervisor"]
        assert seen["ctx"].task_id == handle.task_id
        seen["gate"].set()
        assert text(await handle.wait()) == "named"
        await eventually(lambda: seen["ctx"].task_id is None)
        await eventually(lambda: not [t for t in asyncio.all_tasks() if t.get_name() == "mcpkit-task-supervisor"])
        await asyncio.sleep(0)  # the ended tasks' done callbacks, scheduled already, run
    assert [r for r in caplog.records if r.name == "asyncio"] == []


async def test_the_handle_of_a_deferred_task_inlines_nothing() -> None:
    """The ``CreateTaskResult`` answering a deferred tool's call is the task's handle only:
    a question asked right after ``ctx.start_task()`` is listed by ``tasks/get``, not in it."""
    server, _ = modes_server()
    async with asyncio.timeout(LIMIT), Client(server, ClientOptions(capabilities={"elicitation": {}})) as client:
        handle = await client.start_task("then_ask")
        assert handle.task is not None
        assert handle.task_id is not None
        assert (handle.task.input_requests, handle.task.result, handle.task.error) == (None, None, None)
        task = await polled(client, handle.task_id, lambda t: t.status == "input_required")
        assert list(task.input_requests or {}) == ["now"]
        await client.update_task(handle.task_id, {"now": {"action": "decline"}})
        assert text(await handle.wait()) == "decline"
