"""Server-side acceptance tests for Streamable HTTP (issue 3; docs/http.md and docs/errors.md).

Real uvicorn servers on 127.0.0.1, each in a thread of this process (so that handlers can
record what happened to them in ``threading.Event`` flags the tests read), plus one
subprocess started with ``Server.run(transport="http")`` whose memory is watched from
outside. The tests talk raw HTTP with httpx, and raw sockets where the bytes on the wire
matter. Modern era = 2026-07-28 (stateless, headers mirrored from the body); legacy era =
2025-11-25 (initialize, ``Mcp-Session-Id``, the GET stream, ``Last-Event-ID``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import re
import select
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.routing import Mount

from mcpkit import Context, HttpError, InMemoryEventStore, McpError, Server
from support.eras import LEGACY, MODERN
from support.paths import SERVERS
from support.ports import free_port
from support.processes import listening, rss_kib
from support.serving import serve_in_thread as _serve
from support.waiting import wait_until
from support.wire import (
    ACCEPT,
    INITIALIZED,
    META,
    aopen_session,
    header_value,
    initialize,
    legacy_headers,
    messages,
    modern,
    open_session,
    request as legacy_call,
    sse_events,
)

SECRET = "SECRET-7f3a9c1e-hunter2"
MiB = 1024 * 1024

# --- what handlers record (set in the server's thread, read by the tests) ----------------------

_flags: dict[str, threading.Event] = {}
_flags_lock = threading.Lock()


def _flag(name: str) -> threading.Event:
    with _flags_lock:
        return _flags.setdefault(name, threading.Event())


async def _wait_flag(name: str, timeout: float = 10.0) -> bool:
    return await asyncio.to_thread(_flag(name).wait, timeout)


def _tag() -> str:
    return uuid.uuid4().hex[:12]


# --- the server under test ---------------------------------------------------------------------

srv = Server("http-server-tests", "1.0.0")


class StatusCodeError(Exception):
    """A user exception that is neither mcpkit's nor Starlette's, with an int ``status_code``."""

    def __init__(self, status_code: int, text: str) -> None:
        super().__init__(text)
        self.status_code = status_code


def _raise_status(kind: str, status: int, text: str) -> None:
    if kind == "HttpError":
        raise HttpError(status, text)
    if kind == "status_code":
        raise StatusCodeError(status, text)
    raise HTTPException(status_code=status, detail=text)


@srv.tool
def echo(text: str) -> str:
    """Return the text unchanged.

    Args:
        text: What to echo.
    """
    return text


@srv.tool(name="grüße")
def gruesse() -> str:
    """A tool whose name is not plain ASCII."""
    return "hallo"


@srv.tool
async def talk(ctx: Context) -> str:
    """Progress, a log message, progress, then the result."""
    await ctx.report_progress(1, 2, "half")
    await ctx.log("info", "talking", logger="talk")
    await ctx.report_progress(2, 2, "all")
    return "talked"


@srv.tool
async def block(tag: str) -> str:
    """Sleep up to 30 s, recording start, cancellation and completion under ``tag``.

    Args:
        tag: Where to record.
    """
    _flag(f"{tag}:started").set()
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        _flag(f"{tag}:cancelled").set()
        raise
    _flag(f"{tag}:finished").set()
    return "finished"


@srv.tool
async def drip(steps: int, delay: float, tag: str, ctx: Context, hold: int = 0) -> str:
    """Report progress 1..steps, ``delay`` seconds apart, then answer.

    Args:
        steps: How many progress notifications.
        delay: Seconds between them.
        tag: Where to record start, cancellation and completion.
        hold: After this step, wait (10 s at most) until the test sets the flag ``<tag>:go``.
    """
    _flag(f"{tag}:started").set()
    try:
        for i in range(1, steps + 1):
            await ctx.report_progress(i, steps, f"step {i}")
            if i == hold:
                await asyncio.to_thread(_flag(f"{tag}:go").wait, 10)
            await asyncio.sleep(delay)
    except asyncio.CancelledError:
        _flag(f"{tag}:cancelled").set()
        raise
    _flag(f"{tag}:finished").set()
    return f"dripped {steps}"


@srv.tool
def http_fail(kind: str, status: int, text: str) -> str:
    """Raise an exception carrying an HTTP status.

    Args:
        kind: HttpError, status_code or starlette.
        status: The HTTP status.
        text: The exception's message.
    """
    _raise_status(kind, status, text)
    return "unreachable"


@srv.tool
def mcp_fail(code: int, status: int, text: str) -> str:
    """Raise McpError(code, text, status=status or None).

    Args:
        code: JSON-RPC error code.
        status: HTTP status to carry (0 for none).
        text: The message.
    """
    raise McpError(code, text, {"why": "on purpose"}, status=status or None)


@srv.tool
def leak_tool() -> str:
    """Fail with a secret in the message (allowed to reach the client as isError text)."""
    raise RuntimeError(f"database password is {SECRET}")


@srv.tool
def leak_mw() -> str:
    """Never runs: the middleware fails first."""
    return "unreachable"


srv.add_tool(
    "region",
    "Echo the region and shard (mirrored in headers) and the query.",
    {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "shard": {"type": "integer", "x-mcp-header": "Shard"},
            "query": {"type": "string"},
        },
        "required": ["region", "query"],
    },
    lambda args: f"{args['region']}|{args.get('shard')}|{args['query']}",
)


@srv.resource("data://hello")
def hello() -> str:
    """A fixed text."""
    return "hello world"


@srv.resource("leak://resource")
def leak_resource() -> str:
    """Fail with a secret in the message."""
    raise RuntimeError(f"resource secret {SECRET}")


@srv.resource("fail://{kind}/{status}/{text}")
def fail_resource(kind: str, status: str, text: str) -> str:
    """Raise an exception carrying an HTTP status."""
    _raise_status(kind, int(status), text)
    return "unreachable"


@srv.prompt
def greet(name: str) -> str:
    """Greet someone."""
    return f"Hello, {name}!"


@srv.prompt
def leak_prompt() -> str:
    """Fail with a secret in the message."""
    raise ValueError(f"prompt secret {SECRET}")


@srv.prompt
def fail_prompt(kind: str, status: str, text: str) -> str:
    """Raise an exception carrying an HTTP status."""
    _raise_status(kind, int(status), text)
    return "unreachable"


@srv.use
async def _secret_middleware(ctx: Context, call_next: Any) -> Any:
    if ctx.method == "tools/call" and ctx.params.get("name") == "leak_mw":
        raise RuntimeError(f"middleware secret {SECRET}")
    return await call_next()


# --- running servers ---------------------------------------------------------------------------


class _CountingApp:
    """Wraps an ASGI app and counts the request-body bytes the app actually received."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.received = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def counted() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                self.received += len(message.get("body", b""))
            return message

        await self.app(scope, counted, send)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    """The default configuration."""
    with _serve(srv.asgi_app(path="/mcp")) as port:
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def json_url() -> Iterator[str]:
    with _serve(srv.asgi_app(path="/mcp", json_response=True)) as port:
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def sse_url() -> Iterator[str]:
    with _serve(srv.asgi_app(path="/mcp", json_response=False)) as port:
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def small_url() -> Iterator[str]:
    with _serve(srv.asgi_app(path="/mcp", max_body_size=1024)) as port:
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def guarded_url() -> Iterator[str]:
    app = srv.asgi_app(
        path="/mcp", allowed_hosts=["mcp.example.com", "mcp.example.com:8443"], allowed_origins=["https://app.example.com"]
    )
    with _serve(app) as port:
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def capped_url() -> Iterator[str]:
    """Two sessions at most, and none goes idle for long enough to be reaped mid-test."""
    with _serve(srv.asgi_app(path="/mcp", max_sessions=2, session_idle_timeout=600)) as port:
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def reaped_url() -> Iterator[str]:
    """Two sessions at most, reaped after 1 s idle."""
    with _serve(srv.asgi_app(path="/mcp", max_sessions=2, session_idle_timeout=1.0)) as port:
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def tiny_store_url() -> Iterator[str]:
    with _serve(srv.asgi_app(path="/mcp", event_store=InMemoryEventStore(max_events_per_stream=4))) as port:
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def counted() -> Iterator[tuple[_CountingApp, int]]:
    app = _CountingApp(srv.asgi_app(path="/mcp"))
    with _serve(app) as port:
        yield app, port


