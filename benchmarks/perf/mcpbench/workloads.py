"""What the table measures, and the targets of the performance issue.

Each workload names its servers in table order; the official SDK (``mcp``) is the
reference every ratio is taken against, and ``floor`` names the floor of its transport.
"""

from __future__ import annotations

from dataclasses import dataclass

from .wire import Ask, Blob, Echo, Elicit, Fail, ListTools, Request

STDIO_SERVERS = ("floor", "mcpkit", "mcp", "fastmcp")
REFERENCE = "mcp"
BLOB_SIZE = 10_000_000  # "a 10 MB tool result": 10^7 bytes


@dataclass(frozen=True)
class Workload:
    id: str
    title: str
    #: "load", "startup" (spawn -> first answer), "import", "import_cpu", "client" (servers are
    #: clients) or "fanout"
    kind: str
    servers: tuple[str, ...]
    transport: str = "stdio"
    request: Request | None = None
    concurrency: int = 1
    tools: int = 0
    floor: str | None = None
    min_ops: int = 1  # a timed phase goes on past its time until this many operations are done
    flags: tuple[str, ...] = ()  # extra command-line flags of the servers (mcpkit's --ask)
    target: str | None = None  # kind "client": the server (of CATALOGUE) every client calls
    subscribers: int = 0  # kind "fanout": listen streams open at once
    about: str = ""

    @property
    def metric(self) -> str:
        if self.kind == "startup":
            return "startup_ms"
        if self.kind == "import":
            return "import_ms"
        if self.kind == "import_cpu":
            return "import_cpu_ms"
        if self.kind == "fanout":
            return "fanout_ms"
        return "mb_s" if self.request is not None and self.request.payload else "rps"

    @property
    def lower_is_better(self) -> bool:
        return self.metric in ("startup_ms", "import_ms", "import_cpu_ms", "fanout_ms")


WORKLOADS = [
    Workload(
        "stdio_echo_c1",
        "stdio echo, 1 in flight",
        "load",
        ("floor", "mcpkit", "mcpkit-modern", "mcpkit-async", "mcp", "fastmcp"),
        request=Echo(),
        floor="floor",
        about="tools/call of a plain def echo tool, one request at a time: the per-request cost on the server",
    ),
    Workload(
        "stdio_echo_c32",
        "stdio echo, 32 in flight",
        "load",
        ("floor", "mcpkit", "mcpkit-async", "mcp", "fastmcp"),
        request=Echo(),
        concurrency=32,
        floor="floor",
        about="the same with 32 requests in flight on the one pipe: concurrency, batching of reads and writes",
    ),
    Workload(
        "stdio_error",
        "stdio tool that raises",
        "load",
        STDIO_SERVERS,
        request=Fail(),
        floor="floor",
        about="a tool that raises RuntimeError: the error path (the answer must be isError true)",
    ),
    Workload(
        "stdio_list500",
        "tools/list of 500 tools",
        "load",
        STDIO_SERVERS,
        request=ListTools(expect=503),
        tools=500,
        floor="floor",
        about="tools/list with 503 tools registered, following nextCursor: encoding a large result",
    ),
    Workload(
        "stdio_blob_10mb",
        "10 MB tool result",
        "load",
        STDIO_SERVERS,
        request=Blob(BLOB_SIZE),
        floor="floor",
        min_ops=3,
        about="a tool that returns 10^7 characters, in MB/s of tool result: framing and encoding of a large answer",
    ),
    Workload(
        "startup",
        "spawn → first answer",
        "startup",
        STDIO_SERVERS,
        floor="floor",
        about="from spawning the process to the answer of initialize (the median of several spawns)",
    ),
    Workload(
        "http_echo_c16",
        "HTTP echo, 16 connections",
        "load",
        ("asgi-floor", "mcpkit", "mcpkit-modern", "mcp", "fastmcp"),
        transport="http",
        request=Echo(),
        concurrency=16,
        floor="asgi-floor",
        about=(
            "Streamable HTTP on uvicorn (each server on the stack its installation gives it), 16 keep-alive"
            " connections, a session each (legacy) or none (modern)"
        ),
    ),
    Workload(
        "stdio_ask_c1",
        "stdio input round, 1 in flight",
        "load",
        ("mcpkit-modern",),
        request=Ask(),
        flags=("--ask",),
        about=(
            "a modern tools/call whose async def tool asks one question (elicitation): the input_required"
            " result, then the retry with the answer and requestState; one operation is both requests"
        ),
    ),
    Workload(
        "http_ask_c16",
        "HTTP input round, 16 connections",
        "load",
        ("mcpkit-modern",),
        transport="http",
        request=Ask(),
        concurrency=16,
        flags=("--ask",),
        about="the same over Streamable HTTP, 16 keep-alive connections (two POSTs per operation)",
    ),
    Workload(
        "stdio_elicit_c1",
        "stdio legacy elicitation round, 1 in flight",
        "load",
        ("mcpkit",),
        request=Elicit(),
        flags=("--ask",),
        about=(
            "a legacy (2025-11-25) tools/call whose async def tool elicits: the server sends elicitation/create"
            " on the same pipe, the load generator answers it, the tool returns; one operation is the call and"
            " the round trip inside it"
        ),
    ),
    Workload(
        "http_listen_fanout",
        "HTTP listen fan-out, 1,000 subscribers",
        "fanout",
        ("mcpkit-modern",),
        transport="http",
        subscribers=1000,
        flags=("--listen",),
        about=(
            "1,000 modern subscriptions/listen streams on one resource, each its own connection; one tools/call"
            " changes it: the time from sending that call to the last of the 1,000 notifications read"
        ),
    ),
    Workload(
        "client_stdio_c1",
        "client: stdio echo to the floor, 1 in flight",
        "client",
        ("mcpkit", "mcp", "fastmcp"),
        target="floor",
        about=(
            "each library's client calling echo on the stdio floor (raw_floor.py), one at a time: calls/s and"
            " the client process's CPU per call"
        ),
    ),
    Workload(
        "client_http_c16",
        "client: HTTP echo to the ASGI floor, 16 in flight",
        "client",
        ("mcpkit", "mcp", "fastmcp"),
        transport="http",
        concurrency=16,
        target="asgi-floor",
        about="the same over Streamable HTTP (legacy era) to the bare ASGI floor, 16 calls in flight",
    ),
    Workload(
        "host_stdio_c1",
        "client: ClientGroup vs direct, stdio floor, 1 in flight",
        "client",
        ("mcpkit", "mcpkit-group", "mcp"),
        target="floor",
        floor="mcpkit",
        about=(
            "mcpkit's client calling echo on the stdio floor directly, and through a ClientGroup holding that"
            " one server (bench.echo): the × floor column is against the direct call"
        ),
    ),
    Workload(
        "import",
        "import time",
        "import",
        ("mcpkit", "mcp", "fastmcp"),
        about="python -X importtime of what a server program imports (mcpkit: from mcpkit import Server)",
    ),
    Workload(
        "import_cpu",
        "import CPU time",
        "import_cpu",
        ("import-floor", "mcpkit", "mcp", "fastmcp"),
        floor="import-floor",
        about=(
            "the process CPU time of the import statement alone (time.process_time around it, in a fresh"
            " interpreter), against import asyncio, msgspec: what any server on mcpkit's stack pays anyway"
        ),
    ),
]
BY_ID = {w.id: w for w in WORKLOADS}


