"""The OAuth client's pieces, in process (src/mcpkit/auth/client/): settings that cannot work,
WWW-Authenticate parsing, resource and metadata URLs, the authorization response's checks,
DPoP proofs, what it says without the auth extra, and how the target policy classifies
addresses. The whole flow against a real authorization server:
tests/e2e/auth/test_oauth_client.py; the target policy against a hostile server:
tests/hostile/test_oauth_client_targets.py."""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import sys

import httpx
import jwt
import pytest

from mcpkit import (
    OAuthClientAuth,
    OAuthClientMetadata,
    OAuthError,
    PreRegisteredClient,
    TargetPolicy,
)
from mcpkit.auth.client.authorize import Pending, finish
from mcpkit.auth.client.challenge import find_challenge, parse_challenges
from mcpkit.auth.client.dpop import DPoP
from mcpkit.auth.client.targets import address_kind
from mcpkit.auth.client.urls import authorization_server_urls, canonical_resource, protected_resource_urls, resource_covers


def test_settings_that_cannot_work_are_refused() -> None:
    with pytest.raises(ValueError, match="redirect handler"):
        OAuthClientAuth(grant="authorization_code")
    with pytest.raises(ValueError, match="client_secret or a private_key"):
        OAuthClientAuth(client=PreRegisteredClient("id"))
    with pytest.raises(ValueError, match="https URL with a path"):
        OAuthClientMetadata(metadata_url="http://app.example.com/client.json")
    assert "s3cret" not in repr(PreRegisteredClient("id", client_secret="s3cret"))


def test_www_authenticate_parsing() -> None:
    challenge = find_challenge(
        ['Basic realm="x", Bearer error="insufficient_scope", scope="a  b", resource_metadata="https://h/.w?x=\\"1\\""']
    )
    assert challenge.error == "insufficient_scope"
    assert challenge.scope == "a b"
    assert challenge.resource_metadata == 'https://h/.w?x="1"'
    assert [c.scheme for c in parse_challenges("Negotiate abc==, Bearer realm=mcp")] == ["negotiate", "bearer"]
    assert find_challenge(["Bearer " + "x" * 10_000]).params == {}  # too long: ignored
    assert find_challenge([]).scope is None


def test_resource_urls() -> None:
    assert canonical_resource("HTTPS://Mcp.Example.com:443/mcp/") == "https://mcp.example.com/mcp"
    assert resource_covers("https://h", "https://h/mcp")
    assert resource_covers("https://H/mcp/", "https://h/mcp")
    assert not resource_covers("https://h/m", "https://h/mcp")
    assert not resource_covers("https://evil/mcp", "https://h/mcp")
    assert protected_resource_urls("https://h/a/mcp") == [
        "https://h/.well-known/oauth-protected-resource/a/mcp",
        "https://h/.well-known/oauth-protected-resource",
    ]
    assert authorization_server_urls("https://a/tenant1") == [
        "https://a/.well-known/oauth-authorization-server/tenant1",
        "https://a/.well-known/openid-configuration/tenant1",
        "https://a/tenant1/.well-known/openid-configuration",
    ]


def test_authorization_response_checks() -> None:
    pending = Pending("u", "st", "http://127.0.0.1/cb", "https://as", iss_required=False, verifier="v")
    assert finish(pending, "http://127.0.0.1/cb?code=c&state=st") == "c"
    assert finish(pending, "http://127.0.0.1/cb?code=c&state=st&iss=https%3A%2F%2Fas") == "c"
    for bad, why in [
        ("code=c&state=st&iss=https%3A%2F%2Fas%2F", "not 'https://as'"),  # no normalisation
        ("code=c&state=other", "state"),
        ("error=access_denied&state=st&iss=https%3A%2F%2Fevil", "evil"),  # an error from another issuer is not acted on
        ("error=access_denied&state=st", "access_denied"),
        ("state=st", "no code"),
    ]:
        with pytest.raises(OAuthError, match=why):
            finish(pending, "http://127.0.0.1/cb?" + bad)
    pending.iss_required = True
    with pytest.raises(OAuthError, match="lacks the iss"):
        finish(pending, "http://127.0.0.1/cb?code=c&state=st")


