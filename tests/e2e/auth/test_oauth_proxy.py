"""The OAuth proxy end to end (docs/auth.md, "An OAuth proxy"): an identity provider on
loopback shaped three ways (tests/support/servers/oauth_upstream.py: like GitHub, like
Google, like Keycloak), an mcpkit server protected by :class:`OAuthProxy` and served by
uvicorn, and mcpkit's OAuth client signing in through the proxy with its loopback
redirect; the "browser" is httpx, which follows the redirects, keeps cookies and approves
the proxy's consent page as a user would. Then the refusals, each with its RFC error, by
requests a client (or an attacker) could send.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from mcpkit import Client, ClientOptions, Context, HttpTransport, LoopbackRedirect, McpError, OAuthClientAuth, Server
from mcpkit.auth import providers
from mcpkit.auth.proxy import OAuthProxy, UpstreamIdentity, UpstreamProvider
from support.eras import MODERN as MODERN_VERSION
from support.servers.oauth_upstream import Like, UpstreamIdP

from .test_authorization_flow import listening_socket, serving, url_of

pytestmark = pytest.mark.timeout(60)

MODERN = ClientOptions(protocol_version=MODERN_VERSION, request_timeout=20)
SIGNING_KEY = ec.generate_private_key(ec.SECP256R1())


# --- the servers ---------------------------------------------------------------------------------------


def mcp_server() -> Server:
    server = Server("behind-proxy", "1.0.0")

    @server.tool
    def whoami(ctx: Context) -> str:
        who = ctx.identity
        assert who is not None
        return json.dumps({"subject": who.subject, "scopes": sorted(who.scopes), "claims": who.claims})

    @server.tool(scopes=["admin"])
    def purge(ctx: Context) -> str:
        return "purged"

    return server


def admins_only(identity: UpstreamIdentity, requested: list[str]) -> list[str]:
    """The scope policy: ``admin`` for Alice only (GitHub's login, the others' email)."""
    alice = identity.claims.get("login") == "alice" or identity.claims.get("email") == "alice@example.com"
    return [s for s in requested if s != "admin" or alice]


def provider_for(like: Like, base: str) -> UpstreamProvider:
    if like == "github":
        return providers.github(base_url=base, api_url=f"{base}/api")
    if like == "google":
        return providers.google(issuer=base)
    return providers.keycloak(base, "test")


@dataclass
class World:
    like: Like
    idp: UpstreamIdP
    proxy: OAuthProxy
    mcp_url: str
    origin: str


@pytest.fixture(scope="module", params=["github", "google", "keycloak"])
def world(request: pytest.FixtureRequest) -> Iterator[World]:
    like: Like = request.param
    up_sock, mcp_sock = listening_socket(), listening_socket()
    base, mcp_url = url_of(up_sock), url_of(mcp_sock, "/mcp")
    idp = UpstreamIdP(base, like)
    proxy = OAuthProxy(
        provider_for(like, base),
        client_id="mcp-proxy",
        client_secret="proxy-secret",
        resource=mcp_url,
        scopes=["mcp", "admin"],
        default_scopes=["mcp"],
        grant_scopes=admins_only,
        signing_key=SIGNING_KEY,
    )
    idp.add_client("mcp-proxy", "proxy-secret", proxy.callback_url)
    app = mcp_server().asgi_app(auth=proxy.resource_server(required_scopes=["mcp"]))
    with serving((up_sock, idp.asgi()), (mcp_sock, app)):
        yield World(like, idp, proxy, mcp_url, url_of(mcp_sock))


# --- the user's browser --------------------------------------------------------------------------------


@dataclass
class Browser:
    """A browser with its cookies: follows redirects, shows consent pages to a user who
    ``approves`` them (or not), and stops at ``stop_at`` (a client's redirect URI nobody
    listens on) when given."""

    user: str = "alice"
    approves: bool = True
    consents: list[str] = field(default_factory=list)  # the clients whose consent was asked
    http: httpx.AsyncClient = field(default_factory=lambda: httpx.AsyncClient(timeout=10))

    async def go(self, url: str, stop_at: str | None = None) -> httpx.Response:
        response = await self.http.get(url, headers={"x-test-user": self.user})
        for _ in range(10):
            if response.status_code == 302:
                location = response.headers["location"]
                if stop_at is not None and location.startswith(stop_at):
                    return response
                response = await self.http.get(location, headers={"x-test-user": self.user})
            elif response.status_code == 200 and "name=login" in response.text:
                response = await self.answer(response)
            else:
                return response
        raise AssertionError("too many redirects")

    async def answer(self, page: httpx.Response) -> httpx.Response:
        client = re.search(r"\(client <code>([^<]+)</code>\)", page.text)
        self.consents.append(html.unescape(client.group(1)) if client else "?")
        action = html.unescape(re.search(r'action="([^"]+)"', page.text).group(1))  # type: ignore[union-attr]
        login = html.unescape(re.search(r'name=login value="([^"]+)"', page.text).group(1))  # type: ignore[union-attr]
        origin = "{0.scheme}://{0.netloc}".format(urlsplit(action))
        decision = "allow" if self.approves else "deny"
        return await self.http.post(action, data={"login": login, "decision": decision}, headers={"origin": origin})

    async def open(self, url: str) -> None:
        """LoopbackRedirect's ``open_url``: the whole login, back to the client."""
        final = await self.go(url)
        assert final.status_code == 200, final.text


