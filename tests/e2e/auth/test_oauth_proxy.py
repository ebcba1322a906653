"""The OAuth proxy end to end (docs/auth.md, "An OAuth proxy"): an identity provider on
loopback shaped three ways (tests/support/servers/oauth_upstream.py: like GitHub, like
Google, like Keycloak), an mcpkit server protected by :class:`OAuthProxy` and served by
uvicorn, and mcpkit's OAuth client signing in through the proxy with its loopback
redirect; the "browser" is httpx, which follows the redirects, keeps cookies and approves
the proxy's consent page as a user would. Then the refusals, each with its RFC error, by
requests a client (or an attacker) could send.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import html
import json
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from mcpkit import Client, ClientOptions, Context, HttpTransport, LoopbackRedirect, McpError, OAuthClientAuth, Server
from mcpkit.auth import providers
from mcpkit.auth.proxy import OAuthProxy, UpstreamIdentity, UpstreamProvider
from mcpkit.auth.proxy.tokens import TokenMinter
from mcpkit.auth.verifiers import JWTVerifier
from support.eras import MODERN as MODERN_VERSION
from support.peers import Inspector
from support.ports import free_port
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
    scopes: list[list[str]] = field(default_factory=list)  # the scopes each time
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
        self.scopes.append(sorted(html.unescape(s) for s in re.findall(r"<li><code>([^<]+)</code></li>", page.text)))
        action = html.unescape(re.search(r'action="([^"]+)"', page.text).group(1))  # type: ignore[union-attr]
        login = html.unescape(re.search(r'name=login value="([^"]+)"', page.text).group(1))  # type: ignore[union-attr]
        origin = "{0.scheme}://{0.netloc}".format(urlsplit(action))
        decision = "allow" if self.approves else "deny"
        return await self.http.post(action, data={"login": login, "decision": decision}, headers={"origin": origin})

    async def __aenter__(self) -> Browser:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.aclose()

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
    async with Browser() as browser, Client(HttpTransport(world.mcp_url, auth=login(browser)), options=MODERN) as client:
        me = await tool(client, "whoami")
        assert await tool(client, "purge") == "purged"  # a step-up to admin: asked again, for admin
    expected = "4242" if world.like == "github" else "alice"
    assert me["subject"] == expected
    assert me["scopes"] == ["mcp"]
    assert me["claims"]["iss"] == world.origin
    assert me["claims"]["aud"] == world.mcp_url
    assert me["claims"]["email" if world.like != "github" else "login"] in ("alice@example.com", "alice")
    assert len(browser.consents) == 2  # for mcp, then for admin too; the same client
    assert browser.scopes == [["mcp"], ["admin", "mcp"]]
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
    async with (
        Browser(user="bob") as browser,
        Client(HttpTransport(world.mcp_url, auth=login(browser)), options=MODERN) as client,
    ):
        assert (await tool(client, "whoami"))["scopes"] == ["mcp"]
        with pytest.raises(McpError) as refused:
            await client.call_tool("purge", {})
    assert refused.value.data == {"status": 403, "body": "Forbidden: insufficient scope"}  # after the step-ups
    assert browser.scopes == [["mcp"], ["admin", "mcp"]]  # admin approved by Bob, withheld by the policy


async def test_the_provider_presets_say_whether_the_proxy_is_needed(world: World) -> None:
    provider = world.proxy.settings.upstream.provider
    assert provider.needs_proxy == (world.like != "keycloak")
    if world.like == "keycloak":
        async with httpx.AsyncClient() as http:
            doc = (await http.get(f"{world.idp.issuer}/.well-known/openid-configuration")).json()
        assert doc["registration_endpoint"].startswith(world.idp.base)


# --- the refusals, request by request --------------------------------------------------------------------

CLIENT_REDIRECT = "http://127.0.0.1:9/callback"  # nobody listens: the browser stops there


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    return verifier, base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


async def register(world: World, name: str = "raw client", **metadata: Any) -> dict[str, Any]:
    body = {"client_name": name, "redirect_uris": [CLIENT_REDIRECT], "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"], **metadata}  # fmt: skip
    async with httpx.AsyncClient() as http:
        resp = await http.post(f"{world.origin}/register", json=body)
    assert resp.status_code == 201, resp.text
    return dict(resp.json())


def authorize_url(world: World, client: dict[str, Any], challenge: str, **params: str) -> str:
    query = {"response_type": "code", "client_id": client["client_id"], "redirect_uri": CLIENT_REDIRECT,
             "code_challenge": challenge, "code_challenge_method": "S256", "state": "st-1", "resource": world.mcp_url,
             "scope": "mcp", **params}  # fmt: skip
    return f"{world.origin}/authorize?{urlencode(query)}"


def redirected(response: httpx.Response) -> dict[str, str]:
    """The parameters of the redirect back to the client."""
    assert response.status_code == 302, response.text
    location = response.headers["location"]
    assert location.startswith(CLIENT_REDIRECT), location
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


async def code_for(world: World, browser: Browser, client: dict[str, Any], challenge: str) -> str:
    params = redirected(await browser.go(authorize_url(world, client, challenge), stop_at=CLIENT_REDIRECT))
    assert params["state"] == "st-1"
    assert params["iss"] == world.proxy.issuer
    return params["code"]


async def post_token(world: World, **form: str) -> httpx.Response:
    async with httpx.AsyncClient() as http:
        return await http.post(f"{world.origin}/token", data=form)


async def exchange(world: World, client: dict[str, Any], code: str, verifier: str) -> httpx.Response:
    return await post_token(world, grant_type="authorization_code", client_id=client["client_id"], code=code,
                            code_verifier=verifier, redirect_uri=CLIENT_REDIRECT)  # fmt: skip


async def tokens_for(world: World, client: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """A client and its tokens, after a whole login by a browser of Alice's."""
    client = client or await register(world)
    verifier, challenge = pkce()
    async with Browser() as browser:
        code = await code_for(world, browser, client, challenge)
    resp = await exchange(world, client, code, verifier)
    assert resp.status_code == 200, resp.text
    return client, dict(resp.json())