@pytest.fixture(scope="module")
def mounted_base() -> Iterator[str]:
    app = Starlette(routes=[Mount("/prefix", app=srv.asgi_app(path="/mcp"))])
    with _serve(app) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10) as client:
        yield client


@pytest.fixture
async def ahttp() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


# --- building requests, reading responses ------------------------------------------------------

def post_modern(http: httpx.Client, url: str, method: str, params: dict[str, Any] | None = None, **kw: Any) -> httpx.Response:
    body, headers = modern(method, params, **kw)
    return http.post(url, json=body, headers=headers)


def only(resp: httpx.Response) -> dict[str, Any]:
    """The single JSON body of a JSON response."""
    assert resp.headers.get("content-type", "").startswith("application/json"), (resp.status_code, resp.headers, resp.text)
    body: dict[str, Any] = resp.json()
    return body


def assert_plain(resp: httpx.Response, status: int, *words: str) -> None:
    """A plain HTTP refusal: that status, a short text/plain body, no JSON-RPC."""
    assert resp.status_code == status, (resp.status_code, resp.text)
    assert resp.headers.get("content-type", "").startswith("text/plain"), resp.headers
    assert 0 < len(resp.content) <= 200, resp.content
    assert "jsonrpc" not in resp.text
    for word in words:
        assert word.lower() in resp.text.lower(), resp.text
    assert "mcp-session-id" not in resp.headers


def assert_error(resp: httpx.Response, status: int, code: int, rid: Any = None) -> dict[str, Any]:
    assert resp.status_code == status, (resp.status_code, resp.text)
    body = only(resp)
    assert body["jsonrpc"] == "2.0"
    assert "result" not in body
    assert body["error"]["code"] == code, body
    if rid is not None:
        assert body["id"] == rid
    error: dict[str, Any] = body["error"]
    return error


def tool_text(body: dict[str, Any]) -> str:
    text: str = body["result"]["content"][0]["text"]
    return text


# --- legacy sessions -----------------------------------------------------------------------------


def legacy_open(http: httpx.Client, url: str) -> str:
    """initialize + notifications/initialized; returns the session id."""
    return open_session(http, url)["mcp-session-id"]


async def alegacy_open(http: httpx.AsyncClient, url: str) -> str:
    return (await aopen_session(http, url))["mcp-session-id"]


@pytest.fixture(scope="module")
def legacy_session(url: str) -> str:
    with httpx.Client(timeout=10) as http:
        return legacy_open(http, url)


# =================================================================================================
# 1. HTTP-level rejections
# =================================================================================================


@pytest.mark.parametrize("method", ["POST", "GET", "DELETE", "PUT"])
@pytest.mark.parametrize("path", ["/other", "/mcp/extra", "/"])
def test_wrong_path_is_plain_404(http: httpx.Client, url: str, method: str, path: str) -> None:
    body, headers = modern("tools/list")
    target = url.removesuffix("/mcp") + path
    resp = http.request(method, target, json=body if method == "POST" else None, headers=headers)
    assert_plain(resp, 404)


@pytest.mark.parametrize("method", ["PUT", "PATCH"])
def test_405_with_allow(http: httpx.Client, url: str, method: str) -> None:
    body, headers = modern("tools/list")
    resp = http.request(method, url, json=body, headers=headers)
    assert_plain(resp, 405)
    allowed = {m.strip() for m in resp.headers["allow"].split(",")}
    assert "POST" in allowed
    assert method not in allowed


def test_get_and_delete_without_a_session_are_405(http: httpx.Client, url: str) -> None:
    """No session, no GET stream (the 2026-07-28 rule for GET/DELETE; legacy GET needs a session)."""
    resp = http.get(url, headers={"accept": "text/event-stream", "mcp-protocol-version": MODERN})
    assert_plain(resp, 405)
    assert "POST" in resp.headers["allow"]
    resp = http.delete(url, headers={"mcp-protocol-version": MODERN})
    assert_plain(resp, 405)
    assert "POST" in resp.headers["allow"]


@pytest.mark.parametrize("ctype", ["text/plain", None, "application/x-www-form-urlencoded", "application/jsonx"])
def test_415_not_json(http: httpx.Client, url: str, ctype: str | None) -> None:
    body, headers = modern("tools/list", headers={"content-type": ctype})
    resp = http.post(url, content=json.dumps(body).encode(), headers=headers)
    assert_plain(resp, 415)


def test_json_content_type_with_charset_is_fine(http: httpx.Client, url: str) -> None:
    body, headers = modern("tools/list", headers={"content-type": "application/json; charset=utf-8"})
    resp = http.post(url, content=json.dumps(body).encode(), headers=headers)
    assert resp.status_code == 200, resp.text
    assert "tools" in only(resp)["result"]


@pytest.mark.parametrize("accept", ["application/json", "text/event-stream", "text/html", "application/xml, text/plain"])
def test_406_post_accept(http: httpx.Client, url: str, accept: str) -> None:
    body, headers = modern("tools/list", headers={"accept": accept})
    resp = http.post(url, json=body, headers=headers)
    assert_plain(resp, 406)


def test_406_get_without_event_stream(http: httpx.Client, url: str, legacy_session: str) -> None:
    headers = {**legacy_headers(legacy_session), "accept": "application/json"}
    resp = http.get(url, headers=headers)
    assert_plain(resp, 406)


@pytest.mark.parametrize(
    "origin",
    ["http://evil.example", "https://attacker.test:8080", "http://127.0.0.1.nip.io", "http://localhost.evil.example", "null"],
)
def test_403_bad_origin_by_default_on_loopback(http: httpx.Client, url: str, origin: str) -> None:
    body, headers = modern("tools/list", headers={"origin": origin})
    assert_plain(http.post(url, json=body, headers=headers), 403)


@pytest.mark.parametrize("origin", ["http://localhost:5173", "http://127.0.0.1:3000", "http://[::1]:8080"])
def test_loopback_origin_allowed_by_default(http: httpx.Client, url: str, origin: str) -> None:
    body, headers = modern("tools/list", headers={"origin": origin})
    resp = http.post(url, json=body, headers=headers)
    assert resp.status_code == 200, resp.text
    assert "tools" in only(resp)["result"]


@pytest.mark.parametrize("host", ["evil.example", "evil.example:80", "10.0.0.1", "localhost.evil.example"])
def test_403_bad_host_by_default_on_loopback(http: httpx.Client, url: str, host: str) -> None:
    body, headers = modern("tools/list", headers={"host": host})
    assert_plain(http.post(url, json=body, headers=headers), 403)


def test_loopback_host_allowed_by_default(http: httpx.Client, url: str) -> None:
    port = httpx.URL(url).port
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", "localhost", f"[::1]:{port}", f"LOCALHOST:{port}"):
        body, headers = modern("tools/list", headers={"host": host})
        resp = http.post(url, json=body, headers=headers)
        assert resp.status_code == 200, (host, resp.text)


def test_allow_lists_configured(http: httpx.Client, guarded_url: str) -> None:
    for host in ("mcp.example.com", "mcp.example.com:8443"):
        body, headers = modern("tools/list", headers={"host": host, "origin": "https://app.example.com"})
        resp = http.post(guarded_url, json=body, headers=headers)
        assert resp.status_code == 200, (host, resp.text)
        assert "tools" in only(resp)["result"]
    body, headers = modern("tools/list", headers={"host": "mcp.example.com"})
    assert http.post(guarded_url, json=body, headers=headers).status_code == 200
    body, headers = modern("tools/list", headers={"host": "other.example.com"})
    assert_plain(http.post(guarded_url, json=body, headers=headers), 403)
    body, headers = modern("tools/list", headers={"host": "mcp.example.com", "origin": "https://evil.example"})
    assert_plain(http.post(guarded_url, json=body, headers=headers), 403)


