"""Mounting servers (``Server.mount``) through the public API, both eras, in memory, over
a real stdio process and over real HTTP: names, live lists, calls, every Context feature
from a mounted handler, middleware, lifespans, time limits, tasks and scopes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import msgspec
import pytest

from mcpkit import (
    Client,
    ClientOptions,
    CreateMessageParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    HttpTransport,
    McpError,
    Root,
    Server,
    StdioTransport,
    TextContent,
)
from mcpkit.server.mount import prefix_uri, unprefix_uri
from support.eras import ERAS, LEGACY, MODERN
from support.ports import free_port
from support.processes import listening, load_server, server_command
from support.serving import serve_in_thread
from support.transports import TRANSPORTS
from support.waiting import until


def text_of(result: Any) -> str:
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


@pytest.fixture(scope="module")
def composed() -> Any:
    return load_server("composed")


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    port = free_port()
    with listening(server_command("composed", "--http", str(port)), port):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture
def connect(request: pytest.FixtureRequest, composed: Any) -> Any:
    @contextlib.asynccontextmanager
    async def make(kind: str, era: str, **options: Any) -> AsyncIterator[Client]:
        options.setdefault("request_timeout", 20)
        opts = ClientOptions(protocol_version=era, **options)
        if kind == "memory":
            client = Client(composed.server, opts)
        elif kind == "stdio":
            client = Client(StdioTransport(server_command("composed"), stderr="devnull"), opts)
        else:
            client = Client(HttpTransport(request.getfixturevalue("http_url")), opts)
        async with client:
            yield client

    return make


# --- the naming rules --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("notes://today", "notes://work/today"),
        ("file:///etc/hosts", "file://work//etc/hosts"),
        ("urn:isbn:1", "urn:work/isbn:1"),
        ("weather://cities/{city}", "weather://work/cities/{city}"),
        ("notes://", "notes://work/"),
    ],
)
def test_uris_are_prefixed_reversibly(uri: str, expected: str) -> None:
    assert prefix_uri(uri, "work") == expected
    assert unprefix_uri(expected, "work") == uri
    assert unprefix_uri(uri, "work") is None or uri.startswith("notes://work")
    assert unprefix_uri(expected, "other") is None


def test_what_mount_refuses() -> None:
    parent, child = Server("p"), Server("c")
    with pytest.raises(ValueError, match="prefix"):
        parent.mount(child, prefix="has space")
    with pytest.raises(ValueError, match="separator"):
        parent.mount(child, prefix="c", separator="")
    with pytest.raises(ValueError, match="itself"):
        parent.mount(parent, prefix="p")
    parent.mount(child, prefix="c")
    with pytest.raises(ValueError, match="itself"):
        child.mount(parent, prefix="p")
    with pytest.raises(TypeError):
        parent.mount(object(), prefix="x")  # type: ignore[arg-type]


@pytest.mark.parametrize("era", ERAS)
async def test_lists_name_every_mounted_feature(connect: Any, era: str) -> None:
    async with connect("memory", era) as client:
        tools = {t.name for t in await client.list_all_tools()}
        assert {"hello", "weather_forecast", "weather_ask_city", "notes.add_note"} <= tools
        assert "forecast" not in tools
        assert [r.uri for r in await client.list_all_resources()] == ["weather://weather/stations"]
        assert [t.uri_template for t in await client.list_all_resource_templates()] == ["weather://weather/cities/{city}"]
        assert [p.name for p in await client.list_all_prompts()] == ["notes.failing", "weather_brief"]  # the last mounted first


def test_precedence_own_first_then_the_last_mounted() -> None:
    parent, first, second = Server("p"), Server("a"), Server("b")
    parent.tool(name="x_same")(lambda: "parent")
    first.tool(name="same")(lambda: "first")
    second.tool(name="same")(lambda: "second")
    second.tool(name="only")(lambda: "second")
    parent.mount(first, prefix="x")
    parent.mount(second, prefix="x")

    async def run() -> None:
        async with Client(parent) as client:
            assert [t.name for t in await client.list_all_tools()] == ["x_same", "x_only"]
            assert text_of(await client.call_tool("x_same")) == "parent"
            parent.remove_tool("x_same")
            assert text_of(await client.call_tool("x_same")) == "second"
            assert [t.name for t in await client.list_all_tools()] == ["x_same", "x_only"]

    asyncio.run(run())


def test_without_prefix_names_stay_and_templates_without_scheme_are_hidden_under_one() -> None:
    parent, plain, odd = Server("p"), Server("plain"), Server("odd")
    plain.tool(name="t")(lambda: "plain")
    odd.resource("{+anything}")(lambda anything: anything)
    parent.mount(plain)
    parent.mount(odd, prefix="odd")

    async def run() -> None:
        async with Client(parent) as client:
            assert [t.name for t in await client.list_all_tools()] == ["t"]
            assert await client.list_all_resource_templates() == []

    asyncio.run(run())


# --- calls, over every transport, in both eras ---------------------------------------------------


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_a_mounted_tool_logs_reports_progress_and_sees_its_lifespan(connect: Any, kind: str, era: str) -> None:
    logs: list[Any] = []
    progress: list[tuple[float, float | None, str | None]] = []
    async with connect(kind, era, on_log=lambda level, data, logger: logs.append(data)) as client:
        await client.set_logging_level("info")
        result = await client.call_tool(
            "weather_forecast", {"city": "Oslo"}, on_progress=lambda p, t, m: progress.append((p, t, m))
        )
        assert text_of(result) == "Oslo: 21 C"
        assert progress == [(1, 2, "half"), (2, 2, "done")]
        await until(lambda: logs, what="the log message")
        assert logs == ["forecasting Oslo"]


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_mounted_resources_prompts_and_completions(connect: Any, kind: str, era: str) -> None:
    async with connect(kind, era) as client:
        read = await client.read_resource("weather://weather/cities/Rome")
        assert [(c.uri, c.text) for c in read.contents] == [("weather://weather/cities/Rome", "Rome is sunny")]
        read = await client.read_resource("weather://weather/stations")
        assert read.contents[0].text == "north,south"
        prompt = await client.get_prompt("weather_brief", {"city": "Rome"})
        assert prompt.messages[0].content.text == "Brief me on Rome."  # type: ignore[union-attr]
        done = await client.complete({"type": "ref/prompt", "name": "weather_brief"}, "city", "P")
        assert done.completion.values == ["Paris", "Prague"]
        with pytest.raises(McpError) as caught:
            await client.call_tool("weather_nope")
        assert caught.value.code == -32602
        assert "weather_nope" in caught.value.message
        with pytest.raises(McpError) as caught:
            await client.read_resource("weather://cities/Rome")  # the mounted server's own URI is not the parent's
        assert caught.value.code == -32602


def _accept(content: dict[str, Any]) -> Any:
    def on_elicit(request: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="accept", content=content)

    return on_elicit


async def _model(request: CreateMessageParams) -> CreateMessageResult:
    said = request.messages[-1].content["text"]
    return CreateMessageResult(role="assistant", content={"type": "text", "text": f"echo {said}"}, model="m-1")


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_a_mounted_tool_elicits_samples_and_lists_roots(connect: Any, kind: str, era: str) -> None:
    roots = [Root(uri="file:///a"), Root(uri="file:///b")]
    async with connect(kind, era, on_elicit=_accept({"city": "Lima"}), on_sample=_model, roots=roots) as client:
        assert text_of(await client.call_tool("weather_ask_city")) == "city Lima"
        assert text_of(await client.call_tool("weather_summarize", {"text": "hi"})) == "m-1: echo hi"
        assert text_of(await client.call_tool("weather_roots")) == "file:///a,file:///b"


@pytest.mark.parametrize("era", ERAS)
async def test_middleware_order_params_and_lifespans(connect: Any, composed: Any, era: str) -> None:
    async with connect("memory", era) as client:
        # the parent's middleware sees the parent's name, the mounted server's its own
        assert text_of(await client.call_tool("weather_order")) == "composed:weather_order,weather:order|order|WeatherState"
        assert text_of(await client.call_tool("lifespan_events")).endswith("composed up; weather up (composed up)")
    assert composed.events[-2:] == ["weather down", "composed down"]


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_the_nearest_time_limit_and_tool_error_masking(connect: Any, kind: str) -> None:
    async with connect(kind, LEGACY) as client:
        result = await client.call_tool("weather_slow", {"seconds": 10})  # weather's tool_timeout: 1 s
        assert result.is_error
        assert "timed out after 1 s" in result.content[0].text  # type: ignore[union-attr]
        result = await client.call_tool("notes.broken")  # notes masks its tool errors
        assert result.is_error
        assert "secret" not in result.content[0].text  # type: ignore[union-attr]


async def test_the_parents_time_limit_applies_when_the_mounted_server_has_none() -> None:
    parent, child = Server("p", tool_timeout=1), Server("c")

    @child.tool
    async def nap() -> str:
        await asyncio.sleep(10)
        return "woke"

    parent.mount(child, prefix="c")
    async with Client(parent) as client:
        result = await client.call_tool("c_nap")
        assert result.is_error
        assert "timed out after 1 s" in result.content[0].text  # type: ignore[union-attr]


async def test_a_mounted_task_tool_is_the_parents_task(connect: Any) -> None:
    async with connect("memory", MODERN) as client:
        handle = await client.start_task("weather_report", {"city": "Kyiv"})
        result = await handle.wait()
        assert text_of(result) == "report for Kyiv"


# --- live: changes in the mounted server change the parent, and are announced -----------------


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_registering_in_a_mounted_server_is_announced_and_served(connect: Any, kind: str, era: str) -> None:
    heard: list[str] = []
    async with connect(kind, era, on_list_changed=heard.append) as client, client.listen(tools=True, resources=True):
        assert text_of(await client.call_tool("notes.add_note", {"title": f"n-{kind}", "body": "b1"})) == "added"
        await until(lambda: {"tools", "resources"} <= set(heard), what="both list changes")
        assert f"notes.read_n-{kind}" in {t.name for t in await client.list_all_tools()}
        assert f"note://notes/n-{kind}" in {r.uri for r in await client.list_all_resources()}
        assert (await client.read_resource(f"note://notes/n-{kind}")).contents[0].text == "b1"
        assert text_of(await client.call_tool(f"notes.read_n-{kind}")) == "b1"
        heard.clear()
        assert text_of(await client.call_tool("notes.remove_note", {"title": f"n-{kind}"})) == "removed"
        await until(lambda: {"tools", "resources"} <= set(heard), what="both list changes")
        assert f"notes.read_n-{kind}" not in {t.name for t in await client.list_all_tools()}


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_a_mounted_resource_update_reaches_subscribers_under_the_parents_uri(connect: Any, kind: str, era: str) -> None:
    title = f"u-{kind}-{era}"
    async with connect(kind, era) as client:
        await client.call_tool("notes.add_note", {"title": title, "body": "b"})
        async with client.listen(resource_uris=[f"note://notes/{title}"]) as changes:
            await client.call_tool("notes.touch", {"title": title})
            change = await asyncio.wait_for(changes.__anext__(), 10)
            assert (change.kind, change.uri) == ("resource", f"note://notes/{title}")
        await client.call_tool("notes.remove_note", {"title": title})


# --- scopes, and mounting while serving --------------------------------------------------------


def test_a_mounted_feature_requires_the_mounts_scopes_and_its_own() -> None:
    parent, child = Server("p"), Server("c")
    child.tool(name="t", scopes=["c:t"])(lambda: "t")
    child.resource("data://x", scopes=["c:x"])(lambda: "x")
    parent.mount(child, prefix="c", scopes=["mount"])
    raw = msgspec.Raw(b'{"name": "c_t"}')
    assert parent.scopes_for("tools/call", raw) == ("mount", "c:t")
    assert parent.scopes_for("resources/read", msgspec.Raw(b'{"uri": "data://c/x"}')) == ("mount", "c:x")
    assert parent.scopes_for("tools/call", msgspec.Raw(b'{"name": "t"}')) == ()
    assert parent.all_scopes() == {"mount", "c:t", "c:x"}


async def test_mounting_while_serving_is_announced_but_not_for_a_server_with_a_lifespan() -> None:
    parent, late = Server("p"), Server("late")
    late.tool(name="t")(lambda: "late")
    heard: list[str] = []

    @contextlib.asynccontextmanager
    async def life(server: Server) -> AsyncIterator[None]:
        yield None

    async with Client(parent, ClientOptions(protocol_version=LEGACY, on_list_changed=heard.append)) as client:
        parent.mount(late, prefix="late")
        await until(lambda: "tools" in heard, what="the tools list change")
        assert text_of(await client.call_tool("late_t")) == "late"
        with pytest.raises(RuntimeError, match="lifespan"):
            parent.mount(Server("x", lifespan=life), prefix="x")


# --- a static copy (import_server) ---------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.parametrize("era", ERAS)
async def test_an_imported_server_is_offered_as_it_was_when_imported(era: str) -> None:
    """Over real HTTP: ``import_server`` names and serves like a mount (prefix, URIs,
    middleware), but what the imported server changes later is not offered."""
    seen: list[str] = []
    notes = Server("notes")

    @notes.use
    async def inner(ctx: Any, call_next: Any) -> Any:
        seen.append(str(ctx.params.get("name") or ctx.params.get("uri")))
        return await call_next()

    notes.tool(name="add")(lambda text: f"added {text}")
    notes.tool(name="drop")(lambda: "dropped")
    notes.resource("notes://{day}")(lambda day: f"notes of {day}")
    app = Server("app")
    app.import_server(notes, prefix="notes", exclude=["drop"])
    notes.tool(name="later")(lambda: "too late")
    notes.remove_tool("add")
    with serve_in_thread(app.asgi_app()) as port:
        async with Client(HttpTransport(f"http://127.0.0.1:{port}/mcp"), ClientOptions(protocol_version=era)) as client:
            assert [t.name for t in await client.list_all_tools()] == ["notes_add"]
            assert text_of(await client.call_tool("notes_add", {"text": "milk"})) == "added milk"
            for gone in ("notes_later", "notes_drop"):
                with pytest.raises(McpError) as caught:
                    await client.call_tool(gone)
                assert caught.value.code == -32602
            assert (await client.read_resource("notes://notes/monday")).contents[0].text == "notes of monday"  # type: ignore[union-attr]
    assert seen == ["add", "notes://monday"]


def test_what_import_server_refuses() -> None:
    app = Server("app")
    with pytest.raises(ValueError, match="itself"):
        app.import_server(app, prefix="again")
    with pytest.raises(TypeError, match="takes a Server"):
        app.import_server(object(), prefix="x")  # type: ignore[arg-type]
    child = Server("child")
    app.mount(child, prefix="c")
    with pytest.raises(ValueError, match="itself"):
        child.import_server(app, prefix="p")
