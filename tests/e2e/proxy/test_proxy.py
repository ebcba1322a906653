"""A proxy (``mcpkit.Proxy``) in a process of its own, served over Streamable HTTP, in front
of a server it spawns over stdio (tests/support/servers/composed.py, its lists paged by
2), called by mcpkit clients of both eras: every era pair, downstream x upstream."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

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
    RequestTimeout,
    Root,
    TextContent,
)
from support.eras import LEGACY, MODERN
from support.ports import free_port
from support.processes import listening, server_command
from support.waiting import until

#: (downstream era, upstream era): every pair a proxy bridges.
ALL_PAIRS = [
    pytest.param(LEGACY, LEGACY, id="legacy-legacy"),
    pytest.param(MODERN, MODERN, id="modern-modern"),
    pytest.param(LEGACY, MODERN, id="legacy-modern"),
    pytest.param(MODERN, LEGACY, id="modern-legacy"),
]
PAIRS = ALL_PAIRS


def text_of(result: Any) -> str:
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


@contextlib.contextmanager
def _proxy(upstream: str, mode: str) -> Iterator[str]:
    port = free_port()
    with listening(server_command("proxy_of", upstream, mode, str(port)), port, timeout=30):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def proxies() -> Iterator[dict[tuple[str, str], str]]:
    with contextlib.ExitStack() as stack:
        urls: dict[tuple[str, str], str] = {}

        def url(upstream: str, mode: str = "per-client") -> str:
            if (upstream, mode) not in urls:
                urls[(upstream, mode)] = stack.enter_context(_proxy(upstream, mode))
            return urls[(upstream, mode)]

        yield url  # type: ignore[misc]


@pytest.fixture
def connect(proxies: Any) -> Any:
    @contextlib.asynccontextmanager
    async def make(down: str, up: str, mode: str = "per-client", **options: Any) -> AsyncIterator[Client]:
        options.setdefault("request_timeout", 30)
        async with Client(HttpTransport(proxies(up, mode)), ClientOptions(protocol_version=down, **options)) as client:
            yield client

    return make


async def _model(request: CreateMessageParams) -> CreateMessageResult:
    said = request.messages[-1].content["text"]
    return CreateMessageResult(role="assistant", content={"type": "text", "text": f"echo {said}"}, model="m-1")


def _accept(request: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"city": "Lima"})


@pytest.mark.parametrize(("down", "up"), ALL_PAIRS)
async def test_lists_cross_paged_on_both_sides(connect: Any, down: str, up: str) -> None:
    async with connect(down, up) as client:
        first = await client.list_tools()
        assert len(first.tools) == 3
        assert first.next_cursor is not None  # the proxy's pages (3)
        names = {t.name for t in await client.list_all_tools()}  # the upstream's pages (2), all followed
        assert {"hello", "weather_forecast", "weather_slow", "notes.add_note", "notes.broken"} <= names
        assert [r.uri for r in await client.list_all_resources()] == ["weather://weather/stations"]
        assert [t.uri_template for t in await client.list_all_resource_templates()] == ["weather://weather/cities/{city}"]
        assert {p.name for p in await client.list_all_prompts()} == {"weather_brief", "notes.failing"}


@pytest.mark.parametrize(("down", "up"), ALL_PAIRS)
async def test_calls_progress_and_logging_cross(connect: Any, down: str, up: str) -> None:
    logs: list[Any] = []
    progress: list[tuple[float, float | None, str | None]] = []
    async with connect(down, up, on_log=lambda level, data, logger: logs.append(data)) as client:
        await client.set_logging_level("info")
        result = await client.call_tool("weather_forecast", {"city": "Oslo"}, on_progress=lambda *p: progress.append(p))
        assert text_of(result) == "Oslo: 21 C"
        assert progress == [(1, 2, "half"), (2, 2, "done")]
        await until(lambda: logs, what="the upstream's log message")
        assert logs == ["forecasting Oslo"]
        read = await client.read_resource("weather://weather/cities/Rome")
        assert [(c.uri, c.text) for c in read.contents] == [("weather://weather/cities/Rome", "Rome is sunny")]
        prompt = await client.get_prompt("weather_brief", {"city": "Rome"})
        assert prompt.messages[0].content.text == "Brief me on Rome."  # type: ignore[union-attr]
        done = await client.complete({"type": "ref/prompt", "name": "weather_brief"}, "city", "P")
        assert done.completion.values == ["Paris", "Prague"]


@pytest.mark.parametrize(("down", "up"), ALL_PAIRS)
async def test_errors_keep_their_codes_and_internal_errors_stay_generic(connect: Any, down: str, up: str) -> None:
    async with connect(down, up) as client:
        with pytest.raises(McpError) as caught:
            await client.call_tool("weather_nope")
        assert (caught.value.code, caught.value.message) == (-32602, "Unknown tool: weather_nope")
        with pytest.raises(McpError) as caught:
            await client.call_tool("weather_forecast", {"city": 3})
        assert caught.value.code == -32602
        with pytest.raises(McpError) as caught:
            await client.get_prompt("notes.failing")
        assert caught.value.code == -32603
        assert "secret" not in caught.value.message
        assert "secret" not in str(caught.value.data)
        broken = await client.call_tool("notes.broken")  # a tool error is a result, masked upstream
        assert broken.is_error
        assert "secret" not in broken.content[0].text  # type: ignore[union-attr]


@pytest.mark.parametrize(("down", "up"), PAIRS)
async def test_the_upstream_servers_questions_reach_the_downstream_client(connect: Any, down: str, up: str) -> None:
    roots = [Root(uri="file:///a"), Root(uri="file:///b")]
    async with connect(down, up, on_elicit=_accept, on_sample=_model, roots=roots) as client:
        assert text_of(await client.call_tool("weather_ask_city")) == "city Lima"
        assert text_of(await client.call_tool("weather_summarize", {"text": "hi"})) == "m-1: echo hi"
        assert text_of(await client.call_tool("weather_roots")) == "file:///a,file:///b"


async def test_a_legacy_servers_question_to_a_modern_client_through_one_shared_transport_fails_clearly(
    connect: Any,
) -> None:
    """A proxy of one transport has no link to lend an exchange: it cannot tell whose
    question a legacy server's is."""
    async with connect(MODERN, LEGACY, "shared", on_elicit=_accept) as client:
        with pytest.raises(McpError) as caught:  # the upstream tool failed to ask: its error, as the upstream sent it
            await client.call_tool("weather_ask_city")
        assert caught.value.code == -32603
        assert "cannot relay" in caught.value.message


