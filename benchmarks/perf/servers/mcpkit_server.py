"""The benchmark server on mcpkit (this repository). See _common.py for its tools and flags.

python benchmarks/perf/servers/mcpkit_server.py [--tools N] [--async-tools] [--ask]
python benchmarks/perf/servers/mcpkit_server.py --http PORT [--scale] [--ask] [--listen]
"""

from __future__ import annotations

from _common import WRONG, parse_args, tools

from mcpkit import Context, Server


async def ask(text: str, ctx: Context) -> str:
    """Ask the client who it is; return the text and the name."""
    answer = await ctx.elicit(f"Who? {text}", {"type": "object", "properties": {"name": {"type": "string"}}}, key="who")
    return f"{text} {(answer.content or {}).get('name')}{'!' if WRONG else ''}"


def listen_features(server: Server) -> None:
    """``bench://counter`` and ``touch()``, which changes it and tells its subscribers."""
    changes = 0

    @server.resource("bench://counter")
    def counter() -> str:
        """How many times touch ran."""
        return str(changes)

    async def touch() -> str:
        """Change bench://counter and announce it; returns the new count."""
        nonlocal changes
        changes += 1
        await server.notify_resource_updated("bench://counter")
        if WRONG:  # a second notice of the one change
            await server.notify_resource_updated("bench://counter")
        return f"touched {changes}"

    server.tool(touch)


def main() -> None:
    args = parse_args("mcpkit benchmark server")
    caps = {"max_listens": 50_000, "max_listens_per_principal": 50_000} if args.listen else {}
    server = Server("bench-mcpkit", "1.0.0", **caps)
    for fn in tools(args):
        server.tool(fn)
    if args.ask:
        server.tool(ask)
    if args.listen:
        listen_features(server)
    if args.http is None:
        server.run()
        return
    if args.scale or args.listen:  # up to 100,000 sessions (10,000 with a GET stream, 1,000 listens) and their connections
        server.run("http", host="127.0.0.1", port=args.http, uvicorn_options={"max_connections": 50_000}, max_sessions=200_000)
    else:
        server.run("http", host="127.0.0.1", port=args.http)


if __name__ == "__main__":
    main()
