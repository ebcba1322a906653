"""An MCP server over HTTP that lets in only clients with an access token.

    python examples/cookbook/http_auth_server.py                       # the demo
    python examples/cookbook/http_auth_server.py server PORT ISSUER    # serve on 127.0.0.1:PORT

The server is an OAuth *resource server* (docs/auth.md): ``ResourceServer`` publishes its
metadata, refuses requests without a valid token (401) or without the scopes a tool needs
(403), and checks opaque tokens with the authorization server's introspection endpoint
(RFC 7662). The demo starts a small stand-in authorization server in its own process
(``client_credentials`` only: a service account, no browser), the MCP server as a second
process, and then connects four clients: one without a token, one with a wrong secret,
one whose token lacks a scope, and one allowed to do everything.
"""

from __future__ import annotations

import asyncio
import base64
import secrets
import socket
import sys
import time
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcpkit import (
    AccessToken,
    CallToolResult,
    Client,
    HttpTransport,
    IntrospectionVerifier,
    McpError,
    OAuthClientAuth,
    PreRegisteredClient,
    ResourceServer,
    Server,
    TextContent,
)

# The MCP server's own credentials at the authorization server, to introspect tokens.
# In production both come from your secret store, never from source code.
INTROSPECTION_CLIENT = ("billing-mcp", "introspect-secret")

# --- the MCP server -------------------------------------------------------------------------

server = Server("billing", "1.0.0")
INVOICES = {"INV-1": 120.0, "INV-2": 80.0}


@server.tool
def whoami(caller: AccessToken) -> str:
    """Who is calling, and with which scopes."""
    return f"{caller.subject} with scopes {' '.join(sorted(caller.scopes))}"


@server.tool
def list_invoices() -> dict[str, float]:
    """Every open invoice and its amount."""
    return INVOICES


@server.tool(scopes=["invoices:refund"])  # checked before the handler runs: 403 without it
def refund(invoice: str, caller: AccessToken) -> str:
    """Refund an invoice (needs the invoices:refund scope).

    Args:
        invoice: The invoice id, INV-1 for example.
    """
    if invoice not in INVOICES:
        raise ValueError(f"no invoice {invoice}")  # a tool error the model can read
    return f"refunded {invoice} ({INVOICES.pop(invoice):.2f}) for {caller.subject}"


def serve(port: int, issuer: str) -> None:
    resource = f"http://127.0.0.1:{port}/mcp"  # tokens must name this exact URL as audience
    client_id, secret = INTROSPECTION_CLIENT
    verifier = IntrospectionVerifier(f"{issuer}/introspect", client_id=client_id, client_secret=secret, audience=resource)
    auth = ResourceServer(resource, [issuer], verifier, required_scopes=["mcp"])
    server.run("http", host="127.0.0.1", port=port, auth=auth)


# --- a stand-in authorization server: use Keycloak, Auth0, Entra ID... in real life ------------

CLIENTS = {  # client id -> (secret, the scopes it may have)
    "report-bot": ("report-secret", {"mcp"}),
    "billing-admin": ("admin-secret", {"mcp", "invoices:refund"}),
    INTROSPECTION_CLIENT[0]: (INTROSPECTION_CLIENT[1], set()),
}
ISSUED: dict[str, dict[str, Any]] = {}  # access token -> its claims


def authenticated(request: Request) -> str | None:
    """The client id of a request with valid HTTP Basic credentials, else None."""
    try:
        client_id, _, secret = base64.b64decode(request.headers["authorization"].removeprefix("Basic ")).decode().partition(":")
    except (KeyError, ValueError):
        return None
    known = CLIENTS.get(client_id)
    return client_id if known is not None and secrets.compare_digest(known[0], secret) else None


def authorization_server(issuer: str) -> Starlette:
    endpoints = {"token_endpoint": f"{issuer}/token", "introspection_endpoint": f"{issuer}/introspect"}

    async def metadata(request: Request) -> JSONResponse:  # RFC 8414: where clients find the rest
        return JSONResponse({"issuer": issuer, **endpoints, "grant_types_supported": ["client_credentials"]})

    async def token(request: Request) -> JSONResponse:  # client_credentials, HTTP Basic
        form, client_id = await request.form(), authenticated(request)
        if client_id is None:
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        scope = " ".join(sorted(set(str(form.get("scope", "")).split()) & CLIENTS[client_id][1]))  # never more than allowed
        access_token, audience = secrets.token_urlsafe(24), str(form.get("resource", ""))  # RFC 8707: the MCP server
        ISSUED[access_token] = {
            "sub": client_id,
            "client_id": client_id,
            "scope": scope,
            "aud": audience,
            "exp": time.time() + 600,
        }
        return JSONResponse({"access_token": access_token, "token_type": "Bearer", "expires_in": 600, "scope": scope})

    async def introspect(request: Request) -> JSONResponse:  # RFC 7662, for the MCP server only
        if authenticated(request) != INTROSPECTION_CLIENT[0]:
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        claims = ISSUED.get(str((await request.form()).get("token", "")))
        return JSONResponse({"active": True, **claims} if claims else {"active": False})

    routes = [Route("/.well-known/oauth-authorization-server", metadata), Route("/token", token, methods=["POST"])]
    return Starlette(routes=[*routes, Route("/introspect", introspect, methods=["POST"])])


