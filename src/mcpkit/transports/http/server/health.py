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

:class:`Health` is the outermost middleware of the app: a probe is answered before the
``Host``/``Origin`` check, the authorization, and the lazy start of the server's
lifespan (a probe does not start it), and never waits on anything but the store check.
"""

from __future__ import annotations

from ....protocol.errors import flatten_text
from ....stores.sessions import SessionStore, StoreUnavailable
from .asgi import ASGIApp, Receive, Scope, Send, local_path, safe_send
from .lifespan import Lifespan

__all__ = ["Health"]


class Health:
    """Middleware that serves the two endpoints under ``path`` (below any ASGI
    ``root_path``) and passes every other request to ``app``. Readiness asks
    ``lifespan`` (draining, a failed start) and ``store`` (reachable). Raises
    ``ValueError`` for a ``path`` that does not start with ``/``."""

    def __init__(self, app: ASGIApp, path: str, *, lifespan: Lifespan, store: SessionStore) -> None:
        if not path.startswith("/"):
            raise ValueError("health_path must start with '/'")
        self.app = app
        self.path = path.rstrip("/") or "/"
        self._lifespan = lifespan
        self._store = store

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not await self.serve(scope, send):
            await self.app(scope, receive, send)

    async def readiness(self) -> tuple[bool, str]:
        """Whether this node should get traffic, and a word on its state. A shared store
        that cannot be reached is reported but does not make the node unready: every node
        shares it, and taking them all out would stop the modern era too, which does not
        need it. A store's check that raises anything but ``StoreUnavailable`` (none of
        mcpkit's does) propagates, to the ASGI server."""
        lifespan = self._lifespan
        if lifespan.draining:
            return False, "draining"
        if lifespan.start_failed is not None:
            return False, lifespan.start_failed
        try:
            await self._store.check()
        except StoreUnavailable as exc:
            return True, f"degraded: {flatten_text(str(exc), 200)}"
        return True, "ready"

    def _route(self, scope: Scope) -> str | None:
        """``live`` or ``ready`` if ``scope`` is a GET or HEAD of one of the endpoints."""
        if scope.get("method") not in ("GET", "HEAD"):
            return None
        path = local_path(scope)
        if path == self.path:
            return "live"
        if path == f"{self.path.rstrip('/')}/ready":
            return "ready"
        return None

    async def serve(self, scope: Scope, send: Send) -> bool:
        """Answer ``scope`` if it is for one of the endpoints; returns whether it was.
        Raises only what :meth:`readiness` raises."""
        route = self._route(scope)
        if route is None:
            return False
        if route == "live":
            status, text = 200, "ok"
        else:
            ready, state = await self.readiness()
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
