"""Hostile input against the codecs: the SSE parser, error echoes, and params decoding.

- The client's SSE parser must stay linear in its input and cut an oversized event as it
  streams in (a 64 MiB event once cost 16 s of CPU, rescanning its buffer per chunk).
- No error message or error ``data`` may repeat client input whole (a 1 MiB URI or
  header value once came back as a 1 MiB error).
- Params that are valid JSON but cannot be represented (``1e999``, an integer of 5000
  digits) must get a JSON-RPC error, never an HTTP 500, and the server keeps serving.

Real server processes (``tests/support/servers/hostile_codec.py``) on 127.0.0.1 and real pipes.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from mcpkit.protocol.sse import SSEParser
from support.eras import LEGACY, MODERN
from support.ports import free_port
from support.processes import listening, server_command
from support.wire import ACCEPT

pytestmark = pytest.mark.timeout(60)

MiB = 1024 * 1024
CHUNK = 64 * 1024
META: dict[str, Any] = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
#: The most an echo of client input may take in an error (flatten_text's limit, with room for quotes).
ECHO = 300
HUGE_INT = "9" * 5000  # more digits than any decoder represents
OUT_OF_RANGE = ["1e999", "-1e999", HUGE_INT]


# --- 1. the SSE parser --------------------------------------------------------------------------


def test_sse_64mib_event_in_64kib_chunks_is_linear() -> None:
    """Before: 16.1 s of CPU (the buffer was copied and rescanned per chunk). After: ~0.3 s."""
    parser = SSEParser(max_event_size=64 * MiB)
    filler = b"x" * CHUNK
    started = time.process_time()
    events = parser.feed(b"id: 7\ndata: ")
    for _ in range(64 * MiB // CHUNK - 1):
        events += parser.feed(filler)
    events += parser.feed(filler[:-6] + b"\r\n\r\n")
    spent = time.process_time() - started
    assert len(events) == 1
    assert len(events[0].data) == 64 * MiB - 6
    assert events[0].id == "7"
    assert spent < 2.0, f"64 MiB event took {spent:.2f} s of CPU"


def test_sse_endless_event_is_cut_at_the_limit_as_it_streams_in() -> None:
    """An event that never ends raises once it passes ``max_event_size``: the chunk that
    crosses the limit is the last one taken, and nothing past the limit is kept."""
    limit = 256 * 1024
    parser = SSEParser(max_event_size=limit)
    started = time.process_time()
    parser.feed(b"data: ")
    fed, error = 0, None
    while error is None and fed < 64 * MiB:
        fed += CHUNK
        try:
            parser.feed(b"y" * CHUNK)
        except ValueError as exc:
            error = exc
    assert "exceeds" in str(error)
    assert fed <= limit + CHUNK  # it raised at the chunk that crossed the limit
    assert time.process_time() - started < 1.0


def test_sse_many_data_lines_are_cut_at_the_limit() -> None:
    """The limit counts the data of complete lines as well as the line being read."""
    parser = SSEParser(max_event_size=1000)
    assert parser.feed(b"data: " + b"a" * 500 + b"\n") == []
    with pytest.raises(ValueError, match="exceeds 1000 bytes"):
        parser.feed(b"data: " + b"b" * 500 + b"\n")


def test_sse_event_exactly_at_the_limit_passes() -> None:
    parser = SSEParser(max_event_size=9)
    (event,) = parser.feed(b"data: abcd\ndata: efgh\n\n")
    assert event.data == "abcd\nefgh"


STREAM = (
    b": comment\r\n"
    b"retry: 1500\r"
    b"id: one\n"
    b"event: note\r\n"
    b"data: first\r"
    b"data:second\n"
    b"\r\n"
    b"id: bad\0id\n"
    b"retry: 1x\n"
    b"retry: \xc2\xb2\n"
    b"data\n"
    b"\r"
    b"event: ignored\n"
    b"\n"
    b"id\n"
    b"retry: " + b"9" * 40 + b"\n"
    b"data: caf\xc3\xa9 \xff\r\n"
    b"\r\n"
)


def _parse(chunks: list[bytes]) -> tuple[list[tuple[str, str, str | None, int | None]], SSEParser]:
    parser = SSEParser()
    events = [event for chunk in chunks for event in parser.feed(chunk)]
    return [(e.event, e.data, e.id, e.retry) for e in events], parser


def test_sse_semantics_kept_however_the_stream_is_split() -> None:
    """CR, LF and CRLF (also split between chunks), comments, an id with NUL ignored,
    retry only from ASCII digits (and no giant integer), ``data`` without a colon."""
    whole, parser = _parse([STREAM])
    assert whole == [
        ("note", "first\nsecond", "one", 1500),
        ("message", "", "one", 1500),
        ("message", "café \ufffd", "", 999_999_999_999),
    ]
    assert parser.last_event_id == ""
    assert _parse([STREAM[i : i + 1] for i in range(len(STREAM))])[0] == whole
    for cut in range(1, len(STREAM)):
        assert _parse([STREAM[:cut], b"", STREAM[cut:]])[0] == whole, cut


# --- a real server over HTTP ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    port = free_port()
    command = server_command("hostile_codec", "http", str(port))
    with listening(command, port, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10) as client:
        yield client


def _post(http: httpx.Client, url: str, body: bytes | dict[str, Any], headers: dict[str, str]) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return http.post(url, content=content, headers={"Content-Type": "application/json", "Accept": ACCEPT, **headers})


def _modern_headers(method: str, name: str | None = None, **extra: str) -> dict[str, str]:
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method, **extra}
    if name is not None:
        headers["Mcp-Name"] = name
    return headers


def _call(name: str, arguments: str) -> bytes:
    """A modern tools/call whose ``arguments`` are given as raw JSON text."""
    params = f'"name":"{name}","arguments":{arguments},"_meta":{json.dumps(META)}'
    return f'{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{{params}}}}}'.encode()


def _error(resp: httpx.Response, status: int, code: int) -> dict[str, Any]:
    assert resp.status_code == status, (resp.status_code, resp.text[:300])
    assert resp.headers["content-type"].startswith("application/json"), resp.headers
    body = resp.json()
    assert body["error"]["code"] == code, body
    return dict(body["error"])


def _still_serving(http: httpx.Client, url: str) -> None:
    resp = _post(http, url, _call("count", '{"n": 5}'), _modern_headers("tools/call", "count"))
    assert resp.status_code == 200
    assert resp.json()["result"]["content"][0]["text"] == "5"


@pytest.mark.parametrize("number", OUT_OF_RANGE)
def test_http_out_of_range_argument_of_a_header_tool_is_invalid_params(http: httpx.Client, url: str, number: str) -> None:
    """Before: HTTP 500 text/plain (msgspec's ValidationError escaped the header check).
    After: 400 with -32602."""
    resp = _post(
        http,
        url,
        _call("region", f'{{"region": {number}}}'),
        _modern_headers("tools/call", "region", **{"Mcp-Param-Region": "1"}),
    )
    error = _error(resp, 400, -32602)
    assert len(json.dumps(error)) < 1024
    _still_serving(http, url)


@pytest.mark.parametrize("number", OUT_OF_RANGE)
def test_http_out_of_range_number_elsewhere_in_params_is_never_a_500(http: httpx.Client, url: str, number: str) -> None:
    """A member nobody reads is skipped, not decoded (as over stdio); one in ``_meta`` is
    refused. Before: HTTP 500 for the first (the header check decoded all of params)."""
    params = f'"name":"count","arguments":{{"n":1}},"x":{number},"_meta":{json.dumps(META)}'
    body = f'{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{{params}}}}}'
    resp = _post(http, url, body.encode(), _modern_headers("tools/call", "count"))
    assert resp.status_code == 200, resp.text[:300]
    assert resp.json()["result"]["content"][0]["text"] == "1"
    meta_bad = json.dumps({**META, "x": 0})[:-2] + number + "}"
    body = (
        f'{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"count","arguments":{{"n":1}},"_meta":{meta_bad}}}}}'
    )
    resp = _post(http, url, body.encode(), _modern_headers("tools/call", "count"))
    error = _error(resp, 400, -32602)  # served as the modern request it is, and refused accurately
    assert "out of range" in error["message"], error
    _still_serving(http, url)


def test_http_header_mismatch_does_not_echo_the_body_whole(http: httpx.Client, url: str) -> None:
    """Before: the 1 MiB tool name, method and protocol version came back whole (> 1 MiB
    errors). After: each echo is flattened to at most 256 bytes."""
    big = "n" * MiB
    body = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": big, "_meta": META}}
    error = _error(_post(http, url, body, _modern_headers("tools/call", "other")), 400, -32020)
    assert len(json.dumps(error)) < 2 * ECHO, len(json.dumps(error))
    body = {"jsonrpc": "2.0", "id": 5, "method": "m" * MiB, "params": {"_meta": META}}
    error = _error(_post(http, url, body, _modern_headers("tools/list")), 400, -32020)
    assert len(json.dumps(error)) < 2 * ECHO, len(json.dumps(error))
    body = {
        "jsonrpc": "2.0",
        "id": 6,
        "method": "tools/list",
        "params": {"_meta": {**META, "io.modelcontextprotocol/protocolVersion": big}},
    }
    error = _error(_post(http, url, body, _modern_headers("tools/list")), 400, -32020)
    assert len(json.dumps(error)) < 2 * ECHO, len(json.dumps(error))
    header = "h" * (15 * 1024)  # long, and within the 16 KiB cap on a request head (past it: a plain 400)
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": META}}
    error = _error(_post(http, url, body, {"MCP-Protocol-Version": header, "Mcp-Method": "tools/list"}), 400, -32020)
    assert len(json.dumps(error)) < 2 * ECHO, len(json.dumps(error))
    _still_serving(http, url)


# --- a real server over stdio ---------------------------------------------------------------------


class Stdio:
    """The test's end of the pipes to ``hostile_codec.py stdio``."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self._ids = itertools.count(1)

    async def exchange(self, line: bytes) -> tuple[dict[str, Any], int]:
        """Write one raw line; the next line is its response: (message, its size)."""
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(line + b"\n")
        await self.proc.stdin.drain()
        raw = await asyncio.wait_for(self.proc.stdout.readline(), 10)
        assert raw.endswith(b"\n"), "the server closed its stdout"
        return json.loads(raw), len(raw)

    async def request(self, method: str, params: str, *, modern: bool) -> tuple[dict[str, Any], int]:
        """A request whose params are raw JSON text (an object, without braces)."""
        rid = next(self._ids)
        if modern:
            params = f'{params}{"," if params else ""}"_meta":{json.dumps(META)}'
        message, size = await self.exchange(f'{{"jsonrpc":"2.0","id":{rid},"method":"{method}","params":{{{params}}}}}'.encode())
        assert message["id"] == rid, message
        return message, size


@pytest.fixture(params=[pytest.param(MODERN, id="modern"), pytest.param(LEGACY, id="legacy")])
async def stdio(request: pytest.FixtureRequest) -> AsyncIterator[tuple[Stdio, bool]]:
    command = server_command("hostile_codec", "stdio")
    proc = await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, limit=8 * MiB
    )
    server = Stdio(proc)
    modern = request.param == MODERN
    try:
        if not modern:
            info = '"clientInfo":{"name":"t","version":"0"},"capabilities":{}'
            reply, _ = await server.request("initialize", f'"protocolVersion":"{LEGACY}",{info}', modern=False)
            assert reply["result"]["protocolVersion"] == LEGACY
            assert proc.stdin is not None
            proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        yield server, modern
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except TimeoutError:
            proc.kill()
            await proc.wait()


