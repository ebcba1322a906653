"""Change notifications through the public API, both eras, in memory, over stdio and over
real HTTP: a dynamic server, list-changed, resource subscriptions, ``subscriptions/listen``
(each MUST of the 2026-07-28 pattern named in a test), bounded delivery, no leaks."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from mcpkit import (
    Client,
    ClientOptions,
    ConnectionClosed,
    HttpTransport,
    McpError,
    Server,
    StdioTransport,
    SubscriptionEvent,
    TextContent,
)
from support.eras import ERAS, LEGACY, MODERN
from support.ports import free_port
from support.processes import listening, load_server, server_command
from support.transports import MEMORY_AND_STDIO, TRANSPORTS
from support.waiting import until


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    port = free_port()
    with listening(server_command("dynamic", "--http", str(port)), port):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture
def connect(request: pytest.FixtureRequest) -> Any:
    @contextlib.asynccontextmanager
    async def make(kind: str, era: str, **options: Any) -> AsyncIterator[Client]:
        options.setdefault("request_timeout", 10)
        opts = ClientOptions(protocol_version=era, **options)
        if kind == "memory":
            client = Client(load_server("dynamic").server, opts)
        elif kind == "stdio":
            client = Client(StdioTransport(server_command("dynamic"), stderr="devnull"), opts)
        else:
            client = Client(HttpTransport(request.getfixturevalue("http_url")), opts)  # started on first use
        async with client:
            yield client

    return make


async def next_event(changes: Any, timeout: float = 10.0) -> SubscriptionEvent:
    event: SubscriptionEvent = await asyncio.wait_for(changes.__anext__(), timeout)
    return event


def text(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_add_and_remove_while_listening(connect: Any, kind: str, era: str) -> None:
    async with connect(kind, era) as client, client.listen(tools=True, prompts=True) as changes:
        before = {t.name for t in await client.list_all_tools()}
        await client.call_tool("add_tools", {"count": 5, "prefix": f"t{kind}"})
        assert await next_event(changes) == SubscriptionEvent("tools")  # five registrations, one notice
        after = {t.name for t in await client.list_all_tools()}  # pages of 3: the helper follows nextCursor
        assert after - before == {f"t{kind}_{i}" for i in range(5)}
        await client.call_tool("remove_tools", {"count": 5, "prefix": f"t{kind}"})
        assert await next_event(changes) == SubscriptionEvent("tools")
        assert {t.name for t in await client.list_all_tools()} == before
        await client.call_tool("toggle", {"kind": "prompt", "key": "hello", "enabled": False})
        assert await next_event(changes) == SubscriptionEvent("prompts")
        assert await client.list_all_prompts() == []
        with pytest.raises(McpError):
            await client.get_prompt("hello")
        await client.call_tool("toggle", {"kind": "prompt", "key": "hello", "enabled": True})
        assert await next_event(changes) == SubscriptionEvent("prompts")
        assert [p.name for p in await client.list_all_prompts()] == ["hello"]


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_resource_updates_reach_subscribers_in_order(connect: Any, kind: str, era: str) -> None:
    uris = ["note://1", "note://2"]
    async with connect(kind, era) as client, client.listen(resource_uris=uris) as changes:
        await client.call_tool("touch", {"uris": ["note://1", "note://other", "note://2"], "times": 3})
        got = [await next_event(changes) for _ in range(6)]
        assert got == [SubscriptionEvent("resource", u) for _ in range(3) for u in uris]  # not note://other


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_legacy_unsubscribe_stops_updates(connect: Any, kind: str) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    async with connect(kind, LEGACY, on_notification=lambda m, p: seen.append((m, p))) as client:
        await client.subscribe_resource("doc://readme")
        await client.call_tool("touch", {"uris": ["doc://readme"]})
        await client.ping()
        await until(lambda: seen, what="the update")
        assert ("notifications/resources/updated", {"uri": "doc://readme"}) in seen
        await client.unsubscribe_resource("doc://readme")
        seen.clear()
        await client.call_tool("touch", {"uris": ["doc://readme"], "times": 3})
        await client.call_tool("add_tools", {"count": 1, "prefix": f"u{kind}"})  # a later notice, as a marker
        await until(lambda: seen, what="the marker (or an update that should not be)")
        assert [m for m, _ in seen] == ["notifications/tools/list_changed"]
        await client.call_tool("remove_tools", {"count": 1, "prefix": f"u{kind}"})


@pytest.mark.parametrize("era", ERAS)
async def test_unknown_resource_cannot_be_watched(connect: Any, era: str) -> None:
    async with connect("memory", era) as client:
        if era == LEGACY:
            with pytest.raises(McpError) as caught:
                await client.subscribe_resource("nope://x")
            assert caught.value.code == -32002
        else:
            with pytest.raises(McpError) as caught:
                await client.subscribe_resource("doc://readme")
            assert caught.value.code == -32601  # resources/subscribe is not a 2026-07-28 method


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_list_changed_callback(connect: Any, kind: str, era: str) -> None:
    heard: list[str] = []
    got = asyncio.Event()

    def on_list_changed(which: str) -> None:
        heard.append(which)
        got.set()

    # the modern era hears of changes only through a listen
    async with connect(kind, era, on_list_changed=on_list_changed) as client, client.listen(resources=True):
        await client.call_tool("toggle", {"kind": "resource", "key": "doc://readme", "enabled": False})
        await asyncio.wait_for(got.wait(), 5)
        assert heard == ["resources"]
        await client.call_tool("toggle", {"kind": "resource", "key": "doc://readme", "enabled": True})


# --- many subscribers, slow subscribers, leaks -------------------------------------------------------


@pytest.mark.e2e
async def test_thousand_updates_to_fifty_subscribers_none_lost(http_url: str) -> None:
    uris = [f"note://{i}" for i in range(10)]
    clients = [Client(HttpTransport(http_url), ClientOptions(protocol_version=MODERN if i % 2 else LEGACY)) for i in range(50)]
    async with contextlib.AsyncExitStack() as stack:
        subs = []
        for client in clients:
            await stack.enter_async_context(client)
            subs.append(await stack.enter_async_context(client.listen(resource_uris=uris)))
        await clients[0].call_tool("touch", {"uris": uris, "times": 100}, timeout=60)

        async def drain(changes: Any) -> list[str]:
            return [(await next_event(changes, 30)).uri or "" for _ in range(1000)]

        results = await asyncio.gather(*(drain(s) for s in subs))
    for got in results:
        assert got == uris * 100  # every update, in order


@pytest.mark.e2e
async def test_listen_ends_and_leaves_nothing_behind(connect: Any) -> None:
    async with connect("stdio", MODERN) as client:
        baseline = json.loads(text(await client.call_tool("census")))
        for _ in range(5):
            async with client.listen(tools=True, resource_uris=["doc://readme"]):
                pass
        async with connect("stdio", LEGACY) as other:
            await other.ping()
        after = json.loads(text(await client.call_tool("census")))
        assert after == baseline


@pytest.mark.e2e
async def test_http_subscriber_that_disconnects_leaves_nothing_behind(http_url: str) -> None:
    async with Client(HttpTransport(http_url), ClientOptions(protocol_version=MODERN)) as probe:
        baseline = json.loads(text(await probe.call_tool("census")))
        for era in (MODERN, LEGACY, MODERN):
            client = Client(HttpTransport(http_url), ClientOptions(protocol_version=era))
            await client.connect()
            sub = client.listen(tools=True, resource_uris=["doc://readme"])
            await sub.__aenter__()
            await client.close()  # gone without unsubscribing
        async def cleaned_up() -> bool:
            now = json.loads(text(await probe.call_tool("census")))
            return bool(now["subscribers"] == baseline["subscribers"] and now["tasks"] <= baseline["tasks"])

        await until(cleaned_up, what="the gone clients' subscriptions are cleaned up")


async def test_slow_subscriber_is_collapsed_not_unbounded() -> None:
    """A subscriber that does not keep up has its queue collapsed to one notice per list
    and resource: memory stays bounded, and it still hears about every resource."""
    from mcpkit.server.changes import Subscriber
    from mcpkit.stores.bus import Change

    sent: list[tuple[str, dict[str, Any]]] = []
    release = asyncio.Event()

    async def slow_drain() -> None:
        await release.wait()

    sub = Subscriber(lambda m, p: sent.append((m, p)), lists=["tools"], uris={"a", "b"}, drain=slow_drain, max_pending=100)
    sub.start()
    try:
        for i in range(10_000):
            sub.offer(Change("resource", "a" if i % 2 else "b"))
            if i % 1000 == 0:
                sub.offer(Change("tools"))
        assert sub.pending <= 101
        assert sub.collapsed > 0
        release.set()
        await until(lambda: not sub.pending, what="the collapsed changes drained")
    finally:
        await sub.stop()
    notices = {(m, p.get("uri")) for m, p in sent}
    assert notices == {
        ("notifications/resources/updated", "a"),
        ("notifications/resources/updated", "b"),
        ("notifications/tools/list_changed", None),
    }


# --- subscriptions/listen, point by point (2026-07-28, basic/patterns/subscriptions) ------------------


META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


def _headers(method: str, name: str | None = None) -> dict[str, str]:
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": MODERN, "mcp-method": method}
    if name is not None:
        headers["mcp-name"] = name
    return headers


def _post_listen(http: httpx.Client, url: str, rid: int, notifications: dict[str, Any]) -> Any:
    params = {"notifications": notifications, "_meta": META}
    body = {"jsonrpc": "2.0", "id": rid, "method": "subscriptions/listen", "params": params}
    return http.stream("POST", url, json=body, headers=_headers("subscriptions/listen"))


def _sse_messages(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    for line in lines:
        if line.startswith("data:") and line[5:].strip():
            yield json.loads(line[5:])


@pytest.mark.e2e
def test_listen_must_acknowledge_first_and_tag_every_message(http_url: str) -> None:
    """MUST send notifications/subscriptions/acknowledged first, with the subscription
    id in _meta; every later notification carries it; MUST NOT send types not asked for."""
    wanted = {"promptsListChanged": True, "resourceSubscriptions": ["doc://readme"]}
    with httpx.Client(timeout=10) as http, _post_listen(http, http_url, 77, wanted) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        messages = _sse_messages(resp.iter_lines())
        ack = next(messages)
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 77
        assert ack["params"]["notifications"] == wanted
        with raw_tools(http_url) as call:
            call("add_tools", {"count": 1, "prefix": "not-asked"})  # tools: not asked for
            call("touch", {"uris": ["note://9", "doc://readme"]})
            call("remove_tools", {"count": 1, "prefix": "not-asked"})
        update = next(messages)
        assert update == {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": "doc://readme", "_meta": {"io.modelcontextprotocol/subscriptionId": 77}},
        }


@pytest.mark.e2e
def test_listen_filter_fields_are_optional_and_unknown_lists_are_not_acknowledged(http_url: str) -> None:
    with httpx.Client(timeout=10) as http, _post_listen(http, http_url, 5, {}) as resp:
        ack = next(_sse_messages(resp.iter_lines()))
        assert ack["params"]["notifications"] == {}


@contextlib.contextmanager
def raw_tools(url: str) -> Iterator[Any]:
    """Call tools of the server synchronously over modern HTTP (raw JSON-RPC)."""
    with httpx.Client(timeout=10) as http:
        ids = iter(range(1000, 10_000))

        def call(name: str, arguments: dict[str, Any]) -> Any:
            params = {"name": name, "arguments": arguments, "_meta": META}
            body = {"jsonrpc": "2.0", "id": next(ids), "method": "tools/call", "params": params}
            resp = http.post(url, json=body, headers=_headers("tools/call", name))
            assert resp.status_code == 200, resp.text
            return resp.json()

        yield call


@pytest.mark.parametrize("kind", MEMORY_AND_STDIO)
async def test_concurrent_subscriptions_are_told_apart_by_id(connect: Any, kind: str) -> None:
    """On stdio every subscription shares one channel: notifications are demultiplexed by
    the subscription id, so each listen gets only what its own filter asked for."""
    async with (
        connect(kind, MODERN) as client,
        client.listen(tools=True) as tools,
        client.listen(resource_uris=["doc://readme"]) as docs,
    ):
        await client.call_tool("touch", {"uris": ["doc://readme"]})
        assert await next_event(docs) == SubscriptionEvent("resource", "doc://readme")
        await client.call_tool("add_tools", {"count": 1, "prefix": f"c{kind}"})
        assert await next_event(tools) == SubscriptionEvent("tools")
        await client.call_tool("remove_tools", {"count": 1, "prefix": f"c{kind}"})
        assert await next_event(tools) == SubscriptionEvent("tools")
        with pytest.raises(TimeoutError):
            await next_event(docs, 0.3)


async def test_server_shutdown_ends_a_subscription_gracefully() -> None:
    """The server SHOULD answer the listen request (the graceful end) when it tears the
    subscription down; the client's iteration then simply ends."""
    server: Server = load_server("dynamic").server
    async with Client(server, ClientOptions(protocol_version=MODERN)) as client, client.listen(tools=True) as changes:
        server.shutdown()
        with pytest.raises(StopAsyncIteration):
            await next_event(changes)


