"""Hostile clients against the Streamable HTTP server (docs/http.md, "Limits and shutdown").

Each test is one attack, run on 127.0.0.1 against a real uvicorn: in a thread of this
process where the test inspects the app's state, or in a subprocess
(tests/support/servers/hostile_http.py) where a descriptor limit or a signal matters.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import resource
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import uvicorn

from mcpkit import InMemoryEventStore
from mcpkit.transports.http.app import StreamableHTTPApp
from mcpkit.transports.http.server.sessions import HttpSession, SessionManager
from support.eras import LEGACY, MODERN
from support.ports import free_port
from support.processes import listening, load_server, server_command
from support.wire import ACCEPT, open_session

pytestmark = pytest.mark.timeout(60)

hostile = load_server("hostile_http")
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
_ids = itertools.count(1000)


# --- serving ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def _serve(app: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn in a thread on 127.0.0.1; yield its URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started:
            assert thread.is_alive(), "uvicorn exited during start-up"
            assert time.monotonic() < deadline, "uvicorn did not start within 10 s"
            time.sleep(0.01)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@contextlib.contextmanager
def _spawn(mode: str, nofile: int | None = None, http: str = "auto") -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """Run tests/support/servers/hostile_http.py in ``mode`` on the ``http`` parser (optionally with a descriptor limit)."""
    port = free_port()

    def limit() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    command = server_command("hostile_http", str(port), mode, http)
    with listening(command, port, preexec_fn=limit, stderr=subprocess.DEVNULL) as proc:
        yield proc, f"http://127.0.0.1:{port}/mcp"


# --- messages --------------------------------------------------------------------------------------


def _headers(session_id: str | None = None, version: str = LEGACY) -> dict[str, str]:
    headers = {"accept": ACCEPT, "content-type": "application/json", "mcp-protocol-version": version}
    if session_id is not None:
        headers["mcp-session-id"] = session_id
    return headers


def _call(method: str, params: dict[str, Any] | None = None, rid: int | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": next(_ids) if rid is None else rid, "method": method, "params": params or {}}


def _sse_ids(text: str) -> list[str]:
    return [line[3:].strip() for line in text.splitlines() if line.startswith("id:")]


def _app(**options: Any) -> StreamableHTTPApp:
    return hostile.server.asgi_app(**options)


# --- 1. a refused request leaves nothing in the session's engine -----------------------------------


def test_refused_legacy_requests_do_not_hold_their_ids() -> None:
    """Before: every refused request kept its id "in use" for the session's life (30
    refusals left 30 ids, and reusing one got -32600 "already in use"; 20,000 refusals
    with 200-character ids grew the server by 5.3 MB). After: none is kept."""
    app = _app()
    with _serve(app) as url, httpx.Client(timeout=5) as http:
        sid = open_session(http, url)["mcp-session-id"]
        session = app.sessions.get(sid)
        assert session is not None
        for rid, version in zip(range(30), itertools.cycle(["garbage", MODERN, "1999-01-01"]), strict=False):
            resp = http.post(url, json=_call("tools/list", rid=rid), headers={**_headers(sid), "mcp-protocol-version": version})
            assert resp.status_code == 400
        assert len(session.engine.incoming) == 0
        resp = http.post(url, json=_call("tools/list", rid=7), headers=_headers(sid))
        assert resp.status_code == 200, resp.text
        assert "tools" in resp.json()["result"], resp.text


# --- 2. no 500 for bad input -----------------------------------------------------------------------

_DEEP = b"[" * 200_000 + b"]" * 200_000
_META = json.dumps(META).encode()


def _request(method: str, params: bytes) -> bytes:
    return b'{"jsonrpc":"2.0","id":1,"method":"' + method.encode() + b'","params":' + params + b"}"


_BODIES = {
    "deep-meta": _request("tools/list", b'{"_meta":' + _DEEP + b"}"),
    "deep-message": _DEEP,
    "deep-params": _request("tools/list", b'{"x":' + _DEEP + b"}"),
    "huge-float-meta": _request("tools/list", b'{"_meta":{"x":1e999}}'),
    "huge-int-version": _request("tools/list", b'{"_meta":{"io.modelcontextprotocol/protocolVersion":' + b"9" * 5000 + b"}}"),
    "huge-float-args": _request("tools/call", b'{"name":"echo","arguments":{"text":1e999},"_meta":' + _META + b"}"),
    "huge-float-meta-modern": _request("tools/list", b'{"_meta":' + _META[:-1] + b',"x":1e999}}'),
}


@pytest.mark.parametrize("name", sorted(_BODIES))
@pytest.mark.parametrize("version", [MODERN, LEGACY])
def test_hostile_bodies_get_a_json_rpc_error_not_500(name: str, version: str) -> None:
    """Before: deep nesting escaped as RecursionError (uvicorn's plain-text 500)."""
    with _serve(_app()) as url, httpx.Client(timeout=10) as http:
        sid = open_session(http, url)["mcp-session-id"] if version == LEGACY else None
        call = b'"method":"tools/call"' in _BODIES[name]
        headers = {**_headers(sid, version), "mcp-method": "tools/call" if call else "tools/list", "mcp-name": "echo"}
        resp = http.post(url, content=_BODIES[name], headers=headers)
        assert resp.status_code < 500, resp.text[:200]
        assert "error" in resp.json() or "result" in resp.json()


@pytest.mark.parametrize("seq", ["\u00b2", "9" * 5000, "-1", "1e3"])
def test_hostile_last_event_id_is_404(seq: str) -> None:
    """Before: a superscript digit (Latin-1 0xB2) or 5,000 digits after a real stream's id
    raised ValueError in the store: uvicorn's plain-text 500."""
    talk = {"name": "talk", "arguments": {}, "_meta": {"progressToken": "p"}}
    with _serve(_app()) as url, httpx.Client(timeout=5) as http:
        sid = open_session(http, url)["mcp-session-id"]
        stream_id = _sse_ids(http.post(url, json=_call("tools/call", talk), headers=_headers(sid)).text)[0].rpartition(".")[0]
        headers = {**_headers(sid), "accept": "text/event-stream", "last-event-id": f"{stream_id}.{seq}"}
        resp = http.get(url, headers={k: v.encode("latin-1") for k, v in headers.items()})
        assert resp.status_code == 404, resp.text[:200]


# --- 3. sessions: admission, idle GET streams, requests in flight ----------------------------------


def test_admission_at_the_session_cap_is_constant_time() -> None:
    """Before: each refused ``initialize`` scanned every session (500 admissions at a cap
    of 20,000: ~3 s of CPU). After: only the oldest session is examined."""
    manager = SessionManager(idle_timeout=60.0, max_sessions=20_000)
    store = InMemoryEventStore()
    for _ in range(20_000):
        assert manager.add(HttpSession(SessionManager.new_id(), None, store, 100))
    started = time.process_time()
    refused = [manager.add(HttpSession(SessionManager.new_id(), None, store, 100)) for _ in range(500)]
    spent = time.process_time() - started
    assert refused == [False] * 500
    assert spent < 0.5, f"500 admissions at the cap took {spent:.2f} s of CPU"


def test_idle_session_with_a_get_stream_is_reaped() -> None:
    """Before: an open GET stream (kept alive by keep-alive comments) kept its session
    forever. After: the session ends after ``session_idle_timeout`` and the stream closes."""
    with _serve(_app(session_idle_timeout=0.5, keepalive_interval=0.1)) as url, httpx.Client(timeout=15) as http:
        sid = open_session(http, url)["mcp-session-id"]
        started = time.monotonic()
        with http.stream("GET", url, headers={**_headers(sid), "accept": "text/event-stream"}) as resp:
            assert resp.status_code == 200
            for _ in resp.iter_bytes():
                pass
        assert time.monotonic() - started < 10  # reaped after 0.5 s idle: before the fix, never
        assert http.post(url, json=_call("tools/list"), headers=_headers(sid)).status_code == 404


async def test_requests_in_flight_per_session_are_bounded() -> None:
    """Before: a session could start any number of handlers. After: past
    ``max_session_requests`` a request is refused with 429, ``Retry-After`` and -32603."""
    app = _app(max_session_requests=4)
    with _serve(app) as url, httpx.Client(timeout=5) as sync_http:
        sid = open_session(sync_http, url)["mcp-session-id"]
        async with httpx.AsyncClient(timeout=10) as http:
            session = app.sessions.get(sid)
            assert session is not None
            call = _call("tools/call", {"name": "wait", "arguments": {}})
            pending = [asyncio.create_task(http.post(url, json={**call, "id": i}, headers=_headers(sid))) for i in range(4)]
            deadline = time.monotonic() + 10
            while len(session.engine.incoming) < 4:  # the server runs in another thread: poll its state
                assert time.monotonic() < deadline, "the four requests did not start within 10 s"
                await asyncio.sleep(0.01)
            resp = await http.post(url, json=_call("tools/list"), headers=_headers(sid))
            assert resp.status_code == 429
            assert resp.headers["retry-after"] == "1"
            error = resp.json()["error"]
            assert error["code"] == -32603
            assert "the limit is 4 per session" in error["message"]
            assert len(session.engine.incoming) == 4  # the refused request left nothing
            assert (await http.delete(url, headers=_headers(sid))).status_code == 200
            await asyncio.gather(*pending)


# --- 4. event store quotas --------------------------------------------------------------------------


def test_one_session_cannot_evict_another_sessions_streams() -> None:
    """Before: 25 SSE responses of one session evicted every stream of the store (the
    victim's resume got 404). After: a session evicts only its own streams."""
    talk = {"name": "talk", "arguments": {}, "_meta": {"progressToken": "p"}}
    with _serve(_app(event_store=InMemoryEventStore(max_streams=20))) as url, httpx.Client(timeout=5) as http:
        victim = open_session(http, url)["mcp-session-id"]
        first = http.post(url, json=_call("tools/call", talk), headers=_headers(victim))
        last_event_id = _sse_ids(first.text)[0]
        attacker = open_session(http, url)["mcp-session-id"]
        for _ in range(25):
            assert http.post(url, json=_call("tools/call", talk), headers=_headers(attacker)).status_code == 200
        resp = http.get(url, headers={**_headers(victim), "accept": "text/event-stream", "last-event-id": last_event_id})
        assert resp.status_code == 200
        assert "talked" in resp.text


# --- 5. connection limits and read timeouts --------------------------------------------------------


#: run_uvicorn's guard over each of uvicorn's HTTP/1.1 parsers (httptools is the default when installed).
PARSERS = pytest.mark.parametrize("http", ["httptools", "h11"])


@PARSERS
def test_half_sent_requests_do_not_starve_a_legitimate_one(http: str) -> None:
    """300 connections that never finish their headers, against a process of 256
    descriptors. Before: the legitimate request hung. After: it is refused at once
    (503) while the attack holds every connection slot, and served once the header
    timeout has closed them."""
    with _spawn("tight", nofile=256, http=http) as (_, url):
        attackers = []
        for _ in range(300):
            with contextlib.suppress(OSError):
                sock = socket.create_connection(("127.0.0.1", int(url.split(":")[2].split("/")[0])), 2)
                sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n")
                attackers.append(sock)
        body = _call("tools/list", {"_meta": META})
        headers = {**_headers(version=MODERN), "mcp-method": "tools/list"}
        started = time.monotonic()
        with httpx.Client(timeout=3) as http:
            status = http.post(url, json=body, headers=headers).status_code
            assert status in (200, 503)
            while status != 200 and time.monotonic() - started < 8:
                status = http.post(url, json=body, headers=headers).status_code
        assert status == 200, f"not served within {time.monotonic() - started:.1f} s"
        for sock in attackers:
            sock.close()


_STALLED = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"


@PARSERS
@pytest.mark.parametrize("request_start", [_STALLED, _STALLED[:40]], ids=["body", "headers"])
def test_stalled_request_is_408_under_run_uvicorn(request_start: bytes, http: str) -> None:
    """Before: a request stopping half-way (in its headers or its body) held its
    connection forever. After: 408 and the connection closed after the deadline."""
    with _spawn("tight", http=http) as (_, url):
        port = int(url.split(":")[2].split("/")[0])
        with socket.create_connection(("127.0.0.1", port), 5) as sock:
            sock.sendall(request_start)
            sock.settimeout(5)
            assert sock.recv(64).startswith(b"HTTP/1.1 408")


@PARSERS
def test_oversized_headers_are_400_under_run_uvicorn(http: str) -> None:
    """Headers sent on and on, in many reads: h11 refused them past 16 KiB, httptools
    buffered them without a bound. After: 400 and the connection closed, on either."""
    with _spawn("tight", http=http) as (_, url):
        port = int(url.split(":")[2].split("/")[0])
        with socket.create_connection(("127.0.0.1", port), 5) as sock:
            sock.settimeout(5)
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: ")
            with contextlib.suppress(OSError):  # the server may close before all of it is sent
                for _ in range(256):
                    sock.sendall(b"a" * 4096)
                    time.sleep(0.001)  # many small reads for the server, as the attack sends them
            answer = b""
            with contextlib.suppress(OSError):
                while chunk := sock.recv(4096):
                    answer += chunk
            assert answer.startswith(b"HTTP/1.1 400"), answer[:80]


def test_app_body_timeout_is_408() -> None:
    """The app's own ``body_timeout`` (for ASGI servers without a deadline): 408."""
    with _serve(_app(body_timeout=0.5)) as url:
        port = int(url.split(":")[2].split("/")[0])
        with socket.create_connection(("127.0.0.1", port), 5) as sock:
            sock.sendall(_STALLED)
            sock.settimeout(5)
            assert sock.recv(64).startswith(b"HTTP/1.1 408")


# --- 6. shutdown -----------------------------------------------------------------------------------


def test_sigterm_with_an_open_get_stream_exits_promptly() -> None:
    """Before: SIGTERM was ignored for as long as a client held a GET stream (still
    running after 15 s). After: the stream is ended and the process exits at once."""
    with _spawn("defaults") as (proc, url), httpx.Client(timeout=5) as http:
        sid = open_session(http, url)["mcp-session-id"]
        port = int(url.split(":")[2].split("/")[0])
        with socket.create_connection(("127.0.0.1", port), 5) as sock:
            sock.sendall(
                f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n"
                f"Mcp-Session-Id: {sid}\r\n\r\n".encode()
            )
            sock.settimeout(5)
            assert sock.recv(4096).startswith(b"HTTP/1.1 200")
            started = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            proc.wait(10)
            assert time.monotonic() - started < 4


@PARSERS
def test_header_values_are_taken_without_surrounding_whitespace(http: str) -> None:
    """RFC 9110 leaves optional whitespace around a header's value out of the value;
    h11 strips it, httptools does not (the conformance suite's SEP-2243 check found the
    difference). Before, on httptools: -32020 "Mcp-Method header ... does not match".
    After: the request is served on either parser."""
    body = json.dumps(_call("tools/list", {"_meta": META}, rid=7)).encode()
    with _spawn("tight", http=http) as (_, url):
        port = int(url.split(":")[2].split("/")[0])
        request = (
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\n"
            b"MCP-Protocol-Version: \t" + MODERN.encode() + b"  \r\n"
            b"Mcp-Method:   tools/list \t\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body
        )
        with socket.create_connection(("127.0.0.1", port), 5) as sock:
            sock.settimeout(5)
            sock.sendall(request)
            answer = b""
            with contextlib.suppress(OSError):
                while chunk := sock.recv(65536):
                    answer += chunk
    assert answer.startswith(b"HTTP/1.1 200"), answer[:300]
    assert b'"tools"' in answer
