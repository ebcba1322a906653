"""The HTTP client transport reads what the client's driver built instead of decoding the
bytes it was just given (``runtime.channel.TakesMessages``), and gives the same headers.

The client's ``Peer`` hands ``HttpTransport`` each request and notification with its
method, id and params as built; the transport decodes the bytes only where those params
could say something other than the bytes (a value that encodes as another type), and
for what a tool's ``x-mcp-header`` rules read. A transport of your own still gets bytes.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Iterator
from typing import Any

import pytest

from mcpkit import Client, ClientOptions, HttpTransport, Server
from mcpkit.runtime.channel import TakesMessages, Transport
from mcpkit.transports.http import transport as http_transport
from mcpkit.transports.memory import memory_pair
from support.eras import LEGACY, MODERN
from support.serving import serve_in_thread

ERAS = {"modern": ClientOptions(protocol_version=MODERN), "legacy": ClientOptions(protocol_version=LEGACY)}


class Region(enum.Enum):
    EU = "eu"


class ToolName(enum.Enum):
    ECHO = "echo"


def _server() -> Server:
    server = Server("envelope")

    @server.tool
    def echo(text: str) -> str:
        """The text, unchanged."""
        return text

    server.add_tool(
        "where",
        "The region, mirrored in Mcp-Param-Region.",
        {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}, "required": ["region"]},
        lambda args: f"in {args['region']}",
    )
    return server


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serve_in_thread(_server().asgi_app(path="/mcp")) as port:
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The methods of the outbound messages HttpTransport decoded, in order."""
    seen: list[str] = []
    real = http_transport.decode_out

    def counting(data: bytes) -> Any:
        out = real(data)
        seen.append(out.method if isinstance(out.method, str) else "(a response)")
        return out

    monkeypatch.setattr(http_transport, "decode_out", counting)
    return seen


def test_the_http_transport_takes_messages_with_what_they_say() -> None:
    assert isinstance(HttpTransport("http://127.0.0.1:1/mcp"), TakesMessages)


@pytest.mark.parametrize("era", list(ERAS))
async def test_requests_and_notifications_are_not_decoded_again(url: str, decoded: list[str], era: str) -> None:
    async with Client(HttpTransport(url), ERAS[era]) as client:
        assert (await client.call_tool("echo", {"text": "hi"})).content[0].text == "hi"  # type: ignore[union-attr]
        tools = await client.list_tools()
        assert {t.name for t in tools.tools} == {"echo", "where"}
        assert (await client.call_tool("where", {"region": "eu"})).content[0].text == "in eu"  # type: ignore[union-attr]
    assert decoded == []  # negotiation, initialize and notifications/initialized included


async def test_params_that_encode_as_something_else_are_read_from_the_bytes(url: str, decoded: list[str]) -> None:
    """An enum encodes as its value: the mirrored headers are computed from what the
    server will read (an ``Mcp-Name`` of ``echo``, an ``Mcp-Param-Region`` of ``eu``)."""
    async with Client(HttpTransport(url), ERAS["modern"]) as client:
        await client.list_tools()  # learns the rules of "where"
        result = await client.send_request("tools/call", {"name": ToolName.ECHO, "arguments": {"text": "x"}})
        assert result["content"][0]["text"] == "x"
        assert decoded == ["tools/call"]  # the name is not a str as built
        answer = await client.call_tool("where", {"region": Region.EU})
        assert answer.content[0].text == "in eu"  # type: ignore[union-attr]
        assert decoded == ["tools/call"]  # the rules read the arguments from the bytes, not the message as a whole


async def test_a_transport_of_your_own_gets_bytes() -> None:
    """A third-party transport implements ``send(bytes)`` only; nothing else is asked of it."""
    inner, server_side = memory_pair()
    sent: list[bytes] = []

    class Own:
        async def start(self, on_message: Any, on_close: Any) -> None:
            await inner.start(on_message, on_close)

        def send(self, data: bytes) -> None:
            assert type(data) is bytes
            sent.append(data)
            inner.send(data)

        async def drain(self) -> None:
            await inner.drain()

        async def close(self) -> None:
            await inner.close()

    own: Transport = Own()
    assert not isinstance(own, TakesMessages)
    server = _server()
    serving = asyncio.get_running_loop().create_task(server.serve(server_side))
    try:
        async with Client(own, ERAS["modern"]) as client:
            assert (await client.call_tool("echo", {"text": "own"})).content[0].text == "own"  # type: ignore[union-attr]
    finally:
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)
    assert any(b'"tools/call"' in data for data in sent)
