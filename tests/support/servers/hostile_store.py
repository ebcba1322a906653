"""The server the store attacks of tests/hostile/ (issue 24: task store bounds, URI
templates, listen bounds, store failures, list changes between nodes) and the soak's
store part (benchmarks/soak/soak_store.py) run against.

    python tests/support/servers/hostile_store.py PORT [options]     # Streamable HTTP on 127.0.0.1:PORT/mcp
    python tests/support/servers/hostile_store.py --stdio [options]  # stdio

Options (all optional): ``--redis URL`` shares tasks, sessions, events and the bus
through the Redis at URL (prefix ``--prefix``, default ``hostile``; ``--redis-timeout``
seconds, default 30: generous, so that a loaded machine does not decide a test; the
tests of a failing Redis pass their own); ``--auth`` requires a bearer token, ``alice``, ``bob`` or
``carol`` (each its own principal); ``--workers N`` runs N uvicorn worker processes on
the port; ``--server-option NAME=VALUE`` and ``--store-option NAME=VALUE`` (ints) pass
an option to ``Server(...)`` or to the task store (``InMemoryTaskStore``, or
``RedisStore`` with ``--redis``; e.g. ``max_tasks=500``), if it takes it;
``--tracemalloc`` starts tracemalloc at start-up (for the ``memory`` tool).

Tools: ``keep(data)`` (``task=True``) answers ``data``; ``keep_required(data)``
(``task="required"``) the same, only as a task; ``big(size)`` (``task=True``) answers
``size`` characters; ``quick(n)`` answers ``n`` (no task); ``touch(uri, times=1)`` announces
that resource ``uri`` changed (``times`` times); ``add_tool_sync(name)`` (a plain ``def``) and
``add_tool_async(name)`` register a tool ``name`` (and say which process did);
``listens()`` says how many ``subscriptions/listen`` are open in this process (and its id); ``memory()`` is the memory Python
holds (tracemalloc's current bytes after a collection, with ``--tracemalloc``) and the
RSS, in bytes. Resource templates: ``x://{+a}/{+b}``, ``y://{+a}/{+b}/{+c}``,
``item://{name}``; a resource ``data://hello``.
"""

from __future__ import annotations

import gc
import inspect
import os
import sys
import tracemalloc
from pathlib import Path
from typing import Any

from mcpkit import Server


def _flag(name: str) -> str | None:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None


def _options(name: str, target: Any) -> dict[str, Any]:
    """The ``name KEY=INT`` options that ``target`` takes (others are dropped, so that the
    attacks can also run against an mcpkit from before their bounds)."""
    accepted = inspect.signature(target).parameters
    found: dict[str, Any] = {}
    for i, arg in enumerate(sys.argv):
        if arg == name:
            key, _, value = sys.argv[i + 1].partition("=")
            if key in accepted:
                found[key] = int(value)
    return found


if "--tracemalloc" in sys.argv:
    tracemalloc.start()

REDIS_URL = _flag("--redis")
store: Any = None
task_store: Any = None
bus: Any = None
if REDIS_URL is not None:
    from mcpkit.stores.redis import RedisStore

    store = RedisStore(
        REDIS_URL,
        prefix=_flag("--prefix") or "hostile",
        timeout=float(_flag("--redis-timeout") or 30.0),
        heartbeat=0.5,
        **_options("--store-option", RedisStore),
    )
    task_store, bus = store.tasks, store.bus
elif "--store-option" in sys.argv:
    from mcpkit import InMemoryTaskStore

    task_store = InMemoryTaskStore(**_options("--store-option", InMemoryTaskStore))

server = Server(
    "hostile-store",
    "1.0.0",
    state_key="the same key on every node of the test",
    task_store=task_store,
    bus=bus,
    task_poll_interval=0.05,
    **_options("--server-option", Server),
)


@server.tool(task=True)
def keep(data: str) -> str:
    """Answer ``data`` (as a task, for a client of the tasks extension)."""
    return data


@server.tool(task="required")
async def keep_required(data: str) -> str:
    """Answer ``data``, only ever as a task."""
    return data


@server.tool(task=True)
def big(size: int) -> str:
    """Answer ``size`` characters."""
    return "x" * size


@server.tool
def quick(n: int) -> int:
    """Answer at once."""
    return n


