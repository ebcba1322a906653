"""The resource server's settings are checked where they are given, and a server without auth
gives its handlers no identity (in memory). Over real HTTP:
tests/e2e/auth/test_resource_server.py."""

from __future__ import annotations

import pytest

from mcpkit import Client, ClientOptions, Server
from mcpkit.auth.server import ResourceServer
from mcpkit.auth.verifiers import FunctionVerifier, JWTVerifier
from support.auth import ISSUER, make_server
from support.eras import MODERN


def test_resource_server_settings_are_checked() -> None:
    verifier = FunctionVerifier(lambda t: None)
    with pytest.raises(ValueError, match="absolute"):
        ResourceServer(resource="/mcp", authorization_servers=[ISSUER], verifier=verifier)
    with pytest.raises(ValueError, match="authorization server"):
        ResourceServer(resource="https://x/mcp", authorization_servers=[], verifier=verifier)
    with pytest.raises(ValueError, match="asymmetric"):
        JWTVerifier("https://x/jwks", issuer=ISSUER, audience="a", algorithms=["HS256"])
    with pytest.raises(TypeError):
        Server("s").tool(scopes="admin")(lambda: "x")  # type: ignore[arg-type]


async def test_unguarded_server_has_no_identity() -> None:
    async with Client(make_server(), ClientOptions(protocol_version=MODERN)) as client:
        result = await client.call_tool("whoami")  # it asserts an identity: without one, a tool error
    assert result.is_error
