"""Shutdown of the Streamable HTTP endpoint (/mcp) with requests still running: a real
``server.run("http")`` subprocess gets SIGTERM while slow tools run, in both eras, with
a JSON and an SSE response each, and a legacy request's stream resumed with
``Last-Event-ID``. When uvicorn's graceful-shutdown grace runs out, every
request is answered with -32603 "Server shutting down: the request was cancelled" —
as its JSON response, or as the last event of its SSE stream, which ends properly —
its handler is cancelled, the process exits within the grace and a margin, and nothing
reaches uvicorn as an exception (no 500, no "Exception in ASGI application"). Before the
shutdown began, a cancellation stays a cancellation.

And SIGTERM while clients hold a GET stream and a ``subscriptions/listen`` stream: the
process exits promptly, giving requests in progress a bounded grace (issue 10, item 6)."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import httpx
import pytest

from mcpkit import Server
from mcpkit.protocol.sse import SSEParser
from support.eras import MODERN
from support.ports import free_port
from support.processes import listening, server_command
from support.waiting import until, wait_until
from support.wire import ACCEPT, aopen_session, modern, open_session

pytestmark = pytest.mark.timeout(60)

GRACE = 2.0  # uvicorn's timeout_graceful_shutdown for the server below
MARGIN = 5.0  # for the lifespan shutdown and the interpreter's exit on a loaded machine
SHUTDOWN = "Server shutting down: the request was cancelled"

# The server: ``hang`` waits until cancelled; ``progress_then_hang`` first reports
# progress (so its response becomes an SSE stream), then waits; ``release_then_hang``
# ends its POST's connection (the client resumes the stream with GET), reports progress
# and waits. Each handler's start and cancellation are written to stderr, to be waited for
# and counted.
SERVER = f"""
import asyncio, sys
from mcpkit import Context, Server

server = Server("shutdown-target", "1.0.0")


async def wait_until_cancelled(name: str) -> str:
    print("started:", name, file=sys.stderr, flush=True)
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        print("cancelled:", name, file=sys.stderr, flush=True)
        raise
    return "never"


@server.tool
async def hang(name: str) -> str:
    return await wait_until_cancelled(name)


@server.tool
async def progress_then_hang(ctx: Context, name: str) -> str:
    await ctx.report_progress(1, 2, "started")
    return await wait_until_cancelled(name)


@server.tool
async def release_then_hang(ctx: Context, name: str) -> str:
    assert await ctx.close_sse_stream()
    await ctx.report_progress(1, 2, "released")
    return await wait_until_cancelled(name)


server.run("http", host="127.0.0.1", port=int(sys.argv[1]), log_level="info",
           uvicorn_options={{"timeout_graceful_shutdown": {GRACE}}})