async def _serving(server: Stdio, modern: bool) -> None:
    reply, _ = await server.request("tools/call", '"name":"count","arguments":{"n":3}', modern=modern)
    assert reply["result"]["content"][0]["text"] == "3", reply


@pytest.mark.parametrize("number", OUT_OF_RANGE)
async def test_stdio_out_of_range_numbers_are_invalid_params(stdio: tuple[Stdio, bool], number: str) -> None:
    """In the arguments, in ``_meta``, in a member that middleware reads through
    ``ctx.params``: -32602 with an accurate message. Before: "_meta must be an object"
    for a number inside ``_meta``, and -32603 "Internal error" from ``ctx.params``. A
    member nobody reads is skipped."""
    server, modern = stdio
    for params in (f'"name":"count","arguments":{{"n":{number}}}', f'"name":"region","arguments":{{"region":{number}}}'):
        reply, size = await server.request("tools/call", params, modern=modern)
        assert reply["error"]["code"] == -32602, reply
        assert "out of range" in reply["error"]["message"]
        assert size < 1024
    reply, _ = await server.request("tools/call", f'"name":"count","arguments":{{"n":1}},"x":[{number}]', modern=modern)
    assert reply["result"]["content"][0]["text"] == "1", reply
    reply, _ = await server.request("prompts/list", f'"x":[{number}]', modern=modern)
    assert reply["error"]["code"] == -32602, reply
    assert "out of range" in reply["error"]["message"], reply
    reply, _ = await server.exchange(
        f'{{"jsonrpc":"2.0","id":99,"method":"tools/list","params":{{"_meta":{{"x":{number}}}}}}}'.encode()
    )
    assert reply["error"]["code"] == -32602, reply
    assert "must be an object" not in reply["error"]["message"]
    assert "out of range" in reply["error"]["message"]
    reply, _ = await server.exchange(b'{"jsonrpc":"2.0","id":98,"method":"tools/list","params":{"_meta":7}}')
    assert reply["error"] == {"code": -32602, "message": "Invalid params: _meta must be an object"}
    await _serving(server, modern)


