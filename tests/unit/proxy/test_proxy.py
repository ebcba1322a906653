"""``mcpkit.Proxy`` in process: an upstream server reached in memory, the proxy served in
memory to clients of both eras. The same proxy over real processes and HTTP is
tests/e2e/proxy/; behind it, server-everything and the official client: tests/interop/."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mcpkit import (
    Client,
    ClientOptions,
    Context,
    ElicitRequestParams,
    ElicitResult,
    McpError,
    Proxy,
    Server,
    TextContent,
    proxy_of,
)
from mcpkit.server.lifespan import LifespanError
from mcpkit.transports.memory import ServerInMemory
from support.eras import ERAS, LEGACY, MODERN
from support.waiting import until


def text_of(result: Any) -> str:
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def upstream() -> Server:
    up = Server("upstream", page_size=1)
    calls = [0]

    @up.tool
    def count() -> int:
        calls[0] += 1
        return calls[0]

    @up.tool
    async def ask(ctx: Context) -> str:
        first, second = await _together(ctx)
        return f"{first.content} {second.content}"

    @up.resource("data://{key}")
    def data(key: str) -> str:
        return f"value of {key}"

    @up.prompt
    def greet(name: str) -> str:
        return f"Hello {name}"

    return up


async def _together(ctx: Context) -> Any:
    schema = {"type": "object", "properties": {"v": {"type": "string"}}}
    return await asyncio.gather(ctx.elicit("one?", schema), ctx.elicit("two?", schema))


class Counting(ServerInMemory):
    """An in-memory connection to the upstream server that counts how many are open."""

    open = 0

    async def start(self, on_message: Any, on_close: Any) -> None:
        Counting.open += 1
        await super().start(on_message, on_close)

    async def close(self) -> None:
        if self._serving is not None:
            Counting.open -= 1
        await super().close()


@contextlib.asynccontextmanager
async def client_of(server: Server, era: str, **options: Any) -> AsyncIterator[Client]:
    async with Client(server, ClientOptions(protocol_version=era, request_timeout=10, **options)) as client:
        yield client


def _answers(request: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"v": request.message.rstrip("?")})


@pytest.mark.parametrize("up_era", ERAS)
@pytest.mark.parametrize("era", ERAS)
async def test_a_proxy_serves_its_own_features_and_the_upstreams(era: str, up_era: str) -> None:
    proxy = Proxy(upstream(), client_options=ClientOptions(protocol_version=up_era, request_timeout=10))

    @proxy.tool
    def local() -> str:
        return "the proxy's own"

    async with client_of(proxy, era) as client:
        assert {t.name for t in await client.list_all_tools()} == {"local", "count", "ask"}  # upstream pages of 1 followed
        assert text_of(await client.call_tool("local")) == "the proxy's own"
        assert text_of(await client.call_tool("count")) == "1"
        assert (await client.read_resource("data://k")).contents[0].text == "value of k"
        assert (await client.get_prompt("greet", {"name": "Ada"})).messages[0].content.text == "Hello Ada"  # type: ignore[union-attr]
        with pytest.raises(McpError) as caught:
            await client.get_prompt("greet", {})
        assert caught.value.code == -32602


@pytest.mark.parametrize(("era", "up_era"), [(LEGACY, LEGACY), (MODERN, MODERN), (LEGACY, MODERN)])
async def test_questions_asked_together_cross_the_proxy(era: str, up_era: str) -> None:
    proxy = Proxy(upstream(), client_options=ClientOptions(protocol_version=up_era, request_timeout=10))
    async with client_of(proxy, era, on_elicit=_answers) as client:
        assert text_of(await client.call_tool("ask")) == "{'v': 'one'} {'v': 'two'}"


@pytest.mark.parametrize("era", ERAS)
async def test_a_proxy_mounted_under_a_prefix(era: str) -> None:
    app = Server("app")
    app.mount(Proxy(upstream(), client_options=ClientOptions(protocol_version=LEGACY)), prefix="up")
    async with client_of(app, era) as client:
        assert {t.name for t in await client.list_all_tools()} == {"up_count", "up_ask"}
        assert [t.uri_template for t in await client.list_all_resource_templates()] == ["data://up/{key}"]
        assert text_of(await client.call_tool("up_count")) == "1"
        assert (await client.read_resource("data://up/k")).contents[0].text == "value of k"


@pytest.mark.parametrize("era", ERAS)
async def test_a_proxy_of_several_servers_mounts_a_proxy_of_each_under_its_name(era: str) -> None:
    other = Server("other")
    other.tool(name="count")(lambda: "the other count")
    app = proxy_of({"one": upstream(), "two": other}, "both", client_options=ClientOptions(protocol_version=LEGACY))
    async with client_of(app, era, on_elicit=_answers) as client:
        assert {t.name for t in await client.list_all_tools()} == {"one_count", "one_ask", "two_count"}
        assert text_of(await client.call_tool("one_count")) == "1"
        assert text_of(await client.call_tool("two_count")) == "the other count"
        assert text_of(await client.call_tool("one_ask")) == "{'v': 'one'} {'v': 'two'}"  # questions cross both layers
        assert (await client.read_resource("data://one/k")).contents[0].text == "value of k"


def test_a_proxy_of_several_servers_needs_some_with_valid_names() -> None:
    with pytest.raises(ValueError, match="at least one"):
        proxy_of({})
    with pytest.raises(ValueError, match="prefix"):
        proxy_of({"a b": upstream()})


async def test_each_legacy_connection_has_its_upstream_session_closed_with_it() -> None:
    Counting.open = 0  # a server of its own for each upstream session: its state is the session's
    proxy = Proxy(lambda: Counting(upstream()), client_options=ClientOptions(protocol_version=LEGACY, request_timeout=10))
    async with client_of(proxy, LEGACY) as one:
        assert Counting.open == 1  # the proxy's shared session
        async with client_of(proxy, LEGACY) as other:
            assert [text_of(await one.call_tool("count")) for _ in range(2)] == ["1", "2"]
            assert text_of(await other.call_tool("count")) == "1"
            assert Counting.open == 3
        await until(lambda: Counting.open == 2, what="the second connection's upstream session closed")
    await until(lambda: Counting.open == 0, what="every upstream session closed")


async def test_upstream_sessions_are_bounded() -> None:
    up = upstream()
    proxy = Proxy(lambda: ServerInMemory(up), max_sessions=1, client_options=ClientOptions(protocol_version=LEGACY))
    async with client_of(proxy, LEGACY) as one, client_of(proxy, LEGACY) as other:
        assert text_of(await one.call_tool("count")) == "1"
        with pytest.raises(McpError) as caught:
            await other.call_tool("count")
        assert caught.value.code == -32603
        assert "Service unavailable" in caught.value.message


async def test_a_proxy_whose_upstream_cannot_be_reached_does_not_start() -> None:
    broken = Server("broken", eras="modern")
    proxy = Proxy(broken, client_options=ClientOptions(protocol_version=LEGACY, request_timeout=5))
    with pytest.raises(LifespanError):
        async with proxy.running():
            pass


def test_bounds_are_checked() -> None:
    with pytest.raises(ValueError, match="positive"):
        Proxy(Server("x"), max_sessions=0)


# --- the era bridge: a legacy server's questions to a modern client, across its rounds -------


def legacy_upstream(cancelled: list[str]) -> Server:
    up = upstream()

    @up.tool
    async def wait_for_answer(ctx: Context) -> str:
        try:
            answer = await ctx.elicit("answer?", {"type": "object", "properties": {"v": {"type": "string"}}})
        except asyncio.CancelledError:
            cancelled.append("wait_for_answer")
            raise
        return f"got {answer.content}"

    return up


def bridged(cancelled: list[str], **options: Any) -> Proxy:
    up = legacy_upstream(cancelled)
    return Proxy(lambda: ServerInMemory(up), client_options=ClientOptions(protocol_version=LEGACY, request_timeout=10), **options)


async def test_a_legacy_servers_questions_become_a_modern_clients_rounds() -> None:
    rounds: list[str] = []

    def on_elicit(request: ElicitRequestParams) -> ElicitResult:
        rounds.append(request.message)
        return _answers(request)

    async with client_of(bridged([]), MODERN, on_elicit=on_elicit) as client:
        assert text_of(await client.call_tool("ask")) == "{'v': 'one'} {'v': 'two'}"
        assert rounds == ["one?", "two?"]  # asked together upstream: one round each here
        assert text_of(await client.call_tool("count")) == "1"  # a call that asks nothing: one round


async def test_a_question_the_modern_client_cannot_answer_is_refused_upstream_and_the_call_goes_on() -> None:
    """A legacy server asks for roots in the middle of a call (as server-everything does on
    its own) of a modern client that declared no roots: the server is told -32021, and the
    client's call is answered, not failed by a question it never could have answered."""
    up = upstream()

    @up.tool
    async def roots_if_any(ctx: Context) -> str:
        try:
            roots = await ctx.list_roots()
        except McpError as exc:
            return f"refused {exc.code}"
        return f"{len(roots)} roots"

    proxy = Proxy(lambda: ServerInMemory(up), client_options=ClientOptions(protocol_version=LEGACY, request_timeout=10))
    async with client_of(proxy, MODERN) as client:
        assert text_of(await client.call_tool("roots_if_any")) == "refused -32021"


