"""A proxy served over Streamable HTTP opens an upstream session for each legacy HTTP
session, and closes it when that session ends (the client's DELETE)."""

from __future__ import annotations

from typing import Any

from mcpkit import Client, ClientOptions, HttpTransport, Proxy, Server, TextContent
from mcpkit.transports.memory import ServerInMemory
from support.eras import LEGACY
from support.serving import serve_in_thread
from support.waiting import until


class Counting(ServerInMemory):
    """An in-memory connection to a server of its own, counting those open."""

    open = 0

    async def start(self, on_message: Any, on_close: Any) -> None:
        Counting.open += 1
        await super().start(on_message, on_close)

    async def close(self) -> None:
        if self._serving is not None:
            Counting.open -= 1
        await super().close()


def upstream() -> Server:
    up = Server("upstream")
    up.tool(name="hello")(lambda: "hello")
    return up


async def test_a_legacy_http_sessions_upstream_session_ends_with_it() -> None:
    proxy = Proxy(lambda: Counting(upstream()), client_options=ClientOptions(protocol_version=LEGACY))
    with serve_in_thread(proxy.asgi_app()) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        async with Client(HttpTransport(url), ClientOptions(protocol_version=LEGACY)) as client:
            result = await client.call_tool("hello")
            assert isinstance(result.content[0], TextContent)
            assert Counting.open == 2  # the shared one, and this session's
        await until(lambda: Counting.open == 1, what="the session's upstream session closed")