async def call_mcp(world: World, token: str) -> httpx.Response:
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": MODERN_VERSION,
               "mcp-method": "tools/call", "mcp-name": "whoami", "authorization": f"Bearer {token}"}  # fmt: skip
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN_VERSION, "io.modelcontextprotocol/clientCapabilities": {}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami", "arguments": {}, "_meta": meta}}
    async with httpx.AsyncClient() as http:
        return await http.post(world.mcp_url, json=body, headers=headers)


def assert_invalid_token(resp: httpx.Response, reason: str) -> None:
    assert resp.status_code == 401, resp.text
    challenge = resp.headers["www-authenticate"]
    assert 'error="invalid_token"' in challenge, challenge
    assert reason in challenge, challenge


def assert_oauth_error(resp: httpx.Response, error: str, status: int = 400) -> None:
    assert resp.status_code == status, resp.text
    assert resp.json()["error"] == error, resp.text


async def test_a_token_for_another_resource_is_invalid_token(world: World) -> None:
    _, tokens = await tokens_for(world)
    assert (await call_mcp(world, tokens["access_token"])).status_code == 200  # the proxy's own token works
    other = TokenMinter(world.proxy.issuer, "http://127.0.0.1:1/other-mcp", SIGNING_KEY)  # same signer, other audience
    foreign, _ = other.mint(subject="alice", client_id="c", scopes=["mcp"], grant_id="g", lifetime=300, claims={})
    assert_invalid_token(await call_mcp(world, foreign), "not for this resource")


async def test_a_login_for_another_resource_is_invalid_target(world: World) -> None:
    client = await register(world)
    _, challenge = pkce()
    async with Browser() as browser:
        resp = await browser.go(authorize_url(world, client, challenge, resource="http://127.0.0.1:1/other"), CLIENT_REDIRECT)
    params = redirected(resp)
    assert params["error"] == "invalid_target"
    assert params["state"] == "st-1"
    assert params["iss"] == world.proxy.issuer
    resp = await post_token(world, grant_type="authorization_code", client_id=client["client_id"], code="x",
                            code_verifier="y" * 43, resource="http://127.0.0.1:1/other")  # fmt: skip
    assert_oauth_error(resp, "invalid_target")


