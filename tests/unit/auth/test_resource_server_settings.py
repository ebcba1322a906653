"""The resource server's and the verifiers' settings are checked where they are given, a server
without auth gives its handlers no identity (in memory), and principals keep callers apart.
Over real HTTP: tests/e2e/auth/test_resource_server.py and tests/hostile/test_principals.py."""

from __future__ import annotations

import pytest

from mcpkit import AccessToken, Client, ClientOptions, Server
from mcpkit.auth.server import ResourceServer
from mcpkit.auth.verifiers import FunctionVerifier, IntrospectionVerifier, JWTVerifier
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


def test_verifier_settings_are_checked() -> None:
    for bad in ({"max_stale": -1}, {"max_backoff": float("inf")}, {"cache_ttl": -0.5}, {"timeout": 0}, {"min_refetch": True}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            JWTVerifier("https://x/jwks", issuer=ISSUER, audience="a", **bad)  # type: ignore[arg-type]
    for bad in ({"negative_ttl": -1}, {"max_concurrent": 0}, {"max_concurrent": 2.5}, {"timeout": -1}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            IntrospectionVerifier("https://x/i", client_id="c", client_secret="s", **bad)  # type: ignore[arg-type]


def test_principals_are_unambiguous_whatever_the_strings() -> None:
    """The principal keeps the kind, the issuer and the name apart: no choice of strings
    makes two different callers one."""
    callers = [
        AccessToken("client:svc", "app", frozenset(), claims={"iss": "https://as"}),  # a user named like a client
        AccessToken(None, "svc", frozenset(), claims={"iss": "https://as"}),  # the client itself
        AccessToken("svc", None, frozenset(), claims={"iss": "https://as"}),  # a user named like the client's id
        AccessToken("alice", None, frozenset(), claims={"iss": "https://other"}),
        AccessToken("alice", None, frozenset(), claims={"iss": "https://as"}),
        AccessToken('alice","https://as', None, frozenset(), claims={"iss": "https://as"}),  # quotes do not escape
        AccessToken("alice", None, frozenset()),  # no issuer named
        AccessToken(None, None, frozenset(), token_digest="svc"),
    ]
    principals = [caller.principal for caller in callers]
    assert len(set(principals)) == len(callers), principals
    assert callers[0].principal == '["sub","https://as","client:svc"]'
    assert AccessToken("", "svc", frozenset()).principal == AccessToken(None, "svc", frozenset()).principal  # empty = absent
    assert AccessToken(None, None, frozenset()).principal is None
