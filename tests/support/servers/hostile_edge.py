"""A server for the edge tests of tests/hostile/ (lifespan failures, header caps, slowloris,
probe hosts, signals): ``python tests/support/servers/hostile_edge.py MODE [ARGS]``.

MODE:

* ``stdio [GRACE [log]]`` — ``server.run()`` with ``shutdown_grace`` GRACE (default 2 s);
  with ``log``, ``mcpkit.server``'s INFO records go to stderr;
* ``http PORT`` — ``server.run("http", port=PORT)``;
* ``guarded PORT PARSER [MAX_HEADER_BYTES MAX_HEADERS]`` — ``run_uvicorn`` with the parser
  (``httptools`` or ``h11``), and the header caps when given (else the defaults);
* ``broken-stdio``, ``broken-http PORT`` — a server whose lifespan fails to start (its
  error names a file and a password), under ``server.run()`` / ``server.run("http")``;
* ``broken-off PORT``, ``broken-mounted PORT`` — that server's app with a health path under
  plain uvicorn with ``lifespan="off"``, or mounted in Starlette (which sends a mounted app
  no lifespan events), so that its lifespan starts (and fails) on the first request.

Tools: ``echo(text)``; ``nap(seconds)`` writes ``napping`` to stderr, sleeps, and answers
``slept``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import AsyncIterator
from typing import Any

from mcpkit import Server

#: What the failing lifespan raises: a secret no client may see.
SECRET = "cannot open /srv/secret/db.sqlite (password=hunter2)"


@contextlib.asynccontextmanager
async def _broken(server: Server) -> AsyncIterator[None]:
    raise RuntimeError(SECRET)
    yield  # pragma: no cover


def build(*, broken: bool = False, grace: float = 2.0) -> Server:
    server = Server("edge", "1.0.0", lifespan=_broken if broken else None, shutdown_grace=grace)

    @server.tool
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool
    async def nap(seconds: float) -> str:
        """Sleep, then answer."""
        sys.stderr.write("napping\n")
        sys.stderr.flush()
        await asyncio.sleep(seconds)
        return "slept"

    return server


def main(mode: str, *args: str) -> None:
    if mode == "stdio":
        if args[1:] == ("log",):
            logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s", stream=sys.stderr)
        build(grace=float(args[0]) if args else 2.0).run()
    elif mode == "http":
        build().run("http", port=int(args[0]))
    elif mode == "guarded":
        from mcpkit.transports.http.server.uvicorn import run_uvicorn

        caps: dict[str, Any] = {"max_header_bytes": int(args[2]), "max_headers": int(args[3])} if len(args) > 2 else {}
        run_uvicorn(build().asgi_app(), host="127.0.0.1", port=int(args[0]), http=args[1], **caps)
    elif mode == "broken-stdio":
        build(broken=True).run()
    elif mode == "broken-http":
        build(broken=True).run("http", port=int(args[0]))
    elif mode in ("broken-off", "broken-mounted"):
        import uvicorn

        app: Any = build(broken=True).asgi_app(health_path="/healthz")
        if mode == "broken-mounted":
            from starlette.applications import Starlette
            from starlette.routing import Mount

            app = Starlette(routes=[Mount("/", app=app)])
        lifespan = "off" if mode == "broken-off" else "on"
        uvicorn.run(app, host="127.0.0.1", port=int(args[0]), lifespan=lifespan, log_level="warning")
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(*sys.argv[1:])