async def test_a_replayed_code_is_invalid_grant_and_ends_its_grant(world: World) -> None:
    client = await register(world)
    verifier, challenge = pkce()
    async with Browser() as browser:
        code = await code_for(world, browser, client, challenge)
    first = await exchange(world, client, code, verifier)
    assert first.status_code == 200, first.text
    assert (await call_mcp(world, first.json()["access_token"])).status_code == 200
    assert_oauth_error(await exchange(world, client, code, verifier), "invalid_grant")
    # the grant the code began is over: its access token and refresh token with it
    assert_invalid_token(await call_mcp(world, first.json()["access_token"]), "revoked")
    resp = await post_token(world, grant_type="refresh_token", client_id=client["client_id"],
                            refresh_token=first.json()["refresh_token"])  # fmt: skip
    assert_oauth_error(resp, "invalid_grant")


async def test_a_wrong_pkce_verifier_is_invalid_grant(world: World) -> None:
    client = await register(world)
    verifier, challenge = pkce()
    async with Browser() as browser:
        code = await code_for(world, browser, client, challenge)
    assert_oauth_error(await exchange(world, client, code, pkce()[0]), "invalid_grant")
    assert_oauth_error(await exchange(world, client, code, verifier), "invalid_grant")  # the code is spent


async def test_a_code_is_for_the_client_it_was_issued_to(world: World) -> None:
    client, thief = await register(world), await register(world, "thief")
    verifier, challenge = pkce()
    async with Browser() as browser:
        code = await code_for(world, browser, client, challenge)
    assert_oauth_error(await exchange(world, thief, code, verifier), "invalid_grant")


async def test_a_second_client_cannot_reuse_the_first_clients_consent(world: World) -> None:
    first = await register(world, "first app", redirect_uris=[CLIENT_REDIRECT, "http://127.0.0.1:9/other"])
    second = await register(world, "second app")
    async with Browser() as browser:
        await code_for(world, browser, first, pkce()[1])
        await code_for(world, browser, first, pkce()[1])  # approved: not asked again
        assert browser.consents == [first["client_id"]]
        # the same browser, another client: the consent page again, naming it
        page = await browser.http.get(authorize_url(world, second, pkce()[1]))
        assert page.status_code == 200
        assert "second app" in page.text
        assert second["client_id"] in page.text
        # the first client, another of its redirect URIs: asked again too
        other = await browser.http.get(authorize_url(world, first, pkce()[1], redirect_uri="http://127.0.0.1:9/other"))
        assert other.status_code == 200
        assert "name=login" in other.text
        login = html.unescape(re.search(r'name=login value="([^"]+)"', page.text).group(1))  # type: ignore[union-attr]
        # the approval cannot be submitted by another browser (a page elsewhere posting the form) ...
        async with httpx.AsyncClient() as elsewhere:
            forged = await elsewhere.post(f"{world.origin}/consent", data={"login": login, "decision": "allow"})
            assert forged.status_code == 403
        # ... nor from another origin, even carrying the user's cookies
        cross = await browser.http.post(f"{world.origin}/consent", data={"login": login, "decision": "allow"},
                                        headers={"origin": "http://127.0.0.1:1"})  # fmt: skip
        assert cross.status_code == 403
    # and the upstream callback for a login this browser never approved is refused
    async with httpx.AsyncClient() as elsewhere:
        resp = await elsewhere.get(f"{world.origin}/callback", params={"state": login, "code": "stolen"})
        assert resp.status_code == 403


async def test_a_denied_consent_is_access_denied(world: World) -> None:
    client = await register(world)
    async with Browser(approves=False) as browser:
        params = redirected(await browser.go(authorize_url(world, client, pkce()[1]), stop_at=CLIENT_REDIRECT))
    assert params["error"] == "access_denied"
    assert params["state"] == "st-1"