def test_413_over_configured_limit(http: httpx.Client, small_url: str) -> None:
    body, headers = modern("tools/call", {"name": "echo", "arguments": {"text": "x"}})
    raw = json.dumps(body).encode()
    fits = raw + b" " * (1024 - len(raw))
    resp = http.post(small_url, content=fits, headers=headers)
    assert resp.status_code == 200, resp.text
    assert tool_text(only(resp)) == "x"
    assert_plain(http.post(small_url, content=fits + b" ", headers=headers), 413)

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted while reading
        yield fits
        yield b" "

    assert_plain(http.post(small_url, content=chunks(), headers=headers), 413)


def test_413_default_limit_is_4_mib(http: httpx.Client, url: str) -> None:
    text = "a" * (3 * MiB)
    body, headers = modern("tools/call", {"name": "echo", "arguments": {"text": text}})
    raw = json.dumps(body).encode()
    padded = raw + b" " * (4 * MiB - len(raw))
    resp = http.post(url, content=padded, headers=headers)
    assert resp.status_code == 200, resp.text[:200]
    assert tool_text(only(resp)) == text

    def chunks() -> Iterator[bytes]:
        for i in range(0, len(padded), 256 * 1024):
            yield padded[i : i + 256 * 1024]
        yield b" "

    assert_plain(http.post(url, content=chunks(), headers=headers), 413)


def _read_http_response(sock: socket.socket, deadline: float) -> tuple[int, dict[str, str], bytes]:
    """Read one HTTP/1.1 response (Content-Length framed) from a blocking socket."""
    data = b""
    while b"\r\n\r\n" not in data:
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before a response: {data!r}"
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return status, headers, rest[:length]


def test_413_declared_content_length_answered_before_any_body(counted: tuple[_CountingApp, int]) -> None:
    app, port = counted
    before = app.received
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: {ACCEPT}\r\nContent-Length: {10 * MiB}\r\n\r\n".encode()
        )
        status, headers, body = _read_http_response(sock, time.monotonic() + 5)  # not one body byte sent
    assert status == 413
    assert headers["content-type"].startswith("text/plain")
    assert 0 < len(body) <= 200
    assert app.received == before


def test_10mb_chunked_body_rejected_before_the_client_finished_sending(counted: tuple[_CountingApp, int]) -> None:
    """Stream 10 MiB chunked (no Content-Length) from a generator; the 413 arrives while
    the client is still sending, and the app read little more than the limit."""
    app, port = counted
    app.received = 0
    total = 10 * MiB

    def frames() -> Iterator[bytes]:
        chunk = b" " * (64 * 1024)
        for _ in range(total // len(chunk)):
            yield b"%x\r\n" % len(chunk) + chunk + b"\r\n"
        yield b"0\r\n\r\n"

    body_sent = 0
    answered_early = False
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 32 * 1024)  # keep little in flight
        sock.settimeout(5)
        sock.connect(("127.0.0.1", port))
        sock.sendall(
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: {ACCEPT}\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
        )
        sock.setblocking(False)
        deadline = time.monotonic() + 20
        for frame in frames():
            view = memoryview(frame)
            while view:
                assert time.monotonic() < deadline, "neither read nor answered"
                readable, writable, _ = select.select([sock], [sock], [], 5)
                if readable:
                    answered_early = True
                    break
                if not writable:
                    continue
                try:
                    n = sock.send(view)
                except BlockingIOError:
                    continue
                view = view[n:]
                body_sent += n
            if answered_early:
                break
        sock.setblocking(True)
        status, headers, body = _read_http_response(sock, time.monotonic() + 5)
    assert answered_early, "the client sent all 10 MiB before any response"
    assert body_sent < 6 * MiB, body_sent  # 4 MiB limit + what little was in flight
    assert status == 413
    assert headers["content-type"].startswith("text/plain")
    assert 0 < len(body) <= 200
    assert 4 * MiB < app.received <= 4 * MiB + 1 * MiB, app.received


