"""fastmcp's client (``fastmcp`` 4.2.3) under load, for the client workloads of
``run.py``: ``Client.call_tool("echo")`` with N calls in flight, every answer checked;
prints one JSON line (see _loop.py).

    python benchmarks/perf/clients/fastmcp_client.py --stdio "python benchmarks/perf/servers/raw_floor.py"
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from _loop import Echo, main
from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
from mcp.types import TextContent


@asynccontextmanager
async def connect(args: argparse.Namespace) -> AsyncIterator[Echo]:
    if args.argv:
        transport = StdioTransport(command=args.argv[0], args=args.argv[1:], keep_alive=False)
    else:
        transport = StreamableHttpTransport(args.http)
    async with Client(transport) as client:

        async def echo(text: str) -> str | None:
            result = await client.call_tool("echo", {"text": text}, raise_on_error=False)
            block = result.content[0] if result.content else None
            return block.text if not result.is_error and isinstance(block, TextContent) else None

        yield echo


if __name__ == "__main__":
    main(__doc__.splitlines()[0], connect)
