"""The benchmark server on PyPI ``fastmcp``. See _common.py for its tools and flags. Over
HTTP it answers JSON, and is stateless unless ``--stateful``. The banner is off, which
also skips fastmcp's network update check at start-up.

    python benchmarks/perf/servers/fastmcp_server.py [--tools N] [--http PORT [--stateful]]
"""

from __future__ import annotations

from _common import parse_args, tools
from fastmcp import FastMCP


def main() -> None:
    args = parse_args("fastmcp benchmark server")
    server = FastMCP("bench-fastmcp")
    for fn in tools(args):
        server.tool(fn)
    if args.http is None:
        server.run(transport="stdio", show_banner=False, log_level="WARNING")
        return
    server.run(
        transport="http",
        host="127.0.0.1",
        port=args.http,
        path="/mcp",
        json_response=True,
        stateless_http=not (args.stateful or args.scale),
        show_banner=False,
        log_level="WARNING",
    )


if __name__ == "__main__":
    main()