# --- the demo -------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_listening(port: int, proc: asyncio.subprocess.Process | None = None) -> None:
    for _ in range(400):
        if proc is not None and proc.returncode is not None:
            raise SystemExit(f"the MCP server exited with code {proc.returncode}")
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            await asyncio.sleep(0.05)
    raise SystemExit(f"nothing listens on port {port}")


async def as_client(url: str, label: str, auth: OAuthClientAuth | None, calls: list[tuple[str, dict[str, Any]]]) -> None:
    print(f"{label}:")
    try:
        async with Client(HttpTransport(url, auth=auth)) as client:
            for tool, arguments in calls:
                try:
                    result = await client.call_tool(tool, arguments)
                    print(f"  {tool} -> {'tool error: ' if result.is_error else ''}{text_of(result)}")
                except McpError as err:  # a refusal of this call only: the client goes on
                    print(f"  {tool} -> refused: {refusal(err)}")
    except McpError as err:  # the connection itself was refused
        print(f"  could not connect: {refusal(err)}")


def text_of(result: CallToolResult) -> str:
    """The text parts of a tool result (a result may also hold images, audio, links...)."""
    return " ".join(part.text for part in result.content if isinstance(part, TextContent))


def refusal(err: McpError) -> str:
    """An HTTP refusal as the client sees it: McpError, with the status in ``data``."""
    status = err.data.get("status") if isinstance(err.data, dict) else None
    return f"McpError {err.code}{f' (HTTP {status})' if status else ''}: {err.message.strip()}"


SCENARIOS: list[tuple[str, tuple[str, str] | None, list[tuple[str, dict[str, Any]]]]] = [
    ("no token", None, [("whoami", {})]),
    ("report-bot with a wrong secret", ("report-bot", "guess"), [("whoami", {})]),
    ("report-bot", ("report-bot", "report-secret"), [("whoami", {}), ("list_invoices", {}), ("refund", {"invoice": "INV-1"})]),
    ("billing-admin", ("billing-admin", "admin-secret"),
     [("whoami", {}), ("refund", {"invoice": "INV-1"}), ("whoami", {}), ("refund", {"invoice": "INV-9"})]),
]  # fmt: skip


async def demo() -> None:
    as_port, mcp_port = free_port(), free_port()
    issuer, url = f"http://127.0.0.1:{as_port}", f"http://127.0.0.1:{mcp_port}/mcp"
    auth_server = uvicorn.Server(uvicorn.Config(authorization_server(issuer), port=as_port, log_level="warning"))
    as_task = asyncio.create_task(auth_server.serve())
    proc = await asyncio.create_subprocess_exec(sys.executable, __file__, "server", str(mcp_port), issuer)
    try:
        await wait_listening(as_port)
        await wait_listening(mcp_port, proc)
        async with httpx.AsyncClient() as http:  # what anyone can learn without a token
            meta = (await http.get(f"http://127.0.0.1:{mcp_port}/.well-known/oauth-protected-resource/mcp")).json()
        print(f"metadata: scopes {meta['scopes_supported']}; tokens from our issuer: {meta['authorization_servers'] == [issuer]}")
        for label, credentials, calls in SCENARIOS:
            auth = None
            if credentials:  # a service account: at the first 401 the client gets a token (client_credentials)
                auth = OAuthClientAuth(client=PreRegisteredClient(credentials[0], client_secret=credentials[1]))
            await as_client(url, label, auth, calls)
    finally:
        proc.terminate()
        await proc.wait()
        auth_server.should_exit = True
        await as_task


if __name__ == "__main__":
    if sys.argv[1:2] == ["server"] and len(sys.argv) == 4:
        serve(int(sys.argv[2]), sys.argv[3])
    else:
        asyncio.run(demo())
