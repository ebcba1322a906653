"""A minimal mcpkit server served with ``Server.run(transport="http")``.

``python tests/support/servers/httpsrv_basic.py PORT`` serves 127.0.0.1:PORT/mcp with the default
options (so the default 4 MiB body limit and DNS-rebinding protection). Used by
tests/e2e/http/test_server.py to watch the server process's memory from outside.
"""

from __future__ import annotations

import sys

from mcpkit import Server

server = Server("httpsrv-basic", "1.0.0")


@server.tool
def echo(text: str) -> str:
    """Return the text unchanged.

    Args:
        text: What to echo.
    """
    return text


if __name__ == "__main__":
    server.run(transport="http", host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