@pytest.mark.parametrize(("down", "up"), ALL_PAIRS)
async def test_a_cancelled_call_is_cancelled_upstream(connect: Any, down: str, up: str) -> None:
    async with connect(down, up) as client:
        assert text_of(await client.call_tool("hello"))  # the upstream session is open: the call below reaches it
        with pytest.raises(RequestTimeout):
            await client.call_tool("notes.wait", {"seconds": 20.5}, timeout=3)  # time enough to reach upstream

        polls = 0

        async def cancelled() -> bool:  # long before the 20.5 s are up
            # a modern client's call to a legacy upstream runs on an upstream link of its own
            # (proxy/bridge.py, idle links reused last in, first out): a poll sent before the
            # cancelled call's link is idle again opens another, which later polls would take
            # every time; so each poll sends one call more at once, up to 8, to reach them all
            nonlocal polls
            polls += 1
            calls = (client.call_tool("weather_cancellations") for _ in range(min(polls, 8)))
            return any("20.5" in text_of(a).split(",") for a in await asyncio.gather(*calls))

        await until(cancelled, what="the upstream call cancelled")


async def test_each_legacy_client_gets_its_own_upstream_session(connect: Any) -> None:
    async with connect(LEGACY, LEGACY) as one, connect(LEGACY, LEGACY) as other:
        assert [text_of(await one.call_tool("weather_count")) for _ in range(3)] == ["1", "2", "3"]
        assert text_of(await other.call_tool("weather_count")) == "1"


@pytest.mark.parametrize(("down", "up"), ALL_PAIRS)
async def test_list_changes_and_resource_updates_cross(connect: Any, down: str, up: str) -> None:
    heard: list[str] = []
    title = f"n-{down}-{up}"
    async with (
        connect(down, up, "shared", on_list_changed=heard.append) as client,
        client.listen(tools=True, resources=True),
    ):
        await client.call_tool("notes.add_note", {"title": title, "body": "b1"})
        await until(lambda: {"tools", "resources"} <= set(heard), what="both list changes")
        assert f"notes.read_{title}" in {t.name for t in await client.list_all_tools()}
        assert (await client.read_resource(f"note://notes/{title}")).contents[0].text == "b1"
        async with client.listen(resource_uris=[f"note://notes/{title}"]) as changes:
            await client.call_tool("notes.touch", {"title": title})
            change = await asyncio.wait_for(changes.__anext__(), 20)
            assert (change.kind, change.uri) == ("resource", f"note://notes/{title}")
        heard.clear()
        await client.call_tool("notes.remove_note", {"title": title})
        await until(lambda: "tools" in heard, what="the tools list change")
        assert f"notes.read_{title}" not in {t.name for t in await client.list_all_tools()}
