"""An mcpkit server for tests/hostile/test_http_attacks.py.

``python tests/support/servers/hostile_http.py PORT MODE [HTTP]`` serves 127.0.0.1:PORT/mcp:
MODE ``run`` with ``Server.run(transport="http")``; MODE ``defaults`` with
``run_uvicorn`` (the serving defaults of mcpkit's HTTP transport); MODE ``tight`` with
``run_uvicorn`` and a short header timeout and few connections (to keep tests fast);
HTTP (``auto``, ``httptools`` or ``h11``) is ``run_uvicorn``'s ``http`` option.
In-process tests import ``server`` and serve ``server.asgi_app(...)`` themselves.

Tools: ``echo(text)``; ``talk()`` reports progress twice before answering (an SSE
response when the request asks for progress); ``wait()`` blocks until cancelled.
"""

from __future__ import annotations

import asyncio
import sys

from mcpkit import Context, Server

server = Server("hostile-http", "1.0.0")


@server.tool
def echo(text: str) -> str:
    """Return the text unchanged.

    Args:
        text: What to echo.
    """
    return text


@server.tool
async def talk(ctx: Context) -> str:
    """Report progress twice, then answer."""
    await ctx.report_progress(1, 2, "half")
    await ctx.report_progress(2, 2, "all")
    return "talked"


@server.tool
async def wait() -> str:
    """Block until cancelled."""
    await asyncio.Event().wait()
    return "unreachable"


def main(port: int, mode: str, http: str = "auto") -> None:
    if mode == "run":
        server.run(transport="http", host="127.0.0.1", port=port, log_level="warning")
        return
    from mcpkit.transports.http.server.uvicorn import run_uvicorn

    options: dict[str, float] = {"header_timeout": 1.0, "body_timeout": 1.0, "max_connections": 64} if mode == "tight" else {}
    run_uvicorn(server.asgi_app(), host="127.0.0.1", port=port, log_level="warning", http=http, **options)


if __name__ == "__main__":
    main(int(sys.argv[1]), *sys.argv[2:4])
