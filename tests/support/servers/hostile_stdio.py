"""A server for the stdio attack tests: ``python tests/support/servers/hostile_stdio.py [max_in_flight [shutdown_grace]]``.

Tools:

* ``echo(text)`` returns ``text``;
* ``hold()`` never returns on its own: it writes ``held`` and a newline to stderr when it
  starts (so that a test can count the handlers in flight without asking the server, which
  may have stopped reading), and ``unheld`` when it is cancelled.
"""

from __future__ import annotations

import asyncio
import sys

from mcpkit import Server

max_in_flight = int(sys.argv[1]) if len(sys.argv) > 1 else 256
shutdown_grace = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
server = Server("hostile-stdio", "1.0.0", max_in_flight=max_in_flight, shutdown_grace=shutdown_grace)


@server.tool
def echo(text: str) -> str:
    """Return the text unchanged.

    Args:
        text: What to echo.
    """
    return text


@server.tool
async def hold() -> str:
    """Wait until cancelled."""
    sys.stderr.write("held\n")
    sys.stderr.flush()
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        sys.stderr.write("unheld\n")
        sys.stderr.flush()
        raise
    return "released"


if __name__ == "__main__":
    server.run()
