"""The soak's authorization part: two protected servers (tests/support/servers/hostile_auth.py),
one verifying JWTs against a key set this process serves and makes flap — up, down (500),
hanging past the verifier's timeout — and one introspecting opaque tokens at an endpoint of
this process; both driven with a valid token (every request must be served: the last good
key set carries the JWT server through each outage) and forged ones (JWTs signed by a
stranger under unknown key ids, random opaque tokens), which must be refused with 401 (503
for an unknown key id while the key set is failing). What the servers ask of the key set and
introspection endpoints is counted and printed with the requests."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import secrets
import sys
import time
from typing import Any
from urllib.parse import parse_qs

import httpx
from soak_common import ROOT, Stats, free_port

AUTH_SERVER = ROOT / "tests" / "support" / "servers" / "hostile_auth.py"
ISSUER = "https://as.soak.test"
VALID_OPAQUE = "soak-valid-opaque-token"
#: The key set's cycle: (mode, seconds).
CYCLE = [("up", 20.0), ("down", 30.0), ("up", 10.0), ("hang", 30.0)]


class Backend:
    """The authorization server's side, as an ASGI app: ``/jwks`` (``mode`` up, down or
    hang) and ``/introspect`` (only :data:`VALID_OPAQUE` is active). Counts requests."""

    def __init__(self) -> None:
        import jwt
        from cryptography.hazmat.primitives.asymmetric import rsa

        self._jwt = jwt
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.mode = "up"
        self.jwks_requests = 0
        self.introspections = 0

    def jwks(self) -> bytes:
        jwk = json.loads(self._jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        return json.dumps({"keys": [{**jwk, "kid": "soak-1", "alg": "RS256", "use": "sig"}]}).encode()

    def token(self, audience: str, *, forged: bool = False) -> str:
        now = int(time.time())
        claims = {"iss": ISSUER, "aud": audience, "sub": "soak", "scope": "mcp", "iat": now, "exp": now + 3600}
        key, kid = (self.stranger, f"unknown-{secrets.token_hex(4)}") if forged else (self.key, "soak-1")
        return str(self._jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid}))

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if scope["path"] == "/jwks":
            self.jwks_requests += 1
            hang_until = time.monotonic() + 8.0
            while self.mode == "hang" and time.monotonic() < hang_until:  # noqa: ASYNC110 - the flapper changes mode
                await asyncio.sleep(0.05)
            status, payload = (500, b"{}") if self.mode == "down" else (200, self.jwks())
        else:
            self.introspections += 1
            token = parse_qs(body.decode()).get("token", [""])[0]
            answer = {"active": True, "sub": "soak", "scope": "mcp", "exp": int(time.time()) + 3600}
            status, payload = 200, json.dumps(answer if token == VALID_OPAQUE else {"active": False}).encode()
        await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": payload})


async def _spawn(port: int, config: dict[str, Any]) -> asyncio.subprocess.Process:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(AUTH_SERVER), str(port), json.dumps(config), stderr=asyncio.subprocess.DEVNULL
    )
    deadline = time.monotonic() + 20
    while True:
        if proc.returncode is not None or time.monotonic() > deadline:
            raise RuntimeError("a protected server did not start")
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return proc
        except OSError:
            await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def auth_servers(stats: Stats) -> Any:
    """The backend (uvicorn in this loop) and the two protected servers; yields
    (backend, {"auth-jwt": url, "auth-introspection": url}, {name: process})."""
    import uvicorn

    backend = Backend()
    port = free_port()
    config = uvicorn.Config(backend, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    serving = asyncio.ensure_future(server.serve())
    while not server.started:  # noqa: ASYNC110 - uvicorn offers a flag, not an event
        await asyncio.sleep(0.01)
    base = f"http://127.0.0.1:{port}"
    ports = {"auth-jwt": free_port(), "auth-introspection": free_port()}
    configs = {
        "auth-jwt": {"verifier": "jwt", "url": f"{base}/jwks", "issuer": ISSUER, "options": {"cache_ttl": 5.0, "timeout": 2.0}},
        "auth-introspection": {"verifier": "introspection", "url": f"{base}/introspect"},
    }
    procs: dict[str, asyncio.subprocess.Process] = {}
    try:
        for name, cfg in configs.items():
            procs[name] = await _spawn(ports[name], cfg)
            stats.rss.setdefault(name, [])
        yield backend, {name: f"http://127.0.0.1:{p}/mcp" for name, p in ports.items()}, procs
    finally:
        backend.mode = "up"
        for proc in procs.values():
            if proc.returncode is None:
                proc.terminate()
            await proc.wait()
        server.should_exit = True
        await serving
        stats.count("auth: key set requests the JWT server made", backend.jwks_requests)
        stats.count("auth: introspections the introspecting server made", backend.introspections)


async def auth_flap(backend: Backend, stats: Stats, until: float) -> None:
    """Cycle the key set through up, down and hanging until the end."""
    for mode, seconds in itertools.cycle(CYCLE):
        if time.monotonic() >= until:
            backend.mode = "up"
            return
        backend.mode = mode
        stats.count(f"auth: key set {mode}")
        await asyncio.sleep(min(seconds, max(0.0, until - time.monotonic())))


def _call(token: str) -> tuple[dict[str, Any], dict[str, str]]:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami", "arguments": {}, "_meta": meta}}
    headers = {
        "authorization": f"Bearer {token}",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "whoami",
    }
    return body, headers


async def auth_valid(http: httpx.AsyncClient, backend: Backend, urls: dict[str, str], stats: Stats, until: float) -> None:
    """A valid token to each server, over and over: every one must be served."""
    tokens = {"auth-jwt": backend.token(urls["auth-jwt"]), "auth-introspection": VALID_OPAQUE}
    while time.monotonic() < until:
        for name, url in urls.items():
            body, headers = _call(tokens[name])
            kind = f"valid {name} ({backend.mode})" if name == "auth-jwt" else f"valid {name}"
            try:
                resp = await http.post(url, json=body, headers=headers)
            except httpx.HTTPError as exc:
                stats.error(kind, f"{type(exc).__name__}: {exc}")
                continue
            stats.count(kind)
            if resp.status_code != 200:
                stats.error(kind, f"HTTP {resp.status_code}: {resp.text[:200]}")
        await asyncio.sleep(0.05)


async def auth_forged(http: httpx.AsyncClient, backend: Backend, urls: dict[str, str], stats: Stats, until: float) -> None:
    """Forged tokens, 20 at a time: a stranger's JWTs under unknown key ids, random opaque
    tokens. 401, or 503 for a JWT while the key set fails; anything else is an error."""

    async def one(name: str, url: str) -> None:
        token = backend.token(url, forged=True) if name == "auth-jwt" else secrets.token_urlsafe(24)
        body, headers = _call(token)
        kind = f"forged {name}"
        try:
            resp = await http.post(url, json=body, headers=headers)
        except httpx.HTTPError as exc:
            stats.error(kind, f"{type(exc).__name__}: {exc}")
            return
        stats.count(kind)
        if resp.status_code not in (401, 503) or (resp.status_code == 503 and name != "auth-jwt"):
            stats.error(kind, f"HTTP {resp.status_code}: {resp.text[:200]}")

    while time.monotonic() < until:
        await asyncio.gather(*(one(name, url) for name, url in urls.items() for _ in range(10)))
        await asyncio.sleep(0.1)