@pytest.fixture(scope="module")
def subprocess_url() -> Iterator[tuple[str, int]]:
    """``python tests/support/servers/httpsrv_basic.py PORT``: ``Server.run(transport="http")``."""
    port = free_port()
    command = [sys.executable, str(SERVERS / "httpsrv_basic.py"), str(port)]
    with listening(command, port, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as proc:
        yield f"http://127.0.0.1:{port}/mcp", proc.pid


def test_run_http_serves_and_10mb_body_is_not_buffered(http: httpx.Client, subprocess_url: tuple[str, int]) -> None:
    """The whole 10 MiB goes out from a generator; the server answers 413 and its peak
    RSS does not grow by anything like the body's size."""
    url, pid = subprocess_url
    resp = post_modern(http, url, "tools/call", {"name": "echo", "arguments": {"text": "warm"}})
    assert resp.status_code == 200
    assert tool_text(only(resp)) == "warm"
    assert "mcp-session-id" not in resp.headers
    # Warm the body-reading path too (a body under the limit), so one-off allocations are counted.
    body, headers = modern("tools/call", {"name": "echo", "arguments": {"text": "w" * (256 * 1024)}})
    assert http.post(url, json=body, headers=headers).status_code == 200
    baseline = rss_kib(pid, "VmHWM")
    yielded = 0

    def generate() -> Iterator[bytes]:
        nonlocal yielded
        chunk = b" " * (64 * 1024)
        for _ in range(10 * MiB // len(chunk)):
            yielded += len(chunk)
            yield chunk

    body, headers = modern("tools/list")
    resp = http.post(url, content=generate(), headers=headers)
    assert_plain(resp, 413)
    growth_kib = rss_kib(pid, "VmHWM") - baseline
    assert growth_kib < 8 * 1024, f"server peak RSS grew by {growth_kib} KiB for a 10 MiB body"
    assert yielded > 4 * MiB  # the client really tried to send well past the limit


def test_legacy_request_without_session_is_400(http: httpx.Client, url: str, legacy_session: str) -> None:
    resp = http.post(url, json=legacy_call("tools/list"), headers=legacy_headers(None))
    assert_plain(resp, 400)


@pytest.mark.parametrize("version", ["1999-01-01", "garbage", MODERN + "x"])
def test_legacy_unsupported_protocol_version_is_400(http: httpx.Client, url: str, legacy_session: str, version: str) -> None:
    headers = {**legacy_headers(legacy_session), "mcp-protocol-version": version}
    assert_plain(http.post(url, json=legacy_call("tools/list"), headers=headers), 400)
    assert_plain(http.get(url, headers={**headers, "accept": "text/event-stream"}), 400)
    # The session is still fine with a supported version.
    resp = http.post(url, json=legacy_call("tools/list"), headers=legacy_headers(legacy_session))
    assert resp.status_code == 200
    assert "tools" in only(resp)["result"]


def test_legacy_request_without_protocol_version_header_uses_the_negotiated_one(
    http: httpx.Client, url: str, legacy_session: str
) -> None:
    headers = legacy_headers(legacy_session)
    del headers["mcp-protocol-version"]
    resp = http.post(url, json=legacy_call("tools/list"), headers=headers)
    assert resp.status_code == 200
    assert "tools" in messages(resp)[-1]["result"]


def test_unknown_session_is_404(http: httpx.Client, url: str) -> None:
    headers = legacy_headers("no-such-session-" + uuid.uuid4().hex)
    assert_plain(http.post(url, json=legacy_call("tools/list"), headers=headers), 404)
    assert_plain(http.get(url, headers={**headers, "accept": "text/event-stream"}), 404)
    assert_plain(http.delete(url, headers=headers), 404)


# =================================================================================================
# 2. Modern era
# =================================================================================================


@pytest.mark.parametrize(
    ("method", "params", "check"),
    [
        ("tools/list", {}, lambda r: {"echo", "talk", "region", "grüße"} <= {t["name"] for t in r["tools"]}),
        ("tools/call", {"name": "echo", "arguments": {"text": "héllo"}}, lambda r: r["content"][0]["text"] == "héllo"),
        ("resources/read", {"uri": "data://hello"}, lambda r: r["contents"][0]["text"] == "hello world"),
        ("prompts/get", {"name": "greet", "arguments": {"name": "Ada"}}, lambda r: "Ada" in json.dumps(r["messages"])),
    ],
)
def test_modern_methods_answer_json(http: httpx.Client, url: str, method: str, params: dict[str, Any], check: Any) -> None:
    body, headers = modern(method, params)
    resp = http.post(url, json=body, headers=headers)
    assert resp.status_code == 200, resp.text
    got = only(resp)
    assert got["id"] == body["id"]
    assert got["result"]["resultType"] == "complete"
    assert "isError" not in got["result"] or got["result"]["isError"] is False
    assert check(got["result"])
    assert "mcp-session-id" not in resp.headers


def test_modern_sentinel_encoded_name(http: httpx.Client, url: str) -> None:
    body, headers = modern("tools/call", {"name": "grüße", "arguments": {}})
    assert headers["mcp-name"] == "=?base64?" + base64.b64encode("grüße".encode()).decode() + "?="
    resp = http.post(url, json=body, headers=headers)
    assert resp.status_code == 200, resp.text
    assert tool_text(only(resp)) == "hallo"
    # A plain-ASCII name may be sent encoded too: the server decodes before comparing.
    body, headers = modern("tools/call", {"name": "echo", "arguments": {"text": "t"}})
    resp = http.post(url, json=body, headers={**headers, "mcp-name": "=?base64?ZWNobw==?="})
    assert resp.status_code == 200
    assert tool_text(only(resp)) == "t"


_GRUESSE_B64_WRONG = "=?base64?" + base64.b64encode(b"gruesse").decode() + "?="


@pytest.mark.parametrize(
    ("method", "params", "override"),
    [
        pytest.param("tools/list", {}, {"mcp-protocol-version": LEGACY}, id="version-mismatch"),
        pytest.param("tools/list", {}, {"mcp-protocol-version": None}, id="version-missing"),
        pytest.param(
            "tools/call", {"name": "echo", "arguments": {"text": "x"}}, {"mcp-method": "tools/list"}, id="method-mismatch"
        ),
        pytest.param("tools/list", {}, {"mcp-method": None}, id="method-missing"),
        pytest.param("tools/list", {}, {"mcp-method": "Tools/List"}, id="method-case"),
        pytest.param("tools/call", {"name": "echo", "arguments": {"text": "x"}}, {"mcp-name": "talk"}, id="name-mismatch"),
        pytest.param("tools/call", {"name": "echo", "arguments": {"text": "x"}}, {"mcp-name": None}, id="name-missing"),
        pytest.param("resources/read", {"uri": "data://hello"}, {"mcp-name": "data://other"}, id="uri-mismatch"),
        pytest.param(
            "prompts/get", {"name": "greet", "arguments": {"name": "a"}}, {"mcp-name": "leak_prompt"}, id="prompt-mismatch"
        ),
        pytest.param("tools/call", {"name": "grüße", "arguments": {}}, {"mcp-name": _GRUESSE_B64_WRONG}, id="sentinel-mismatch"),
        pytest.param("tools/call", {"name": "grüße", "arguments": {}}, {"mcp-name": "grüße".encode()}, id="raw-utf8-name"),
        pytest.param(
            "tools/call", {"name": "grüße", "arguments": {}}, {"mcp-name": "=?base64?!!not base64!!?="}, id="sentinel-malformed"
        ),
    ],
)
def test_modern_header_body_mismatch_is_400_32020(
    http: httpx.Client, url: str, method: str, params: dict[str, Any], override: dict[str, Any]
) -> None:
    tag = _tag()
    if method == "tools/call" and params["name"] == "echo":
        params = {"name": "echo", "arguments": {"text": tag}}
    body, headers = modern(method, params, headers=override)
    resp = http.post(url, json=body, headers=headers)
    error = assert_error(resp, 400, -32020, body["id"])
    assert error["message"]
    assert "mcp-session-id" not in resp.headers
    assert tag not in resp.text  # rejected before running: echo never saw the request


def test_modern_unsupported_version_is_400_32022(http: httpx.Client, url: str) -> None:
    body, headers = modern("tools/list", meta={"io.modelcontextprotocol/protocolVersion": "2099-01-01"})
    assert headers["mcp-protocol-version"] == "2099-01-01"
    resp = http.post(url, json=body, headers=headers)
    error = assert_error(resp, 400, -32022, body["id"])
    assert error["data"]["requested"] == "2099-01-01"
    assert MODERN in error["data"]["supported"]
    assert all(isinstance(v, str) for v in error["data"]["supported"])


def test_modern_unknown_method_is_404_32601(http: httpx.Client, url: str) -> None:
    resp = post_modern(http, url, "tools/frobnicate")
    error = assert_error(resp, 404, -32601)
    assert "tools/frobnicate" in error["message"]


@pytest.mark.parametrize("method", ["ping", "initialize", "logging/setLevel"])
def test_methods_removed_in_2026_07_28_are_404_32601_for_modern_requests(http: httpx.Client, url: str, method: str) -> None:
    # a dual-era server still implements them for legacy sessions, but a request that
    # carries modern _meta asks for 2026-07-28, which has no such method
    params = {"protocolVersion": "2025-11-25", "capabilities": {}} if method == "initialize" else None
    resp = post_modern(http, url, method, params)
    assert_error(resp, 404, -32601)
    assert "mcp-session-id" not in resp.headers


@pytest.mark.parametrize(
    ("arguments", "param_headers", "expected"),
    [
        ({"region": "us-west1", "query": "q"}, {"mcp-param-region": "us-west1"}, "us-west1|None|q"),
        (
            {"region": "us-west1", "shard": 42, "query": "q"},
            {"mcp-param-region": "us-west1", "mcp-param-shard": "42"},
            "us-west1|42|q",
        ),
        ({"region": "eu", "shard": 42, "query": "q"}, {"mcp-param-region": "eu", "mcp-param-shard": "42.0"}, "eu|42|q"),
        ({"region": "zürich", "query": "q"}, {"mcp-param-region": header_value("zürich")}, "zürich|None|q"),
        ({"region": " padded ", "query": "q"}, {"mcp-param-region": "=?base64?IHBhZGRlZCA=?="}, " padded |None|q"),
        ({"region": "us-west1", "query": "q"}, {"MCP-PARAM-REGION": "us-west1"}, "us-west1|None|q"),
    ],
)
def test_modern_x_mcp_header_matching_is_accepted(
    http: httpx.Client, url: str, arguments: dict[str, Any], param_headers: dict[str, str], expected: str
) -> None:
    resp = post_modern(http, url, "tools/call", {"name": "region", "arguments": arguments}, headers=dict(param_headers))
    assert resp.status_code == 200, resp.text
    assert tool_text(only(resp)) == expected


@pytest.mark.parametrize(
    ("arguments", "param_headers"),
    [
        pytest.param({"region": "us-west1", "query": "q"}, {}, id="region-missing"),
        pytest.param({"region": "us-west1", "query": "q"}, {"mcp-param-region": "eu-north1"}, id="region-mismatch"),
        pytest.param({"region": "us-west1", "shard": 42, "query": "q"}, {"mcp-param-region": "us-west1"}, id="shard-missing"),
        pytest.param(
            {"region": "us-west1", "shard": 42, "query": "q"},
            {"mcp-param-region": "us-west1", "mcp-param-shard": "43"},
            id="shard-mismatch",
        ),
        pytest.param({"region": "zürich", "query": "q"}, {"mcp-param-region": "zurich"}, id="decoded-mismatch"),
        pytest.param({"region": "zürich", "query": "q"}, {"mcp-param-region": "zürich".encode()}, id="raw-non-ascii"),
    ],
)
def test_modern_x_mcp_header_missing_or_mismatching_is_400_32020(
    http: httpx.Client, url: str, arguments: dict[str, Any], param_headers: dict[str, Any]
) -> None:
    body, headers = modern("tools/call", {"name": "region", "arguments": arguments}, headers=dict(param_headers))
    resp = http.post(url, json=body, headers=headers)
    assert_error(resp, 400, -32020, body["id"])


def test_modern_notifications_ride_the_requests_own_sse_stream(http: httpx.Client, url: str) -> None:
    meta = {"progressToken": "tok-1", "io.modelcontextprotocol/logLevel": "debug"}
    body, headers = modern("tools/call", {"name": "talk", "arguments": {}}, meta=meta)
    resp = http.post(url, json=body, headers=headers)
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/event-stream")
    assert resp.headers.get("x-accel-buffering") == "no"
    assert "mcp-session-id" not in resp.headers
    msgs = messages(resp)
    assert [m.get("method") for m in msgs] == [
        "notifications/progress",
        "notifications/message",
        "notifications/progress",
        None,
    ]
    assert msgs[0]["params"]["progressToken"] == "tok-1"
    assert msgs[0]["params"]["progress"] == 1
    assert msgs[1]["params"]["level"] == "info"
    assert msgs[1]["params"]["data"] == "talking"
    assert msgs[2]["params"]["progress"] == 2
    assert msgs[3]["id"] == body["id"]
    assert tool_text(msgs[3]) == "talked"


def test_modern_log_not_sent_without_log_level_opt_in(http: httpx.Client, url: str) -> None:
    resp = post_modern(http, url, "tools/call", {"name": "talk", "arguments": {}}, meta={"progressToken": 7})
    assert resp.status_code == 200
    msgs = messages(resp)
    assert [m.get("method") for m in msgs] == ["notifications/progress", "notifications/progress", None]
    assert tool_text(msgs[-1]) == "talked"


def test_modern_log_below_the_requested_level_is_not_sent(http: httpx.Client, url: str) -> None:
    meta = {"progressToken": "t", "io.modelcontextprotocol/logLevel": "error"}
    resp = post_modern(http, url, "tools/call", {"name": "talk", "arguments": {}}, meta=meta)
    assert resp.status_code == 200
    msgs = messages(resp)
    assert [m.get("method") for m in msgs] == ["notifications/progress", "notifications/progress", None]


def test_modern_without_notifications_answers_json(http: httpx.Client, url: str) -> None:
    resp = post_modern(http, url, "tools/call", {"name": "talk", "arguments": {}})  # no progressToken, no logLevel
    assert resp.status_code == 200
    assert tool_text(only(resp)) == "talked"


def test_json_response_true_forces_json(http: httpx.Client, json_url: str) -> None:
    meta = {"progressToken": "tok", "io.modelcontextprotocol/logLevel": "debug"}
    resp = post_modern(http, json_url, "tools/call", {"name": "talk", "arguments": {}}, meta=meta)
    assert resp.status_code == 200
    assert tool_text(only(resp)) == "talked"
    assert "mcp-session-id" not in resp.headers


def test_json_response_false_forces_sse(http: httpx.Client, sse_url: str) -> None:
    body, headers = modern("tools/list")
    resp = http.post(sse_url, json=body, headers=headers)
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/event-stream")
    msgs = messages(resp)
    assert len(msgs) == 1
    assert msgs[0]["id"] == body["id"]
    assert "tools" in msgs[0]["result"]
    assert "mcp-session-id" not in resp.headers
    # Errors too travel on the stream when SSE is forced.
    resp = post_modern(http, sse_url, "tools/call", {"name": "echo", "arguments": {"text": "sse"}})
    assert resp.headers["content-type"].startswith("text/event-stream")
    assert tool_text(messages(resp)[-1]) == "sse"
    # A lone error with a status of its own stays JSON with that status: a stream says 200.
    body, headers = modern("tools/frobnicate")
    resp = http.post(sse_url, json=body, headers=headers)
    assert resp.status_code == 404
    assert resp.headers["content-type"].startswith("application/json")
    assert resp.json()["error"]["code"] == -32601
    assert resp.json()["id"] == body["id"]


@pytest.mark.parametrize("shape", ["json-pending", "sse-streaming"])
async def test_modern_client_disconnect_cancels_the_handler(url: str, shape: str) -> None:
    tag = _tag()
    if shape == "json-pending":
        body, headers = modern("tools/call", {"name": "block", "arguments": {"tag": tag}})
    else:
        body, headers = modern(
            "tools/call",
            {"name": "drip", "arguments": {"steps": 1000, "delay": 0.02, "tag": tag}},
            meta={"progressToken": "p"},
        )
    port = httpx.URL(url).port
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        payload = json.dumps(body).encode()
        head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        writer.write(
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{head}Content-Length: {len(payload)}\r\n\r\n".encode() + payload
        )
        await writer.drain()
        assert await _wait_flag(f"{tag}:started"), "handler did not start"
        if shape == "sse-streaming":
            first = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            assert b" 200 " in first.split(b"\r\n")[0]
            assert b"text/event-stream" in first.lower()
            assert b"notifications/progress" in await asyncio.wait_for(reader.readuntil(b"\n\n"), 5)
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
    assert await _wait_flag(f"{tag}:cancelled"), "the handler never saw CancelledError after the disconnect"
    assert not _flag(f"{tag}:finished").is_set()


def test_modern_request_ignores_a_session_header(http: httpx.Client, url: str) -> None:
    """A request carrying modern _meta is served statelessly (2026-07-28 versioning, dual-era
    servers); an ``Mcp-Session-Id`` on it is ignored, neither looked up nor echoed."""
    body, headers = modern("tools/call", {"name": "echo", "arguments": {"text": "stateless"}})
    resp = http.post(url, json=body, headers={**headers, "mcp-session-id": "stale-" + uuid.uuid4().hex})
    assert resp.status_code == 200, resp.text
    assert tool_text(only(resp)) == "stateless"
    assert "mcp-session-id" not in resp.headers


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"{not json", -32700),
        (b'{"jsonrpc": "2.0", "id": 1}', -32600),
        (b'{"jsonrpc": "1.0", "id": 1, "method": "tools/list"}', -32600),
    ],
)
def test_unparseable_or_invalid_envelope_is_a_json_rpc_400(http: httpx.Client, url: str, raw: bytes, code: int) -> None:
    _, headers = modern("tools/list")
    resp = http.post(url, content=raw, headers=headers)
    error = assert_error(resp, 400, code)
    assert error["message"]
    if code == -32700:
        assert resp.json()["id"] is None
    assert "mcp-session-id" not in resp.headers


