"""What the store attacks of tests/hostile/ share (issue 24): the server they attack
(tests/support/servers/hostile_store.py) spawned over HTTP, raw modern-era requests from a
client of the tasks extension (and as a principal, with ``--auth``), a real
``redis-server`` started for one test, and a Redis that hangs: a socket that accepts
connections and never answers.

Every wait is bounded; every process started here is stopped here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import subprocess
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from support.nodes import Redis
from support.ports import free_port
from support.processes import listening, rss_kib, server_command, stop
from support.system import require
from support.wire import messages, modern

#: The client capabilities of a client of the tasks extension.
TASKS_CAPS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


@contextlib.contextmanager
def spawn(*options: str, log: Path | None = None) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """Serve tests/support/servers/hostile_store.py over HTTP with ``options``; yield the
    process and its endpoint's URL. Its stderr goes to ``log`` (else nowhere)."""
    port = free_port()
    stderr: Any = log.open("ab") if log is not None else subprocess.DEVNULL
    try:
        with listening(server_command("hostile_store", str(port), *options), port, stderr=stderr) as proc:
            yield proc, f"http://127.0.0.1:{port}/mcp"
    finally:
        if log is not None:
            stderr.close()


def request(
    method: str, params: dict[str, Any] | None = None, *, token: str | None = None, tasks: bool = True, rid: Any = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(body, headers) of a modern request; from a client of the tasks extension unless
    ``tasks`` is False; with ``Authorization: Bearer token`` when given."""
    meta = {"io.modelcontextprotocol/clientCapabilities": TASKS_CAPS} if tasks else None
    body, headers = modern(method, params, meta=meta, rid=rid)
    if method.startswith("tasks/") and params and isinstance(params.get("taskId"), str):
        headers["mcp-name"] = params["taskId"]  # the task methods mirror their task id
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    return body, headers


def post(http: httpx.Client, url: str, method: str, params: dict[str, Any] | None = None, **options: Any) -> httpx.Response:
    """POST one modern request (see :func:`request`); the response, whatever its status."""
    body, headers = request(method, params, **options)
    return http.post(url, content=json.dumps(body), headers=headers)


def answer(resp: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC response of a JSON or SSE reply (the last message)."""
    found = messages(resp)
    assert found, f"HTTP {resp.status_code}: no message in {resp.text[:300]!r}"
    return found[-1]


def call(http: httpx.Client, url: str, tool: str, arguments: dict[str, Any], **options: Any) -> httpx.Response:
    """``tools/call`` of ``tool``."""
    return post(http, url, "tools/call", {"name": tool, "arguments": arguments}, **options)


def memory(http: httpx.Client, url: str, token: str | None = None) -> dict[str, int]:
    """The server's ``memory`` tool: ``{"traced": bytes, "rss": bytes}``."""
    reply = answer(call(http, url, "memory", {}, token=token))
    structured: dict[str, int] = reply["result"]["structuredContent"]
    return structured


def rss_mb(proc: subprocess.Popen[bytes]) -> float:
    """A process's resident memory in MB."""
    return rss_kib(proc.pid) / 1024


@contextlib.contextmanager
def redis_server(directory: Path) -> Iterator[Redis]:
    """A real redis-server on a free port of 127.0.0.1, data in ``directory``; stopped at the end."""
    require("redis-server")
    server = Redis(directory)
    server.start()
    try:
        yield server
    finally:
        assert server.proc is not None
        if server.proc.poll() is None:
            server.proc.send_signal(signal.SIGCONT)  # in case the test stopped it
        stop(server.proc)


@contextlib.contextmanager
def hung_redis() -> Iterator[str]:
    """A "Redis" that accepts every connection and never answers a byte; yields its URL."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    held: list[socket.socket] = []
    done = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            held.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
    finally:
        done.set()
        thread.join(5)
        for conn in held:
            conn.close()
        listener.close()



class Listen:
    """One ``subscriptions/listen`` over HTTP, held open by a task of its own (see
    :func:`listen`): ``status`` and ``first`` (the acknowledgement, or the error) once
    known, then the count of ``notifications/resources/updated`` read (``updates``) and
    of every notification by method (``notices``)."""

    def __init__(self) -> None:
        self.status = 0
        self.first: dict[str, Any] | None = None
        self.updates = 0
        self.notices: Counter[str] = Counter()
        self.known = asyncio.Event()
        self.stop = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    @property
    def open(self) -> bool:
        return self.status == 200 and self.first is not None and "method" in self.first

    async def close(self) -> None:
        self.stop.set()
        if self.task is not None:
            await asyncio.gather(self.task, return_exceptions=True)


def listen(http: httpx.AsyncClient, url: str, notifications: dict[str, Any], *, token: str | None = None) -> Listen:
    """Open a ``subscriptions/listen`` with filter ``notifications``; await ``.known``
    for its first answer, ``.close()`` to end it (the connection is closed)."""
    held = Listen()

    async def run() -> None:
        body, headers = request("subscriptions/listen", {"notifications": notifications}, token=token)
        try:
            async with http.stream("POST", url, content=json.dumps(body), headers=headers) as resp:
                held.status = resp.status_code
                if not resp.headers.get("content-type", "").startswith("text/event-stream"):
                    held.first = json.loads(await resp.aread())
                    held.known.set()
                    return
                reading = asyncio.ensure_future(_read_events(resp, held))
                stopping = asyncio.ensure_future(held.stop.wait())
                await asyncio.wait({reading, stopping}, return_when=asyncio.FIRST_COMPLETED)
                reading.cancel()
                stopping.cancel()
        finally:
            held.known.set()

    held.task = asyncio.ensure_future(run())
    return held


async def _read_events(resp: httpx.Response, held: Listen) -> None:
    async for line in resp.aiter_lines():
        if not line.startswith("data:"):
            continue
        if held.first is None:
            held.first = json.loads(line[5:])
            held.known.set()
        elif "resources/updated" in line:
            held.updates += 1
        elif "list_changed" in line:
            held.notices[json.loads(line[5:]).get("method", "")] += 1
