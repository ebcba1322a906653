"""Streamable HTTP: keep-alive HTTP/1.1 connections on raw asyncio streams, one request in
flight per connection, in either protocol era.

- **legacy** (2025-11-25 and before): ``initialize`` first; the ``Mcp-Session-Id`` it
  returns (a stateless server returns none) and ``MCP-Protocol-Version`` go on every
  later request.
- **modern** (2026-07-28): no handshake and no session; every request carries ``_meta``
  (see ``wire.MODERN_META``) and the mirrored ``MCP-Protocol-Version``, ``Mcp-Method``
  and ``Mcp-Name`` headers.

Answers may be ``application/json`` or ``text/event-stream`` (chunked or with a length).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from .procs import BenchError
from .wire import INITIALIZED, MODERN, MODERN_META, Request, initialize

BODY_LIMIT = 64 * 1024 * 1024


@dataclass
class Session:
    """What a legacy client keeps after ``initialize``; ``id`` is None when stateless."""

    id: str | None
    version: str

    def headers(self) -> bytes:
        sid = f"Mcp-Session-Id: {self.id}\r\n" if self.id else ""
        return f"{sid}MCP-Protocol-Version: {self.version}\r\n".encode("latin-1")


def parse_sse(body: bytes) -> list[Any]:
    """The JSON messages of an SSE body (events without data, and comments, skipped)."""
    messages = []
    for event in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = [line[5:].removeprefix(b" ") for line in event.split(b"\n") if line.startswith(b"data:")]
        if data:
            with contextlib.suppress(ValueError):
                messages.append(json.loads(b"\n".join(data)))
    return messages


Call = Callable[[bytes, int], Awaitable[dict[str, Any]]]


class HttpPeer:
    """One keep-alive connection to ``http://127.0.0.1:<port><path>``."""

    def __init__(self, port: int, path: str = "/mcp") -> None:
        self.port = port
        self.path = path
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.reconnects = 0
        self._start = f"{{}} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".format

    async def connect(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port, limit=BODY_LIMIT)
        sock = self.writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    def head(self, verb: str, extra: bytes, length: int | None) -> bytes:
        """A request head; ``extra`` is header lines, each ending in CRLF."""
        start = self._start(verb).encode("latin-1")
        accept = b"Accept: text/event-stream\r\n" if verb == "GET" else b"Accept: application/json, text/event-stream\r\n"
        size = b"" if length is None else b"Content-Type: application/json\r\nContent-Length: %d\r\n" % length
        return start + accept + size + extra + b"\r\n"

    async def exchange(self, data: bytes) -> tuple[int, dict[str, str], bytes]:
        """Send a whole request; read the whole response. A connection the server closed
        while idle is opened again, once."""
        for attempt in (0, 1):
            if self.writer is None:
                await self.connect()
            assert self.writer is not None
            try:
                self.writer.write(data)
                return await self._response()
            except (ConnectionError, asyncio.IncompleteReadError) as exc:
                self.close()
                self.reconnects += 1
                if attempt:
                    raise BenchError(f"HTTP connection failed: {exc!r}") from None
        raise AssertionError("unreachable")

    async def _head(self) -> tuple[int, dict[str, str]]:
        assert self.reader is not None
        lines = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        return status, headers

    async def _response(self) -> tuple[int, dict[str, str], bytes]:
        reader = self.reader
        assert reader is not None
        status, headers = await self._head()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
                parts.append(await reader.readexactly(size))
                await reader.readexactly(2)
            while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers
                pass
            body = b"".join(parts)
        elif "content-length" in headers:
            body = await reader.readexactly(int(headers["content-length"]))
        elif status in (202, 204, 304):
            body = b""
        else:
            body = await reader.read()
            headers["connection"] = "close"
        if headers.get("connection", "").lower() == "close":
            self.close()
        return status, headers, body

    async def post(self, body: bytes, extra: bytes) -> tuple[int, dict[str, str], list[Any]]:
        """POST one JSON-RPC message; the JSON-RPC messages of the answer."""
        status, headers, payload = await self.exchange(self.head("POST", extra, len(body)) + body)
        if status != 200 or not payload:
            return status, headers, []
        if headers.get("content-type", "").startswith("text/event-stream"):
            return status, headers, parse_sse(payload)
        message = json.loads(payload)
        return status, headers, message if isinstance(message, list) else [message]

    async def initialize(self, rid: int) -> Session:
        """The legacy handshake on this connection: a session (its id None if stateless)."""
        status, headers, messages = await self.post(initialize(rid), b"")
        answer = next((m for m in messages if isinstance(m, dict) and m.get("id") == rid), None)
        if status != 200 or answer is None or not isinstance(answer.get("result"), dict):
            raise BenchError(f"initialize got HTTP {status}: {str(messages)[:300]}")
        session = Session(headers.get("mcp-session-id"), answer["result"].get("protocolVersion", "?"))
        status, _, _ = await self.exchange(self.head("POST", session.headers(), len(INITIALIZED)) + INITIALIZED)
        if status not in (200, 202, 204):
            raise BenchError(f"notifications/initialized got HTTP {status}")
        return session

    def caller(self, request: Request, session: Session | None) -> tuple[Call, bytes]:
        """A function that sends one request of this kind and returns its answer, and the
        ``_meta`` the request bodies must carry: modern without a session, else legacy."""
        if session is None:
            extra = f"MCP-Protocol-Version: {MODERN}\r\nMcp-Method: {request.method}\r\n"
            extra += f"Mcp-Name: {request.tool}\r\n" if request.tool else ""
            headers, meta = extra.encode("latin-1"), MODERN_META
        else:
            headers, meta = session.headers(), b""

        async def call(body: bytes, rid: int) -> dict[str, Any]:
            status, _, messages = await self.post(body, headers)
            for message in messages:
                if isinstance(message, dict) and message.get("id") == rid and "method" not in message:
                    return message
            return {"http_error": f"HTTP {status}, no answer with id {rid} in {str(messages)[:160]}"}

        return call, meta

    async def open_stream(self, session: Session) -> None:
        """Open the session's GET stream on this connection and leave it open (idle)."""
        if self.writer is None:
            await self.connect()
        assert self.writer is not None
        self.writer.write(self.head("GET", session.headers(), None))
        status, headers = await self._head()
        if status != 200 or not headers.get("content-type", "").startswith("text/event-stream"):
            raise BenchError(f"GET stream refused: HTTP {status}")

    def stream_open(self) -> bool:
        """Whether the server still holds this connection's stream open."""
        return self.writer is not None and self.reader is not None and not self.reader.at_eof()

    async def delete(self, session: Session) -> None:
        if session.id is not None:
            with contextlib.suppress(BenchError, OSError):
                await self.exchange(self.head("DELETE", session.headers(), None))