def test_modern_never_mints_a_session(http: httpx.Client, url: str, sse_url: str, json_url: str) -> None:
    for target in (url, sse_url, json_url):
        for method in ("tools/list", "server/discover", "ping", "tools/frobnicate"):
            resp = post_modern(http, target, method)
            assert resp.status_code in (200, 404), resp.text
            assert "mcp-session-id" not in resp.headers
        resp = post_modern(http, target, "tools/call", {"name": "talk", "arguments": {}}, meta={"progressToken": 1})
        assert "mcp-session-id" not in resp.headers


@pytest.mark.parametrize("method", ["notifications/cancelled", "notifications/roots/list_changed", "notifications/whatever"])
def test_modern_notification_is_202(http: httpx.Client, url: str, method: str) -> None:
    body = {"jsonrpc": "2.0", "method": method, "params": {"requestId": 1, "_meta": META}}
    headers = {
        "accept": ACCEPT,
        "content-type": "application/json",
        "mcp-protocol-version": MODERN,
        "mcp-method": method,
    }
    resp = http.post(url, json=body, headers=headers)
    assert resp.status_code == 202, resp.text
    assert resp.content == b""
    assert "mcp-session-id" not in resp.headers


# =================================================================================================
# 3. Status mapping
# =================================================================================================


@pytest.mark.parametrize(
    ("code", "status", "expected"),
    [
        (-32602, 0, 400),
        (-32601, 0, 404),
        (-32603, 0, 500),
        (-32000, 0, 400),
        (-32001, 0, 400),
        (-32800, 0, 400),
        (1234, 0, 400),
        (-32602, 409, 409),
        (-32603, 503, 503),
        (-32000, 401, 401),
        (-32601, 400, 400),
    ],
)
def test_modern_mcp_error_status(http: httpx.Client, url: str, code: int, status: int, expected: int) -> None:
    text = f"chosen message {code}/{status}"
    resp = post_modern(http, url, "tools/call", {"name": "mcp_fail", "arguments": {"code": code, "status": status, "text": text}})
    error = assert_error(resp, expected, code)
    assert error["message"] == text
    assert error["data"] == {"why": "on purpose"}


