"""A server that tells what it was started with (tests/e2e/stdio/test_environment.py):
``python tests/support/servers/environment.py``.

Tools: ``environment()`` returns the process's environment as a JSON object;
``interpreter()`` returns ``sys.executable``.
"""

from __future__ import annotations

import json
import os
import sys

from mcpkit import Server

server = Server("environment")


@server.tool
def environment() -> str:
    """The environment variables this process sees, as JSON."""
    return json.dumps(dict(os.environ))


@server.tool
def interpreter() -> str:
    """The Python interpreter running this server."""
    return sys.executable


if __name__ == "__main__":
    server.run()
