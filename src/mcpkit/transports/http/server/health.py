"""Liveness and readiness endpoints of the Streamable HTTP app, for load balancers and
orchestrators (docs/deploy.md): ``asgi_app(health_path="/healthz")``.

``GET {health_path}`` answers 200 ``ok`` while the process serves requests at all
(liveness: restart the process when it fails). ``GET {health_path}/ready`` answers 200
when the node should be sent traffic — ``ready``, or ``degraded: ...`` while its shared
session store cannot be reached (legacy sessions get 503 meanwhile; every node shares the
store, so taking them all out of rotation would stop the stateless modern era too) — and
503 with the reason when it should not: the app is draining (SIGTERM) or its lifespan
failed to start. Both answer ``HEAD`` too, carry ``Cache-Control: no-store``, and need
no authorization. Their text names a state, never a cause: why the store cannot be
reached, or why the start failed, goes to the log (``mcpkit.http``), and a failed start
is named by the reference id its log record carries.

:class:`Health` sits just inside :class:`~.asgi.Refusals`: a probe is answered after
the ``Host``/``Origin`` check (:class:`~.security.HostOriginGuard`'s rules, with the
``probe_hosts`` a deployment allows besides) and before the authorization and the lazy
start of the server's lifespan (a probe does not start it), and never waits on anything
but the store check.
"""

from __future__ import annotations

import logging

from ....stores.sessions import SessionStore, StoreUnavailable
from .asgi import Receive, Scope, Send, local_path, request_headers, safe_send
from .lifespan import Lifespan
from .security import HostList, HostOriginGuard

_log = logging.getLogger("mcpkit.http")

__all__ = ["Health"]


class Health:
    """Middleware that serves the two endpoints under ``path`` (below any ASGI
    ``root_path``) to requests ``guard`` allows — a ``Host`` in ``probe_hosts`` besides —
    and passes every other request to ``guard``, the app's own ``Host``/``Origin`` check.
    Readiness asks ``lifespan`` (draining, a failed start) and ``store`` (reachable).
    Raises ``ValueError`` for a ``path`` that does not start with ``/``, or for a
    malformed ``probe_hosts`` entry; :class:`~.asgi.Reject` (403) for a probe from a
    ``Host`` or ``Origin`` not allowed."""

    def __init__(
        self,
        guard: HostOriginGuard,
        path: str,
        *,
        lifespan: Lifespan,
        store: SessionStore,
        probe_hosts: HostList | None = None,
    ) -> None:
        if not path.startswith("/"):
            raise ValueError("health_path must start with '/'")
        self.app = guard
        self.path = path.rstrip("/") or "/"
        self._lifespan = lifespan
        self._store = store
        self._probe_hosts = probe_hosts
        self._reachable = True  # the store, when last asked (its failures are logged on the change)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._route(scope) is None:
            await self.app(scope, receive, send)
            return
        self.app.check(scope, request_headers(scope), self._probe_hosts)
        await self.serve(scope, send)

    async def readiness(self) -> tuple[bool, str]:
        """Whether this node should get traffic, and a word on its state. A shared store
        that cannot be reached is reported but does not make the node unready: every node
        shares it, and taking them all out would stop the modern era too, which does not
        need it; why it cannot be reached is logged when that begins, never answered. A
        store's check that raises anything but ``StoreUnavailable`` (none of mcpkit's
        does) propagates (the app answers 500 with a reference id)."""
        lifespan = self._lifespan
        if lifespan.draining:
            return False, "draining"
        if lifespan.start_failed is not None:
            return False, lifespan.start_failed
        try:
            await self._store.check()
        except StoreUnavailable as exc:
            if self._reachable:
                _log.warning("readiness: degraded: %s", exc)
            self._reachable = False
            return True, "degraded: the session store cannot be reached"
        if not self._reachable:
            _log.warning("readiness: the session store can be reached again")
        self._reachable = True
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
