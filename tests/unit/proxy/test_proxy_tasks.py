"""Tasks across a proxy (docs/howto/proxies.md): a 2026-07-28 server behind that runs a
call as a task makes the proxied call a task of the proxy's, for a client of the tasks
extension — its handle at once, its questions through ``tasks/get`` and ``tasks/update``,
its cancellation reaching the task behind. In process (the server behind in memory) and
over real HTTP on both sides."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mcpkit import (
    Client,
    ClientOptions,
    Context,
    ElicitRequestParams,
    ElicitResult,
    HttpTransport,
    McpError,
    Proxy,
    Server,
    TextContent,
)
from support.eras import LEGACY, MODERN
from support.serving import serve_in_thread
from support.waiting import until

EXTENSION = "io.modelcontextprotocol/tasks"


class Upstream:
    """A modern server behind the proxy whose ``work`` tool runs as a task and waits for
    the test; ``ask`` asks a question inside its task; ``plain`` is no task tool."""

    def __init__(self) -> None:
        #: Set by the test (the server may run on uvicorn's loop, in another thread).
        self.release = threading.Event()
        self.events: list[str] = []
        self.server = server = Server("behind")

        @server.tool(task=True)
        async def work(label: str) -> str:
            self.events.append(f"started {label}")
            try:
                while not self.release.is_set():  # noqa: ASYNC110 - set from another thread
                    await asyncio.sleep(0.01)
            except asyncio.CancelledError:
                self.events.append(f"cancelled {label}")
                raise
            return f"done {label}"

        @server.tool(task=True)
        async def ask(ctx: Context) -> str:
            answer = await ctx.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}})
            return f"Hello, {(answer.content or {}).get('name')}!"

        @server.tool
        def plain() -> str:
            return "at once"


def text(result: Any) -> str:
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


@contextlib.asynccontextmanager
async def through_proxy(up: Upstream, over: str, **options: Any) -> AsyncIterator[Client]:
    opts = ClientOptions(protocol_version=MODERN, request_timeout=20, **options)
    if over == "memory":
        proxy = Proxy(up.server, client_options=ClientOptions(protocol_version=MODERN))
        async with Client(proxy, opts) as client:
            yield client
        return
    with serve_in_thread(up.server.asgi_app()) as up_port:
        proxy = Proxy(
            lambda: HttpTransport(f"http://127.0.0.1:{up_port}/mcp"), client_options=ClientOptions(protocol_version=MODERN)
        )
        with serve_in_thread(proxy.asgi_app()) as port:
            async with Client(HttpTransport(f"http://127.0.0.1:{port}/mcp"), opts) as client:
                yield client


OVER = [pytest.param("memory", id="memory"), pytest.param("http", id="http", marks=pytest.mark.e2e)]


@pytest.mark.parametrize("over", OVER)
async def test_a_task_behind_is_a_task_of_the_proxy(over: str) -> None:
    up = Upstream()
    async with through_proxy(up, over) as client:
        assert EXTENSION in (await client.discover()).capabilities["extensions"]
        handle = await client.start_task("work", {"label": "a"})
        assert handle.task_id is not None  # answered while the work behind goes on
        await until(lambda: up.events == ["started a"])
        assert (await client.get_task(handle.task_id)).status == "working"
        up.release.set()
        assert text(await handle.wait()) == "done a"
        at_once = await client.start_task("plain")
        assert at_once.task_id is None
        assert text(await at_once.wait()) == "at once"


@pytest.mark.parametrize("over", OVER)
async def test_a_question_of_the_task_behind_is_asked_by_the_proxys_task(over: str) -> None:
    def answer(request: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="accept", content={"name": "Ada"})

    async with through_proxy(Upstream(), over, on_elicit=answer) as client:
        handle = await client.start_task("ask")
        assert handle.task_id is not None
        assert text(await handle.wait()) == "Hello, Ada!"


@pytest.mark.parametrize("over", OVER)
async def test_cancelling_the_proxys_task_cancels_the_task_behind(over: str) -> None:
    up = Upstream()
    async with through_proxy(up, over) as client:
        handle = await client.start_task("work", {"label": "doomed"})
        await until(lambda: up.events == ["started doomed"])
        await handle.cancel()
        with pytest.raises(McpError) as cancelled:
            await handle.wait()
        assert cancelled.value.code == -32800
        await until(lambda: up.events == ["started doomed", "cancelled doomed"])


async def test_a_client_without_the_extension_gets_the_result_as_a_plain_call() -> None:
    up = Upstream()
    up.release.set()
    for era in (MODERN, LEGACY):
        proxy = Proxy(up.server, client_options=ClientOptions(protocol_version=MODERN))
        async with Client(proxy, ClientOptions(protocol_version=era, request_timeout=20)) as client:
            assert text(await client.call_tool("work", {"label": era})) == f"done {era}"