async def test_a_bad_redirect_uri_is_refused(world: World) -> None:
    client = await register(world)
    async with httpx.AsyncClient() as http:
        resp = await http.get(authorize_url(world, client, pkce()[1], redirect_uri="https://attacker.example/cb"))
        assert_oauth_error(resp, "invalid_request")
        assert "location" not in resp.headers  # nothing is sent to an unregistered URI
        for uri in ("http://attacker.example/cb", "https://app.example/cb#frag", "javascript:alert(1)"):
            resp = await http.post(f"{world.origin}/register", json={"redirect_uris": [uri]})
            assert_oauth_error(resp, "invalid_redirect_uri")
    verifier, challenge = pkce()
    async with Browser() as browser:
        code = await code_for(world, browser, client, challenge)
    resp = await post_token(world, grant_type="authorization_code", client_id=client["client_id"], code=code,
                            code_verifier=verifier, redirect_uri="http://127.0.0.1:9/elsewhere")  # fmt: skip
    assert_oauth_error(resp, "invalid_grant")


async def test_pkce_with_s256_is_required(world: World) -> None:
    client = await register(world)
    async with Browser() as browser:
        for params in ({"code_challenge_method": "plain"}, {"code_challenge": "short"}):
            resp = await browser.go(authorize_url(world, client, pkce()[1], **params), stop_at=CLIENT_REDIRECT)
            assert redirected(resp)["error"] == "invalid_request"
        resp = await browser.go(authorize_url(world, client, pkce()[1], scope="mcp root"), stop_at=CLIENT_REDIRECT)
        assert redirected(resp)["error"] == "invalid_scope"
    assert browser.consents == []


async def test_a_revoked_token_is_refused(world: World) -> None:
    client, tokens = await tokens_for(world)
    async with httpx.AsyncClient() as http:
        resp = await http.post(f"{world.origin}/revoke", data={"client_id": client["client_id"], "token": tokens["access_token"]})
        assert resp.status_code == 200
    assert_invalid_token(await call_mcp(world, tokens["access_token"]), "revoked")
    # the refresh token still works (RFC 7009: revoking an access token ends that token) ...
    resp = await post_token(
        world, grant_type="refresh_token", client_id=client["client_id"], refresh_token=tokens["refresh_token"]
    )
    assert resp.status_code == 200, resp.text
    fresh = resp.json()
    assert (await call_mcp(world, fresh["access_token"])).status_code == 200
    # ... until it is revoked, which ends the grant: its access tokens too
    async with httpx.AsyncClient() as http:
        resp = await http.post(f"{world.origin}/revoke", data={"client_id": client["client_id"], "token": fresh["refresh_token"]})
        assert resp.status_code == 200
    assert_invalid_token(await call_mcp(world, fresh["access_token"]), "revoked")
    resp = await post_token(
        world, grant_type="refresh_token", client_id=client["client_id"], refresh_token=fresh["refresh_token"]
    )
    assert_oauth_error(resp, "invalid_grant")


async def test_refresh_tokens_rotate_and_a_reused_one_ends_the_grant(world: World) -> None:
    client, tokens = await tokens_for(world)
    resp = await post_token(
        world, grant_type="refresh_token", client_id=client["client_id"], refresh_token=tokens["refresh_token"]
    )
    assert resp.status_code == 200, resp.text
    rotated = resp.json()
    assert rotated["refresh_token"] != tokens["refresh_token"]
    # the old one again (a copy someone kept): refused, and the grant is over
    resp = await post_token(
        world, grant_type="refresh_token", client_id=client["client_id"], refresh_token=tokens["refresh_token"]
    )
    assert_oauth_error(resp, "invalid_grant")
    assert_invalid_token(await call_mcp(world, rotated["access_token"]), "revoked")
    resp = await post_token(
        world, grant_type="refresh_token", client_id=client["client_id"], refresh_token=rotated["refresh_token"]
    )
    assert_oauth_error(resp, "invalid_grant")


async def test_confidential_clients_authenticate(world: World) -> None:
    client = await register(world, token_endpoint_auth_method="client_secret_basic")
    assert client["client_secret"]
    verifier, challenge = pkce()
    async with Browser() as browser:
        code = await code_for(world, browser, client, challenge)
    form = {"grant_type": "authorization_code", "code": code, "code_verifier": verifier, "redirect_uri": CLIENT_REDIRECT}
    async with httpx.AsyncClient() as http:
        wrong = await http.post(f"{world.origin}/token", data=form, auth=(client["client_id"], "not-the-secret"))
        assert_oauth_error(wrong, "invalid_client", 401)
        public = await http.post(f"{world.origin}/token", data={**form, "client_id": client["client_id"]})
        assert_oauth_error(public, "invalid_client", 401)
        right = await http.post(f"{world.origin}/token", data=form, auth=(client["client_id"], client["client_secret"]))
        assert right.status_code == 200, right.text


