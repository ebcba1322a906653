"""The resource server's and the verifiers' settings are checked where they are given, a server
without auth gives its handlers no identity (in memory), and principals keep callers apart.
Over real HTTP: tests/e2e/auth/test_resource_server.py and tests/hostile/test_principals.py."""

from __future__ import annotations

import pytest

from mcpkit import AccessToken, Client, ClientOptions, Server
from mcpkit.auth.server import ResourceServer
from mcpkit.auth.verifiers import FunctionVerifier, IntrospectionVerifier, JWTVerifier, identity_from_claims
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


@pytest.mark.parametrize("resource", ["/mcp", "ftp://x/mcp", "https:///mcp", "https://x/mcp#top", "x/mcp", "//x/mcp", ""])
def test_the_resource_must_be_an_absolute_http_url_without_a_fragment(resource: str) -> None:
    with pytest.raises(ValueError, match=r"^resource must be an absolute http\(s\) URL without a fragment$"):
        ResourceServer(resource=resource, authorization_servers=[ISSUER], verifier=FunctionVerifier(lambda t: None))


def test_at_least_one_authorization_server() -> None:
    for servers in ([], ()):
        with pytest.raises(ValueError, match=r"^name at least one authorization server$"):
            ResourceServer(resource="https://x/mcp", authorization_servers=servers, verifier=FunctionVerifier(lambda t: None))


@pytest.mark.parametrize(
    ("resource", "path", "url", "paths"),
    [
        (
            "https://mcp.example.com/mcp",
            "/.well-known/oauth-protected-resource/mcp",
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
            ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"),
        ),
        (
            "http://127.0.0.1:8000/a/b/?q=1",
            "/.well-known/oauth-protected-resource/a/b",
            "http://127.0.0.1:8000/.well-known/oauth-protected-resource/a/b",
            ("/.well-known/oauth-protected-resource/a/b", "/.well-known/oauth-protected-resource"),
        ),
        (
            "https://mcp.example.com/",
            "/.well-known/oauth-protected-resource",
            "https://mcp.example.com/.well-known/oauth-protected-resource",
            ("/.well-known/oauth-protected-resource",),
        ),
        (
            "https://mcp.example.com",
            "/.well-known/oauth-protected-resource",
            "https://mcp.example.com/.well-known/oauth-protected-resource",
            ("/.well-known/oauth-protected-resource",),
        ),
    ],
)
def test_where_the_metadata_is_served(resource: str, path: str, url: str, paths: tuple[str, ...]) -> None:
    """RFC 9728 section 3.1: the well-known prefix, then the resource's path."""
    auth = ResourceServer(resource=resource, authorization_servers=[ISSUER], verifier=FunctionVerifier(lambda t: None))
    assert (auth.metadata_path, auth.metadata_url, auth.metadata_paths()) == (path, url, paths)


def test_the_metadata_document() -> None:
    verifier = FunctionVerifier(lambda t: None)
    plain = ResourceServer(resource="https://x/mcp", authorization_servers=[ISSUER, "https://as2"], verifier=verifier)
    assert plain.metadata() == {
        "resource": "https://x/mcp",
        "authorization_servers": [ISSUER, "https://as2"],
        "bearer_methods_supported": ["header"],
    }
    assert plain.metadata(["b", "a", "b"])["scopes_supported"] == ["a", "b"]
    full = ResourceServer(
        resource="https://x/mcp",
        authorization_servers=(ISSUER,),
        verifier=verifier,
        required_scopes=["mcp"],
        resource_name="The X server",
        resource_documentation="https://x/docs",
        extra_metadata={"bearer_methods_supported": ["header", "body"], "x-custom": 1},
    )
    assert full.metadata(["admin"]) == {
        "resource": "https://x/mcp",
        "authorization_servers": [ISSUER],
        "bearer_methods_supported": ["header", "body"],
        "scopes_supported": ["admin", "mcp"],
        "resource_name": "The X server",
        "resource_documentation": "https://x/docs",
        "x-custom": 1,
    }
    named = ResourceServer(
        resource="https://x/mcp",
        authorization_servers=[ISSUER],
        verifier=verifier,
        required_scopes=["mcp"],
        scopes_supported=["z"],
    )
    assert named.metadata(["admin"])["scopes_supported"] == ["z"]  # as given, not computed
    none = ResourceServer(
        resource="https://x/mcp", authorization_servers=[ISSUER], verifier=verifier, required_scopes=["mcp"], scopes_supported=[]
    )
    assert "scopes_supported" not in none.metadata(["admin"])


def test_the_challenge() -> None:
    auth = ResourceServer(resource="https://x/mcp", authorization_servers=[ISSUER], verifier=FunctionVerifier(lambda t: None))
    meta = 'resource_metadata="https://x/.well-known/oauth-protected-resource/mcp"'
    assert auth.challenge() == f"Bearer {meta}"
    assert auth.challenge(scopes=["b", "a", "b"]) == f'Bearer {meta}, scope="b a"'
    assert auth.challenge(error="invalid_token", scopes=["a"], description='a "q" \\ b') == (
        f'Bearer {meta}, scope="a", error="invalid_token", error_description="a \\"q\\" \\\\ b"'
    )
    assert auth.challenge(error="", description="") == f"Bearer {meta}"


def test_an_identity_keeps_its_claims_and_names_only_what_the_token_names() -> None:
    """What a handler reads of the caller (``AccessToken``): no subject or client invented
    for a token without them (not the string ``"None"``), and every claim as sent."""
    claims = {"scope": "read write", "exp": 10, "custom": [1, 2]}
    anonymous = identity_from_claims(claims)
    assert anonymous.subject is None
    assert anonymous.client_id is None
    assert anonymous.claims == claims
    assert anonymous.scopes == {"read", "write"}
    named = identity_from_claims({"sub": 7, "azp": "app"})
    assert (named.subject, named.client_id) == ("7", "app")