"""


def _modern(rid: int, tool: str, meta: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        **meta,
    }
    body = {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": tool, "arguments": {"name": f"m{rid}"}, "_meta": meta},
    }
    headers = {"accept": ACCEPT, "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": tool}
    return body, headers


async def _sse(
    http: httpx.AsyncClient, method: str, url: str, headers: dict[str, str], started: asyncio.Event, body: Any = None
) -> tuple[int, list[dict[str, Any]], str | None]:
    """Send the request and read its SSE response to the end (``started`` is set at its
    first message): its status, its messages (events without data skipped) and its last
    event id. Raises if the stream is cut."""
    parser = SSEParser()
    messages: list[dict[str, Any]] = []
    async with http.stream(method, url, json=body, headers=headers) as resp:
        assert resp.headers["content-type"].startswith("text/event-stream")
        async for chunk in resp.aiter_bytes():
            messages += [json.loads(ev.data) for ev in parser.feed(chunk) if ev.data]
            if messages:
                started.set()
        return resp.status_code, messages, parser.last_event_id


async def _resumed(
    http: httpx.AsyncClient, url: str, headers: dict[str, str], started: asyncio.Event
) -> tuple[int, list[dict[str, Any]], str | None]:
    """Call ``release_then_hang`` (id 5) in the legacy session: its POST's stream ends
    at once (only the priming event); then resume it with ``Last-Event-ID``."""
    call = {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": {"name": "release_then_hang", "arguments": {"name": "r5"}, "_meta": {"progressToken": "p5"}},
    }
    status, messages, last_id = await _sse(http, "POST", url, headers, asyncio.Event(), call)
    assert (status, messages) == (200, []), (status, messages)
    assert last_id
    return await _sse(http, "GET", url, {**headers, "accept": "text/event-stream", "last-event-id": last_id}, started)


async def test_sigterm_answers_requests_in_progress_in_both_eras() -> None:
    """Five calls in progress at SIGTERM — modern JSON, modern SSE, legacy JSON, legacy
    SSE (a stored, resumable stream), and a legacy stream resumed by GET — each get
    -32603 when the 2 s grace runs out: the JSON ones as their response (HTTP 503
    modern, 200 legacy), the SSE ones as the last event after their progress
    notification, on a stream that ends properly. The five handlers are cancelled, the
    process exits within the grace and a margin, and uvicorn logs no exception."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    command = [sys.executable, "-c", SERVER, str(port)]
    with listening(command, port, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as proc:
        assert proc.stderr is not None
        lines: list[bytes] = []  # the server's stderr, read as it comes
        reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, b"")), daemon=True)  # type: ignore[union-attr]
        reader.start()
        async with httpx.AsyncClient(timeout=httpx.Timeout(GRACE + MARGIN + 5)) as http:
            legacy = await aopen_session(http, url)
            modern_sse_started, legacy_sse_started, resumed_started = asyncio.Event(), asyncio.Event(), asyncio.Event()
            body, headers = _modern(1, "hang", {})
            modern_json = asyncio.ensure_future(http.post(url, json=body, headers=headers))
            body, headers = _modern(2, "progress_then_hang", {"progressToken": "p2"})
            modern_sse = asyncio.ensure_future(_sse(http, "POST", url, headers, modern_sse_started, body))
            call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "hang", "arguments": {"name": "l3"}}}
            legacy_json = asyncio.ensure_future(http.post(url, json=call, headers=legacy))
            call = {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "tools/call",
                "params": {"name": "progress_then_hang", "arguments": {"name": "l4"}, "_meta": {"progressToken": "p4"}},
            }
            legacy_sse = asyncio.ensure_future(_sse(http, "POST", url, legacy, legacy_sse_started, call))
            resumed = asyncio.ensure_future(_resumed(http, url, legacy, resumed_started))
            everything = (modern_json, modern_sse, legacy_json, legacy_sse, resumed)
            await asyncio.wait_for(
                asyncio.gather(modern_sse_started.wait(), legacy_sse_started.wait(), resumed_started.wait()), 10
            )
            handlers = {f"started: {name}\n".encode() for name in ("m1", "m2", "l3", "l4", "r5")}
            await until(lambda: handlers <= set(lines), what="the five calls are in their handlers")
            assert not any(f.done() for f in everything)
            loop = asyncio.get_running_loop()
            started = loop.time()
            proc.terminate()
            done = await asyncio.wait_for(asyncio.gather(*everything), GRACE + MARGIN)
            answered = loop.time() - started
        (m_json, (m_status, m_events, _), l_json, (l_status, l_events, _), (r_status, r_events, _)) = done

        assert m_json.status_code == 503, m_json.text
        assert m_json.headers["content-type"] == "application/json"
        assert m_json.json() == {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": SHUTDOWN}}
        assert l_json.status_code == 200, l_json.text
        assert l_json.json() == {"jsonrpc": "2.0", "id": 3, "error": {"code": -32603, "message": SHUTDOWN}}
        sse_answers = ((m_status, m_events, 2, "p2"), (l_status, l_events, 4, "p4"), (r_status, r_events, 5, "p5"))
        for status, events, rid, token in sse_answers:
            assert status == 200
            assert [e.get("method") for e in events[:-1]] == ["notifications/progress"], events
            assert events[0]["params"]["progressToken"] == token
            assert events[-1] == {"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": SHUTDOWN}}
        assert GRACE - 0.5 < answered < GRACE + MARGIN, answered  # answered when the grace ran out

        await asyncio.to_thread(proc.wait, MARGIN + 2)
        exited = loop.time() - started
        assert exited < GRACE + MARGIN, exited
        reader.join(10)
        log = b"".join(lines).decode(errors="replace")
    assert "Exception in ASGI application" not in log, log
    assert "Traceback" not in log, log
    assert sorted(line for line in log.splitlines() if line.startswith("cancelled:")) == [
        "cancelled: l3",
        "cancelled: l4",
        "cancelled: m1",
        "cancelled: m2",
        "cancelled: r5",
    ], log
    print(f"\nshutdown: answered {answered:.2f} s and exited {exited:.2f} s after SIGTERM (grace {GRACE:g} s)")


