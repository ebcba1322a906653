"""The OAuth proxy's pieces that need no server: the consent cookie's signature and what
it binds, redirect URIs a registration may name, the presets and settings refused."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from mcpkit import OAuthProxy, UpstreamProvider
from mcpkit.auth import providers
from mcpkit.auth.proxy.consent import CONSENT_COOKIE, ConsentJar
from mcpkit.auth.proxy.registration import valid_redirect_uri


def value_of(set_cookie: str) -> str:
    name, _, rest = set_cookie.partition("=")
    assert name == CONSENT_COOKIE
    return rest.split(";", 1)[0]


def test_an_approval_is_of_one_client_redirect_uri_and_its_scopes() -> None:
    jar = ConsentJar(b"k" * 32, ttl=3600, secure=True)
    cookie = value_of(jar.with_approval(None, "app", "https://app.example/cb", ["mcp"]))
    assert jar.approved(cookie, "app", "https://app.example/cb", ["mcp"])
    assert jar.approved(cookie, "app", "https://app.example/cb", [])
    assert not jar.approved(cookie, "app", "https://app.example/cb", ["mcp", "admin"])  # a scope not approved
    assert not jar.approved(cookie, "other", "https://app.example/cb", ["mcp"])  # another client
    assert not jar.approved(cookie, "app", "https://app.example/other", ["mcp"])  # another redirect URI
    more = value_of(jar.with_approval(cookie, "app", "https://app.example/cb", ["admin"]))
    assert jar.approved(more, "app", "https://app.example/cb", ["mcp", "admin"])  # added to what was approved


def test_a_cookie_that_was_not_signed_with_the_secret_approves_nothing() -> None:
    jar = ConsentJar(b"k" * 32, ttl=3600, secure=False)
    cookie = value_of(jar.with_approval(None, "app", "https://app.example/cb", ["mcp"]))
    body, _, signature = cookie.rpartition(".")
    other = ConsentJar(b"x" * 32, ttl=3600, secure=False)
    assert not other.approved(cookie, "app", "https://app.example/cb", ["mcp"])  # another secret
    assert not jar.approved(body + "." + signature[:-2] + "AA", "app", "https://app.example/cb", ["mcp"])
    assert not jar.approved("garbage", "app", "https://app.example/cb", ["mcp"])
    assert not jar.approved(None, "app", "https://app.example/cb", ["mcp"])


def test_approvals_expire_and_are_bounded() -> None:
    jar = ConsentJar(b"k" * 32, ttl=3600, secure=True)
    expired = ConsentJar(b"k" * 32, ttl=-1, secure=True)
    assert not jar.approved(value_of(expired.with_approval(None, "a", "https://a/cb", [])), "a", "https://a/cb", [])
    cookie = None
    for i in range(25):
        cookie = value_of(jar.with_approval(cookie, f"c{i}", "https://a/cb", []))
    assert len(jar.approvals(cookie)) == 20
    assert jar.approved(cookie, "c24", "https://a/cb", [])
    assert not jar.approved(cookie, "c0", "https://a/cb", [])  # the oldest dropped
    set_cookie = jar.with_approval(None, "a", "https://a/cb", [])
    assert "HttpOnly" in set_cookie
    assert "SameSite=Lax" in set_cookie
    assert "Secure" in set_cookie


@pytest.mark.parametrize(
    ("uri", "ok"),
    [
        ("https://app.example/cb", True),
        ("http://127.0.0.1:8765/callback", True),
        ("http://[::1]/cb", True),
        ("http://localhost:3000/cb", True),
        ("com.example.app:/oauth", True),
        ("http://app.example/cb", False),  # plain HTTP off loopback
        ("https://app.example/cb#x", False),
        ("javascript:alert(1)", False),
        ("/relative", False),
        ("https://app.example/a b", False),
        ("https://app.example/caf\u00e9", False),  # not ASCII: percent-encode it
        ("https://app.example/caf%C3%A9", True),
        ("https://app.example/a\x00b", False),
        ("https://app.example/a\x7fb", False),
        (42, False),
    ],
)
def test_redirect_uris_a_registration_may_name(uri: object, ok: bool) -> None:
    assert valid_redirect_uri(uri) is ok


def test_descriptions_that_cannot_work_are_refused() -> None:
    with pytest.raises(ValueError, match="tenant"):
        providers.entra("common")
    with pytest.raises(ValueError, match="issuer to discover"):
        UpstreamProvider(name="x", authorization_endpoint="https://x/a")
    with pytest.raises(ValueError, match="openid"):
        UpstreamProvider(name="x", issuer="https://x", scopes=("email",))
    github = providers.github()
    with pytest.raises(ValueError, match="default_scopes"):
        OAuthProxy(github, client_id="c", client_secret="s", resource="https://m/mcp", scopes=["a"], default_scopes=["b"])
    with pytest.raises(ValueError, match="resource"):
        OAuthProxy(github, client_id="c", client_secret="s", resource="m/mcp")
    with pytest.raises(ValueError, match="secret"):
        OAuthProxy(github, client_id="c", client_secret="s", resource="https://m/mcp", secret=b"short")
    with pytest.raises(ValueError, match="with a host"):
        OAuthProxy(github, client_id="c", client_secret="s", resource="https://m/mcp", issuer="https:///path")
    with pytest.raises(ValueError, match="P-256"):
        OAuthProxy(
            github,
            client_id="c",
            client_secret="s",
            resource="https://m/mcp",
            signing_key=ec.generate_private_key(ec.SECP384R1()),
        )


def test_the_proxy_serves_under_its_issuer() -> None:
    proxy = OAuthProxy(providers.github(), client_id="c", client_secret="s", resource="https://m.example/mcp")
    assert proxy.issuer == "https://m.example"
    assert proxy.callback_url == "https://m.example/callback"
    assert proxy.handles("/.well-known/oauth-authorization-server")
    assert proxy.handles("/token")
    assert not proxy.handles("/mcp")
    nested = OAuthProxy(providers.github(), client_id="c", client_secret="s", resource="https://m.example/mcp",
                        issuer="https://m.example/oauth")  # fmt: skip
    assert nested.callback_url == "https://m.example/oauth/callback"
    assert nested.handles("/.well-known/oauth-authorization-server/oauth")  # RFC 8414 §3.1
    assert nested.handles("/oauth/authorize")
    assert not nested.handles("/authorize")
    auth = proxy.resource_server(required_scopes=["mcp"])
    assert auth.authorization_servers == ["https://m.example"]
    assert auth.endpoints is proxy
