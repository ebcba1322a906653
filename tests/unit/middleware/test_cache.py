"""ResponseCache through the public API: idempotent reads answered again from the cache
(read-only tools by their annotations), TTL on the injected clock and a bound in entries,
forgotten when the server announces a change, and never one principal's answer to
another; over every transport and in both eras."""

from __future__ import annotations

import threading
from types import ModuleType
from typing import Any

import pytest

from mcpkit import Client, ClientOptions, Context, FunctionVerifier, HttpTransport, ResourceServer, Server, TextContent
from mcpkit.middleware import ResponseCache
from support.eras import ERAS, MODERN
from support.serving import serve_in_thread
from support.transports import HTTP, MEMORY, TRANSPORTS
from support.waiting import until

pytestmark = pytest.mark.timeout(60)


def text(result: Any) -> str:
    return "".join(c.text for c in result.content if isinstance(c, TextContent))


def read_text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.contents)


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_reads_and_read_only_tools_are_answered_from_the_cache(
    kind: str, era: str, guarded: ModuleType, connect: Any
) -> None:
    app = guarded.build() if kind != "stdio" else None
    async with connect(kind, era, app.server if app else None) as client:
        assert text(await client.call_tool("counter")) == "1"
        assert text(await client.call_tool("counter")) == "1"  # cached: the tool did not run
        assert text(await client.call_tool("bump")) == "2"  # not read-only: never cached
        assert text(await client.call_tool("bump")) == "3"
        assert text(await client.call_tool("counter")) == "1"
        assert read_text(await client.read_resource("data://greeting")) == "hello #1"
        assert read_text(await client.read_resource("data://greeting")) == "hello #1"
        first = await client.get_prompt("hello", {"name": "Ada"})
        assert (await client.get_prompt("hello", {"name": "Ada"})).messages == first.messages
        if app is not None:
            assert app.cache.hits == 4
            app.clock.advance(31)  # past the TTL
            assert text(await client.call_tool("counter")) == "4"
            assert read_text(await client.read_resource("data://greeting")) == "hello #2"


@pytest.mark.parametrize("kind", [MEMORY, HTTP])
@pytest.mark.parametrize("era", ERAS)
async def test_announced_changes_make_the_cache_forget(kind: str, era: str, guarded: ModuleType, connect: Any) -> None:
    app = guarded.build()
    heard: list[str] = []
    changed = threading.Event()

    def listener(method: str, params: dict[str, Any]) -> None:  # after the cache's own listener
        heard.append(method)
        changed.set()

    app.server.on_change(listener)
    async with connect(kind, era, app.server) as client:
        assert read_text(await client.read_resource("data://greeting")) == "hello #1"
        assert read_text(await client.read_resource("data://greeting")) == "hello #1"
        await client.call_tool("touch")
        await until(changed.is_set)
        assert read_text(await client.read_resource("data://greeting")) == "hello #2"

        before = await client.list_tools()
        assert text(await client.call_tool("counter")) == "1"
        changed.clear()
        await client.call_tool("grow", {"name": "sprout"})
        await until(changed.is_set)
        assert heard[-1] == "notifications/tools/list_changed"
        after = await client.list_tools()
        assert {t.name for t in after.tools} - {t.name for t in before.tools} == {"sprout"}
        assert text(await client.call_tool("counter")) == "2"  # the tools' answers were forgotten too


@pytest.mark.parametrize("kind", [MEMORY, HTTP])
@pytest.mark.parametrize("era", ERAS)
async def test_a_change_made_by_a_handler_is_seen_by_the_very_next_request(kind: str, era: str, connect: Any) -> None:
    """The notice of a list change is coalesced (sent a moment later); the cache must not
    answer the request that follows the change from what it kept before it."""
    server = Server("growing")
    server.use(ResponseCache(server, ttl=600))
    version = {"v": 1}

    @server.tool
    def grow(name: str) -> str:  # a plain def: the change is made on a worker thread
        server.tool(name)(lambda: name)
        return "grown"

    @server.tool
    async def swap() -> str:
        server.remove_prompt("motto")
        server.prompt("motto")(lambda: "the new motto")
        return "swapped"

    @server.tool
    async def bump() -> str:
        version["v"] += 1
        await server.notify_resource_updated("data://version")
        return "bumped"

    @server.prompt("motto")
    def motto() -> str:
        return "the old motto"

    @server.resource("data://version")
    def current() -> str:
        return f"v{version['v']}"

    async with connect(kind, era, server) as client:
        assert len((await client.list_tools()).tools) == 3
        await client.call_tool("grow", {"name": "extra"})
        assert "extra" in [t.name for t in (await client.list_tools()).tools]
        assert (await client.get_prompt("motto")).messages[0].content.text == "the old motto"
        await client.call_tool("swap")
        assert (await client.get_prompt("motto")).messages[0].content.text == "the new motto"
        assert read_text(await client.read_resource("data://version")) == "v1"
        await client.call_tool("bump")
        assert read_text(await client.read_resource("data://version")) == "v2"


async def test_the_cache_is_bounded_in_entries() -> None:
    server = Server("bounded")
    cache = ResponseCache(server, max_entries=2, methods=["resources/read"])
    server.use(cache)
    reads: list[str] = []

    @server.resource("data://{name}")
    def item(name: str) -> str:
        reads.append(name)
        return name

    async with Client(server, ClientOptions(protocol_version=MODERN)) as client:
        for name in ("a", "b", "c", "a"):
            await client.read_resource(f"data://{name}")
    assert len(cache) == 2
    assert reads == ["a", "b", "c", "a"]  # "a" was the least recently used when "c" came


async def test_errors_and_tool_errors_are_not_kept() -> None:
    server = Server("failing")
    server.use(ResponseCache(server))
    runs: list[int] = []

    @server.tool(annotations={"readOnlyHint": True})
    def flaky() -> str:
        runs.append(1)
        raise RuntimeError("try later")

    async with Client(server, ClientOptions(protocol_version=MODERN)) as client:
        assert (await client.call_tool("flaky")).is_error
        assert (await client.call_tool("flaky")).is_error
    assert len(runs) == 2


@pytest.mark.e2e  # over protected HTTP
async def test_one_principal_never_gets_another_principals_answer() -> None:
    server = Server("owned")
    cache = ResponseCache(server)
    server.use(cache)

    @server.tool(annotations={"readOnlyHint": True})
    def mine(ctx: Context) -> str:
        assert ctx.identity is not None
        return f"the secrets of {ctx.identity.subject}"

    def verify(token: str) -> dict[str, Any] | None:
        return {"sub": token, "scope": "mcp"} if token in ("alice", "bob") else None

    auth = ResourceServer(
        resource="http://placeholder/mcp", authorization_servers=["https://as.example"], verifier=FunctionVerifier(verify)
    )
    with serve_in_thread(server.asgi_app(auth=auth)) as port:
        url = f"http://127.0.0.1:{port}/mcp"

        def as_(who: str) -> Client:
            return Client(HttpTransport(url, headers={"Authorization": f"Bearer {who}"}), ClientOptions(request_timeout=10))

        async with as_("alice") as alice, as_("bob") as bob:
            for _ in range(2):
                assert text(await alice.call_tool("mine")) == "the secrets of alice"
                assert text(await bob.call_tool("mine")) == "the secrets of bob"
    assert cache.hits == 2


def test_only_idempotent_methods_can_be_cached() -> None:
    with pytest.raises(ValueError, match="not cacheable"):
        ResponseCache(Server("x"), methods=["tools/call", "logging/setLevel"])