@pytest.mark.parametrize(("code", "status"), [(-32602, 0), (-32601, 0), (-32603, 0), (-32602, 409), (-32000, 401), (1234, 503)])
def test_legacy_mcp_error_is_http_200(http: httpx.Client, url: str, legacy_session: str, code: int, status: int) -> None:
    text = f"chosen message {code}/{status}"
    body = legacy_call("tools/call", {"name": "mcp_fail", "arguments": {"code": code, "status": status, "text": text}})
    resp = http.post(url, json=body, headers=legacy_headers(legacy_session))
    error = assert_error(resp, 200, code, body["id"])
    assert error["message"] == text
    assert error["data"] == {"why": "on purpose"}


# (status, modern code, legacy code) — docs/errors.md, "Exceptions that carry an HTTP status".
STATUS_ROWS = [
    (400, -32602, -32602),
    (422, -32602, -32602),
    (404, -32602, -32004),
    (409, -32602, -32009),
    (401, -32603, -32001),
    (403, -32603, -32003),
    (408, -32603, -32008),
    (429, -32603, -32029),
    (302, -32603, -32000),
    (304, -32603, -32000),
    (405, -32603, -32000),
    (418, -32603, -32000),
    (451, -32603, -32000),
    (500, -32603, -32603),
    (502, -32603, -32603),
    (503, -32603, -32603),
]
KINDS = ["HttpError", "status_code", "starlette"]
VIAS = ["tool", "resource", "prompt"]


def _status_request(via: str, kind: str, status: int, text: str) -> tuple[str, dict[str, Any]]:
    if via == "tool":
        return "tools/call", {"name": "http_fail", "arguments": {"kind": kind, "status": status, "text": text}}
    if via == "resource":
        return "resources/read", {"uri": f"fail://{kind}/{status}/{text}"}
    return "prompts/get", {"name": "fail_prompt", "arguments": {"kind": kind, "status": str(status), "text": text}}


@pytest.mark.parametrize("via", VIAS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("status", "modern_code", "legacy_code"), STATUS_ROWS)
def test_modern_http_status_exception_mapping(
    http: httpx.Client, url: str, via: str, kind: str, status: int, modern_code: int, legacy_code: int
) -> None:
    text = f"detail-{_tag()}"
    method, params = _status_request(via, kind, status, text)
    resp = post_modern(http, url, method, params)
    error = assert_error(resp, 400 if modern_code == -32602 else 500, modern_code)
    assert text not in resp.text  # message collapsed
    assert text not in json.dumps(dict(resp.headers))
    assert error["message"] in ("Invalid params", "Internal error")


@pytest.mark.parametrize("via", VIAS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("status", "modern_code", "legacy_code"), STATUS_ROWS)
def test_legacy_http_status_exception_mapping(
    http: httpx.Client, url: str, legacy_session: str, via: str, kind: str, status: int, modern_code: int, legacy_code: int
) -> None:
    text = f"detail-{_tag()}"
    method, params = _status_request(via, kind, status, text)
    body = legacy_call(method, params)
    resp = http.post(url, json=body, headers=legacy_headers(legacy_session))
    error = assert_error(resp, 200, legacy_code, body["id"])
    assert text in error["message"]  # message kept


# =================================================================================================
# 4. Legacy session life
# =================================================================================================


_VISIBLE_ASCII = re.compile(r"^[\x21-\x7e]+$")


def test_legacy_session_life(http: httpx.Client, url: str) -> None:
    resp = http.post(url, json=initialize(rid=5), headers={"accept": ACCEPT, "content-type": "application/json"})
    assert resp.status_code == 200
    init = only(resp)
    assert init["id"] == 5
    assert init["result"]["protocolVersion"] == LEGACY
    sid = resp.headers["mcp-session-id"]
    assert _VISIBLE_ASCII.match(sid), sid
    assert len(sid) >= 22, "a session id should carry at least 128 bits"
    other = legacy_open(http, url)
    assert other != sid
    assert _VISIBLE_ASCII.match(other)

    # Before notifications/initialized the session exists but a request without its id is refused.
    assert_plain(http.post(url, json=legacy_call("tools/list"), headers=legacy_headers(None)), 400)
    note = http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=legacy_headers(sid))
    assert note.status_code == 202
    assert note.content == b""

    call = legacy_call("tools/call", {"name": "echo", "arguments": {"text": "in session"}})
    resp = http.post(url, json=call, headers=legacy_headers(sid))
    assert resp.status_code == 200
    msgs = messages(resp)
    assert msgs[-1]["id"] == call["id"]
    assert tool_text(msgs[-1]) == "in session"
    assert "resultType" not in msgs[-1]["result"]

    # A second initialize on the session is a protocol error, not a new session.
    again = http.post(url, json=initialize(rid=6), headers=legacy_headers(sid))
    assert again.status_code == 200
    assert "mcp-session-id" not in again.headers
    assert messages(again)[-1]["error"]["code"] == -32600

    # The GET stream opens as an event stream.
    with http.stream("GET", url, headers={**legacy_headers(sid), "accept": "text/event-stream"}) as stream:
        assert stream.status_code == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        first = next(stream.iter_bytes())
        assert first.startswith((b"id:", b":", b"data:", b"event:", b"retry:")), first

    resp = http.delete(url, headers=legacy_headers(sid))
    assert resp.status_code == 200, resp.text
    assert_plain(http.post(url, json=legacy_call("tools/list"), headers=legacy_headers(sid)), 404)
    assert_plain(http.get(url, headers={**legacy_headers(sid), "accept": "text/event-stream"}), 404)
    assert_plain(http.delete(url, headers=legacy_headers(sid)), 404)
    # The other session is untouched.
    resp = http.post(url, json=legacy_call("tools/list"), headers=legacy_headers(other))
    assert resp.status_code == 200
    assert "tools" in messages(resp)[-1]["result"]
    assert http.delete(url, headers=legacy_headers(other)).status_code == 200


def test_legacy_session_cap(http: httpx.Client, capped_url: str) -> None:
    first = legacy_open(http, capped_url)
    second = legacy_open(http, capped_url)
    resp = http.post(capped_url, json=initialize(), headers={"accept": ACCEPT, "content-type": "application/json"})
    assert resp.status_code in (429, 503), resp.text  # the cap holds, and says "later", not "broken"
    assert "mcp-session-id" not in resp.headers
    assert "result" not in resp.text
    assert http.delete(capped_url, headers=legacy_headers(first)).status_code == 200
    third = legacy_open(http, capped_url)  # room again
    for sid in (second, third):
        assert http.delete(capped_url, headers=legacy_headers(sid)).status_code == 200


