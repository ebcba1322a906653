"""mcpkit's client under load (the client workloads of ``run.py``, and ``run.py profile``):
``call_tool("echo")`` with N calls in flight, every answer checked; prints one JSON line
(see _loop.py). ``--group`` makes the same calls through a ``ClientGroup`` holding that
one server (the tool is then ``bench.echo``): what the multi-server host adds to a call.

    python benchmarks/perf/clients/mcpkit_client.py --stdio "python benchmarks/perf/servers/raw_floor.py" --seconds 5
    python benchmarks/perf/clients/mcpkit_client.py --http http://127.0.0.1:8000/mcp --era modern -c 16
    python benchmarks/perf/clients/mcpkit_client.py --stdio "python benchmarks/perf/servers/raw_floor.py" --group
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from _loop import Echo, main

from mcpkit import CallToolResult, Client, ClientGroup, ClientOptions, HttpTransport, StdioTransport, TextContent

ERAS = {"modern": "2026-07-28", "legacy": "2025-11-25"}


def _text(result: CallToolResult) -> str | None:
    block = result.content[0] if result.content else None
    return block.text if not result.is_error and isinstance(block, TextContent) else None


@asynccontextmanager
async def connect(args: argparse.Namespace) -> AsyncIterator[Echo]:
    transport = StdioTransport(args.argv, stderr="devnull") if args.argv else HttpTransport(args.http)
    options = ClientOptions(protocol_version=ERAS[args.era])
    if args.group:
        async with ClientGroup({"bench": transport}, options) as group:

            async def echo_group(text: str) -> str | None:
                return _text(await group.call_tool("bench.echo", {"text": text}))

            yield echo_group
        return
    async with Client(transport, options) as client:

        async def echo(text: str) -> str | None:
            return _text(await client.call_tool("echo", {"text": text}))

        yield echo


def flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--era", choices=ERAS, default="legacy")
    p.add_argument("--group", action="store_true", help="call through a ClientGroup of this one server")


if __name__ == "__main__":
    main(__doc__.splitlines()[0], connect, flags)