@dataclass(frozen=True)
class Target:
    """A target of the performance issue, for mcpkit's median in a run."""

    workload: str
    text: str
    kind: str  # "ratio" (against against_), "max" (of the metric), "rss" (peak RSS at most, MB)
    threshold: float
    against: str = REFERENCE
    server: str = "mcpkit"  # whose median is held to it


#: Issue 30's targets (its table, in its order), then the earlier ones it did not replace.
#: A time's "≤ k× the floor" is the floor's time over ours, held to at least 1/k.
TARGETS = [
    Target("stdio_echo_c1", "≥ 0.75× the stdlib floor", "ratio", 0.75, "floor"),
    Target("stdio_echo_c1", "≥ 8× the official SDK", "ratio", 8),
    Target("stdio_echo_c1", "≥ 0.95× the stdlib floor", "ratio", 0.95, "floor", "mcpkit-async"),
    Target("stdio_echo_c32", "≥ 0.5× the stdlib floor", "ratio", 0.5, "floor"),
    Target("stdio_echo_c32", "≥ 0.8× the stdlib floor", "ratio", 0.8, "floor", "mcpkit-async"),
    Target("stdio_error", "≥ 10× the official SDK", "ratio", 10),
    Target("http_echo_c16", "≥ 0.5× the bare ASGI floor", "ratio", 0.5, "asgi-floor"),
    Target("http_echo_c16", "≥ 0.5× the bare ASGI floor", "ratio", 0.5, "asgi-floor", "mcpkit-modern"),
    Target("stdio_blob_10mb", "≥ 5× the official SDK's MB/s", "ratio", 5),
    Target("startup", "≤ 2.8× the stdlib floor's time (≥ 0.357×)", "ratio", 1 / 2.8, "floor"),
    Target("import_cpu", "≤ 1.3× import asyncio, msgspec (≥ 0.769×)", "ratio", 1 / 1.3, "import-floor"),
    Target("stdio_echo_c32", "≥ 25× the official SDK", "ratio", 25),
    Target("stdio_list500", "≥ 25× the official SDK", "ratio", 25),
    Target("startup", "≤ 80 ms", "max", 80),
    Target("startup", "≥ 8× faster than the official SDK", "ratio", 8),
    Target("http_echo_c16", "≥ 6× the official SDK", "ratio", 6),
    Target("stdio_echo_c1", "peak RSS ≤ 25 MB", "rss", 25),
    Target("import", "≤ 50 ms", "max", 50),
]