async def test_an_exchange_nobody_continues_expires_and_cancels_the_upstream_call() -> None:
    cancelled: list[str] = []
    proxy = bridged(cancelled, round_ttl=0.2)
    async with client_of(proxy, MODERN, capabilities={"elicitation": {}}) as client:
        first = await client.send_request("tools/call", {"name": "wait_for_answer", "arguments": {}})
        assert first["resultType"] == "input_required"
        assert [r["method"] for r in first["inputRequests"].values()] == ["elicitation/create"]
        await until(lambda: cancelled == ["wait_for_answer"], what="the upstream call cancelled")
        # a retry after that starts the upstream call again, answered with what it carries
        again = await client.send_request(
            "tools/call",
            {
                "name": "wait_for_answer",
                "arguments": {},
                "requestState": first["requestState"],
                "inputResponses": {key: {"action": "accept", "content": {"v": "late"}} for key in first["inputRequests"]},
            },
        )
        assert again["content"][0]["text"] == "got {'v': 'late'}"


async def test_exchanges_are_bounded_by_the_upstream_sessions() -> None:
    proxy = bridged([], max_sessions=1)
    async with client_of(proxy, MODERN, capabilities={"elicitation": {}}) as client:
        first = await client.send_request("tools/call", {"name": "wait_for_answer", "arguments": {}})
        assert first["resultType"] == "input_required"
        with pytest.raises(McpError) as caught:
            await client.send_request("tools/call", {"name": "wait_for_answer", "arguments": {}})
        assert caught.value.code == -32603
        assert "Service unavailable" in caught.value.message


