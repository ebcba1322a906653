"""A proxy (``mcpkit.Proxy``) of a server it spawns over stdio, served over Streamable HTTP.

``python tests/support/servers/proxy_of.py UPSTREAM_ERA MODE PORT [COMMAND...]``: the proxy
speaks UPSTREAM_ERA (a revision) to the upstream server; MODE ``per-client`` spawns an
upstream process for each legacy downstream session, ``shared`` one for all. COMMAND is the
upstream server (default: tests/support/servers/composed.py with its lists paged by 2). The
proxy pages its own lists by 3. Used by tests/e2e/proxy/ and tests/interop/test_proxy.py.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mcpkit import ClientOptions, Proxy, StdioTransport

era, mode, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
command = sys.argv[4:] or [sys.executable, str(Path(__file__).with_name("composed.py")), "--page-size", "2"]
options = ClientOptions(protocol_version=era, request_timeout=60, reset_timeout_on_progress=True)
if mode == "per-client":
    upstream: Any = lambda: StdioTransport(command, stderr="devnull")  # noqa: E731 - a transport per session
else:
    upstream = StdioTransport(command, stderr="devnull")
proxy = Proxy(upstream, "proxy", client_options=options, page_size=3, state_key=b"a key every node shares, 32 b")

if __name__ == "__main__":
    proxy.run("http", port=port)