@server.tool
async def touch(uri: str, times: int = 1) -> str:
    """Tell every subscriber of ``uri`` that it changed, ``times`` times."""
    for _ in range(times):
        await server.notify_resource_updated(uri)
    return uri


def _answer(name: str) -> str:
    return name


@server.tool
def add_tool_sync(name: str) -> dict[str, Any]:
    """Register tool ``name`` from a worker thread (a plain ``def`` handler); answers
    the name and this process's id."""
    server.add_tool(name, "added", {"type": "object"}, lambda args: name)
    return {"name": name, "pid": os.getpid()}


@server.tool
async def add_tool_async(name: str) -> dict[str, Any]:
    """Register tool ``name`` on the event loop; answers the name and this process's id."""
    server.add_tool(name, "added", {"type": "object"}, lambda args: name)
    return {"name": name, "pid": os.getpid()}


@server.tool
def listens() -> dict[str, int]:
    """How many ``subscriptions/listen`` are open in this process (before the hub counted
    them: how many subscribers it has, the same over HTTP in the modern era), and its id."""
    hub = server._registry.hub
    count: int = hub.listens if hasattr(hub, "listens") else len(hub)
    return {"listens": count, "pid": os.getpid()}


@server.tool
def memory(trim: bool = False, top: int = 0) -> dict[str, Any]:
    """What this process holds: tracemalloc's current bytes after a collection (0
    without ``--tracemalloc``) and the RSS, in bytes; with ``trim``, after glibc's
    ``malloc_trim`` has returned the free memory it can to the system."""
    gc.collect()
    if trim:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    traced = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0
    rss = 0
    for line in Path(f"/proc/{os.getpid()}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) * 1024
    found: dict[str, Any] = {"traced": traced, "rss": rss}
    if top and tracemalloc.is_tracing():
        stats = tracemalloc.take_snapshot().statistics("traceback")[:top]
        found["top"] = [f"{s.size} B {s.count} blocks: " + " < ".join(str(f) for f in s.traceback[-4:]) for s in stats]
    return found


@server.resource("x://{+a}/{+b}")
def two(a: str, b: str) -> str:
    return f"{len(a)} {len(b)}"


@server.resource("y://{+a}/{+b}/{+c}")
def three(a: str, b: str, c: str) -> str:
    return f"{len(a)} {len(b)} {len(c)}"


@server.resource("item://{name}")
def item(name: str) -> str:
    return f"item {name}"


@server.resource("data://hello")
def hello() -> str:
    return "hello world"


def _auth(port: int) -> object:
    from mcpkit.auth.server import ResourceServer
    from mcpkit.auth.verifiers import FunctionVerifier

    tokens = {name: {"active": True, "sub": name, "scope": "mcp"} for name in ("alice", "bob", "carol")}
    return ResourceServer(f"http://127.0.0.1:{port}/mcp", ["https://as.example"], FunctionVerifier(tokens.get))


def _app() -> Any:
    """The ASGI app (the factory several uvicorn workers each call)."""
    port = int(sys.argv[1])
    options: dict[str, Any] = {"health_path": "/healthz"}
    if store is not None:
        options.update(session_store=store.sessions, event_store=store.events)
    if "--auth" in sys.argv:
        options["auth"] = _auth(port)
    return server.asgi_app(**options)


if __name__ == "__main__":
    if "--stdio" in sys.argv:
        server.run()
    elif _flag("--workers") is not None:  # each worker process imports this module and calls _app()
        import uvicorn

        uvicorn.run(
            "hostile_store:_app",
            factory=True,
            host="127.0.0.1",
            port=int(sys.argv[1]),
            workers=int(_flag("--workers") or 2),
            log_level="warning",
            app_dir=str(Path(__file__).parent),
        )
    else:
        from mcpkit.transports.http.server.uvicorn import run_uvicorn

        # A modern resources/read mirrors its URI in Mcp-Name: the request head is lifted
        # past its 16 KiB cap so that the URIs of the template attacks (up to 100,000
        # characters) reach the server's own bound, max_uri_length (the head cap has its
        # own attacks in tests/hostile/).
        run_uvicorn(
            _app(),
            host="127.0.0.1",
            port=int(sys.argv[1]),
            log_level="warning",
            timeout_graceful_shutdown=1,
            max_header_bytes=1 << 20,
        )