def test_dpop_proofs() -> None:
    dpop = DPoP()
    proof = dpop.proof("post", "https://MCP.example.com/mcp?x=1#f", "the-token")
    header = jwt.get_unverified_header(proof)
    assert header["typ"] == "dpop+jwt"
    assert header["alg"] == "ES256"
    assert "d" not in header["jwk"]  # the public key only
    claims = jwt.decode(proof, jwt.PyJWK(header["jwk"]).key, algorithms=["ES256"])
    assert claims["htm"] == "POST"
    assert claims["htu"] == "https://MCP.example.com/mcp"  # no query, no fragment
    digest = hashlib.sha256(b"the-token").digest()
    assert claims["ath"] == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    assert "nonce" not in claims
    assert dpop.remember("https://mcp.example.com/other", {"dpop-nonce": "n1"})
    assert not dpop.remember("https://mcp.example.com/other", {"dpop-nonce": "n1"})  # not new
    again = jwt.decode(dpop.proof("GET", "https://mcp.example.com/mcp"), options={"verify_signature": False})
    assert again["nonce"] == "n1"
    assert again["jti"] != claims["jti"]
    elsewhere = jwt.decode(dpop.proof("POST", "https://as.example.com/token"), options={"verify_signature": False})
    assert "nonce" not in elsewhere  # nonces are per server


def test_without_the_auth_extra_signing_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """PyJWT is the ``auth`` extra: without it, DPoP and ``private_key_jwt`` refuse with
    the command that installs it (the rest of the flow needs no JOSE library)."""
    from mcpkit import OAuthError
    from mcpkit.auth.client.client_auth import authenticate
    from mcpkit.auth.client.dpop import DPoP
    from mcpkit.auth.client.storage import RegisteredClient

    monkeypatch.setitem(sys.modules, "jwt", None)  # as if PyJWT were not installed
    with pytest.raises(OAuthError, match=r"pip install 'mcpkit\[auth\]'"):
        DPoP()
    client = RegisteredClient("robot", "https://as.example", auth_method="private_key_jwt", private_key="-----")
    with pytest.raises(OAuthError, match=r"pip install 'mcpkit\[auth\]'"):
        authenticate(client, "https://as.example/token", {}, {})


def test_the_flow_refuses_a_synchronous_httpx_client() -> None:
    auth = OAuthClientAuth(client=PreRegisteredClient("robot", client_secret="s"))
    with httpx.Client(auth=auth) as http, pytest.raises(RuntimeError, match=r"httpx\.AsyncClient only"):
        http.get("http://127.0.0.1:9/")


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("8.8.8.8", None),
        ("2606:4700::1111", None),
        ("::ffff:8.8.8.8", None),  # IPv4-mapped: judged by the IPv4 address inside
        ("127.0.0.1", "loopback"),
        ("127.254.1.1", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::127.0.0.1", "loopback"),  # IPv4-compatible
        ("2002:7f00:1::", "loopback"),  # 6to4
        ("64:ff9b::7f00:1", "loopback"),  # NAT64
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("2001:0:4136:e378:8000:63bf:3f56:5601", "teredo"),  # Teredo: judged by its client (below)
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "private"),  # shared address space (CGNAT)
        ("fd00::2", "private"),
        ("192.0.2.2", "private"),  # documentation
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("224.0.0.251", "multicast"),
        ("ff02::1", "multicast"),
    ],
)
def test_addresses_are_classified_by_where_they_lead(address: str, kind: str | None) -> None:
    ip = ipaddress.ip_address(address)
    if ip.version == 6 and ip.teredo is not None:  # a Teredo address carries its client, obfuscated
        kind = address_kind(ip.teredo[1])
    assert address_kind(ip) == kind


async def test_the_target_policy_allows_what_it_lists_and_local_servers() -> None:
    policy = TargetPolicy(allow=["sso.corp.example", "10.20.0.0/16", "[fd00::7]"])
    public = {"server_url": "https://mcp.example.com/mcp", "server_address": "203.0.113.9", "what": "token endpoint"}
    assert await policy.check("https://10.20.3.4/token", **public) is None  # an address: connected to as it is
    assert await policy.check("https://[fd00::7]/token", **public) is None
    assert await policy.check("https://SSO.corp.example./token", **public) is None  # a listed name is not resolved
    assert await policy.check("https://203.0.113.9/.well-known/x", **public) is None  # the server's own address
    with pytest.raises(OAuthError, match="private address"):
        await policy.check("https://10.21.0.1/token", **public)
    with pytest.raises(OAuthError, match="names no host"):
        await policy.check("https:///token", **public)
    local = {"server_url": "http://localhost:8000/mcp", "what": "token endpoint"}
    assert await policy.check("http://127.0.0.1:9000/token", **local) is None
    assert await policy.check("http://10.0.0.1/token", server_url="https://mcp.test/mcp", server_address="::1", what="x") is None
    for bad in ("", "  ", 7):
        with pytest.raises(ValueError, match="allow"):
            TargetPolicy(allow=[bad])  # type: ignore[list-item]
    assert repr(TargetPolicy(allow=["a"])) == "TargetPolicy(allow=['a'])"
