"""An mcpkit server generated from the OpenAPI document of a running API:
``python tests/support/servers/openapi_mcp.py API_PORT`` serves over stdio the server
:func:`mcpkit.openapi.from_openapi` makes of ``http://127.0.0.1:API_PORT/openapi.json``
(fetched at start), its calls going there; ``--http PORT`` serves it over Streamable HTTP
instead. (A port, not a URL: the Inspector's CLI takes a URL among a command's
arguments for its target.)

Route maps: the ``GET`` routes tagged ``files`` are resource templates, ``/teapot`` keeps
its tool under the name ``brew``, and the ``trees`` routes are left out.
"""

from __future__ import annotations

import sys
from pathlib import Path

# This checkout's mcpkit even where the one installed is another's: the Inspector starts
# this script with an environment of its own, without the tests' PYTHONPATH.
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "src"))

from mcpkit.openapi import RouteMap, from_openapi

ROUTE_MAPS = [
    RouteMap(methods=["GET"], tags=["files"], kind="resource"),
    RouteMap(pattern=r"^/teapot$", name="brew"),
    RouteMap(tags=["trees"], kind="exclude"),
]

if __name__ == "__main__":
    api = f"http://127.0.0.1:{int(sys.argv[1])}"
    server = from_openapi(f"{api}/openapi.json", base_url=api, route_maps=ROUTE_MAPS, headers={"X-Api-Key": "secret"})
    if len(sys.argv) > 3 and sys.argv[2] == "--http":
        server.run("http", host="127.0.0.1", port=int(sys.argv[3]), log_level="warning")
    else:
        server.run()
