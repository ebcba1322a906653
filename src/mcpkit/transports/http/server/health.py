"""Liveness and readiness endpoints of the Streamable HTTP app, for load balancers and
orchestrators (docs/deploy.md): ``asgi_app(health_path="/healthz")``.

``GET {health_path}`` answers 200 ``ok`` while the process serves requests at all
(liveness: restart the process when it fails). ``GET {health_path}/ready`` answers 200
when the node should be sent traffic — ``ready``, or ``degraded: ...`` while its shared
session store cannot be reached (legacy sessions get 503 meanwhile; every node shares the
store, so taking them all out of rotation would stop the stateless modern era too) — and
503 with the reason when it should not: the app is draining (SIGTERM) or its lifespan
failed to start. Both answer ``HEAD`` too, carry ``Cache-Control: no-store``, and need
no authorization.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from .asgi import Scope, Send, safe_send

__all__ = ["Health"]

#: Returns whether the node should get traffic, and its state in a few words.
Readiness = Callable[[], Awaitable[tuple[bool, str]]]


class Health:
    """Serves the two endpoints under ``path`` (below any ASGI ``root_path``)."""

    def __init__(self, path: str, ready: Readiness) -> None:
        if not path.startswith("/"):
            raise ValueError("health_path must start with '/'")
        self.path = path.rstrip("/") or "/"
        self._ready = ready

    def _route(self, scope: Scope) -> str | None:
        """``live`` or ``ready`` if ``scope`` is a GET or HEAD of one of the endpoints."""
        if scope.get("method") not in ("GET", "HEAD"):
            return None
        path: str = scope.get("path", "")
        root: str = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        path = path.rstrip("/") or "/"
        if path == self.path:
            return "live"
        if path == f"{self.path.rstrip('/')}/ready":
            return "ready"
        return None

    async def serve(self, scope: Scope, send: Send) -> bool:
        """Answer ``scope`` if it is for one of the endpoints; returns whether it was."""
        route = self._route(scope)
        if route is None:
            return False
        if route == "live":
            status, text = 200, "ok"
        else:
            ready, state = await self._ready()
            status, text = (200, state) if ready else (503, f"not ready: {state}")
        body = b"" if scope.get("method") == "HEAD" else text.encode() + b"\n"
        headers = [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(text) + 1).encode()),
            (b"cache-control", b"no-store"),
        ]
        if status == 503:
            headers.append((b"retry-after", b"1"))
        await safe_send(send, {"type": "http.response.start", "status": status, "headers": headers})
        await safe_send(send, {"type": "http.response.body", "body": body})
        return True
