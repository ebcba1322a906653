"""The benchmark server on mcpkit (this repository). See _common.py for its tools and flags.

python benchmarks/perf/servers/mcpkit_server.py [--tools N] [--async-tools] [--ask]
python benchmarks/perf/servers/mcpkit_server.py --http PORT [--scale] [--ask]
"""

from __future__ import annotations

from _common import parse_args, tools

from mcpkit import Context, Server


async def ask(text: str, ctx: Context) -> str:
    """Ask the client who it is; return the text and the name."""
    answer = await ctx.elicit("Who?", {"type": "object", "properties": {"name": {"type": "string"}}}, key="who")
    return f"{text} {(answer.content or {}).get('name')}"


def main() -> None:
    args = parse_args("mcpkit benchmark server")
    server = Server("bench-mcpkit", "1.0.0")
    for fn in tools(args):
        server.tool(fn)
    if args.ask:
        server.tool(ask)
    if args.http is None:
        server.run()
        return
    if args.scale:  # 10,000 sessions, each with its GET stream, and the connections they hold
        server.run("http", host="127.0.0.1", port=args.http, uvicorn_options={"max_connections": 50_000}, max_sessions=50_000)
    else:
        server.run("http", host="127.0.0.1", port=args.http)


if __name__ == "__main__":
    main()
