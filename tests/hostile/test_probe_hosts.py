"""The ``Host``/``Origin`` rules on every path of the app, and bodies that reveal nothing of
the server's insides (issue 24, finding 13; docs/http.md, "Security").

Before: ``/healthz``, ``/healthz/ready`` and ``/.well-known/oauth-protected-resource``
answered any ``Host`` (a DNS-rebinding page could read them), and with the shared store
unreachable readiness said ``degraded: the session store is unreachable: Timeout reading
from 127.0.0.1:PORT`` and legacy requests got ``503 Service Unavailable: ...`` with the
same address. After: a foreign ``Host`` or ``Origin`` gets 403 there as on ``/mcp``;
``probe_hosts`` lets a deployment's probes in (names, networks) on the health endpoints
only; the bodies name what failed and a reference id, and the address is in the log.
"""

from __future__ import annotations

import contextlib
import logging
import re
import socket
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpkit import InMemorySessionStore, RedisStore, ResourceServer, Server
from mcpkit.auth.verifiers import FunctionVerifier
from support.serving import serve_in_thread
from support.wire import initialize, legacy_headers, modern

pytestmark = pytest.mark.timeout(60)

PROBES = ("/healthz", "/healthz/ready", "/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp")


def _app(**options: Any) -> Any:
    auth = ResourceServer(
        resource="http://127.0.0.1/mcp",
        authorization_servers=["https://as.example.test"],
        verifier=FunctionVerifier(lambda token: None),
    )
    return Server("probes").asgi_app(health_path="/healthz", auth=auth, **options)


def _get(port: int, path: str, host: str | None, origin: str | None = None) -> int:
    headers = {"host": host} if host is not None else {}
    if origin is not None:
        headers["origin"] = origin
    return httpx.get(f"http://127.0.0.1:{port}{path}", headers=headers, timeout=10).status_code


def test_a_foreign_host_or_origin_is_refused_on_every_path_of_a_loopback_server() -> None:
    with serve_in_thread(_app()) as port:
        local = {path: _get(port, path, f"127.0.0.1:{port}") for path in PROBES}
        foreign = {path: _get(port, path, "evil.example") for path in (*PROBES, "/mcp", "/nowhere")}
        cross = {path: _get(port, path, f"127.0.0.1:{port}", origin="https://evil.example") for path in PROBES}
    assert local == dict.fromkeys(PROBES, 200)
    assert foreign == dict.fromkeys((*PROBES, "/mcp", "/nowhere"), 403)
    assert cross == dict.fromkeys(PROBES, 403)


def test_probe_hosts_let_a_deployments_probes_in_on_the_health_endpoints_only() -> None:
    app = _app(allowed_hosts=["mcp.example.com"], probe_hosts=["10.0.0.0/8", "probe.internal"])
    body, headers = modern("tools/list")
    with serve_in_thread(app) as port:
        got = {
            (host, path): _get(port, path, host)
            for host in ("mcp.example.com", "10.1.2.3:8000", "probe.internal", "11.0.0.1", "evil.example")
            for path in ("/healthz", "/healthz/ready", "/.well-known/oauth-protected-resource")
        }
        mcp = {
            host: httpx.post(f"http://127.0.0.1:{port}/mcp", json=body, headers={**headers, "host": host}, timeout=10).status_code
            for host in ("mcp.example.com", "10.1.2.3:8000", "probe.internal")
        }
    allowed = {("mcp.example.com", path) for path in ("/healthz", "/healthz/ready", "/.well-known/oauth-protected-resource")}
    allowed |= {(host, path) for host in ("10.1.2.3:8000", "probe.internal") for path in ("/healthz", "/healthz/ready")}
    assert got == {key: 200 if key in allowed else 403 for key in got}
    assert mcp == {"mcp.example.com": 401, "10.1.2.3:8000": 403, "probe.internal": 403}  # 401: past the Host check


@contextlib.contextmanager
def _hanging_redis() -> Iterator[int]:
    """A TCP port that accepts connections and never answers: Redis hung."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                held.append(listener.accept()[0])

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        listener.close()
        for sock in held:
            sock.close()


def test_store_failures_reveal_no_address_in_any_body(caplog: pytest.LogCaptureFixture) -> None:
    with _hanging_redis() as redis_port:
        store = RedisStore(f"redis://127.0.0.1:{redis_port}/0", timeout=0.5)
        server = Server("probes", bus=store.bus, task_store=store.tasks)
        app = server.asgi_app(session_store=store.sessions, event_store=store.events, health_path="/healthz")
        with caplog.at_level(logging.WARNING, logger="mcpkit.http"), serve_in_thread(app) as port:
            url = f"http://127.0.0.1:{port}"
            with httpx.Client(timeout=20) as http:
                ready = http.get(f"{url}/healthz/ready")
                opened = http.post(f"{url}/mcp", json=initialize(), headers=legacy_headers(None))
                known = http.post(f"{url}/mcp", json=initialize(), headers=legacy_headers("0" * 43))
    assert (ready.status_code, ready.text) == (200, "degraded: the session store cannot be reached\n")
    for refused in (opened, known):
        assert (refused.status_code, refused.headers["retry-after"]) == (503, "1"), refused.text
        for internal in (str(redis_port), "127.0.0.1", "Timeout"):
            assert internal not in refused.text
        said = r"Service Unavailable: the shared store cannot be reached \(reference ([0-9a-f]{12})\)\n"
        reference = re.fullmatch(said, refused.text)
        assert reference is not None, refused.text
        logged = [r.getMessage() for r in caplog.records if reference[1] in r.getMessage()]
        assert len(logged) == 1, logged
        assert f"127.0.0.1:{redis_port}" in logged[0], logged  # the address is in the log
    assert any(f"127.0.0.1:{redis_port}" in r.getMessage() and "readiness" in r.getMessage() for r in caplog.records)


class _FaultyStore(InMemorySessionStore):
    """A session store of one's own whose health check fails unexpectedly."""

    async def check(self) -> None:
        raise RuntimeError("secret at /srv/secret/db.sqlite")


def test_an_unexpected_failure_is_a_500_with_a_reference(caplog: pytest.LogCaptureFixture) -> None:
    """The last resort of the app (``Refusals``): no text of the exception, a reference id
    in the JSON-RPC error's data, and the traceback in the log under it. (Before: the
    probe's exception escaped to uvicorn, whose plain 500 had no reference.)"""
    app = Server("probes").asgi_app(health_path="/healthz", session_store=_FaultyStore())
    with caplog.at_level(logging.ERROR, logger="mcpkit.http"), serve_in_thread(app) as port:
        resp = httpx.get(f"http://127.0.0.1:{port}/healthz/ready", timeout=10)
    assert resp.status_code == 500, resp.text
    assert "secret" not in resp.text
    error = resp.json()["error"]
    assert (error["code"], error["message"]) == (-32603, "Internal error")
    reference = error["data"]["reference"]
    assert any(reference in r.getMessage() and r.exc_info for r in caplog.records)