class State:
    def __init__(self, note: str) -> None:
        self.note = note


async def test_the_proxys_own_lifespan_runs_inside_the_upstream_connection() -> None:
    @contextlib.asynccontextmanager
    async def life(server: Server) -> AsyncIterator[State]:
        yield State("the proxy's state")

    proxy = Proxy(upstream(), lifespan=life, client_options=ClientOptions(protocol_version=LEGACY))

    @proxy.tool
    def note(state: State) -> str:
        return state.note

    async with client_of(proxy, MODERN) as client:
        assert text_of(await client.call_tool("note")) == "the proxy's state"
        assert text_of(await client.call_tool("count")) == "1"


async def test_a_name_the_proxy_also_has_is_listed_and_served_once_as_its_own() -> None:
    proxy = Proxy(upstream(), client_options=ClientOptions(protocol_version=LEGACY))
    mounted = Server("mounted")
    mounted.tool(name="ask", description="the mount's")(lambda: "the mount's")
    proxy.mount(mounted)

    @proxy.tool(name="count")
    def own_count() -> str:
        return "the proxy's"

    async with client_of(proxy, MODERN) as client:
        tools = {tool.name: tool for tool in await client.list_all_tools()}
        assert sorted(tools) == ["ask", "count"]  # the upstream's two are shadowed
        assert tools["ask"].description == "the mount's"  # listed as served
        assert text_of(await client.call_tool("count")) == "the proxy's"
        assert text_of(await client.call_tool("ask")) == "the mount's"


@pytest.mark.parametrize("up_era", [LEGACY, MODERN])
@pytest.mark.parametrize("down_era", [LEGACY, MODERN])
async def test_an_update_right_after_a_subscription_is_answered_is_not_missed(up_era: str, down_era: str) -> None:
    """The proxy answers a downstream subscription only once its upstream subscription
    holds the URI: an upstream server slow to take it (here it waits a moment before
    serving the subscription) cannot make the proxy miss the update that follows."""
    up = Server("slow-to-subscribe")

    @up.resource("note://a")
    def note() -> str:
        return "a"

    @up.tool
    async def touch() -> str:
        await up.notify_resource_updated("note://a")
        return "touched"

    async def slow_subscriptions(ctx: Context, call_next: Any) -> Any:
        if ctx.method in ("resources/subscribe", "subscriptions/listen"):
            await asyncio.sleep(0.3)  # widens the race; the verdict does not depend on it
        return await call_next()

    up.use(slow_subscriptions)
    proxy = Proxy(lambda: ServerInMemory(up), client_options=ClientOptions(protocol_version=up_era, request_timeout=10))
    async with client_of(proxy, down_era) as client:
        async with client.listen(resource_uris=["note://a"]) as changes:
            assert text_of(await client.call_tool("touch")) == "touched"
            change = await asyncio.wait_for(changes.__anext__(), 10)
        assert (change.kind, change.uri) == ("resource", "note://a")