async def test_stdio_deep_arguments_are_invalid_params(stdio: tuple[Stdio, bool]) -> None:
    """Arguments nested as deep as the parser allows: -32602 "nested too deeply" for the
    raw-schema tool. Before: -32603 "Internal error" (the validator's ValueError)."""
    server, modern = stdio
    deep = "[" * 500 + "]" * 500
    reply, size = await server.request("tools/call", f'"name":"region","arguments":{{"region":{deep}}}', modern=modern)
    assert reply["error"]["code"] == -32602, reply
    assert size < 1024
    reply, _ = await server.request("tools/call", f'"name":"count","arguments":{{"n":{deep}}}', modern=modern)
    assert reply["error"]["code"] == -32602, reply
    reply, _ = await server.request("tools/call", f'"name":"count","arguments":{{"n":{"9" * 400}}}', modern=modern)
    assert reply["result"]["content"][0]["text"] == "9" * 400, reply  # a big integer is still an integer
    await _serving(server, modern)


async def test_stdio_unknown_resource_does_not_echo_the_uri_whole(stdio: tuple[Stdio, bool]) -> None:
    """Before: a 1 MiB URI came back whole in ``data.uri`` (a 1 MiB error). After: the
    error is a few hundred bytes."""
    server, modern = stdio
    for uri in ("mem://" + "u" * MiB, "not a uri " + "u" * MiB):
        reply, size = await server.request("resources/read", json.dumps({"uri": uri})[1:-1], modern=modern)
        assert reply["error"]["code"] == -32602, reply
        assert size < 4 * ECHO, size
        assert len(reply["error"]["data"]["uri"].encode()) <= 256
    for method, params in (
        ("tools/call", {"name": "t" * MiB}),
        ("prompts/get", {"name": "p" * MiB}),
        ("prompts/get", {"name": "greet", "arguments": {"x" * MiB: "1"}}),
        ("tools/call", {"name": "count", "arguments": {"n": 1, "x" * MiB: 1}}),
        ("tools/call", {"name": "count", "arguments": {"n": "s" * MiB}}),
        ("completion/complete", {"ref": {"type": "ref/prompt", "name": "c" * MiB}, "argument": {"name": "a", "value": ""}}),
        ("completion/complete", {"ref": {"type": "t" * MiB}, "argument": {"name": "a", "value": ""}}),
        ("m" * MiB, {}),
    ):
        reply, size = await server.request(method, json.dumps(params)[1:-1], modern=modern)
        assert size < 4 * ECHO, (method[:20], size)
    await _serving(server, modern)


