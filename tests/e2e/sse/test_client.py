"""The client of the deprecated HTTP+SSE transport (2024-11-05): ``SseTransport``, and
``HttpTransport``'s fallback to it, against a scripted server on 127.0.0.1
(tests/support/servers/sse_fake.py, under uvicorn in a thread).

The good path (the endpoint, relative or absolute, then messages both ways), the bad
inputs (an endpoint on another origin, no endpoint in time, something else than an
endpoint first, not a stream at all, a stream that ends mid-request, a POST refused
500), ``close()`` closing the stream, and the fallback: taken when the first POST is
refused 405, not taken when it is off, and the refusal standing when the GET finds no
HTTP+SSE server either. Then mcpkit's client against mcpkit's own server of this
transport (``asgi_app(sse_transport=True)``), directly and by the fallback. The foreign
servers are in tests/interop/test_sse_interop.py.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from mcpkit import (
    Client,
    ClientOptions,
    ConnectionClosed,
    Context,
    CreateMessageParams,
    CreateMessageResult,
    HttpTransport,
    McpError,
    Server,
    SseTransport,
)
from support.processes import load_server
from support.serving import serve_in_thread

pytestmark = pytest.mark.timeout(60)

LIMIT = 20.0  # seconds for a whole test body
OPTIONS = ClientOptions(request_timeout=10)
fake_module = load_server("sse_fake")


@pytest.fixture
def fake() -> Iterator[tuple[str, object]]:
    app = fake_module.SseFake()
    with serve_in_thread(app) as port:
        yield f"http://127.0.0.1:{port}", app


def methods(app: object) -> list[str]:
    return [m.get("method", "(response)") for m in app.posted]  # type: ignore[attr-defined]


@pytest.mark.parametrize("mode", ["normal", "absolute"])
async def test_round_trip(fake: tuple[str, object], mode: str) -> None:
    """The endpoint (relative to the stream, or absolute) is where every message goes;
    the answers arrive on the stream; the client negotiates the legacy era without a
    ``server/discover`` ever reaching the server."""
    base, app = fake
    transport = SseTransport(f"{base}/sse?mode={mode}")
    async with asyncio.timeout(LIMIT), Client(transport, OPTIONS) as client:
        assert (client.era, client.protocol_version) == ("legacy", "2025-11-25")
        assert client.server_info is not None
        assert client.server_info.name == "sse-fake"
        assert transport.endpoint == f"{base}/messages?sid=1"
        assert await transport.connected() == transport.endpoint
        tools = await client.list_tools()
        assert [t.name for t in tools.tools] == ["echo", "end", "fail", "hang"]
        echoed = await asyncio.gather(*(client.call_tool("echo", {"text": f"hi {i}"}) for i in range(5)))
        assert [r.content[0].text for r in echoed] == [f"hi {i}" for i in range(5)]  # type: ignore[union-attr]
    assert methods(app)[:3] == ["initialize", "notifications/initialized", "tools/list"]
    assert "server/discover" not in methods(app)
    assert [m for m, _ in app.requests] == ["GET"] + ["POST"] * len(app.posted)  # type: ignore[attr-defined]


async def test_endpoint_on_another_origin_is_refused(fake: tuple[str, object]) -> None:
    base, app = fake
    async with asyncio.timeout(LIMIT):
        with pytest.raises(ConnectionClosed, match=r"elsewhere\.invalid/messages' is not on the origin of"):
            async with Client(SseTransport(f"{base}/sse?mode=foreign"), OPTIONS):
                pass
    assert app.requests == [("GET", "/sse")]  # type: ignore[attr-defined]


async def test_no_endpoint_in_time_ends_the_connection(fake: tuple[str, object]) -> None:
    base, _ = fake
    reasons: list[str | None] = []
    transport = SseTransport(f"{base}/sse?mode=silent", connect_timeout=0.5)
    started = time.monotonic()
    async with asyncio.timeout(LIMIT):
        await transport.start(lambda data: None, reasons.append)
        with pytest.raises(ConnectionClosed, match=r"No endpoint event from .* within 0\.5 s"):
            await transport.connected()
        await transport.close()
    assert 0.4 < time.monotonic() - started < 5
    assert len(reasons) == 1
    assert reasons[0] is not None
    assert reasons[0].startswith("No endpoint event from")


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/sse?mode=wrong", r"first event of .* is 'message', not 'endpoint': not an HTTP\+SSE server"),
        ("/sse?mode=json", r"HTTP 200 OK, application/json rather than an SSE stream: \{\}"),
        ("/nowhere", r"GET .*/nowhere: HTTP 404 Not Found: Not Found"),
    ],
)
async def test_not_an_sse_server(fake: tuple[str, object], path: str, reason: str) -> None:
    base, app = fake
    async with asyncio.timeout(LIMIT):
        with pytest.raises(ConnectionClosed, match=reason):
            async with Client(SseTransport(base + path), OPTIONS):
                pass
    assert [m for m, _ in app.requests] == ["GET"]  # type: ignore[attr-defined]


async def test_stream_ending_mid_request_fails_it_with_connection_closed(fake: tuple[str, object]) -> None:
    base, _ = fake
    async with asyncio.timeout(LIMIT), Client(SseTransport(f"{base}/sse"), OPTIONS) as client:
        with pytest.raises(ConnectionClosed, match="The server ended the SSE stream"):
            await client.call_tool("end")
        with pytest.raises(ConnectionClosed):
            await client.call_tool("echo", {"text": "too late"})


async def test_refused_post_fails_only_that_request(fake: tuple[str, object]) -> None:
    base, _ = fake
    async with asyncio.timeout(LIMIT), Client(SseTransport(f"{base}/sse"), OPTIONS) as client:
        with pytest.raises(McpError) as caught:
            await client.call_tool("fail")
        assert caught.value.code == -32603
        assert caught.value.data == {"status": 500, "body": "boom"}
        assert "HTTP 500 Internal Server Error: boom" in caught.value.message
        echoed = await client.call_tool("echo", {"text": "still here"})
        assert echoed.content[0].text == "still here"  # type: ignore[union-attr]


async def test_unanswered_post_fails_only_that_request(fake: tuple[str, object]) -> None:
    base, _ = fake
    async with asyncio.timeout(LIMIT), Client(SseTransport(f"{base}/sse", post_timeout=0.5), OPTIONS) as client:
        started = time.monotonic()
        with pytest.raises(McpError, match=r"No answer to the POST within 0\.5 s") as caught:
            await client.call_tool("hang")
        assert 0.4 < time.monotonic() - started < 5
        assert caught.value.code == -32603
        echoed = await client.call_tool("echo", {"text": "next"})
        assert echoed.content[0].text == "next"  # type: ignore[union-attr]


async def test_a_message_over_the_size_limit_ends_the_connection(fake: tuple[str, object]) -> None:
    base, _ = fake
    async with asyncio.timeout(LIMIT), Client(SseTransport(f"{base}/sse", max_message_size=600), OPTIONS) as client:
        assert (await client.call_tool("echo", {"text": "x" * 100})).content[0].text == "x" * 100  # type: ignore[union-attr]
        with pytest.raises(ConnectionClosed, match=r"Invalid SSE stream from .*: SSE event exceeds 600 bytes"):
            await client.call_tool("echo", {"text": "x" * 1000})


async def test_close_closes_the_stream(fake: tuple[str, object]) -> None:
    base, app = fake
    transport = SseTransport(f"{base}/sse")
    async with asyncio.timeout(LIMIT):
        async with Client(transport, OPTIONS) as client:
            await client.ping()
        assert await asyncio.to_thread(app.disconnected.wait, 5)  # type: ignore[attr-defined]
        await transport.close()  # idempotent
        transport.send(b'{"jsonrpc":"2.0","id":9,"method":"ping"}')  # dropped, never raises
    assert app.disconnects == 1  # type: ignore[attr-defined]
    with pytest.raises(ConnectionClosed):
        await transport.connected()


@pytest.mark.parametrize("pinned", [None, "2025-11-25"], ids=["negotiated", "pinned"])
async def test_http_transport_falls_back(fake: tuple[str, object], pinned: str | None) -> None:
    """The first POST (the ``server/discover`` probe, or the ``initialize`` of a pinned
    revision) is refused 405; the GET of the same URL opens the old transport, and the
    connection goes on there, in the legacy era."""
    base, app = fake
    options = ClientOptions(request_timeout=10, protocol_version=pinned)
    async with asyncio.timeout(LIMIT), Client(HttpTransport(f"{base}/sse"), options) as client:
        assert (client.era, client.protocol_version) == ("legacy", "2025-11-25")
        echoed = await client.call_tool("echo", {"text": "old"})
        assert echoed.content[0].text == "old"  # type: ignore[union-attr]
    assert app.requests[:3] == [("POST", "/sse"), ("GET", "/sse"), ("POST", "/messages")]  # type: ignore[attr-defined]
    assert methods(app)[:2] == ["initialize", "notifications/initialized"]


async def test_fallback_again_after_reconnecting(fake: tuple[str, object]) -> None:
    """The old transport's stream ends: the call in flight fails with ConnectionClosed;
    ``HttpTransport`` reconnects, and its new first POST falls back again (a new stream)."""
    base, app = fake
    async with asyncio.timeout(LIMIT), Client(HttpTransport(f"{base}/sse"), OPTIONS) as client:
        with pytest.raises(ConnectionClosed, match="The server ended the SSE stream"):
            await client.call_tool("end")
        echoed = await client.call_tool("echo", {"text": "back"})
        assert echoed.content[0].text == "back"  # type: ignore[union-attr]
    gets = [i for i, request in enumerate(app.requests) if request == ("GET", "/sse")]  # type: ignore[attr-defined]
    assert len(gets) == 2
    assert app.requests[gets[1] - 1] == ("POST", "/sse")  # type: ignore[attr-defined]
    assert methods(app).count("initialize") == 2


async def test_no_fallback_when_it_is_off(fake: tuple[str, object]) -> None:
    base, app = fake
    async with asyncio.timeout(LIMIT):
        with pytest.raises(McpError) as caught:
            async with Client(HttpTransport(f"{base}/sse", sse_fallback=False), OPTIONS):
                pass
    assert caught.value.data["status"] == 405
    assert app.requests == [("POST", "/sse"), ("POST", "/sse")]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/nowhere", 404),
        ("/sse?mode=wrong", 405),
        ("/sse?mode=json", 405),
        ("/sse?mode=silent", 405),
        ("/sse?mode=endless", 405),
        ("/sse?mode=trickle", 405),
    ],
)
async def test_the_refusal_stands_without_an_sse_server(fake: tuple[str, object], path: str, status: int) -> None:
    """The POST is refused, and the GET finds no HTTP+SSE server (an error status,
    another event first, no stream, no endpoint within ``connect_timeout``, a body that
    never ends, fast or slow): the client
    sees the POST's refusal, as if nothing had been tried, and negotiates on (its
    ``initialize`` is refused the same)."""
    base, app = fake
    started = time.monotonic()
    async with asyncio.timeout(LIMIT):
        with pytest.raises(McpError) as caught:
            async with Client(HttpTransport(base + path, connect_timeout=0.5), OPTIONS):
                pass
    assert time.monotonic() - started < 5
    assert caught.value.data["status"] == status
    where = path.partition("?")[0]
    assert app.requests == [("POST", where), ("GET", where), ("POST", where)]  # type: ignore[attr-defined]


async def test_closing_during_the_attempt_closes_its_stream(fake: tuple[str, object]) -> None:
    base, app = fake
    transport = HttpTransport(f"{base}/sse?mode=silent")
    async with asyncio.timeout(LIMIT):
        connecting = asyncio.create_task(Client(transport, OPTIONS).__aenter__())
        assert await asyncio.to_thread(app.stream_opened.wait, 5)  # type: ignore[attr-defined]
        await transport.close()
        with pytest.raises(ConnectionClosed):
            await connecting
        assert await asyncio.to_thread(app.disconnected.wait, 5)  # type: ignore[attr-defined]
    assert app.requests == [("POST", "/sse"), ("GET", "/sse")]  # type: ignore[attr-defined]


def mcpkit_server() -> Server:
    server = Server("mcpkit-sse", "1.0.0")

    @server.tool
    def echo(text: str) -> str:
        return text

    @server.tool
    async def ask(question: str, ctx: Context) -> str:
        return (await ctx.sample(question, 20)).text

    return server


async def model(request: CreateMessageParams) -> CreateMessageResult:
    said = request.messages[-1].content["text"]
    return CreateMessageResult(role="assistant", content={"type": "text", "text": f"echo {said}"}, model="m")


@pytest.mark.parametrize(("kind", "path"), [("sse", "/sse"), ("fallback", "/sse"), ("streamable", "/mcp")])
async def test_mcpkit_server(kind: str, path: str) -> None:
    """mcpkit's server of the old transport: over ``SseTransport``, and by the fallback
    (``POST /sse`` is refused 405); its MCP endpoint beside it is used as it is (modern)."""
    options = ClientOptions(request_timeout=10, on_sample=model)
    with serve_in_thread(mcpkit_server().asgi_app(sse_transport=True)) as port:
        url = f"http://127.0.0.1:{port}{path}"
        transport = SseTransport(url) if kind == "sse" else HttpTransport(url)
        async with asyncio.timeout(LIMIT), Client(transport, options) as client:
            assert client.era == ("modern" if kind == "streamable" else "legacy")
            echoed = await client.call_tool("echo", {"text": "hi"})
            asked = await client.call_tool("ask", {"question": "2+2?"})
    assert echoed.content[0].text == "hi"  # type: ignore[union-attr]
    assert asked.content[0].text == "echo 2+2?"  # type: ignore[union-attr]