@pytest.mark.parametrize("draining", [False, True], ids=["serving", "shutting-down"])
async def test_only_the_servers_stop_turns_a_cancellation_into_an_answer(draining: bool) -> None:
    """The app run in the caller's task (in-process ASGI): a request whose caller cancels
    it is cancelled — ``CancelledError`` reaches the caller, nothing is answered — unless
    the app's shutdown has begun; then the cancellation is the server cutting the
    request, which is answered -32603 (HTTP 503) instead."""
    server = Server("in-process")
    running = asyncio.Event()

    @server.tool
    async def hang() -> str:
        running.set()
        await asyncio.Event().wait()
        return "never"

    app = server.asgi_app()
    if draining:
        app.begin_shutdown()
    body, headers = _modern(1, "hang", {})
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
        call = asyncio.ensure_future(http.post("/mcp", json=body, headers=headers))
        await asyncio.wait_for(running.wait(), 10)  # the handler runs
        assert not call.done()
        call.cancel()
        if not draining:
            with pytest.raises(asyncio.CancelledError):
                await call
            return
        resp = await asyncio.wait_for(call, 5)
    assert resp.status_code == 503
    assert resp.json() == {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": SHUTDOWN}}


# --- SIGTERM: streams end, requests in progress get a bounded grace -----------------------------------

def _hold_get_stream(http: httpx.Client, url: str, opened: threading.Event) -> None:
    headers = open_session(http, url)
    try:
        with http.stream("GET", url, headers={**headers, "accept": "text/event-stream"}) as resp:
            assert resp.status_code == 200
            opened.set()
            for _ in resp.iter_bytes():
                pass
    except httpx.HTTPError:
        pass  # the server went away: what the test is about


def _hold_listen_stream(http: httpx.Client, url: str, opened: threading.Event, got: list[dict[str, Any]]) -> None:
    body, headers = modern("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    try:
        with http.stream("POST", url, json=body, headers=headers) as resp:
            assert resp.status_code == 200
            parser = SSEParser()
            for chunk in resp.iter_bytes():
                for event in parser.feed(chunk):
                    got.append(json.loads(event.data))
                    opened.set()
    except httpx.HTTPError:
        pass


def test_sigterm_with_an_open_get_stream_and_listen_stream_exits_without_waiting_for_the_grace() -> None:
    """The streams end at SIGTERM, so they do not hold the shutdown: the server exits
    long before its 60 s grace (what it would wait for a request in progress)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with listening(server_command("polling_http", str(port), "60"), port, stderr=subprocess.DEVNULL) as proc:
        got: list[dict[str, Any]] = []
        opened = [threading.Event(), threading.Event()]
        with httpx.Client(timeout=httpx.Timeout(10, read=30)) as http:
            threads = [
                threading.Thread(target=_hold_get_stream, args=(http, url, opened[0]), daemon=True),
                threading.Thread(target=_hold_listen_stream, args=(http, url, opened[1], got), daemon=True),
            ]
            for thread in threads:
                thread.start()
            assert all(e.wait(10) for e in opened), "the streams did not open"
            started = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
            elapsed = time.monotonic() - started
            for thread in threads:
                thread.join(10)
    assert elapsed < 15, f"exited {elapsed:.1f} s after SIGTERM: the streams held the shutdown (grace 60 s)"
    assert proc.returncode in (0, -signal.SIGTERM)  # uvicorn re-raises the signal it handled
    assert not any(t.is_alive() for t in threads)
    assert "result" in got[-1]  # the listen request was answered before the stream ended


def test_sigterm_lets_a_request_in_progress_finish_and_cuts_one_past_the_grace() -> None:
    """A request that ends within the grace (4 s) is answered; one that would not is cut
    when the grace runs out, and the server exits then."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with listening(server_command("polling_http", str(port), "4"), port, stderr=subprocess.DEVNULL) as proc:
        answers: dict[str, httpx.Response | Exception] = {}

        def call(name: str, arguments: dict[str, Any]) -> None:
            body, headers = modern("tools/call", {"name": name, "arguments": arguments})
            try:
                with httpx.Client(timeout=20) as http:
                    answers[name] = http.post(url, json=body, headers=headers)
            except httpx.HTTPError as exc:
                answers[name] = exc

        threads = [
            threading.Thread(target=call, args=("slow", {"seconds": 0.5}), daemon=True),
            threading.Thread(target=call, args=("wait", {}), daemon=True),
        ]
        for thread in threads:
            thread.start()

        def running() -> list[str]:
            body, headers = modern("tools/call", {"name": "running", "arguments": {}})
            answer = httpx.post(url, json=body, headers=headers, timeout=10).json()
            names: list[str] = answer["result"]["structuredContent"]["result"]
            return names

        wait_until(lambda: running() == ["slow", "wait"], what="both handlers run")
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        elapsed = time.monotonic() - started
        for thread in threads:
            thread.join(10)
    finished = answers["slow"]
    assert isinstance(finished, httpx.Response), finished
    assert finished.status_code == 200
    assert finished.json()["result"]["content"][0]["text"] == "slept 0.5"
    assert not (isinstance(answers["wait"], httpx.Response) and "result" in answers["wait"].text)
    assert 3.5 < elapsed < 4 + MARGIN, f"exited {elapsed:.1f} s after SIGTERM (grace 4 s)"
