"""What interop showed about the Streamable HTTP server and client (issue 10, item 6), each
over real HTTP on 127.0.0.1:

- the HTTP status of modern-era JSON-RPC errors: the documented mapping by default, the
  ``error_status="400"`` switch, and the same status in both response modes;
- a legacy request cancelled by the client: its POST is answered with a -32800 error,
  never an empty 204;
- ``server.run("http")`` exits promptly on SIGTERM while clients hold a GET stream and a
  ``subscriptions/listen`` stream, giving requests in progress a bounded grace;
- ``server.run("http")`` without uvicorn says what to install;
- a client whose modern revision is refused with -32022 mid-session retries once with a
  revision the refusal offers.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpkit import Client, ClientOptions, HttpTransport, McpError, Server
from mcpkit.protocol.sse import SSEParser
from support.eras import LEGACY, MODERN
from support.ports import free_port
from support.processes import listening, load_server, server_command
from support.serving import serve_in_thread

pytestmark = pytest.mark.timeout(60)

SERVER: Server = load_server("polling_http").server
ACCEPT = "application/json, text/event-stream"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
NAMED = {"tools/call": "name", "resources/read": "uri", "prompts/get": "name"}
_ids = itertools.count(1)


@pytest.fixture(scope="module")
def urls() -> Iterator[dict[str, str]]:
    """The server in each response mode, with the default error statuses and with "400"."""
    apps = {
        "auto": SERVER.asgi_app(),
        "sse": SERVER.asgi_app(json_response=False),
        "auto-400": SERVER.asgi_app(error_status="400"),
        "sse-400": SERVER.asgi_app(json_response=False, error_status="400"),
    }
    with (
        serve_in_thread(apps["auto"]) as a,
        serve_in_thread(apps["sse"]) as b,
        serve_in_thread(apps["auto-400"]) as c,
        serve_in_thread(apps["sse-400"]) as d,
    ):
        yield {name: f"http://127.0.0.1:{port}/mcp" for name, port in zip(apps, (a, b, c, d), strict=True)}


def _modern(method: str, params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    body = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": {**params, "_meta": META}}
    headers = {"accept": ACCEPT, "content-type": "application/json", "mcp-protocol-version": MODERN, "mcp-method": method}
    if method in NAMED:
        headers["mcp-name"] = params[NAMED[method]]
    return body, headers


def _legacy_session(http: httpx.Client, url: str) -> dict[str, str]:
    body = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
    }
    resp = http.post(url, json=body, headers={"accept": ACCEPT})
    assert resp.status_code == 200, resp.text
    headers = {"accept": ACCEPT, "mcp-session-id": resp.headers["mcp-session-id"], "mcp-protocol-version": LEGACY}
    http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    return headers


def _messages(resp: httpx.Response) -> list[dict[str, Any]]:
    if resp.headers["content-type"].startswith("application/json"):
        return [resp.json()]
    return [json.loads(e.data) for e in SSEParser().feed(resp.content) if e.data]


# --- the HTTP status of modern-era JSON-RPC errors ----------------------------------------------------

# (what, method, params, code, status by default, status with error_status="400")
ERRORS = [
    ("internal", "resources/read", {"uri": "fail://internal"}, -32603, 500, 400),
    ("unknown method", "tools/frobnicate", {}, -32601, 404, 404),
    ("unknown tool", "tools/call", {"name": "nope", "arguments": {}}, -32602, 400, 400),
    ("handler's own status", "tools/call", {"name": "mcp_fail", "arguments": {"code": -32000, "status": 503}}, -32000, 503, 503),
    ("handler's code", "tools/call", {"name": "mcp_fail", "arguments": {"code": -32099}}, -32099, 400, 400),
    ("handler's -32603", "tools/call", {"name": "mcp_fail", "arguments": {"code": -32603}}, -32603, 500, 400),
]


@pytest.mark.parametrize("mode", ["auto", "sse"])
@pytest.mark.parametrize(("what", "method", "params", "code", "spec", "four"), ERRORS, ids=[e[0] for e in ERRORS])
def test_modern_error_status_by_mapping_and_switch_in_both_response_modes(
    urls: dict[str, str], mode: str, what: str, method: str, params: dict[str, Any], code: int, spec: int, four: int
) -> None:
    with httpx.Client(timeout=10) as http:
        for name, status in ((mode, spec), (f"{mode}-400", four)):
            body, headers = _modern(method, params)
            resp = http.post(urls[name], json=body, headers=headers)
            assert resp.status_code == status, (name, resp.text)
            assert resp.headers["content-type"].startswith("application/json")  # a stream could only say 200
            assert resp.json()["error"]["code"] == code
            assert resp.json()["id"] == body["id"]


def test_the_switch_leaves_spec_required_statuses_and_the_legacy_era_alone(urls: dict[str, str]) -> None:
    with httpx.Client(timeout=10) as http:
        body, headers = _modern("tools/list", {})
        resp = http.post(urls["auto-400"], json=body, headers={**headers, "mcp-protocol-version": "2099-01-01"})
        assert resp.status_code == 400
        assert resp.json()["error"]["code"] == -32020  # header mismatch
        headers = _legacy_session(http, urls["auto-400"])
        call = {"jsonrpc": "2.0", "id": 5, "method": "resources/read", "params": {"uri": "fail://internal"}}
        resp = http.post(urls["auto-400"], json=call, headers=headers)
        assert resp.status_code == 200
        assert resp.json()["error"]["code"] == -32603


def test_error_status_must_be_a_known_value() -> None:
    with pytest.raises(ValueError, match="error_status"):
        SERVER.asgi_app(error_status="500")


# --- a cancelled legacy request is answered -32800, not 204 -------------------------------------------


@pytest.mark.parametrize(("tool", "mode"), [("wait", "auto"), ("talk_then_wait", "auto"), ("wait", "sse")])
async def test_a_cancelled_legacy_request_gets_a_32800_error_not_an_empty_204(urls: dict[str, str], tool: str, mode: str) -> None:
    url = urls[mode]
    async with httpx.AsyncClient(timeout=10) as http:
        with httpx.Client(timeout=10) as sync_http:
            headers = await asyncio.to_thread(_legacy_session, sync_http, url)
        params: dict[str, Any] = {"name": tool, "arguments": {}}
        if tool == "talk_then_wait":
            params["_meta"] = {"progressToken": "t"}
        call = {"jsonrpc": "2.0", "id": 77, "method": "tools/call", "params": params}
        pending = asyncio.create_task(http.post(url, json=call, headers=headers))
        await asyncio.sleep(0.3)  # the handler is running
        note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 77, "reason": "no"}}
        assert (await http.post(url, json=note, headers=headers)).status_code == 202
        resp = await asyncio.wait_for(pending, 5)
    assert resp.status_code == 200
    kind = resp.headers["content-type"]
    assert kind.startswith("application/json" if (tool, mode) == ("wait", "auto") else "text/event-stream")
    last = _messages(resp)[-1]
    assert last == {"jsonrpc": "2.0", "id": 77, "error": {"code": -32800, "message": "Request cancelled"}}


async def test_the_mcpkit_client_cancelling_a_legacy_call_is_unaffected(urls: dict[str, str]) -> None:
    async with Client(HttpTransport(urls["auto"]), ClientOptions(protocol_version=LEGACY, request_timeout=5)) as client:
        task = asyncio.create_task(client.call_tool("wait"))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert (await client.call_tool("echo", {"text": "still here"})).content[0].text == "still here"  # type: ignore[union-attr]


# --- SIGTERM: streams end, requests in progress get a bounded grace -----------------------------------


def _hold_get_stream(http: httpx.Client, url: str, opened: threading.Event) -> None:
    headers = _legacy_session(http, url)
    try:
        with http.stream("GET", url, headers={**headers, "accept": "text/event-stream"}) as resp:
            assert resp.status_code == 200
            opened.set()
            for _ in resp.iter_bytes():
                pass
    except httpx.HTTPError:
        pass  # the server went away: what the test is about


def _hold_listen_stream(http: httpx.Client, url: str, opened: threading.Event, got: list[dict[str, Any]]) -> None:
    body, headers = _modern("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
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


def test_sigterm_with_an_open_get_stream_and_listen_stream_exits_within_2_s() -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with listening(server_command("polling_http", str(port)), port, stderr=subprocess.DEVNULL) as proc:
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
            proc.wait(10)
            elapsed = time.monotonic() - started
            for thread in threads:
                thread.join(5)
    assert elapsed < 2, f"exited {elapsed:.1f} s after SIGTERM"
    assert proc.returncode in (0, -signal.SIGTERM)  # uvicorn re-raises the signal it handled
    assert not any(t.is_alive() for t in threads)
    assert "result" in got[-1]  # the listen request was answered before the stream ended


def test_sigterm_lets_a_request_in_progress_finish_and_cuts_one_past_the_grace() -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with listening(server_command("polling_http", str(port), "1.5"), port, stderr=subprocess.DEVNULL) as proc:
        answers: dict[str, httpx.Response | Exception] = {}

        def call(name: str, arguments: dict[str, Any]) -> None:
            body, headers = _modern("tools/call", {"name": name, "arguments": arguments})
            try:
                with httpx.Client(timeout=10) as http:
                    answers[name] = http.post(url, json=body, headers=headers)
            except httpx.HTTPError as exc:
                answers[name] = exc

        threads = [
            threading.Thread(target=call, args=("slow", {"seconds": 0.7}), daemon=True),
            threading.Thread(target=call, args=("wait", {}), daemon=True),
        ]
        for thread in threads:
            thread.start()
        time.sleep(0.3)  # both are running
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
        elapsed = time.monotonic() - started
        for thread in threads:
            thread.join(5)
    finished = answers["slow"]
    assert isinstance(finished, httpx.Response), finished
    assert finished.status_code == 200
    assert finished.json()["result"]["content"][0]["text"] == "slept 0.7"
    assert not (isinstance(answers["wait"], httpx.Response) and "result" in answers["wait"].text)
    assert 1.0 < elapsed < 3.5, f"exited {elapsed:.1f} s after SIGTERM (grace 1.5 s)"


# --- run("http") without the http extra --------------------------------------------------------------


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


# --- a client's modern revision refused with -32022 mid-session ---------------------------------------


class _Refusing:
    """An ASGI wrapper: the first ``refusals`` modern requests get -32022 (HTTP 400) with
    ``data.supported`` = ``offered``; the rest reach the app. Records each request's
    method and protocol version header."""

    def __init__(self, app: Any, offered: list[str], refusals: int) -> None:
        self.app, self.offered, self.refusals = app, offered, refusals
        self.seen: list[tuple[str, str | None]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = json.loads(b"".join(chunks))
        version = dict(scope["headers"]).get(b"mcp-protocol-version", b"").decode() or None
        self.seen.append((body.get("method"), version))
        if "id" in body and self.refusals > 0:
            self.refusals -= 1
            error = {"code": -32022, "message": "Unsupported protocol version", "data": {"supported": self.offered}}
            raw = json.dumps({"jsonrpc": "2.0", "id": body["id"], "error": error}).encode()
            await send({"type": "http.response.start", "status": 400, "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": raw})
            return
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            message: dict[str, Any] = await receive()
            return message

        await self.app(scope, replay, send)


async def test_a_32022_mid_session_is_retried_once_with_an_offered_version() -> None:
    app = _Refusing(SERVER.asgi_app(), [MODERN, "2025-11-25"], refusals=1)
    with serve_in_thread(app) as port:
        options = ClientOptions(protocol_version=MODERN, request_timeout=5)
        async with Client(HttpTransport(f"http://127.0.0.1:{port}/mcp"), options) as client:
            result = await client.call_tool("echo", {"text": "retried"})
            assert result.content[0].text == "retried"  # type: ignore[union-attr]
            assert client.protocol_version == MODERN
            await client.list_tools()
    assert app.seen == [("tools/call", MODERN), ("tools/call", MODERN), ("tools/list", MODERN)]


async def test_a_32022_offering_nothing_we_speak_is_raised() -> None:
    app = _Refusing(SERVER.asgi_app(), ["2099-01-01", "2025-11-25"], refusals=99)
    with serve_in_thread(app) as port:
        options = ClientOptions(protocol_version=MODERN, request_timeout=5)
        async with Client(HttpTransport(f"http://127.0.0.1:{port}/mcp"), options) as client:
            with pytest.raises(McpError) as caught:
                await client.call_tool("echo", {"text": "x"})
    assert caught.value.code == -32022
    assert not caught.value.local
    assert app.seen == [("tools/call", MODERN)]


async def test_a_32022_for_the_retry_too_is_raised_after_one_retry() -> None:
    app = _Refusing(SERVER.asgi_app(), [MODERN], refusals=99)
    with serve_in_thread(app) as port:
        options = ClientOptions(protocol_version=MODERN, request_timeout=5)
        async with Client(HttpTransport(f"http://127.0.0.1:{port}/mcp"), options) as client:
            with pytest.raises(McpError) as caught:
                await client.list_tools()
    assert caught.value.code == -32022
    assert app.seen == [("tools/list", MODERN), ("tools/list", MODERN)]
