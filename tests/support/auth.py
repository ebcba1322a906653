"""An authorization server's key set and introspection endpoint of the tests' own, the
tokens it signs, and the guarded MCP server the resource-server tests protect with them
(tests/e2e/auth/); for the hostile tests (tests/hostile/), the same server protected in a
process of its own (tests/support/servers/hostile_auth.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from mcpkit import Context, Server
from mcpkit.auth.server import ResourceServer
from mcpkit.auth.verifiers import JWTVerifier, TokenVerifier
from support.eras import MODERN
from support.ports import free_port
from support.processes import listening, server_command
from support.serving import serve_in_thread

ISSUER = "https://as.example.test"


class KeyServer:
    """A JWKS endpoint and an introspection endpoint of the tests' own, as an ASGI app.
    ``down`` makes both answer 500; ``delay`` (seconds) makes each answer that late, as
    an overloaded authorization server would; ``keys`` can be rotated.

    What it was asked: ``fetches`` counts the key sets it served, ``jwks_requests`` every
    request for one (answered or not); ``introspections`` every introspection request,
    ``peak`` the most that were in flight at once."""

    def __init__(self) -> None:
        self.keys: dict[str, Any] = {"k1": rsa.generate_private_key(public_exponent=65537, key_size=2048)}
        self.down = False
        self.delay = 0.0
        self.fetches = 0
        self.jwks_requests = 0
        self.introspections = 0
        self.peak = 0
        self._in_flight = 0
        self.active: dict[str, dict[str, Any]] = {}

    def jwks(self) -> dict[str, Any]:
        """The public halves of ``keys``: RSA keys as RS256 ones; EC and Ed25519 keys (a test
        may add them) without an ``alg``, as many authorization servers publish them."""
        out = []
        for kid, key in self.keys.items():
            if isinstance(key, rsa.RSAPrivateKey):
                jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key())) | {"alg": "RS256"}
            elif isinstance(key, ec.EllipticCurvePrivateKey):
                jwk = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key.public_key()))
            else:
                jwk = json.loads(jwt.algorithms.OKPAlgorithm.to_jwk(key.public_key()))
            out.append({**jwk, "kid": kid, "use": "sig"})
        return {"keys": out}

    def reset_counts(self) -> None:
        self.fetches = self.jwks_requests = self.introspections = self.peak = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        jwks = scope["path"] == "/jwks"
        if jwks:
            self.jwks_requests += 1
        else:
            self.introspections += 1
        self._in_flight += 1
        self.peak = max(self.peak, self._in_flight)
        try:
            answer_at = time.monotonic() + self.delay
            while self.delay and time.monotonic() < answer_at:  # noqa: ASYNC110 - another thread sets delay to 0 to release them
                await asyncio.sleep(0.02)
        finally:
            self._in_flight -= 1
        if self.down:
            status, payload = 500, {"error": "down"}
        elif jwks:
            self.fetches += 1
            status, payload = 200, self.jwks()
        else:  # /introspect
            form = dict(p.split("=", 1) for p in body.decode().split("&") if "=" in p)
            status, payload = 200, self.active.get(unquote_plus(form.get("token", "")), {"active": False})
        data = json.dumps(payload).encode()
        await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": data})


@pytest.fixture(scope="module")
def keys() -> Iterator[tuple[KeyServer, str]]:
    ks = KeyServer()
    with serve_in_thread(ks) as port:
        try:
            yield ks, f"http://127.0.0.1:{port}"
        finally:
            ks.delay = 0.0  # no request left hanging at shutdown


def make_server() -> Server:
    server = Server("guarded")

    @server.tool
    def whoami(ctx: Context) -> str:
        who = ctx.identity
        assert who is not None
        return f"{who.subject} via {who.client_id} with {' '.join(sorted(who.scopes))}"

    @server.tool(scopes=["admin"])
    def admin() -> str:
        return "admin ok"

    @server.resource("secret://{name}", scopes=["secrets"])
    def secret(name: str) -> str:
        return f"secret {name}"

    @server.tool
    async def confirm(ctx: Context) -> str:
        answer = await ctx.elicit("Sure?", {"type": "object", "properties": {"ok": {"type": "boolean"}}}, key="k")
        return answer.action

    return server


def token(keys: tuple[KeyServer, str], url: str, *, kid: str = "k1", key: Any = None, alg: str = "RS256", **claims: Any) -> str:
    """A token for ``url`` signed with ``alg`` by ``key`` (default: the key set's ``kid``),
    naming ``kid``; ``claims`` add to or (None) remove the usual ones."""
    ks, _ = keys
    now = int(time.time())
    body = {"iss": ISSUER, "aud": url, "sub": "alice", "client_id": "app-1", "scope": "mcp", "iat": now, "exp": now + 300}
    body.update(claims)
    body = {k: v for k, v in body.items() if v is not None}
    return jwt.encode(body, key or ks.keys[kid], algorithm=alg, headers={"kid": kid})


def post(
    url: str, tok: str | None, method: str = "tools/call", params: dict[str, Any] | None = None, **extra: str
) -> httpx.Response:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
    params = {**(params or {"name": "whoami", "arguments": {}}), "_meta": meta}
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": MODERN, "mcp-method": method, **extra}
    if "name" in params or "uri" in params:
        headers["mcp-name"] = params.get("name") or params["uri"]
    if tok is not None:
        headers["authorization"] = f"Bearer {tok}"
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return httpx.post(url, json=body, headers=headers, timeout=10)


def challenge(resp: httpx.Response) -> str:
    return resp.headers.get("www-authenticate", "")


# --- the protected server of the hostile authorization tests -------------------------------------


@contextlib.contextmanager
def key_server() -> Iterator[tuple[KeyServer, str]]:
    """A fresh :class:`KeyServer` on loopback, for one test: (it, its base URL)."""
    ks = KeyServer()
    with serve_in_thread(ks) as port:
        try:
            yield ks, f"http://127.0.0.1:{port}"
        finally:
            ks.delay = 0.0  # no request left hanging at shutdown


@dataclass
class Protected:
    """tests/support/servers/hostile_auth.py running in a process of its own: its MCP
    ``url``, the process, and where its stderr (the log) goes."""

    url: str
    proc: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@contextlib.contextmanager
def protected(config: dict[str, Any], tmp_path: Path) -> Iterator[Protected]:
    """Run hostile_auth.py with ``config`` (see its docstring) until the block ends."""
    port = free_port()
    log_path = tmp_path / f"hostile_auth-{port}.log"
    with (
        log_path.open("wb") as log,
        listening(
            server_command("hostile_auth", str(port), json.dumps(config)), port, stdout=subprocess.DEVNULL, stderr=log
        ) as proc,
    ):
        yield Protected(f"http://127.0.0.1:{port}/mcp", proc, log_path)


@contextlib.contextmanager
def guarded_by(verifier: TokenVerifier) -> Iterator[tuple[str, ResourceServer]]:
    """A server requiring scope ``mcp``, guarded by ``verifier``, on loopback: its MCP URL
    (the resource, and a JWT verifier's audience) and its ``ResourceServer``."""
    auth = ResourceServer(
        resource="http://placeholder/mcp", authorization_servers=[ISSUER], verifier=verifier, required_scopes=["mcp"]
    )
    with serve_in_thread(make_server().asgi_app(auth=auth)) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        auth.resource = url
        if isinstance(verifier, JWTVerifier):
            verifier.audience = [url]
        yield url, auth