# --- the HTTP client transport against a hostile server -------------------------------------------


class Hostile:
    """A raw HTTP/1.1 server on 127.0.0.1 that answers every POST with ``head`` and then
    ``body()``'s chunks, until the client goes away or the chunks run out."""

    def __init__(self, head: bytes, body: Iterator[bytes]) -> None:
        self.head = head
        self.body = body
        self.sent = 0
        self.done = asyncio.Event()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                (int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0
            )
            await reader.readexactly(length)
            writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n" + self.head + b"\r\n")
            for chunk in self.body:
                writer.write(chunk)
                await writer.drain()
                self.sent += len(chunk)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            self.done.set()


async def _exchange_with(hostile: Hostile, max_message_size: int) -> dict[str, Any]:
    """One modern request over ``HttpTransport`` to ``hostile``: the message delivered for it."""
    from mcpkit import HttpTransport

    server = await asyncio.start_server(hostile.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    transport = HttpTransport(f"http://127.0.0.1:{port}/mcp", max_message_size=max_message_size, listen=False)
    arrived: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
    try:
        await transport.start(lambda data: arrived.done() or arrived.set_result(data), lambda reason: None)
        transport.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}).encode())
        message = json.loads(await asyncio.wait_for(arrived, 20))
        await asyncio.wait_for(hostile.done.wait(), 10)
        assert isinstance(message, dict)
        return message
    finally:
        await transport.close()
        server.close()
        await server.wait_closed()