def login(browser: Browser) -> OAuthClientAuth:
    return OAuthClientAuth(redirect=LoopbackRedirect(open_url=browser.open, timeout=20))


async def tool(client: Client, name: str) -> Any:
    result = await client.call_tool(name, {})
    assert not result.is_error, result
    text = result.content[0].text  # type: ignore[union-attr]
    return json.loads(text) if name == "whoami" else text


# --- signing in ----------------------------------------------------------------------------------------


async def test_sign_in_through_the_proxy_and_call_a_scoped_tool(world: World) -> None:
    browser = Browser()
    auth = login(browser)
    async with Client(HttpTransport(world.mcp_url, auth=auth), options=MODERN) as client:
        me = await tool(client, "whoami")
        assert await tool(client, "purge") == "purged"  # a step-up to admin, no second consent
    await browser.http.aclose()
    expected = "4242" if world.like == "github" else "alice"
    assert me["subject"] == expected
    assert me["scopes"] == ["mcp"]
    assert me["claims"]["iss"] == world.origin
    assert me["claims"]["aud"] == world.mcp_url
    assert me["claims"]["email" if world.like != "github" else "login"] in ("alice@example.com", "alice")
    assert len(browser.consents) == 1  # asked once, for this client and redirect URI
    # upstream, the proxy signed in with its own client and PKCE
    authorizations = world.idp.calls("authorize")
    assert authorizations
    assert all(a["client_id"] == "mcp-proxy" and a["code_challenge_method"] == "S256" for a in authorizations)
    assert all("code_verifier" in t for t in world.idp.calls("token"))
    if world.like == "github":
        assert world.idp.calls("user")  # opaque tokens: the identity from the user API
    else:
        assert world.idp.calls("discovery")
        assert world.idp.calls("jwks")


async def test_a_user_without_the_scope_gets_insufficient_scope(world: World) -> None:
    browser = Browser(user="bob")
    async with Client(HttpTransport(world.mcp_url, auth=login(browser)), options=MODERN) as client:
        assert (await tool(client, "whoami"))["scopes"] == ["mcp"]
        with pytest.raises(McpError) as refused:
            await client.call_tool("purge", {})
    await browser.http.aclose()
    assert refused.value.data == {"status": 403, "body": "Forbidden: insufficient scope"}  # after the step-ups
    assert len(browser.consents) == 1


async def test_the_provider_presets_say_whether_the_proxy_is_needed(world: World) -> None:
    provider = world.proxy.settings.upstream.provider
    assert provider.needs_proxy == (world.like != "keycloak")
    if world.like == "keycloak":
        async with httpx.AsyncClient() as http:
            doc = (await http.get(f"{world.idp.issuer}/.well-known/openid-configuration")).json()
        assert doc["registration_endpoint"].startswith(world.idp.base)
