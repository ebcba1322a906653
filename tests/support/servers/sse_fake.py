"""A scripted server of the deprecated HTTP+SSE transport (raw ASGI), for
tests/e2e/sse/test_client.py; run in a thread with ``support.serving.serve_in_thread``.

``SseFake()`` is the app; what it saw is in its attributes. ``GET /sse?mode=M`` opens a
stream whose first event depends on ``M``:

* ``normal`` (the default): ``endpoint`` naming ``messages?sid=N`` (relative to the
  stream), then the session's messages: a small legacy-era server (``initialize``,
  ``ping``, ``tools/list``, ``tools/call`` of ``echo(text)``, ``end`` — the stream ends
  without an answer —, ``fail`` — its POST is refused 500 ``boom`` — and ``hang`` — its
  POST is never answered);
* ``absolute``: ``endpoint`` naming the same POST URL as an absolute URL;
* ``foreign``: ``endpoint`` naming ``http://elsewhere.invalid/messages``;
* ``silent``: comments only, never an event;
* ``wrong``: a ``message`` event first;
* ``json``: a 200 ``application/json`` answer instead of a stream;
* ``endless``, ``trickle``: a 200 ``text/plain`` body that never ends (64 KiB chunks as
  fast as the client reads them; or one byte every 0.2 s);
* ``twice``: ``endpoint`` as ``normal``, then a second ``endpoint`` naming another session;
* ``path``: ``endpoint`` naming ``/other/messages?sid=N`` (same origin, another path);
* ``port``: ``endpoint`` naming the same host on another port.

``POST /messages?sid=N`` (or ``/other/messages?sid=N``) answers 202 and puts the answers on session N's stream (404 for
an unknown session). ``POST /sse`` answers 405, like a server that only speaks this
transport; any other path answers 404.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from typing import Any
from urllib.parse import parse_qs

Scope = dict[str, Any]

TOOLS = [{"name": name, "description": name, "inputSchema": {"type": "object"}} for name in ("echo", "end", "fail", "hang")]


class SseFake:
    """The ASGI app; ``requests`` lists (method, path) of every HTTP request, ``posted``
    every JSON-RPC message POSTed, ``disconnects`` how many streams the client closed
    (``disconnected`` is set at the first; ``stream_opened`` once a stream started)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []
        self.posted: list[dict[str, Any]] = []
        self.disconnects = 0
        self.disconnected = threading.Event()
        self.stream_opened = threading.Event()
        self._sessions: dict[str, asyncio.Queue[bytes | None]] = {}
        self._ids = itertools.count(1)

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        method, path = scope["method"], scope["path"]
        self.requests.append((method, path))
        query = {k: v[0] for k, v in parse_qs(scope["query_string"].decode()).items()}
        if method == "GET" and path == "/sse":
            await self._stream(query.get("mode", "normal"), scope, receive, send)
        elif method == "POST" and path in ("/messages", "/other/messages"):
            await self._post(query.get("sid", ""), receive, send)
        elif method == "POST" and path == "/sse":
            await _respond(send, 405, b"Method Not Allowed")
        else:
            await _respond(send, 404, b"Not Found")

    async def _stream(self, mode: str, scope: Scope, receive: Any, send: Any) -> None:
        if mode == "json":
            await _respond(send, 200, b"{}", "application/json")
            return
        if mode in ("endless", "trickle"):
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
            left = asyncio.ensure_future(_disconnected(receive))
            try:
                while not left.done():
                    chunk = b"x" * (65536 if mode == "endless" else 1)
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                    await asyncio.sleep(0.001 if mode == "endless" else 0.2)
            finally:
                left.cancel()
                self.disconnects += 1
            return
        sid = str(next(self._ids))
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._sessions[sid] = queue
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        host = dict(scope["headers"])[b"host"].decode()
        first = {
            "normal": f"event: endpoint\ndata: messages?sid={sid}\n\n",
            "absolute": f"event: endpoint\ndata: http://{host}/messages?sid={sid}\n\n",
            "foreign": "event: endpoint\ndata: http://elsewhere.invalid/messages\n\n",
            "silent": ": waiting\n\n",
            "twice": f"event: endpoint\ndata: messages?sid={sid}\n\nevent: endpoint\ndata: messages?sid=0\n\n",
            "path": f"event: endpoint\ndata: /other/messages?sid={sid}\n\n",
            "port": f"event: endpoint\ndata: http://{host.rpartition(':')[0]}:1/messages?sid={sid}\n\n",
            "wrong": 'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/x"}\n\n',
        }[mode]
        await send({"type": "http.response.body", "body": first.encode(), "more_body": True})
        self.stream_opened.set()
        gone = asyncio.ensure_future(_disconnected(receive))
        try:
            while True:
                item = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait({gone, item}, return_when=asyncio.FIRST_COMPLETED)
                if gone in done:
                    item.cancel()
                    self.disconnects += 1
                    self.disconnected.set()
                    return
                data = item.result()
                if data is None:
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                    return
                await send({"type": "http.response.body", "body": b"event: message\ndata: " + data + b"\n\n", "more_body": True})
        finally:
            gone.cancel()
            del self._sessions[sid]

    async def _post(self, sid: str, receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        queue = self._sessions.get(sid)
        if queue is None:
            await _respond(send, 404, b"unknown session")
            return
        msg = json.loads(body)
        self.posted.append(msg)
        if msg.get("method") == "tools/call" and msg["params"]["name"] == "fail":
            await _respond(send, 500, b"boom")
            return
        if msg.get("method") == "tools/call" and msg["params"]["name"] == "hang":
            await _disconnected(receive)
            return
        await _respond(send, 202, b"Accepted")
        answer = _answer(msg)
        if answer is _END:
            queue.put_nowait(None)
        elif answer is not None:
            queue.put_nowait(json.dumps({"jsonrpc": "2.0", "id": msg["id"], **answer}).encode())


_END: Any = object()


async def _disconnected(receive: Any) -> None:
    """Return once the client has gone."""
    while (await receive())["type"] != "http.disconnect":
        pass


def _answer(msg: dict[str, Any]) -> Any:
    """What the fake answers to ``msg``: a dict with ``result`` or ``error``, None for no
    answer, ``_END`` to end the stream."""
    method = msg.get("method")
    if method is None or "id" not in msg:
        return None
    params = msg.get("params") or {}
    if method == "initialize":
        info = {"name": "sse-fake", "version": "1.0"}
        return {"result": {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": info}}
    if method == "ping":
        return {"result": {}}
    if method == "tools/list":
        return {"result": {"tools": TOOLS}}
    if method == "tools/call" and params.get("name") == "echo":
        return {"result": {"content": [{"type": "text", "text": params["arguments"]["text"]}]}}
    if method == "tools/call" and params.get("name") == "end":
        return _END
    return {"error": {"code": -32601, "message": f"Method not found: {method}"}}


async def _respond(send: Any, status: int, body: bytes, content_type: str = "text/plain") -> None:
    headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