def test_legacy_idle_sessions_are_reaped(http: httpx.Client, reaped_url: str) -> None:
    idle = [legacy_open(http, reaped_url) for _ in range(2)]  # the cap is reached

    def room() -> str | None:
        """A new session, once the idle ones (1 s, swept once a second) are reaped; asking
        touches neither of them."""
        resp = http.post(reaped_url, json=initialize(), headers={"accept": ACCEPT, "content-type": "application/json"})
        return resp.headers.get("mcp-session-id") if resp.status_code == 200 else None

    fresh = wait_until(room, timeout=30, interval=0.2, what="room for a new session once the idle ones are reaped")
    assert http.post(reaped_url, json=INITIALIZED, headers=legacy_headers(fresh)).status_code == 202
    for sid in idle:
        assert_plain(http.post(reaped_url, json=legacy_call("ping"), headers=legacy_headers(sid)), 404)
    resp = http.post(reaped_url, json=legacy_call("ping"), headers=legacy_headers(fresh))
    assert resp.status_code == 200


# =================================================================================================
# 5. Resumption with Last-Event-ID
# =================================================================================================


class _SseReader:
    """Incrementally split an SSE byte stream into complete (id, data) events."""

    def __init__(self) -> None:
        self.buf = ""

    def feed(self, text: str) -> list[tuple[str | None, str]]:
        self.buf += text.replace("\r\n", "\n")
        *complete, self.buf = self.buf.split("\n\n")
        return sse_events("\n\n".join(complete) + "\n\n") if complete else []


async def _read_events_until(resp: httpx.Response, enough: Any, timeout: float = 10) -> list[tuple[str | None, str]]:
    reader = _SseReader()
    got: list[tuple[str | None, str]] = []

    async def run() -> None:
        async for text in resp.aiter_text():
            for event in reader.feed(text):
                got.append(event)
                if enough(got):
                    return

    await asyncio.wait_for(run(), timeout)
    return got


def _drip_call(tag: str, steps: int, delay: float, hold: int = 0) -> dict[str, Any]:
    arguments = {"steps": steps, "delay": delay, "tag": tag, "hold": hold}
    return legacy_call("tools/call", {"name": "drip", "arguments": arguments, "_meta": {"progressToken": tag}})


def _progress_and_result(events: list[tuple[str | None, str]]) -> tuple[list[float], list[dict[str, Any]]]:
    progress: list[float] = []
    results: list[dict[str, Any]] = []
    for _, data in events:
        if not data:
            continue
        msg = json.loads(data)
        if msg.get("method") == "notifications/progress":
            progress.append(msg["params"]["progress"])
        else:
            results.append(msg)
    return progress, results


async def test_legacy_resumption_loses_no_event(ahttp: httpx.AsyncClient, url: str) -> None:
    sid = await alegacy_open(ahttp, url)
    tag = _tag()
    call = _drip_call(tag, 10, 0.05, hold=3)  # the handler waits after step 3 until the stream is dropped
    async with ahttp.stream("POST", url, json=call, headers=legacy_headers(sid)) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        got = await _read_events_until(resp, lambda evs: sum(1 for i, _ in evs if i) >= 3)
    with_ids = [e for e in got if e[0]]
    seen = with_ids[:3]  # anything read past the third event counts as not seen
    last_id = seen[-1][0]
    assert last_id is not None
    assert len({i for i, _ in seen}) == 3
    assert not _flag(f"{tag}:finished").is_set(), "the call finished before the drop: the test proves nothing"
    _flag(f"{tag}:go").set()  # the rest follows the drop

    headers = {**legacy_headers(sid), "accept": "text/event-stream", "last-event-id": last_id}
    async with ahttp.stream("GET", url, headers=headers) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        rest = await _read_events_until(resp, lambda evs: any(d and '"result"' in d for _, d in evs))
    seen_progress, seen_results = _progress_and_result(seen)
    rest_progress, rest_results = _progress_and_result(rest)
    assert seen_results == []
    assert seen_progress + rest_progress == list(range(1, 11)), (seen_progress, rest_progress)
    assert len(rest_results) == 1
    assert rest_results[0]["id"] == call["id"]
    assert tool_text(rest_results[0]) == "dripped 10"
    rest_ids = [i for i, d in rest if d]
    assert all(rest_ids), "every replayed or live event carries an id"
    assert len(set(rest_ids)) == len(rest_ids)
    assert not set(rest_ids) & {i for i, _ in seen}
    assert await _wait_flag(f"{tag}:finished")
    assert not _flag(f"{tag}:cancelled").is_set()


async def test_resumption_replays_only_the_dropped_stream(ahttp: httpx.AsyncClient, url: str) -> None:
    """Two calls stream at once on one session; resuming one never replays the other's events."""
    sid = await alegacy_open(ahttp, url)
    tag_a, tag_b = _tag(), _tag()
    call_a, call_b = _drip_call(tag_a, 5, 0.05), _drip_call(tag_b, 5, 0.05)

    async def run_b() -> httpx.Response:
        return await ahttp.post(url, json=call_b, headers=legacy_headers(sid))

    other = asyncio.create_task(run_b())
    try:
        async with ahttp.stream("POST", url, json=call_a, headers=legacy_headers(sid)) as resp:
            assert resp.status_code == 200
            got = await _read_events_until(resp, lambda evs: any(i for i, _ in evs))
        first_id = next(i for i, _ in got if i)
        assert first_id is not None
        resp_b = await asyncio.wait_for(other, 10)
    finally:
        other.cancel()
    b_msgs = messages(resp_b)
    assert b_msgs[-1]["id"] == call_b["id"]
    assert all(m["params"]["progressToken"] == tag_b for m in b_msgs[:-1])
    headers = {**legacy_headers(sid), "accept": "text/event-stream", "last-event-id": first_id}
    async with ahttp.stream("GET", url, headers=headers) as resp:
        assert resp.status_code == 200
        rest = await _read_events_until(resp, lambda evs: any(d and '"result"' in d for _, d in evs))
    replayed = [json.loads(d) for _, d in rest if d]
    assert replayed[-1]["id"] == call_a["id"]
    assert tool_text(replayed[-1]) == "dripped 5"
    notes = replayed[:-1]
    assert all(m["params"]["progressToken"] == tag_a for m in notes), notes
    seen, _ = _progress_and_result(got[: got.index(next(e for e in got if e[0] == first_id)) + 1])
    assert seen + [m["params"]["progress"] for m in notes] == [1, 2, 3, 4, 5]


def test_unknown_last_event_id_is_404(http: httpx.Client, url: str, legacy_session: str) -> None:
    for bogus in ("nope", f"{legacy_session}-999.123456", "0", legacy_session):
        headers = {**legacy_headers(legacy_session), "accept": "text/event-stream", "last-event-id": bogus}
        assert_plain(http.get(url, headers=headers), 404)


async def test_last_event_id_of_another_session_is_404(ahttp: httpx.AsyncClient, url: str) -> None:
    owner = await alegacy_open(ahttp, url)
    intruder = await alegacy_open(ahttp, url)
    tag = _tag()
    resp = await ahttp.post(url, json=_drip_call(tag, 3, 0.01), headers=legacy_headers(owner))
    assert resp.status_code == 200
    ids = [i for i, d in sse_events(resp.text) if i]
    assert ids, resp.text
    headers = {**legacy_headers(intruder), "accept": "text/event-stream", "last-event-id": ids[0]}
    resp = await ahttp.get(url, headers=headers)
    assert_plain(resp, 404)
    assert "dripped" not in resp.text
    assert "progress" not in resp.text


async def test_resume_from_an_expired_event_id_is_refused_not_gapped(ahttp: httpx.AsyncClient, tiny_store_url: str) -> None:
    """The store keeps 4 events per stream; the call produces 12. Resuming from the first
    id cannot be served without a gap, so it must be refused (404), not silently skip."""
    url = tiny_store_url
    sid = await alegacy_open(ahttp, url)
    tag = _tag()
    call = _drip_call(tag, 10, 0.01)
    async with ahttp.stream("POST", url, json=call, headers=legacy_headers(sid)) as resp:
        assert resp.status_code == 200
        got = await _read_events_until(resp, lambda evs: any(i for i, _ in evs))
    first_id = next(i for i, _ in got if i)
    assert first_id is not None
    assert await _wait_flag(f"{tag}:finished")
    headers = {**legacy_headers(sid), "accept": "text/event-stream", "last-event-id": first_id}
    resp = await ahttp.get(url, headers=headers)
    progress, results = _progress_and_result(sse_events(resp.text)) if resp.status_code == 200 else ([], [])
    seen, _ = _progress_and_result(got[: got.index(next(e for e in got if e[0] == first_id)) + 1])
    assert resp.status_code == 404, f"replayed with a gap: saw {seen}, then got {progress} and {len(results)} result(s)"
    assert_plain(resp, 404)


