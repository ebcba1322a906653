"""A legacy client's ``notifications/roots/list_changed`` crosses a proxy to the server
behind it, on the upstream session of that client's connection — in memory and over real
HTTP (the legacy Streamable HTTP session), directly and through a mounted proxy — and the
server behind, asking again, gets the new roots."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from mcpkit import Client, ClientOptions, Context, HttpTransport, Proxy, Root, Server, TextContent
from mcpkit.server.session import Session
from support.eras import LEGACY
from support.serving import serve_in_thread


class Upstream(Server):
    """A server that records the notifications its clients send."""

    def __init__(self) -> None:
        super().__init__("upstream")
        self.heard: asyncio.Queue[str] = asyncio.Queue()

        @self.tool
        async def roots(ctx: Context) -> str:
            return " ".join(str(root.uri) for root in await ctx.list_roots())

    def notified(self, session: Session, method: str) -> None:
        self.heard.put_nowait(method)
        super().notified(session, method)


def _text(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


@asynccontextmanager
async def _served(server: Server, where: str) -> AsyncIterator[Callable[[], Any]]:
    if where == "memory":
        yield lambda: server
        return
    with serve_in_thread(server.asgi_app()) as port:
        yield lambda: HttpTransport(f"http://127.0.0.1:{port}/mcp")


@pytest.mark.parametrize("where", ["memory", "http"])
@pytest.mark.parametrize("mounted", [False, True], ids=["proxy", "mounted-proxy"])
async def test_a_legacy_clients_roots_change_reaches_the_server_behind(where: str, mounted: bool) -> None:
    up = Upstream()
    proxy = Proxy(lambda: up, client_options=ClientOptions(protocol_version=LEGACY, request_timeout=10))
    front: Server = proxy
    if mounted:
        front = Server("front")
        front.mount(proxy, prefix="up")
    name = "up_roots" if mounted else "roots"
    async with _served(front, where) as connect:
        options = ClientOptions(protocol_version=LEGACY, roots=[Root(uri="file:///a")], request_timeout=10)
        async with Client(connect(), options) as client:
            assert _text(await client.call_tool(name)) == "file:///a"  # the upstream session is open
            await client.set_roots([Root(uri="file:///b")])
            async with asyncio.timeout(10):
                while await up.heard.get() != "notifications/roots/list_changed":
                    pass
            assert _text(await client.call_tool(name)) == "file:///b"
