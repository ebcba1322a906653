"""A client that asks several servers at once and copes with the ones that fail.

    python examples/cookbook/fanout_client.py               # the demo: four catalogue servers
    python examples/cookbook/fanout_client.py server NAME   # serve one catalogue over stdio

The client searches four catalogue servers concurrently and merges what they find. One
server stalls on its first call (a transient failure: the client's retry policy sends the
read-only call again and it succeeds), one is always too slow (its retries run out, so the
client marks it down and stops asking), and one cannot even start (it is left out from
the beginning). Every query still gets an answer from the servers that work, with a note
of which ones were missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections import Counter
from dataclasses import dataclass, field

from mcpkit import (
    Client,
    ClientEvent,
    ClientOptions,
    McpError,
    RetriesExhausted,
    RetryPolicy,
    Server,
    StdioTransport,
    ToolAnnotations,
)

CATALOGUES = {
    "books": {"Dune (novel)": 9.99, "The Blue Door": 7.50},
    "music": {"Dune (soundtrack)": 14.00, "Kind of Blue": 11.00},
    "films": {"Dune (film)": 19.99},
    "games": {"Dune II": 5.00},
}

SEARCH_TIMEOUT = 1.0  # each attempt's deadline; connecting keeps the default (30 s)

# --- the servers: one program, four catalogues --------------------------------------------


def make_server(name: str) -> Server:
    server = Server(name, "1.0.0")
    calls = Counter[str]()

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))  # read-only: safe to retry
    async def search(query: str) -> dict[str, float]:
        """Items whose title contains the query, with their prices."""
        calls["search"] += 1
        if name == "music" and calls["search"] == 1:
            await asyncio.sleep(60)  # a stalled upstream, once: a transient failure
        if name == "films":
            await asyncio.sleep(60)  # always stalled
        return {title: price for title, price in CATALOGUES[name].items() if query.lower() in title.lower()}

    return server


def serve(name: str) -> None:
    if name == "games":
        sys.exit("cannot reach the catalogue database")  # a server that never comes up
    make_server(name).run()


# --- the client -------------------------------------------------------------------------------


@dataclass
class Backend:
    """One server, its client, and what the client has seen happen to it."""

    name: str
    client: Client | None = None
    down: str | None = None  # why it is no longer asked
    events: Counter[str] = field(default_factory=Counter)

    def on_event(self, event: ClientEvent) -> None:
        self.events[event.kind] += 1


async def connect(stack: contextlib.AsyncExitStack, backend: Backend) -> None:
    transport = StdioTransport([sys.executable, __file__, "server", backend.name], stderr="capture")
    options = ClientOptions(
        retry=RetryPolicy(3, initial_delay=0.1, jitter=0),  # idempotent calls: up to 3 attempts
        on_event=backend.on_event,
    )
    try:
        backend.client = await stack.enter_async_context(Client(transport, options))
        await backend.client.list_tools()  # the client learns which tools are read-only
    except McpError as err:  # ConnectionClosed, RequestTimeout: this one is down from the start
        said = transport.stderr_output.decode(errors="replace").strip().splitlines()
        reason = said[-1] if said else err.message  # the last line the server wrote, if any
        backend.down = f"did not start: {type(err).__name__}: {reason}"


async def ask(backend: Backend, query: str) -> dict[str, float]:
    """One server's hits; an empty dict, with ``backend.down`` set, when it fails."""
    if backend.client is None or backend.down:
        return {}
    retries = backend.events["retry"]
    try:
        result = await backend.client.call_tool("search", {"query": query}, timeout=SEARCH_TIMEOUT)
    except RetriesExhausted as err:  # every attempt timed out: stop asking (a circuit breaker)
        backend.down = f"marked down after {len(err.attempts)} attempts: {err.attempts[-1].message}"
        return {}
    except McpError as err:  # the connection is gone, or the server refused: the same
        backend.down = f"marked down: {err}"
        return {}
    if result.is_error:
        return {}
    if backend.events["retry"] > retries:
        print(f"  ({backend.name}: retried {backend.events['retry'] - retries}x, then answered)")
    hits = result.structured_content or {}
    return {str(title): float(price) for title, price in hits.items()}


async def search_everywhere(backends: list[Backend], query: str) -> None:
    print(f"search {query!r}:")
    found = await asyncio.gather(*(ask(backend, query) for backend in backends))
    merged = sorted(
        (price, title, backend.name) for backend, hits in zip(backends, found, strict=True) for title, price in hits.items()
    )
    for price, title, source in merged:
        print(f"  {price:6.2f}  {title}  [{source}]")
    for backend in backends:
        if backend.down:
            print(f"  (missing {backend.name}: {backend.down})")


async def demo() -> None:
    backends = [Backend(name) for name in CATALOGUES]
    async with contextlib.AsyncExitStack() as stack:
        await asyncio.gather(*(connect(stack, backend) for backend in backends))
        print("connected:", ", ".join(b.name for b in backends if not b.down))
        await search_everywhere(backends, "dune")
        await search_everywhere(backends, "blue")
    for backend in backends:  # what on_event saw; "attempt" counts every call that may be retried
        print(f"{backend.name} events:", " ".join(f"{kind}={n}" for kind, n in sorted(backend.events.items())) or "-")


if __name__ == "__main__":
    if sys.argv[1:2] == ["server"] and len(sys.argv) == 3:
        serve(sys.argv[2])
    else:
        asyncio.run(demo())
