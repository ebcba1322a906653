"""A proxy never forwards its clients' credentials: the upstream server, over real HTTP,
sees the proxy's own headers and never the bearer token a downstream client sent."""

from __future__ import annotations

from typing import Any

import httpx

from mcpkit import Client, ClientOptions, HttpTransport, Proxy, Server, TextContent
from support.eras import LEGACY, MODERN
from support.serving import serve_in_thread


def _recording(app: Any, seen: list[dict[str, str]]) -> Any:
    async def wrapper(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            seen.append({k.decode().lower(): v.decode() for k, v in scope["headers"]})
        await app(scope, receive, send)

    return wrapper


async def test_the_downstream_bearer_token_never_reaches_the_upstream_server() -> None:
    up = Server("upstream")
    up.tool(name="hello")(lambda: "hello")
    seen: list[dict[str, str]] = []
    with serve_in_thread(_recording(up.asgi_app(), seen)) as up_port:
        upstream = f"http://127.0.0.1:{up_port}/mcp"
        proxy = Proxy(lambda: HttpTransport(upstream, headers={"X-Proxy": "its own"}))
        with serve_in_thread(proxy.asgi_app()) as port:
            for era in (LEGACY, MODERN):
                http = httpx.AsyncClient(headers={"Authorization": "Bearer downstream-secret"})
                transport = HttpTransport(f"http://127.0.0.1:{port}/mcp", http_client=http)
                async with Client(transport, ClientOptions(protocol_version=era)) as client:
                    result = await client.call_tool("hello")
                    assert isinstance(result.content[0], TextContent)
                    assert result.content[0].text == "hello"
                await http.aclose()
    assert seen, "the upstream server was reached"
    assert all(headers.get("x-proxy") == "its own" for headers in seen)
    assert not any("downstream-secret" in value for headers in seen for value in headers.values())
