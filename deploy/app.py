"""An MCP server ready to run as several nodes (docs/deploy.md).

Configuration comes from the environment: ``REDIS_URL`` (unset: one node, its state in
this process), ``MCP_STATE_KEY`` (the same secret on every node: it signs the modern
era's requestState; needed as soon as there are two), ``ALLOWED_HOSTS`` (comma-separated
``Host`` values clients use), ``PROBE_HOSTS`` (comma-separated ``Host`` values or networks
that health probes use besides, e.g. ``10.0.0.0/8`` for probes by the pod's address),
``HOST`` and ``PORT``. Run one node with ``python app.py``,
or several workers of one machine with
``uvicorn app:app --workers 4 --timeout-graceful-shutdown 5`` (with REDIS_URL).
"""

from __future__ import annotations

import os
from typing import Any

from mcpkit import Context, RedisStore, Server

REDIS_URL = os.environ.get("REDIS_URL")
STATE_KEY = os.environ.get("MCP_STATE_KEY")
HOSTS = [h for h in os.environ.get("ALLOWED_HOSTS", "").split(",") if h] or None
PROBES = [h for h in os.environ.get("PROBE_HOSTS", "").split(",") if h] or None

shared: dict[str, Any] = {}
if REDIS_URL:
    store = RedisStore(REDIS_URL)
    server = Server("deployed", "1.0.0", state_key=STATE_KEY, bus=store.bus, task_store=store.tasks)
    shared = {"session_store": store.sessions, "event_store": store.events}
else:
    server = Server("deployed", "1.0.0", state_key=STATE_KEY)


@server.tool
def forecast(city: str) -> str:
    """Forecast the weather."""
    return f"Sunny in {city}"


@server.tool
async def confirm(ctx: Context, action: str) -> str:
    """Ask the user before doing something (works across nodes in both eras)."""
    answer = await ctx.elicit(f"Really {action}?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
    agreed = answer.accepted and (answer.content or {}).get("ok")
    return f"{action}: {'done' if agreed else 'skipped'}"


app = server.asgi_app(health_path="/healthz", allowed_hosts=HOSTS, probe_hosts=PROBES, **shared)

if __name__ == "__main__":
    from mcpkit.transports.http.server.uvicorn import run_uvicorn

    run_uvicorn(app, host=os.environ.get("HOST", "0.0.0.0"), port=int(os.environ.get("PORT", "8000")))