# =================================================================================================
# 6. Legacy cancellation
# =================================================================================================


async def test_legacy_cancelled_notification_cancels_the_handler(ahttp: httpx.AsyncClient, url: str) -> None:
    sid = await alegacy_open(ahttp, url)
    tag = _tag()
    call = legacy_call("tools/call", {"name": "block", "arguments": {"tag": tag}})
    pending = asyncio.create_task(ahttp.post(url, json=call, headers=legacy_headers(sid)))
    try:
        assert await _wait_flag(f"{tag}:started")
        note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": call["id"], "reason": "test"}}
        resp = await ahttp.post(url, json=note, headers=legacy_headers(sid))
        assert resp.status_code == 202
        assert resp.content == b""
        assert await _wait_flag(f"{tag}:cancelled"), "notifications/cancelled did not cancel the handler"
        answer = await asyncio.wait_for(pending, 5)
    finally:
        pending.cancel()
    assert answer.status_code < 300
    assert not _flag(f"{tag}:finished").is_set()
    if answer.content:
        assert all("result" not in m for m in messages(answer)), answer.text
    # The session lives on.
    resp = await ahttp.post(url, json=legacy_call("ping"), headers=legacy_headers(sid))
    assert resp.status_code == 200
    assert messages(resp)[-1]["result"] == {}


async def test_legacy_disconnect_does_not_cancel_and_result_is_resumable(ahttp: httpx.AsyncClient, url: str) -> None:
    sid = await alegacy_open(ahttp, url)
    tag = _tag()
    call = _drip_call(tag, 6, 0.05)
    async with ahttp.stream("POST", url, json=call, headers=legacy_headers(sid)) as resp:
        assert resp.status_code == 200
        got = await _read_events_until(resp, lambda evs: any(i for i, _ in evs))
    last_id = next(i for i, _ in got if i)
    assert await _wait_flag(f"{tag}:finished", 10), "the handler did not run to completion after the disconnect"
    assert not _flag(f"{tag}:cancelled").is_set()
    headers = {**legacy_headers(sid), "accept": "text/event-stream", "last-event-id": last_id}
    async with ahttp.stream("GET", url, headers=headers) as resp:
        assert resp.status_code == 200
        rest = await _read_events_until(resp, lambda evs: any(d and '"result"' in d for _, d in evs))
    seen_progress, _ = _progress_and_result(got[: got.index(next(e for e in got if e[0] == last_id)) + 1])
    rest_progress, results = _progress_and_result(rest)
    assert seen_progress + rest_progress == list(range(1, 7))
    assert results[-1]["id"] == call["id"]
    assert tool_text(results[-1]) == "dripped 6"


# =================================================================================================
# 7. No leak of handler exception text
# =================================================================================================


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_no_secret_leaks_in_default_configuration(http: httpx.Client, url: str, era: str) -> None:
    sid = legacy_open(http, url) if era == "legacy" else None

    def send(method: str, params: dict[str, Any]) -> httpx.Response:
        if era == "modern":
            return post_modern(http, url, method, params)
        return http.post(url, json=legacy_call(method, params), headers=legacy_headers(sid))

    def headers_text(resp: httpx.Response) -> str:
        return "\n".join(f"{k}: {v}" for k, v in resp.headers.multi_items())

    # The tool: the secret may appear, and only as the isError text.
    resp = send("tools/call", {"name": "leak_tool", "arguments": {}})
    assert resp.status_code == 200
    msg = messages(resp)[-1]
    assert msg["result"]["isError"] is True
    assert SECRET in tool_text(msg)
    msg["result"]["content"][0]["text"] = ""
    assert SECRET not in json.dumps(msg)
    assert SECRET not in headers_text(resp)
    assert resp.text.count(SECRET) == 1

    # Resource, prompt and middleware: -32603 "Internal error", no secret anywhere.
    for method, params in (
        ("resources/read", {"uri": "leak://resource"}),
        ("prompts/get", {"name": "leak_prompt", "arguments": {}}),
        ("tools/call", {"name": "leak_mw", "arguments": {}}),
    ):
        resp = send(method, params)
        assert resp.status_code == (500 if era == "modern" else 200), (method, resp.status_code, resp.text)
        error = messages(resp)[-1]["error"]
        assert error["code"] == -32603
        assert error["message"] == "Internal error"
        assert SECRET not in resp.text, (method, resp.text)
        assert SECRET not in headers_text(resp)
    if sid is not None:
        assert http.delete(url, headers=legacy_headers(sid)).status_code == 200


# =================================================================================================
# 8. Mounting inside Starlette
# =================================================================================================


def test_mounted_in_starlette(http: httpx.Client, mounted_base: str) -> None:
    url = mounted_base + "/prefix/mcp"
    resp = post_modern(http, url, "tools/call", {"name": "echo", "arguments": {"text": "mounted"}})
    assert resp.status_code == 200, resp.text
    assert tool_text(only(resp)) == "mounted"
    resp = post_modern(http, url, "resources/read", {"uri": "data://hello"})
    assert only(resp)["result"]["contents"][0]["text"] == "hello world"
    # Legacy era through the mount: session life end to end.
    sid = legacy_open(http, url)
    resp = http.post(
        url, json=legacy_call("tools/call", {"name": "echo", "arguments": {"text": "legacy"}}), headers=legacy_headers(sid)
    )
    assert tool_text(messages(resp)[-1]) == "legacy"
    assert http.delete(url, headers=legacy_headers(sid)).status_code == 200
    assert http.post(url, json=legacy_call("ping"), headers=legacy_headers(sid)).status_code == 404
    # Rejections still apply, and other paths under the mount are not the endpoint.
    body, headers = modern("tools/list", headers={"origin": "http://evil.example"})
    assert_plain(http.post(url, json=body, headers=headers), 403)
    body, headers = modern("tools/list")
    assert http.post(mounted_base + "/prefix/other", json=body, headers=headers).status_code == 404
    assert http.post(mounted_base + "/mcp", json=body, headers=headers).status_code == 404


# =================================================================================================
# 9. Interop with the official `mcp` client
# =================================================================================================


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_official_client_against_mcpkit(url: str, mode: str) -> None:
    from mcp.client.client import Client as OfficialClient

    async def run() -> None:
        async with OfficialClient(url, mode=mode) as client:
            assert client.protocol_version == (MODERN if mode == "auto" else LEGACY)
            tools = await client.list_tools()
            assert {"echo", "talk", "region"} <= {t.name for t in tools.tools}
            result = await client.call_tool("echo", {"text": "héllo from mcp"})
            assert result.is_error is not True
            assert result.content[0].text == "héllo from mcp"  # type: ignore[union-attr]
            region = await client.call_tool("region", {"region": "zürich", "query": "q"})
            assert region.content[0].text == "zürich|None|q"  # type: ignore[union-attr]
            read = await client.read_resource("data://hello")
            assert read.contents[0].text == "hello world"  # type: ignore[union-attr]

    await asyncio.wait_for(run(), 20)


def test_run_http_without_uvicorn_says_what_to_install() -> None:
    code = (
        "import sys\n"
        "sys.modules['uvicorn'] = None  # as if the http extra were not installed\n"
        "from mcpkit import Server\n"
        "Server('x').run('http', port=1)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ModuleNotFoundError: serving MCP over HTTP needs uvicorn"), proc.stderr
    assert "pip install 'mcpkit[http]'" in last
