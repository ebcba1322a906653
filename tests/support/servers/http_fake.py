"""A scripted Streamable HTTP server (raw ASGI) for the HTTP client tests.

``python tests/support/servers/http_fake.py PORT`` serves on 127.0.0.1:PORT:

* ``/status/<code>``: every POST answers ``<code>`` with a long plain-text body holding
  control characters, and ``Retry-After: 7``;
* ``/garbled``: every POST answers 200 ``application/json`` that is not JSON;
* ``/rpcerror``: every POST answers 400 with a JSON-RPC error whose id is null;
* ``/modern``: a 2026-07-28 server: ``server/discover``, ``tools/list`` (one tool with
  valid ``x-mcp-header`` annotations, one with an invalid one), ``tools/call`` of
  ``headers`` (returns the ``mcp-*`` request headers as JSON text), ``drop`` (one
  progress event, then the SSE stream ends without a response) and ``hang`` (one
  progress event, then waits for the client to disconnect, which it logs);
* ``/legacy``: a 2025-11-25 server with sessions: ``initialize`` mints ``s1``, ``s2``…;
  unknown sessions get 404; ``tools/call`` of ``echo``, ``forget`` (answers, then
  forgets the session) and ``stream`` (an SSE stream with a priming event carrying
  ``retry: 150``, three progress events, then the stream ends; GET with
  ``Last-Event-ID`` replays the rest and the response). GET without ``Last-Event-ID``
  opens a stream that sends one ``ping`` request and stays open;
* ``/legacy404``: as ``/legacy`` but every request with a session id gets 404;
* ``GET /_log``: every request received so far (method, path, headers, body, time);
* ``GET /_wait?method=M&contains=S&session=I&count=N&timeout=T``: the same, sent once
  at least ``N`` entries have method ``M`` (any if empty), ``S`` in their body and
  session id ``I`` (any if empty), or after ``T`` seconds (default 10) if that never
  happens; the test then asserts on what it got.

``python tests/support/servers/http_fake.py --fd FD`` serves on the listening socket ``FD``
instead, inherited from the test (which bound it, so no other process can take its port).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import sys
import time
from typing import Any
from urllib.parse import parse_qs

import uvicorn

Scope = dict[str, Any]
LOG: list[dict[str, Any]] = []
SESSIONS: set[str] = set()
_ids = itertools.count(1)
STREAMS: dict[str, list[bytes]] = {}  # stream id -> events still to replay
_news: list[asyncio.Future[None]] = []  # the waiters of /_wait, woken by every new entry


def _record(entry: dict[str, Any]) -> None:
    LOG.append(entry)
    while _news:
        waiter = _news.pop()
        if not waiter.done():
            waiter.set_result(None)


async def _wait(scope: Scope) -> None:
    """Return once the log holds what the query of /_wait asks for, or its timeout passed."""
    query = {k: v[-1] for k, v in parse_qs(scope["query_string"].decode()).items()}
    method, contains, session = query.get("method", ""), query.get("contains", ""), query.get("session", "")
    count, timeout = int(query.get("count", "1")), float(query.get("timeout", "10"))

    def matches(e: dict[str, Any]) -> bool:
        in_session = session in ("", e.get("headers", {}).get("mcp-session-id"))
        return method in ("", e["method"]) and contains in e.get("body", "") and in_session

    def matching() -> int:
        return sum(1 for e in LOG if matches(e))

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while matching() < count and loop.time() < deadline:
        waiter = loop.create_future()
        _news.append(waiter)
        try:
            await asyncio.wait_for(waiter, deadline - loop.time())
        except TimeoutError:
            return


async def _body(receive: Any) -> bytes:
    out = b""
    while True:
        msg = await receive()
        out += msg.get("body", b"")
        if not msg.get("more_body"):
            return out


async def _respond(send: Any, status: int, body: bytes = b"", ctype: str = "application/json", extra: Any = ()) -> None:
    headers = [(b"content-type", ctype.encode()), *extra] if body else list(extra)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _json(obj: Any) -> bytes:
    return json.dumps(obj).encode()


def _event(data: Any, event_id: str | None = None, retry: int | None = None) -> bytes:
    out = f"id: {event_id}\n" if event_id is not None else ""
    out += f"retry: {retry}\n" if retry is not None else ""
    return (out + "data: " + (json.dumps(data) if data is not None else "") + "\n\n").encode()


def _result(rid: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def _text(rid: Any, text: str) -> dict[str, Any]:
    return _result(rid, {"content": [{"type": "text", "text": text}]})


def _progress(token: Any, i: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": i, "total": 5}}


TOOLS = [
    {
        "name": "headers",
        "inputSchema": {
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "opts": {"type": "object", "properties": {"flag": {"type": "boolean", "x-mcp-header": "Flag"}}},
                "n": {"type": "integer", "x-mcp-header": "N"},
            },
        },
    },
    {
        "name": "bad",
        "inputSchema": {
            "type": "object",
            "properties": {"xs": {"type": "array", "items": {"type": "string", "x-mcp-header": "X"}}},
        },
    },
    {"name": "drop", "inputSchema": {"type": "object"}},
]


async def modern(scope: Scope, msg: dict[str, Any], receive: Any, send: Any, headers: dict[str, str]) -> None:
    rid, method, params = msg.get("id"), msg.get("method"), msg.get("params") or {}
    if rid is None:
        await _respond(send, 202)
    elif method == "server/discover":
        await _respond(send, 200, _json(_result(rid, {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}})))
    elif method == "tools/list":
        await _respond(send, 200, _json(_result(rid, {"tools": TOOLS})))
    elif method == "tools/call" and params.get("name") == "headers":
        mirrored = {k: v for k, v in headers.items() if k.startswith("mcp-")}
        await _respond(send, 200, _json(_text(rid, json.dumps(mirrored, sort_keys=True))))
    elif method == "tools/call" and params.get("name") == "drop":
        token = params.get("_meta", {}).get("progressToken")
        await _respond(send, 200, _event(_progress(token, 1)), "text/event-stream")
    elif method == "tools/call" and params.get("name") == "hang":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        token = params.get("_meta", {}).get("progressToken")
        await send({"type": "http.response.body", "body": _event(_progress(token, 1)), "more_body": True})
        while (await receive())["type"] != "http.disconnect":
            pass
        _record({"method": "DISCONNECT", "path": "/modern", "id": rid, "time": time.time()})
    else:
        await _respond(send, 404, _json({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "nope"}}))


async def legacy(scope: Scope, msg: dict[str, Any], send: Any, headers: dict[str, str], always404: bool) -> None:
    rid, method, params = msg.get("id"), msg.get("method"), msg.get("params") or {}
    session = headers.get("mcp-session-id")
    if method == "initialize":
        sid = f"s{next(_ids)}"
        SESSIONS.add(sid)
        result = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "fake", "version": "1"}}
        await _respond(send, 200, _json(_result(rid, result)), extra=[(b"mcp-session-id", sid.encode())])
        return
    if session is None:
        await _respond(send, 400, b"missing session", "text/plain")
        return
    if always404 or session not in SESSIONS:
        await _respond(
            send, 404, _json({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Session not found"}})
        )
        return
    if rid is None or method is None:
        await _respond(send, 202)
        return
    name = params.get("name")
    if name == "forget":
        SESSIONS.discard(session)
        await _respond(send, 200, _json(_text(rid, "forgotten")))
    elif name == "stream":
        token = params.get("_meta", {}).get("progressToken")
        sid = f"st{next(_ids)}"
        later = [
            _event(_progress(token, 4), f"{sid}-4"),
            _event(_progress(token, 5), f"{sid}-5"),
            _event(_text(rid, "streamed"), f"{sid}-6"),
        ]
        STREAMS[sid] = later
        first = _event(None, f"{sid}-0", retry=150) + b"".join(_event(_progress(token, i), f"{sid}-{i}") for i in (1, 2, 3))
        await _respond(send, 200, first, "text/event-stream")
    else:
        await _respond(send, 200, _json(_text(rid, f"echo {params.get('arguments', {}).get('text')}")))


async def get_stream(scope: Scope, receive: Any, send: Any, headers: dict[str, str]) -> None:
    last = headers.get("last-event-id")
    if headers.get("mcp-session-id") not in SESSIONS:
        await _respond(send, 404, b"no session", "text/plain")
        return
    if last is not None:
        sid = last.rpartition("-")[0]
        events = STREAMS.pop(sid, None)
        if events is None:
            await _respond(send, 404, b"unknown event id", "text/plain")
            return
        await _respond(send, 200, b"".join(events), "text/event-stream")
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
    ping = {"jsonrpc": "2.0", "id": "srv-1", "method": "ping"}
    await send({"type": "http.response.body", "body": _event(ping, "g-1"), "more_body": True})
    while (await receive())["type"] != "http.disconnect":
        pass


async def app(scope: Scope, receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            msg = await receive()
            if msg["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif msg["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    path, verb = scope["path"], scope["method"]
    headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
    body = await _body(receive)
    if path in ("/_log", "/_wait"):
        if path == "/_wait":
            await _wait(scope)
        await _respond(send, 200, _json(LOG))
        return
    _record({"method": verb, "path": path, "headers": headers, "body": body.decode("utf-8", "replace"), "time": time.time()})
    if path.startswith("/status/"):
        text = "upstream exploded\x07\x1b[31m " + "x" * 3000
        await _respond(send, int(path.rpartition("/")[2]), text.encode(), "text/plain", [(b"retry-after", b"7")])
    elif path == "/garbled":
        await _respond(send, 200, b"<html>oops\x00 not json", "application/json")
    elif path == "/rpcerror":
        await _respond(send, 400, _json({"jsonrpc": "2.0", "id": None, "error": {"code": -32602, "message": "bad thing"}}))
    elif path in ("/legacy", "/legacy404") and verb == "GET":
        await get_stream(scope, receive, send, headers)
    elif verb == "DELETE":
        SESSIONS.discard(headers.get("mcp-session-id", ""))
        await _respond(send, 200)
    elif path == "/modern":
        await modern(scope, json.loads(body), receive, send, headers)
    elif path in ("/legacy", "/legacy404"):
        await legacy(scope, json.loads(body), send, headers, path == "/legacy404")
    else:
        await _respond(send, 404, b"not here", "text/plain")


if __name__ == "__main__":
    if sys.argv[1] == "--fd":
        config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
        uvicorn.Server(config).run(sockets=[socket.socket(fileno=int(sys.argv[2]))])
    else:
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
