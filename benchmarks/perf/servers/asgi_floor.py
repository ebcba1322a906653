"""The floor over Streamable HTTP: a bare ASGI echo app on uvicorn, on the same stack
mcpkit's ``run_uvicorn`` chooses on the same interpreter: httptools and uvloop when they
are installed (uvicorn's ``"auto"``), else h11 and asyncio's loop.

Per request it reads the body, does one ``json.loads`` and one ``json.dumps`` (the answers
of raw_floor.py) and answers ``application/json``: no validation, sessions, header checks
or SSE. A notification gets 202. What a real server costs above this is framework; what
this costs is Python, uvicorn and the load generator on this machine.

    python benchmarks/perf/servers/asgi_floor.py --http PORT [--tools N]
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import uvicorn
from _common import parse_args
from raw_floor import answer, tool_list

ARGS = parse_args("ASGI floor")
TOOLS = tool_list(ARGS.tools)
HEADERS = [(b"content-type", b"application/json"), (b"mcp-session-id", b"floor")]


async def app(
    scope: dict[str, Any],
    receive: Callable[[], Awaitable[dict[str, Any]]],
    send: Callable[[dict[str, Any]], Awaitable[None]],
) -> None:
    if scope["type"] != "http":
        return
    body = b""
    while True:
        event = await receive()
        body += event.get("body", b"")
        if not event.get("more_body"):
            break
    msg = json.loads(body) if body else {}
    if "id" not in msg or scope["method"] != "POST":
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    out = json.dumps({"jsonrpc": "2.0", "id": msg["id"], **answer(msg, TOOLS)}).encode()
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": out})


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=ARGS.http, log_level="warning", http="auto", loop="auto", lifespan="off")