def _endless(first: bytes) -> Iterator[bytes]:
    yield first
    for _ in range(256 * MiB // CHUNK):  # bounded: 256 MiB at most
        yield b"z" * CHUNK


async def test_http_client_cuts_an_endless_sse_event_at_max_message_size() -> None:
    hostile = Hostile(b"Content-Type: text/event-stream\r\n", _endless(b"data: "))
    message = await _exchange_with(hostile, MiB)
    assert message["error"]["code"] == -32603
    assert "exceeds" in message["error"]["message"], message
    assert hostile.sent < 64 * MiB  # the client stopped reading; it did not take the 256 MiB


async def test_http_client_cuts_an_endless_json_body_at_max_message_size() -> None:
    hostile = Hostile(b"Content-Type: application/json\r\n", _endless(b'{"jsonrpc":"2.0","id":1,"result":"'))
    message = await _exchange_with(hostile, MiB)
    assert message["error"]["code"] == -32603
    assert "exceeds the size limit" in message["error"]["message"], message
    assert hostile.sent < 64 * MiB


async def test_http_client_reads_a_48mib_sse_event_in_linear_time() -> None:
    """Before: ~9 s of CPU (the parser rescanned its buffer per chunk). After: well under 2 s."""
    size = 48 * MiB

    def event() -> Iterator[bytes]:
        yield b'data: {"jsonrpc":"2.0","id":1,"result":{"tools":[],"pad":"'
        for _ in range(size // CHUNK):
            yield b"p" * CHUNK
        yield b'"}}\n\n'

    hostile = Hostile(b"Content-Type: text/event-stream\r\n", event())
    started = time.process_time()
    message = await _exchange_with(hostile, 64 * MiB)
    spent = time.process_time() - started
    assert len(message["result"]["pad"]) == size
    assert spent < 4.0, f"{spent:.2f} s of CPU"