async def test_the_metadata_points_clients_at_the_proxy(world: World) -> None:
    async with httpx.AsyncClient() as http:
        resource = (await http.get(f"{world.origin}/.well-known/oauth-protected-resource/mcp")).json()
        metadata = (await http.get(f"{world.origin}/.well-known/oauth-authorization-server")).json()
        keys = (await http.get(metadata["jwks_uri"])).json()
    assert resource["authorization_servers"] == [world.proxy.issuer]
    assert resource["scopes_supported"] == ["mcp", "admin"]
    assert metadata["issuer"] == world.proxy.issuer
    assert metadata["registration_endpoint"] == f"{world.origin}/register"
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert [k["kty"] for k in keys["keys"]] == ["EC"]
    # a resource server elsewhere checks the proxy's tokens with a JWTVerifier on that key set
    _, tokens = await tokens_for(world)
    verifier = JWTVerifier(metadata["jwks_uri"], issuer=world.proxy.issuer, audience=world.mcp_url)
    identity = await verifier.verify(tokens["access_token"])
    assert identity.subject == ("4242" if world.like == "github" else "alice")
    assert identity.scopes == {"mcp"}


async def test_signing_out_revokes_the_tokens(world: World) -> None:
    async with Browser() as browser:
        auth = login(browser)
        async with Client(HttpTransport(world.mcp_url, auth=auth), options=MODERN) as client:
            await tool(client, "whoami")
            record = await auth.storage.load(f"tokens {world.mcp_url}")
            assert record is not None
            assert await auth.logout() is True  # the proxy's metadata names its revocation endpoint
    assert_invalid_token(await call_mcp(world, record["access_token"]), "revoked")


# --- the official SDK's client ---------------------------------------------------------------------------


async def test_the_official_client_signs_in_through_the_proxy(world: World) -> None:
    """The official ``mcp`` client discovers the proxy, registers, has the user approve
    and sign in upstream (its redirect handler is the browser, which stops at the client's
    redirect URI), and calls a tool, stepping up to ``admin`` for the scoped one."""
    import httpx2
    from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
    from mcp.client.client import Client as OfficialClient
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import OAuthClientMetadata

    from .test_authorization_flow import OfficialStorage

    redirect_uri = "http://127.0.0.1:1/callback"  # never reached: the handler reads the redirect
    arrived: asyncio.Queue[dict[str, list[str]]] = asyncio.Queue()
    async with Browser() as browser:

        async def redirect_handler(authorization_url: str) -> None:
            answer = await browser.go(authorization_url, stop_at=redirect_uri)
            assert answer.status_code == 302, answer.text
            arrived.put_nowait(parse_qs(urlsplit(answer.headers["location"]).query))

        async def callback_handler() -> AuthorizationCodeResult:
            params = await asyncio.wait_for(arrived.get(), 10)
            return AuthorizationCodeResult(code=params["code"][0], state=params["state"][0], iss=params["iss"][0])

        metadata = OAuthClientMetadata(
            client_name="official client",
            redirect_uris=[redirect_uri],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        )
        provider = OAuthClientProvider(world.mcp_url, metadata, OfficialStorage(), redirect_handler, callback_handler)
        async with (
            httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(10, read=20)) as http,
            OfficialClient(streamable_http_client(world.mcp_url, http_client=http), mode=MODERN_VERSION) as client,
        ):
            who = json.loads((await client.call_tool("whoami", {})).content[0].text)  # type: ignore[union-attr]
            purged = await client.call_tool("purge", {})
    assert who["subject"] == ("4242" if world.like == "github" else "alice")
    assert who["claims"]["aud"] == world.mcp_url
    assert purged.content[0].text == "purged"  # type: ignore[union-attr]
    assert len(browser.consents) == 2  # once for mcp, once more for admin


