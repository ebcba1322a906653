"""The health endpoints of the ASGI app (docs/deploy.md), in process: liveness always,
readiness until the app drains."""

from __future__ import annotations

import httpx

from mcpkit import (
    Server,
)


async def test_health_endpoints() -> None:
    """Liveness always; readiness until the app drains; neither needs the MCP path."""
    app = Server("health").asgi_app(health_path="/healthz")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
        live, ready = await http.get("/healthz"), await http.get("/healthz/ready")
        assert (live.status_code, live.text, ready.status_code, ready.text) == (200, "ok\n", 200, "ready\n")
        assert live.headers["cache-control"] == "no-store"
        app.begin_shutdown()
        live, ready = await http.get("/healthz"), await http.get("/healthz/ready")
        assert (live.status_code, ready.status_code, ready.text) == (200, 503, "not ready: draining\n")
        assert (await http.get("/healthz/other")).status_code == 404
    app.close()
