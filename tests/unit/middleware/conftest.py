"""Connecting to a server behind the middleware library (tests/support/servers/guarded.py)
over each transport: in memory, over real HTTP (the server in this process, served by
uvicorn on a thread, so the test can look at what it saw) and over a real stdio process
(a fresh one per connection, its clock standing still)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from types import ModuleType
from typing import Any

import pytest

from mcpkit import Client, ClientOptions, HttpTransport, Server, StdioTransport
from support.processes import load_server, server_command
from support.serving import serve_in_thread

Connect = Callable[..., contextlib.AbstractAsyncContextManager[Client]]


@pytest.fixture(scope="session")
def guarded() -> ModuleType:
    return load_server("guarded")


@pytest.fixture(scope="session")
def mapped() -> ModuleType:
    return load_server("mapped")


@pytest.fixture
def connect() -> Connect:
    @contextlib.asynccontextmanager
    async def make(
        kind: str, era: str, server: Server | None = None, *, script: str = "guarded", **options: Any
    ) -> AsyncIterator[Client]:
        """A client of ``server`` over ``kind``; over stdio, of a fresh process of the
        server script ``script`` (tests/support/servers; ``server`` must then be None)."""
        options.setdefault("request_timeout", 10)
        opts = ClientOptions(protocol_version=era, **options)
        if kind == "stdio":
            assert server is None, "over stdio the server is the script's"
            async with Client(StdioTransport(server_command(script), stderr="devnull"), opts) as client:
                yield client
            return
        assert server is not None
        if kind == "memory":
            async with Client(server, opts) as client:
                yield client
            return
        with serve_in_thread(server.asgi_app()) as port:
            async with Client(HttpTransport(f"http://127.0.0.1:{port}/mcp"), opts) as client:
                yield client

    return make
