"""A deployment of several mcpkit nodes on loopback, for tests/nodes/: a real
``redis-server``, a real HAProxy round-robining over uvicorn node processes
(tests/support/servers/node_app.py), a raw legacy-session client that can aim each request
at one node, and a small load generator.

Debian's ``redis-server`` and ``haproxy`` come from ``scripts/setup_tests.py``; when they
are missing, :func:`require_binaries` fails the test (never skips it) and names that script.
Everything listens on 127.0.0.1 on free ports; every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from support.eras import LEGACY, MODERN
from support.paths import SERVERS
from support.ports import free_port
from support.processes import stop, wait_port
from support.system import require
from support.waiting import wait_until
from support.wire import INITIALIZED, SSE, initialize


def require_binaries() -> None:
    """Fail the test, naming the setup script, unless redis-server and haproxy are installed."""
    require("redis-server")
    require("haproxy")


def ready(port: int) -> bool:
    """Whether the node on ``port`` answers its readiness probe with 200."""
    with contextlib.suppress(httpx.HTTPError):
        return httpx.get(f"http://127.0.0.1:{port}/healthz/ready", timeout=1).status_code == 200
    return False


def wait_ready(port: int, timeout: float = 20.0) -> None:
    """Return once the node on ``port`` answers its readiness probe with 200."""
    wait_until(lambda: ready(port), timeout=timeout, interval=0.05, what=f"node on port {port} ready")


@dataclass
class Redis:
    """A redis-server with an append-only file in ``directory`` (restarts keep the data)."""

    directory: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        args = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes"]
        args += ["--appendfsync", "always", "--dir", str(self.directory), "--daemonize", "no", "--loglevel", "warning"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port, self.proc)

    def kill(self) -> None:
        assert self.proc is not None
        stop(self.proc, signal.SIGKILL)


@dataclass
class Node:
    """One node process (tests/support/servers/node_app.py); its stderr goes to ``log``."""

    label: str
    redis_url: str
    log: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self, grace: float = 10.0) -> None:
        """Start the node; SIGTERM gives the calls in progress ``grace`` seconds."""
        command = [sys.executable, str(SERVERS / "node_app.py"), str(self.port), self.redis_url, self.label]
        with self.log.open("ab") as log:
            env = {**os.environ, "NODE_GRACE": str(grace)}
            self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log, env=env)

    def wait(self) -> None:
        assert self.proc is not None
        wait_port(self.port, self.proc)
        wait_ready(self.port)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        assert self.proc is not None
        stop(self.proc, signal.SIGKILL)

    def cpu_seconds(self) -> float:
        """CPU time the node process has used so far (user + system)."""
        assert self.proc is not None
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def haproxy_config(frontends: dict[int, list[Node]], keep_alive: tuple[int, ...] = ()) -> str:
    """Round-robin over nodes, one frontend port per group; health-checked on readiness;
    a connection refused by a node is sent to the next one (never a request that reached it);
    a connection serves one request (see the comment), except on the ``keep_alive`` ports."""
    lines = [
        "global",
        "  maxconn 4096",
        "  log stderr format raw local0 info",
        "defaults",
        "  mode http",
        "  log global",
        "  option httplog",
        "  timeout connect 1s",
        "  timeout client 60s",
        "  timeout server 60s",
        # One request per connection: a node that dies mid-request then costs that request a
        # 502. On a kept-alive connection HAProxy would instead close the client's connection
        # without any response (so that a browser retries), which an MCP client takes for
        # the whole server being gone.
        "  option httpclose",
        "  option redispatch",
        "  retries 3",
        "  retry-on conn-failure",
    ]
    for port, nodes in frontends.items():
        lines += [f"frontend f{port}", f"  bind 127.0.0.1:{port}", f"  default_backend b{port}"]
        if port in keep_alive:  # a benchmark: no node dies, so connections may be kept
            lines += ["  no option httpclose"]
        lines += [f"backend b{port}", "  balance roundrobin", "  option httpchk GET /healthz/ready"]
        lines += ["  http-check expect status 200", "  default-server inter 250ms fall 2 rise 1"]
        lines += [f"  server {n.label} 127.0.0.1:{n.port} check" for n in nodes]
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def haproxy(config: str, directory: Path, ports: list[int]) -> Iterator[subprocess.Popen[bytes]]:
    path = directory / f"haproxy-{ports[0]}.cfg"
    path.write_text(config)
    with (directory / "haproxy.log").open("ab") as log:
        proc = subprocess.Popen(["haproxy", "-db", "-f", str(path)], stdout=subprocess.DEVNULL, stderr=log)
    try:
        for port in ports:
            wait_port(port, proc)
        yield proc
    finally:
        stop(proc)


# --- a raw legacy client: each request aimed at a chosen URL -------------------------------------


def _events(text: str) -> list[tuple[str | None, dict[str, Any] | None]]:
    """(id, JSON data) of each SSE event in ``text``."""
    found = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        event_id, data = None, []
        for line in block.split("\n"):
            if line.startswith("id:"):
                event_id = line[3:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if event_id is not None or data:
            joined = "\n".join(data)
            found.append((event_id, json.loads(joined) if joined else None))
    return found


class RawSession:
    """A legacy session driven by hand over plain HTTP, each request to the URL given."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http
        self.session_id: str | None = None
        self._ids = 0

    def headers(self, accept: str = f"application/json, {SSE}") -> dict[str, str]:
        headers = {"Accept": accept, "Content-Type": "application/json", "MCP-Protocol-Version": LEGACY}
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        return headers

    def next_id(self) -> int:
        self._ids += 1
        return self._ids

    async def initialize(self, url: str, capabilities: dict[str, Any] | None = None) -> None:
        body = initialize(LEGACY, rid=self.next_id(), capabilities=capabilities)
        resp = await self.http.post(url, json=body, headers=self.headers())
        assert resp.status_code == 200, resp.text
        self.session_id = resp.headers["mcp-session-id"]
        note = await self.http.post(url, json=INITIALIZED, headers=self.headers())
        assert note.status_code == 202, note.text

    async def request(self, url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """One request; its response (from JSON or the end of an SSE stream)."""
        rid = self.next_id()
        message = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        resp = await self.http.post(url, json=message, headers=self.headers())
        assert resp.status_code == 200, f"{resp.status_code} {resp.text}"
        if resp.headers["content-type"].startswith(SSE):
            for _, data in _events(resp.text):
                if data is not None and data.get("id") == rid:
                    return data
            raise AssertionError(f"no response in the stream: {resp.text}")
        data: dict[str, Any] = resp.json()
        return data

    async def call(self, url: str, tool: str, arguments: dict[str, Any] | None = None) -> str:
        reply = await self.request(url, "tools/call", {"name": tool, "arguments": arguments or {}})
        assert "result" in reply, reply
        text: str = reply["result"]["content"][0]["text"]
        return text

    async def post_message(self, url: str, message: dict[str, Any]) -> int:
        resp = await self.http.post(url, json=message, headers=self.headers())
        return resp.status_code

    @contextlib.asynccontextmanager
    async def stream(self, url: str, method: str = "GET", body: dict[str, Any] | None = None,
                     last_event_id: str | None = None) -> AsyncIterator[SseReader]:
        """An SSE response (the GET stream, a resumption, or a POST answered with SSE)."""
        headers = self.headers(SSE if method == "GET" else f"application/json, {SSE}")
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        async with self.http.stream(method, url, headers=headers, json=body) as resp:
            assert resp.status_code == 200, f"{resp.status_code} {(await resp.aread()).decode(errors='replace')}"
            assert resp.headers["content-type"].startswith(SSE), resp.headers
            yield SseReader(resp)


class SseReader:
    """Reads the events of an SSE response one at a time (with a deadline each)."""

    def __init__(self, resp: httpx.Response) -> None:
        self._chunks = resp.aiter_text()
        self._buffer = ""
        self.last_id: str | None = None

    async def opened(self, timeout: float = 10.0) -> None:
        """Return once the stream's first event (its priming event) has arrived: the node
        is then sending the session's messages on it. Nothing is consumed."""
        async with asyncio.timeout(timeout):
            while "\n\n" not in self._buffer.replace("\r\n", "\n"):
                self._buffer += await self._chunks.__anext__()

    async def next(self, timeout: float = 10.0) -> dict[str, Any]:
        """The next event that carries data (priming events only move ``last_id``)."""
        async with asyncio.timeout(timeout):
            while True:
                while "\n\n" in self._buffer.replace("\r\n", "\n"):
                    text = self._buffer.replace("\r\n", "\n")
                    block, self._buffer = text.split("\n\n", 1)
                    for event_id, data in _events(block + "\n\n"):
                        if event_id is not None:
                            self.last_id = event_id
                        if data is not None:
                            return data
                self._buffer += await self._chunks.__anext__()

    async def until(self, predicate: Any, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Events read until one satisfies ``predicate`` (included)."""
        seen = []
        deadline = time.monotonic() + timeout
        while True:
            event = await self.next(max(0.01, deadline - time.monotonic()))
            seen.append(event)
            if predicate(event):
                return seen


# --- load ---------------------------------------------------------------------------------------


def tool_call(port: int, tool: str, arguments: dict[str, Any], session_id: str | None = None) -> bytes:
    """The bytes of one complete ``tools/call`` POST to 127.0.0.1:``port``/mcp: modern, or
    legacy in session ``session_id``."""
    params: dict[str, Any] = {"name": tool, "arguments": arguments}
    if session_id is None:
        params["_meta"] = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
        extra = f"MCP-Protocol-Version: {MODERN}\r\nMcp-Method: tools/call\r\nMcp-Name: {tool}\r\n"
    else:
        extra = f"MCP-Protocol-Version: {LEGACY}\r\nMcp-Session-Id: {session_id}\r\n"
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, {SSE}\r\n{extra}Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def _one_connection(port: int, request: bytes, until: float, counts: dict[str, int]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        while time.monotonic() < until:
            writer.write(request)
            status = await reader.readline()
            length = 0
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b""):
                    break
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            await reader.readexactly(length)
            code = status.split()[1:2]
            if code == [b"200"]:
                counts["ok"] += 1
            else:
                counts["failed"] += 1
                key = f"status {code[0].decode() if code else '?'}"
                counts[key] = counts.get(key, 0) + 1
    finally:
        writer.close()


async def load(port: int, requests: list[bytes], *, seconds: float) -> tuple[float, int]:
    """Send each of ``requests`` again and again on a keep-alive connection of its own, for
    ``seconds``; returns the answered requests per second and their number (asserting
    that every answer was 200)."""
    counts = {"ok": 0, "failed": 0}
    started = time.monotonic()
    until = started + seconds
    await asyncio.gather(*(_one_connection(port, request, until, counts) for request in requests))
    elapsed = time.monotonic() - started
    assert counts["failed"] == 0, counts
    return counts["ok"] / elapsed, counts["ok"]
