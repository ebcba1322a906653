"""Fault injection for the resilience tests: a loopback TCP proxy that can delay, drop
or cut connections, and an ASGI wrapper that refuses chosen requests with an HTTP
status (503 + ``Retry-After``, say) before they reach the server.

Both run on real loopback sockets; nothing here patches mcpkit.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any


class FaultProxy:
    """A TCP proxy on 127.0.0.1 in front of ``upstream_port``, in the test's event loop.

    Faults, each for the next connections that match:

    * :meth:`drop` — a connection whose client bytes contain ``marker`` goes silent: those
      bytes and everything after them are swallowed, nothing comes back (a request lost
      on the way: the client's deadline is all that ends it);
    * ``delay`` — every chunk going back to the client waits this long first;
    * :meth:`cut` — close every open connection at once (a crashed server or a reset).

    ``forwarded`` counts, per marker, the client chunks that contained it and went through.
    """

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.delay = 0.0
        self._drops: Counter[bytes] = Counter()
        self.dropped: Counter[bytes] = Counter()
        self.forwarded: Counter[bytes] = Counter()
        self._watch: set[bytes] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None
        self.port = 0

    def drop(self, marker: bytes, times: int = 1) -> None:
        """Swallow the next ``times`` connections whose client bytes contain ``marker``."""
        self._drops[marker] += times
        self._watch.add(marker)

    def watch(self, marker: bytes) -> None:
        """Count the client chunks containing ``marker`` in :attr:`forwarded`."""
        self._watch.add(marker)

    def cut(self) -> int:
        """Close every open connection (both sides); returns how many there were."""
        writers = list(self._writers)
        for writer in writers:
            writer.transport.abort()
        return len(writers) // 2

    async def __aenter__(self) -> FaultProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        self.cut()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            writer.transport.abort()
            return
        self._writers |= {writer, up_writer}
        silent = asyncio.Event()  # set once this connection was chosen to be dropped
        tasks = [
            asyncio.create_task(self._pump(reader, up_writer, silent, outbound=True)),
            asyncio.create_task(self._pump(up_reader, writer, silent, outbound=False)),
        ]
        self._tasks.update(tasks)
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._tasks.difference_update(tasks)
            for w in (writer, up_writer):
                self._writers.discard(w)
                w.transport.abort()

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, silent: asyncio.Event, *, outbound: bool
    ) -> None:
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                return  # EOF: the connection ends (the other pump is cancelled)
            if outbound:
                for marker in self._watch:
                    if marker in chunk:
                        if self._drops[marker] > 0:
                            self._drops[marker] -= 1
                            self.dropped[marker] += 1
                            silent.set()
                        elif not silent.is_set():
                            self.forwarded[marker] += 1
            if silent.is_set():
                continue  # swallowed, both ways
            if not outbound and self.delay:
                await asyncio.sleep(self.delay)
            writer.write(chunk)
            await writer.drain()


class Refusals:
    """An ASGI wrapper that answers the next POSTs of chosen JSON-RPC methods with an
    HTTP error status (and ``Retry-After``), without passing them on.

    Thread-safe: the app runs in uvicorn's thread, the test configures it from its own.
    ``refused`` counts the refusals per method, ``passed`` the POSTs let through.
    """

    def __init__(self, app: Any) -> None:
        self.app = app
        self._lock = threading.Lock()
        self._plan: dict[str, list[tuple[int, str | None]]] = {}
        self.refused: Counter[str] = Counter()
        self.passed: Counter[str] = Counter()

    def refuse(self, method: str, status: int, *, times: int = 1, retry_after: str | None = None) -> None:
        """Answer the next ``times`` POSTs of ``method`` with ``status``."""
        with self._lock:
            self._plan.setdefault(method, []).extend([(status, retry_after)] * times)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        method = _method_of(body)
        with self._lock:
            plan = self._plan.get(method)
            refusal = plan.pop(0) if plan else None
            (self.refused if refusal else self.passed)[method] += 1
        if refusal is not None:
            status, retry_after = refusal
            headers = [(b"content-type", b"text/plain")]
            if retry_after is not None:
                headers.append((b"retry-after", retry_after.encode()))
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": b"try again later"})
            return
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def _method_of(body: bytes) -> str:
    try:
        message = json.loads(body)
    except ValueError:
        return ""
    method = message.get("method") if isinstance(message, dict) else None
    return method if isinstance(method, str) else ""


@contextlib.asynccontextmanager
async def proxy_to(port: int) -> AsyncIterator[FaultProxy]:
    """A :class:`FaultProxy` in front of 127.0.0.1:``port``, for the duration."""
    async with FaultProxy(port) as proxy:
        yield proxy
