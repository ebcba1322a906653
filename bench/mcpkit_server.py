"""mcpkit's server for ../shared/bench/mcpload.py: the same tools and flags as the
reference servers (echo, fail, sleep, --tools N, --async-tools).

    python bench/mcpkit_server.py [--tools N] [--async-tools]
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

        def dummy(name: str, count: int = 1, _i: int = i) -> str:
            return f"{name}:{count}:{_i}"

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
    args = p.parse_args()
    build(args.tools, args.async_tools).run()


if __name__ == "__main__":
    main()
