"""The official SDK's client (``mcp`` 2.3.0) under load, for the client workloads of
``run.py``: ``Client.call_tool("echo")`` with N calls in flight, every answer checked;
prints one JSON line (see _loop.py). Legacy era (``mode="legacy"``: the initialize
handshake), as the other clients of these workloads speak.

    python benchmarks/perf/clients/official_client.py --stdio "python benchmarks/perf/servers/raw_floor.py"
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from _loop import Echo, main
from mcp import Client, StdioServerParameters
from mcp.types import TextContent


@asynccontextmanager
async def connect(args: argparse.Namespace) -> AsyncIterator[Echo]:
    server = StdioServerParameters(command=args.argv[0], args=args.argv[1:]) if args.argv else args.http
    async with Client(server, mode="legacy") as client:

        async def echo(text: str) -> str | None:
            result = await client.call_tool("echo", {"text": text})
            block = result.content[0] if result.content else None
            return block.text if not result.is_error and isinstance(block, TextContent) else None

        yield echo


if __name__ == "__main__":
    main(__doc__.splitlines()[0], connect)
