"""mcpkit's server for ../shared/bench/mcpload.py: the same tools and flags as the
reference servers (echo, fail, sleep, --tools N, --async-tools).

    python benchmarks/perf/servers/mcpload_target.py [--tools N] [--async-tools] [--http PORT [--sse]]

``--stateful`` is accepted for mcpload's sake and changes nothing: mcpkit serves
legacy clients (which is what mcpload speaks) with sessions and modern clients
without, on the same endpoint.
"""

from __future__ import annotations

import argparse
import asyncio

from mcpkit import Server


def build(n_dummy: int = 0, async_tools: bool = False) -> Server:
    server = Server("mcpkit-bench", "1.0.0")
    if async_tools:

        @server.tool
        async def echo(text: str) -> str:
            """Return the text unchanged."""
            return text

        @server.tool
        async def fail() -> str:
            """Always fails."""
            raise RuntimeError("intentional failure")

    else:

        @server.tool
        def echo(text: str) -> str:
            """Return the text unchanged."""
            return text

        @server.tool
        def fail() -> str:
            """Always fails."""
            raise RuntimeError("intentional failure")

    @server.tool
    async def sleep(ms: int) -> str:
        """Sleep asynchronously for ms milliseconds."""
        await asyncio.sleep(ms / 1000)
        return "ok"

    for i in range(n_dummy):
        server.add_tool(
            f"dummy_{i}",
            f"Dummy tool number {i}; takes a name and a count and does nothing useful.",
            {
                "type": "object",
                "properties": {"name": {"type": "string"}, "count": {"type": "integer", "default": 1}},
                "required": ["name"],
            },
            lambda args, _i=i: f"{args['name']}:{args.get('count', 1)}:{_i}",
        )
    return server


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--tools", type=int, default=0)
    p.add_argument("--async-tools", action="store_true")
    p.add_argument("--http", type=int, metavar="PORT")
    p.add_argument("--stateful", action="store_true")
    p.add_argument("--sse", action="store_true")
    args = p.parse_args()
    server = build(args.tools, args.async_tools)
    if args.http:
        server.run("http", host="127.0.0.1", port=args.http, json_response=False if args.sse else None)
    else:
        server.run()


if __name__ == "__main__":
    main()
