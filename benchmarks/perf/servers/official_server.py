"""The benchmark server on the official SDK (PyPI ``mcp`` 2.x, its high-level
``MCPServer``). See _common.py for its tools and flags. Over HTTP it answers JSON, and is
stateless unless ``--stateful`` (or ``--scale``, which also lifts the
session cap).

    python benchmarks/perf/servers/official_server.py [--tools N] [--http PORT [--stateful]]
"""

from __future__ import annotations

from _common import parse_args, tools
from mcp.server.mcpserver import MCPServer


def main() -> None:
    args = parse_args("official SDK benchmark server")
    # WARNING keeps per-request INFO logging (and uvicorn's access log) out of the measurement.
    server = MCPServer("bench-official", log_level="WARNING")
    for fn in tools(args):
        server.add_tool(fn)
    if args.http is None:
        server.run()
        return
    server.run(
        "streamable-http",
        host="127.0.0.1",
        port=args.http,
        streamable_http_path="/mcp",
        json_response=True,
        stateless_http=not (args.stateful or args.scale),
        max_sessions=50_000 if args.scale else 10_000,  # 10,000 is the SDK's default
    )


if __name__ == "__main__":
    main()
