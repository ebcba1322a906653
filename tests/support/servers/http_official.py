"""A server built with the official SDK (PyPI ``mcp``) for the HTTP client tests.

``python tests/support/servers/http_official.py PORT [--stateful] [--sse] [--event-store]``
serves Streamable HTTP on 127.0.0.1:PORT/mcp (stateless JSON by default).

Tools: ``echo(text)``; ``count(steps)`` reports progress 1..steps; ``block(seconds,
tag)`` sleeps and records that it started and whether it was cancelled; ``state(tag)``
returns ``"started"``, ``"cancelled"``, ``"finished"`` or ``"unknown"``; ``settled(tag,
timeout=10)`` waits until that call was cancelled or finished and returns its state (as
it is, if ``timeout`` seconds pass first); ``region(region,
query)`` has ``region`` mirrored in the ``Mcp-Param-Region`` header; ``polled(steps)``
reports progress, closes its SSE stream half way (with ``--event-store`` the client has
to resume with ``Last-Event-ID``) and finishes. Resource ``data://hello``.
"""

from __future__ import annotations

import argparse
import itertools
from collections import defaultdict
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from pydantic import Field

parser = argparse.ArgumentParser()
parser.add_argument("port", type=int)
parser.add_argument("--stateful", action="store_true")
parser.add_argument("--sse", action="store_true")
parser.add_argument("--event-store", action="store_true")
args = parser.parse_args()

mcp = MCPServer("official-http-test", log_level="WARNING")
_state: dict[str, str] = {}
_settled: defaultdict[str, anyio.Event] = defaultdict(anyio.Event)  # set once a block call ends


class MemoryEventStore(EventStore):
    """Every event kept in order; replay sends what followed on the same stream."""

    def __init__(self) -> None:
        self._events: list[tuple[EventId, StreamId, Any]] = []
        self._ids = itertools.count(1)

    async def store_event(self, stream_id: StreamId, message: Any) -> EventId:
        event_id = str(next(self._ids))
        self._events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        index = next((i for i, (eid, _, _) in enumerate(self._events) if eid == last_event_id), None)
        if index is None:
            return None
        stream = self._events[index][1]
        for eid, sid, message in self._events[index + 1 :]:
            if sid == stream and message is not None:
                await send_callback(EventMessage(message, eid))
        return stream


@mcp.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.tool()
async def count(steps: int, ctx: Context) -> str:
    """Report progress 1..steps."""
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i}")
    return "counted"


@mcp.tool()
async def block(seconds: float, tag: str) -> str:
    """Sleep, recording start and cancellation under ``tag``."""
    _state[tag] = "started"
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        _state[tag] = "cancelled"
        _settled[tag].set()
        raise
    _state[tag] = "finished"
    _settled[tag].set()
    return "finished"


@mcp.tool()
def state(tag: str) -> str:
    """What became of the ``block`` call tagged ``tag``."""
    return _state.get(tag, "unknown")


@mcp.tool()
async def settled(tag: str, timeout: float = 10.0) -> str:
    """Wait until the ``block`` call tagged ``tag`` was cancelled or finished; its state."""
    with anyio.move_on_after(timeout):
        await _settled[tag].wait()
    return _state.get(tag, "unknown")


@mcp.tool()
def region(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})], query: str) -> str:
    """Echo the region (mirrored in a header) and the query."""
    return f"{region}|{query}"


@mcp.tool()
async def polled(steps: int, ctx: Context) -> str:
    """Progress, then the stream is closed half way, then more progress."""
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps)
        if i == steps // 2:
            await ctx.close_sse_stream()
            await anyio.sleep(0.2)
    return "polled"


@mcp.resource("data://hello")
def hello() -> str:
    """A fixed text."""
    return "hello world"


if __name__ == "__main__":
    mcp.run(
        "streamable-http",
        host="127.0.0.1",
        port=args.port,
        streamable_http_path="/mcp",
        json_response=not args.sse,
        stateless_http=not args.stateful,
        event_store=MemoryEventStore() if args.event_store else None,
        retry_interval=100 if args.event_store else None,
    )
