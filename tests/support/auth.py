"""An authorization server's key set and introspection endpoint of the tests' own, the
tokens it signs, and the guarded MCP server the resource-server tests protect with them
(tests/e2e/auth/)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from mcpkit import Context, Server
from support.eras import MODERN
from support.serving import serve_in_thread

ISSUER = "https://as.example.test"


class KeyServer:
    """A JWKS endpoint and an introspection endpoint of the tests' own, as an ASGI app.
    ``down`` makes both answer 500; ``keys`` can be rotated."""

    def __init__(self) -> None:
        self.keys = {"k1": rsa.generate_private_key(public_exponent=65537, key_size=2048)}
        self.down = False
        self.fetches = 0
        self.active: dict[str, dict[str, Any]] = {}

    def jwks(self) -> dict[str, Any]:
        out = []
        for kid, key in self.keys.items():
            jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
            out.append({**jwk, "kid": kid, "alg": "RS256", "use": "sig"})
        return {"keys": out}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        if self.down:
            status, payload = 500, {"error": "down"}
        elif scope["path"] == "/jwks":
            self.fetches += 1
            status, payload = 200, self.jwks()
        else:  # /introspect
            token = dict(p.split("=", 1) for p in body.decode().split("&") if "=" in p).get("token", "")
            status, payload = 200, self.active.get(token, {"active": False})
        data = json.dumps(payload).encode()
        await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": data})


@pytest.fixture(scope="module")
def keys() -> Iterator[tuple[KeyServer, str]]:
    ks = KeyServer()
    with serve_in_thread(ks) as port:
        yield ks, f"http://127.0.0.1:{port}"


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


def token(keys: tuple[KeyServer, str], url: str, *, kid: str = "k1", key: Any = None, **claims: Any) -> str:
    ks, _ = keys
    now = int(time.time())
    body = {"iss": ISSUER, "aud": url, "sub": "alice", "client_id": "app-1", "scope": "mcp", "iat": now, "exp": now + 300}
    body.update(claims)
    body = {k: v for k, v in body.items() if v is not None}
    return jwt.encode(body, key or ks.keys[kid], algorithm="RS256", headers={"kid": kid})


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