async def test_cancelling_the_listen_stops_delivery_on_the_server() -> None:
    server: Server = load_server("dynamic").server
    async with Client(server, ClientOptions(protocol_version=MODERN)) as client:
        async with client.listen(tools=True):
            assert len(server._registry.hub) == 2  # the connection's own and the listen
        await client.ping()
        assert len(server._registry.hub) == 1


@pytest.mark.e2e
async def test_a_dropped_modern_stream_is_reopened_with_a_resync(http_url: str) -> None:
    """The connection drops the stream without an answer (here: the HTTP server is killed
    and started again): the client reopens it and yields one change per list and
    resource, as changes may have been missed."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with listening(server_command("dynamic", "--http", str(port)), port) as proc:
        client = Client(HttpTransport(url), ClientOptions(protocol_version=MODERN, request_timeout=5))
        async with client, client.listen(tools=True, resource_uris=["doc://readme"]) as changes:
            proc.kill()
            proc.wait(10)
            with listening(server_command("dynamic", "--http", str(port)), port):
                got = {await next_event(changes, 15), await next_event(changes, 15)}
                assert got == {SubscriptionEvent("tools"), SubscriptionEvent("resource", "doc://readme")}
                assert changes.reopened >= 1
                await client.call_tool("touch", {"uris": ["doc://readme"]})
                assert await next_event(changes, 10) == SubscriptionEvent("resource", "doc://readme")


@pytest.mark.e2e
async def test_server_shutdown_over_http_ends_the_iteration(http_url: str) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with listening(server_command("dynamic", "--http", str(port)), port) as proc:
        client = Client(HttpTransport(url), ClientOptions(protocol_version=MODERN, request_timeout=5))
        async with client, client.listen(tools=True) as changes:
            proc.terminate()  # SIGTERM: a graceful shutdown answers the listen request
            with pytest.raises(StopAsyncIteration):
                await next_event(changes, 10)
            assert changes.reopened == 0


async def test_listen_on_a_closed_client_raises() -> None:
    server: Server = load_server("dynamic").server
    client = Client(server, ClientOptions(protocol_version=MODERN))
    await client.connect()
    await client.close()
    with pytest.raises(ConnectionClosed):
        async with client.listen(tools=True):
            pass
