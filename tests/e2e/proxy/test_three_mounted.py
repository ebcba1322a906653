"""Three servers mounted into one (issue 26's composition case): one in this process, one
spawned over stdio and one over Streamable HTTP (each through a ``Proxy``), serving one
client under their prefixes, in both eras, with a change behind a proxy announced live."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mcpkit import Client, ClientOptions, HttpTransport, Proxy, Server, StdioTransport, TextContent
from support.eras import ERAS, LEGACY
from support.ports import free_port
from support.processes import listening, server_command
from support.waiting import until


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    port = free_port()
    with listening(server_command("composed", "--http", str(port)), port):
        yield f"http://127.0.0.1:{port}/mcp"


def composed_of_three(http_url: str) -> Server:
    local = Server("local")
    local.tool(name="ping")(lambda: "pong")
    app = Server("app")
    options = ClientOptions(protocol_version=LEGACY, request_timeout=20)
    app.mount(local, prefix="local")
    app.mount(Proxy(StdioTransport(server_command("composed"), stderr="devnull"), client_options=options), prefix="stdio")
    app.mount(Proxy(lambda: HttpTransport(http_url), client_options=options), prefix="http")
    return app


@pytest.mark.parametrize("era", ERAS)
async def test_three_servers_serve_one_client(http_url: str, era: str) -> None:
    heard: list[str] = []
    app = composed_of_three(http_url)
    async with (
        Client(app, ClientOptions(protocol_version=era, on_list_changed=heard.append, request_timeout=20)) as client,
        client.listen(tools=True),
    ):
        names = {tool.name for tool in await client.list_all_tools()}
        assert {"local_ping", "stdio_weather_forecast", "http_weather_forecast", "http_hello"} <= names
        for name, arguments, text in [
            ("local_ping", {}, "pong"),
            ("stdio_weather_forecast", {"city": "Oslo"}, "Oslo: 21 C"),
            ("http_hello", {}, "hello from composed"),
        ]:
            result = await client.call_tool(name, arguments)
            assert isinstance(result.content[0], TextContent)
            assert result.content[0].text == text
        read = await client.read_resource("weather://http/weather/cities/Rome")
        assert read.contents[0].text == "Rome is sunny"
        title = f"three-{era}"
        await client.call_tool("stdio_notes.add_note", {"title": title, "body": "b"})  # a change behind a proxy
        await until(lambda: "tools" in heard, what="the list change, through the proxy and the mount")
        assert f"stdio_notes.read_{title}" in {tool.name for tool in await client.list_all_tools()}