# --- when the provider says no, or cannot be believed ----------------------------------------------------


async def test_the_provider_refusing_is_access_denied(world: World) -> None:
    client = await register(world)
    world.idp.deny_consent = True
    try:
        async with Browser() as browser:
            params = redirected(await browser.go(authorize_url(world, client, pkce()[1]), stop_at=CLIENT_REDIRECT))
    finally:
        world.idp.deny_consent = False
    assert params["error"] == "access_denied"
    assert params["state"] == "st-1"
    assert "code" not in params


async def test_an_identity_that_cannot_be_believed_is_server_error(world: World) -> None:
    """An ID token for another login (its nonce), or a user API refusing the token: no code."""
    client = await register(world)
    world.idp.bad_identity = True
    try:
        async with Browser() as browser:
            params = redirected(await browser.go(authorize_url(world, client, pkce()[1]), stop_at=CLIENT_REDIRECT))
    finally:
        world.idp.bad_identity = False
    assert params["error"] == "server_error"
    assert ("HTTP 401" if world.like == "github" else "nonce") in params["error_description"]
    assert "code" not in params


async def test_unknown_clients_paths_and_methods(world: World) -> None:
    async with httpx.AsyncClient() as http:
        resp = await http.get(f"{world.origin}/authorize", params={"client_id": "nobody", "redirect_uri": CLIENT_REDIRECT})
        assert_oauth_error(resp, "invalid_request")
        assert "location" not in resp.headers
        assert (await http.get(f"{world.origin}/token")).status_code == 405
        assert (await http.get(f"{world.origin}/elsewhere")).status_code == 404  # the app's own 404, as before
        resp = await http.post(f"{world.origin}/token", data={"grant_type": "password", "client_id": "nobody"})
        assert_oauth_error(resp, "invalid_client", 401)
        client = await register(world)
        resp = await http.post(f"{world.origin}/token", data={"grant_type": "password", "client_id": client["client_id"]})
        assert_oauth_error(resp, "unsupported_grant_type")
        resp = await http.post(
            f"{world.origin}/token", content=b"code=a&code=b", headers={"content-type": "application/x-www-form-urlencoded"}
        )
        assert_oauth_error(resp, "invalid_request")  # a repeated parameter


async def test_the_inspector_signs_in_through_the_proxy(world: World, inspector: Inspector) -> None:
    """The MCP Inspector's CLI discovers the proxy, registers, prints the authorization URL
    (no browser here) and waits on its loopback callback; the user's browser follows the
    URL, approves, signs in upstream and lands on that callback; the CLI then calls the
    tool with its token."""
    callback = f"http://127.0.0.1:{free_port()}/callback"
    command = [*inspector.command, "-q", "--format", "json", "--protocol-era", "modern", world.mcp_url]
    command += ["--callback-url", callback, "--method", "tools/call", "--tool-name", "whoami"]
    proc = await asyncio.create_subprocess_exec(
        *command,
        # interactive sign-in without a TTY; the browser it opens is no browser (this test is)
        env={**inspector.env, "MCP_AUTO_OPEN_ENABLED": "true", "BROWSER": "true"},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    seen: list[str] = []
    try:
        async with Browser() as browser:
            while True:  # until the CLI says where to sign in
                line = (await asyncio.wait_for(proc.stderr.readline(), 30)).decode(errors="replace")
                seen.append(line)
                assert line, f"the CLI ended without asking to sign in: {seen}"
                found = re.search(r"https?://\S+/authorize\?\S+", line)
                if found:
                    break
            landed = await browser.go(found.group(0))
            assert landed.status_code == 200, landed.text  # the CLI's callback page
            out, err = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, (seen, err.decode(errors="replace"))
    printed = json.loads([line for line in out.decode().splitlines() if line.startswith("{")][-1])
    who = json.loads(printed["result"]["content"][0]["text"])
    assert who["subject"] == ("4242" if world.like == "github" else "alice")
    assert who["claims"]["aud"] == world.mcp_url
    assert len(browser.consents) == 1  # the client it registered (dynamically) was asked for once
