"""Tags on every feature, and the selections of a mount and a proxy
(``mcpkit.server.filters``), through the public API and both eras: in memory, and over
real HTTP for the proxy. A feature a selection leaves out is neither listed nor served."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mcpkit import Client, ClientOptions, HttpTransport, McpError, Proxy, Server, TextContent
from mcpkit.server.filters import TAGS_META, Selection, check_tags, tags_of
from support.eras import ERAS
from support.serving import serve_in_thread


def text_of(result: Any) -> str:
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def _child() -> Server:
    child = Server("child")

    @child.tool(tags=["public", "math"])
    def add(a: int, b: int) -> int:
        """Adds."""
        return a + b

    @child.tool(tags=["admin"])
    def wipe() -> str:
        """Wipes everything."""
        return "wiped"

    @child.tool
    def untagged() -> str:
        """No tags."""
        return "plain"

    @child.prompt(tags=["public"])
    def hello() -> str:
        """Says hello."""
        return "hello"

    @child.prompt(tags=["admin"])
    def audit() -> str:
        """An admin's prompt."""
        return "audit"

    @child.resource("notes://public", tags=["public"])
    def public_note() -> str:
        return "open"

    @child.resource("notes://secret", tags=["admin"])
    def secret_note() -> str:
        return "secret"

    @child.resource("files://{name}", tags=["admin"])
    def a_file(name: str) -> str:
        return f"file {name}"

    return child


@contextlib.asynccontextmanager
async def _client(server: Server, era: str) -> AsyncIterator[Client]:
    async with Client(server, ClientOptions(protocol_version=era, request_timeout=20)) as client:
        yield client


async def _offered(client: Client) -> dict[str, set[str]]:
    return {
        "tools": {t.name for t in await client.list_all_tools()},
        "prompts": {p.name for p in await client.list_all_prompts()},
        "resources": {r.uri for r in await client.list_all_resources()},
        "templates": {t.uri_template for t in await client.list_all_resource_templates()},
    }


# --- tags ----------------------------------------------------------------------------------------


def test_tags_are_checked_sorted_and_deduplicated() -> None:
    assert check_tags(["b", "a", "b"]) == ("a", "b")
    with pytest.raises(TypeError):
        check_tags("admin")
    with pytest.raises(TypeError):
        check_tags([1])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="non-empty"):
        check_tags([""])
    server = Server("s")
    with pytest.raises(TypeError):
        server.tool(tags="admin")(lambda: "x")  # type: ignore[arg-type]


@pytest.mark.parametrize("era", ERAS)
async def test_tags_are_listed_in_the_features_meta_beside_its_own(era: str) -> None:
    server = Server("s")

    @server.tool(tags=["b", "a"], meta={"com.example/owner": "ops"})
    def tagged() -> str:
        return "x"

    async with _client(server, era) as client:
        (tool,) = await client.list_all_tools()
        assert tool.meta == {"com.example/owner": "ops", TAGS_META: ["a", "b"]}
        assert tags_of(tool) == {"a", "b"}


def test_a_selection_includes_by_name_or_tag_and_exclusion_wins() -> None:
    class Item:
        def __init__(self, *tags: str) -> None:
            self.meta = {TAGS_META: list(tags)}

    everything = Selection()
    assert everything.everything
    assert everything.admits("x", Item())
    only = Selection(include=["x"], include_tags=["public"])
    assert only.admits("x", Item())
    assert only.admits("y", Item("public"))
    assert not only.admits("y", Item("admin"))
    assert not Selection(include=["x"], exclude_tags=["admin"]).admits("x", Item("admin"))
    assert not Selection(exclude=["x"]).admits("x", Item("public"))
    assert Selection(exclude_tags=["admin"]).admits("y", Item("public"))
    for key in ("fastmcp", "_fastmcp"):  # FastMCP's key now, and in older releases
        fastmcp = type("FastMcpItem", (), {"meta": {key: {"tags": ["public"]}}})()
        assert Selection(include_tags=["public"]).admits("z", fastmcp)
    with pytest.raises(TypeError):
        Selection(include="x")


# --- on a mount ---------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_a_mount_offers_only_what_its_selection_lets_through(era: str) -> None:
    child = _child()
    parent = Server("parent")
    parent.mount(child, "c", exclude_tags=["admin"])
    async with _client(parent, era) as client:
        assert await _offered(client) == {
            "tools": {"c_add", "c_untagged"},
            "prompts": {"c_hello"},
            "resources": {"notes://c/public"},
            "templates": set(),
        }
        assert text_of(await client.call_tool("c_add", {"a": 1, "b": 2})) == "3"
        for call in (
            client.call_tool("c_wipe"),
            client.get_prompt("c_audit"),
            client.read_resource("notes://c/secret"),
            client.read_resource("files://c/passwd"),
        ):
            with pytest.raises(McpError) as refused:
                await call
            assert refused.value.code == -32602  # as for a feature that does not exist


@pytest.mark.parametrize("era", ERAS)
async def test_an_include_names_and_tags_and_later_registrations_are_selected_too(era: str) -> None:
    child = _child()
    parent = Server("parent")
    parent.mount(child, include=["untagged"], include_tags=["math"])
    async with _client(parent, era) as client:
        assert (await _offered(client))["tools"] == {"add", "untagged"}
        with pytest.raises(McpError):
            await client.call_tool("wipe")

        child.tool(name="multiply", tags=["math"])(lambda a, b: a * b)
        child.tool(name="drop", tags=["admin"])(lambda: "dropped")
        assert (await _offered(client))["tools"] == {"add", "untagged", "multiply"}
        with pytest.raises(McpError):
            await client.call_tool("drop")


# --- on a proxy, over real HTTP -----------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_a_proxy_offers_only_what_its_selection_lets_through(era: str) -> None:
    child = _child()
    child.tool(name="foreign", meta={"fastmcp": {"tags": ["admin"]}})(lambda: "a FastMCP server's tags")
    with serve_in_thread(child.asgi_app()) as up_port:
        upstream = f"http://127.0.0.1:{up_port}/mcp"
        proxy = Proxy(lambda: HttpTransport(upstream), exclude_tags=["admin"], exclude=["untagged"])
        with serve_in_thread(proxy.asgi_app()) as port:
            transport = HttpTransport(f"http://127.0.0.1:{port}/mcp")
            async with Client(transport, ClientOptions(protocol_version=era, request_timeout=20)) as client:
                assert await _offered(client) == {
                    "tools": {"add"},
                    "prompts": {"hello"},
                    "resources": {"notes://public"},
                    "templates": set(),
                }
                assert text_of(await client.call_tool("add", {"a": 2, "b": 2})) == "4"
                for call in (
                    client.call_tool("wipe"),
                    client.call_tool("foreign"),
                    client.call_tool("untagged"),
                    client.get_prompt("audit"),
                    client.read_resource("notes://secret"),
                    client.read_resource("files://passwd"),
                ):
                    with pytest.raises(McpError) as refused:
                        await call
                    assert refused.value.code == -32602
