"""SSE polling and reconnection over Streamable HTTP (SEP-1699; docs/http.md, "SSE polling").

In a 2025-11-25 session every SSE stream opens with a priming event (an id, no data)
carrying ``retry:``; a handler can end its request's connection early with
``ctx.close_sse_stream()``, and the client reconnects with ``GET`` + ``Last-Event-ID``
after that interval and gets the rest. Served by uvicorn on 127.0.0.1 in this process
(tests/support/servers/polling_http.py), read with raw httpx and with the mcpkit client.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpkit import Client, ClientOptions, HttpTransport, Server
from mcpkit.protocol.sse import SSEEvent, SSEParser
from support.processes import load_server
from support.serving import serve_in_thread
from support.wire import open_session

pytestmark = pytest.mark.timeout(60)

polling = load_server("polling_http")
SERVER: Server = polling.server
_ids = itertools.count(1)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serve_in_thread(SERVER.asgi_app()) as port:
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def sse_url() -> Iterator[str]:
    with serve_in_thread(SERVER.asgi_app(json_response=False, retry_interval=0.25)) as port:
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def json_url() -> Iterator[str]:
    with serve_in_thread(SERVER.asgi_app(json_response=True)) as port:
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def no_retry_url() -> Iterator[str]:
    with serve_in_thread(SERVER.asgi_app(json_response=False, retry_interval=None)) as port:
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10) as client:
        yield client


# --- raw HTTP helpers ------------------------------------------------------------------------------


def _call(name: str, arguments: dict[str, Any], *, progress: bool = False) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if progress:
        params["_meta"] = {"progressToken": "p"}
    return {"jsonrpc": "2.0", "id": next(_ids), "method": "tools/call", "params": params}


def _read(resp: httpx.Response) -> tuple[list[SSEEvent], SSEParser]:
    """Every event of an SSE response, read to its end (the server ends it)."""
    assert resp.headers["content-type"].startswith("text/event-stream"), resp.headers
    parser = SSEParser()
    events: list[SSEEvent] = []
    for chunk in resp.iter_bytes():
        events.extend(parser.feed(chunk))
    return events, parser


def _raw_events(resp: httpx.Response) -> tuple[list[SSEEvent], str]:
    """The events of an SSE response and its raw text (every event, the priming one too)."""
    text = b"".join(resp.iter_bytes())
    parser = SSEParser()
    events = parser.feed(text)
    return events, text.decode()


def _messages(events: list[SSEEvent]) -> list[dict[str, Any]]:
    return [json.loads(e.data) for e in events if e.data]


def _resume(http: httpx.Client, url: str, headers: dict[str, str], last_event_id: str) -> list[dict[str, Any]]:
    """GET the rest of a stream after ``last_event_id``; its JSON-RPC messages."""
    get_headers = {**headers, "accept": "text/event-stream", "last-event-id": last_event_id}
    with http.stream("GET", url, headers=get_headers) as resp:
        assert resp.status_code == 200, resp.read()
        messages: list[dict[str, Any]] = []
        parser = SSEParser()
        for chunk in resp.iter_bytes():
            for event in parser.feed(chunk):
                if event.data:
                    messages.append(json.loads(event.data))
            if messages and "id" in messages[-1] and "method" not in messages[-1]:
                break  # the response: the stream ends with it (or stays live for nothing more)
    return messages


# --- priming events carry retry ---------------------------------------------------------------------


def test_post_and_get_streams_of_a_2025_11_25_session_are_primed_with_retry(http: httpx.Client, url: str) -> None:
    headers = open_session(http, url)
    call = _call("poll", {"before": 1, "pause": 0}, progress=True)
    with http.stream("POST", url, json=call, headers=headers) as resp:
        _, text = _raw_events(resp)
    first = text.split("\n\n")[0].split("\n")
    assert first[0].startswith("id: "), text
    assert first[1:] == ["retry: 1000", "data: "], text
    # The session's GET stream opens the same way (read its first event, then leave).
    with http.stream("GET", url, headers={**headers, "accept": "text/event-stream"}) as resp:
        assert resp.status_code == 200
        parser = SSEParser()
        for chunk in resp.iter_bytes():
            if parser.feed(chunk) or parser.last_event_id:
                break
    assert parser.retry == 1000
    assert parser.last_event_id


def test_retry_interval_sets_the_field_and_none_leaves_it_out(http: httpx.Client, sse_url: str, no_retry_url: str) -> None:
    for target, expected in ((sse_url, 250), (no_retry_url, None)):
        headers = open_session(http, target)
        with http.stream("POST", target, json=_call("echo", {"text": "x"}), headers=headers) as resp:
            events, parser = _read(resp)
        assert parser.retry == expected
        assert events[0].id  # primed either way
        assert not events[0].data
        assert _messages(events)[-1]["result"]["content"][0]["text"] == "x"


def test_revisions_before_2025_11_25_get_no_priming_event(http: httpx.Client, sse_url: str) -> None:
    headers = open_session(http, sse_url, version="2025-06-18")
    with http.stream("POST", sse_url, json=_call("echo", {"text": "old"}), headers=headers) as resp:
        events, parser = _read(resp)
    assert parser.retry is None
    assert all(e.data for e in events)


@pytest.mark.parametrize("value", [-1, float("nan"), float("inf"), "1"])
def test_retry_interval_must_be_seconds(value: Any) -> None:
    with pytest.raises(ValueError, match="retry_interval"):
        SERVER.asgi_app(retry_interval=value)


# --- a handler ends its connection; the client polls -------------------------------------------------


@pytest.mark.parametrize("target", ["url", "sse_url"])
def test_close_sse_stream_ends_the_connection_and_get_resumes_the_rest(
    http: httpx.Client, target: str, request: pytest.FixtureRequest
) -> None:
    """The suite's server-sse-polling: the POST's stream carries only the priming event
    and ends; a GET with its id gets the result. A JSON-by-default server (``url``)
    starts the stream for it."""
    endpoint: str = request.getfixturevalue(target)
    headers = open_session(http, endpoint)
    call = _call("poll", {"pause": 0.1})
    started = time.monotonic()
    with http.stream("POST", endpoint, json=call, headers=headers) as resp:
        assert resp.status_code == 200
        events, parser = _read(resp)
    assert time.monotonic() - started < 5
    assert len(events) == 1  # only the priming event
    assert events[0].id
    assert events[0].data == ""
    assert parser.retry is not None
    rest = _resume(http, endpoint, headers, events[0].id)
    assert rest[-1]["id"] == call["id"]
    assert rest[-1]["result"]["content"][0]["text"] == "closed=True"


def test_messages_before_the_close_arrive_on_the_post_and_the_rest_on_resume(http: httpx.Client, sse_url: str) -> None:
    headers = open_session(http, sse_url)
    call = _call("poll", {"before": 2, "after": 2, "pause": 0.2}, progress=True)
    with http.stream("POST", sse_url, json=call, headers=headers) as resp:
        events, _ = _read(resp)
    seen = _messages(events)
    assert [m["params"]["progress"] for m in seen] == [1, 2]
    rest = _resume(http, sse_url, headers, events[-1].id or "")
    assert [m["params"]["progress"] for m in rest if m.get("method") == "notifications/progress"] == [3, 4]
    assert rest[-1]["result"]["content"][0]["text"] == "closed=True"


def test_close_sse_stream_is_a_no_op_when_json_is_forced(http: httpx.Client, json_url: str) -> None:
    headers = open_session(http, json_url)
    resp = http.post(json_url, json=_call("poll", {"pause": 0}), headers=headers)
    assert resp.headers["content-type"].startswith("application/json")
    assert resp.json()["result"]["content"][0]["text"] == "closed=False"


def test_close_sse_stream_is_a_no_op_before_2025_11_25(http: httpx.Client, url: str) -> None:
    headers = open_session(http, url, version="2025-06-18")
    resp = http.post(url, json=_call("poll", {"pause": 0}), headers=headers)
    assert resp.json()["result"]["content"][0]["text"] == "closed=False"


# --- the mcpkit client honours retry and resumes ------------------------------------------------------


async def test_mcpkit_client_reconnects_after_the_retry_interval_and_gets_everything(sse_url: str) -> None:
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    options = ClientOptions(protocol_version="2025-11-25", request_timeout=10)
    async with Client(HttpTransport(sse_url), options) as client:
        started = time.monotonic()
        result = await client.call_tool("poll", {"before": 1, "after": 2, "pause": 0.0}, on_progress=on_progress)
        elapsed = time.monotonic() - started
        assert result.content[0].text == "closed=True"  # type: ignore[union-attr]
        assert progress == [1, 2, 3]
        assert elapsed >= 0.25  # it waited the server's retry (250 ms) before reconnecting
        assert (await client.call_tool("echo", {"text": "after"})).content[0].text == "after"  # type: ignore[union-attr]


@pytest.mark.parametrize("version", ["2026-07-28", "2025-06-18"])
async def test_close_sse_stream_is_a_no_op_in_the_modern_era_and_older_sessions(url: str, version: str) -> None:
    async with Client(HttpTransport(url), ClientOptions(protocol_version=version)) as client:
        result = await client.call_tool("poll", {"before": 1, "after": 1, "pause": 0})
        assert result.content[0].text == "closed=False"  # type: ignore[union-attr]


async def test_close_sse_stream_is_a_no_op_in_memory() -> None:
    async with Client(SERVER, ClientOptions(protocol_version="2025-11-25")) as client:
        result = await client.call_tool("poll", {"pause": 0})
        assert result.content[0].text == "closed=False"  # type: ignore[union-attr]
