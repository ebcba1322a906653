"""The OAuth proxy under abuse (docs/auth.md, "An OAuth proxy", the refusals): a store
that is full, a registration or a login built to fill it or to crash an endpoint, and
the requests of a client that is not the owner of what it presents. Each test serves
its own proxy (a GitHub-like provider on loopback, uvicorn, the store it needs) and
speaks to it over HTTP as the client, the browser or the attacker would.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpkit import InMemoryProxyStore, OAuthProxy, ProxyStore
from mcpkit.auth import providers
from mcpkit.stores.buckets import InMemoryBuckets
from support.servers.oauth_upstream import UpstreamIdP

from .test_authorization_flow import listening_socket, serving, url_of
from .test_oauth_proxy import (
    CLIENT_REDIRECT,
    SIGNING_KEY,
    Browser,
    World,
    assert_invalid_token,
    assert_oauth_error,
    authorize_url,
    call_mcp,
    code_for,
    exchange,
    mcp_server,
    pkce,
    post_token,
    redirected,
    register,
    tokens_for,
)

pytestmark = pytest.mark.timeout(60)


@contextlib.contextmanager
def proxied(store: ProxyStore | None = None, **options: Any) -> Iterator[World]:
    """A proxy of its own, in front of a GitHub-like provider, with ``store``."""
    up_sock, mcp_sock = listening_socket(), listening_socket()
    base, mcp_url = url_of(up_sock), url_of(mcp_sock, "/mcp")
    idp = UpstreamIdP(base, "github")
    proxy = OAuthProxy(
        providers.github(base_url=base, api_url=f"{base}/api"), client_id="mcp-proxy", client_secret="proxy-secret",
        resource=mcp_url, scopes=["mcp", "admin"], default_scopes=["mcp"], signing_key=SIGNING_KEY, store=store,
        **options,
    )  # fmt: skip
    idp.add_client("mcp-proxy", "proxy-secret", proxy.callback_url)
    app = mcp_server().asgi_app(auth=proxy.resource_server(required_scopes=["mcp"]))
    with serving((up_sock, idp.asgi()), (mcp_sock, app)):
        yield World("github", idp, proxy, mcp_url, url_of(mcp_sock))


async def refresh(world: World, client: dict[str, Any], token: str) -> httpx.Response:
    return await post_token(world, grant_type="refresh_token", client_id=client["client_id"], refresh_token=token)


# --- a full store: refuse rather than issue unguarded ------------------------------------------------------


async def test_when_the_used_marks_are_full_the_token_endpoint_refuses() -> None:
    with proxied(InMemoryProxyStore(limits={"used": 1})) as world:
        client, tokens = await tokens_for(world)  # its code's mark fills "used"
        # a refresh whose reuse could not be told is refused, and the refresh token stays
        assert_oauth_error(await refresh(world, client, tokens["refresh_token"]), "temporarily_unavailable", 503)
        # so is a code whose replay could not be told
        verifier, challenge = pkce()
        async with Browser() as browser:
            code = await code_for(world, browser, client, challenge)
        assert_oauth_error(await exchange(world, client, code, verifier), "temporarily_unavailable", 503)
        # the tokens already issued still work
        assert (await call_mcp(world, tokens["access_token"])).status_code == 200


async def test_a_replay_that_cannot_be_recorded_still_ends_the_grant() -> None:
    with proxied(InMemoryProxyStore(limits={"revoked": 0})) as world:  # no revocation can be recorded
        # a refresh token reused after its rotation: the rotated one stops working
        client, tokens = await tokens_for(world)
        rotated = await refresh(world, client, tokens["refresh_token"])
        assert rotated.status_code == 200, rotated.text
        again = await refresh(world, client, rotated.json()["refresh_token"])
        assert again.status_code == 200, again.text
        assert_oauth_error(await refresh(world, client, tokens["refresh_token"]), "invalid_grant")
        assert_oauth_error(await refresh(world, client, again.json()["refresh_token"]), "invalid_grant")
        # a code replayed: the refresh token it gave stops working
        verifier, challenge = pkce()
        async with Browser() as browser:
            code = await code_for(world, browser, client, challenge)
        first = await exchange(world, client, code, verifier)
        assert first.status_code == 200, first.text
        assert_oauth_error(await exchange(world, client, code, verifier), "invalid_grant")
        assert_oauth_error(await refresh(world, client, first.json()["refresh_token"]), "invalid_grant")


# --- another client's code ----------------------------------------------------------------------------------


async def test_another_clients_attempt_does_not_spend_the_code() -> None:
    with proxied() as world:
        client, thief = await register(world), await register(world, "thief")
        verifier, challenge = pkce()
        async with Browser() as browser:
            code = await code_for(world, browser, client, challenge)
        assert_oauth_error(await exchange(world, thief, code, verifier), "invalid_grant")
        assert_oauth_error(await exchange(world, thief, code, "x" * 43), "invalid_grant")
        resp = await exchange(world, client, code, verifier)  # the owner's code still
        assert resp.status_code == 200, resp.text
        assert (await call_mcp(world, resp.json()["access_token"])).status_code == 200
        # the owner replaying it is a replay: the grant ends
        assert_oauth_error(await exchange(world, client, code, verifier), "invalid_grant")
        assert_invalid_token(await call_mcp(world, resp.json()["access_token"]), "revoked")


# --- registrations that would crash an endpoint -------------------------------------------------------------


async def test_a_redirect_uri_that_is_not_printable_ascii_is_refused() -> None:
    with proxied() as world:
        async with httpx.AsyncClient() as http:
            for uri in ("https://app.example/caf\u00e9", "https://app.example/a\x7fb", "https://app.example/\x01",
                        "com.example.app:/cb\u2028x"):  # fmt: skip
                resp = await http.post(f"{world.origin}/register", json={"redirect_uris": [uri]})
                assert_oauth_error(resp, "invalid_redirect_uri")
            resp = await http.post(f"{world.origin}/register", json={"redirect_uris": ["https://app.example/caf%C3%A9"]})
            assert resp.status_code == 201, resp.text  # percent-encoded, it is taken and /authorize redirects to it
            client = resp.json()
            resp = await http.get(
                f"{world.origin}/authorize", params={"client_id": client["client_id"], "response_type": "token"}
            )
            assert resp.status_code == 302
            assert resp.headers["location"].startswith("https://app.example/caf%C3%A9?error=unsupported_response_type")


async def test_a_registration_nested_too_deeply_is_invalid_client_metadata() -> None:
    with proxied() as world:
        async with httpx.AsyncClient() as http:
            for body in (b"[" * 60_000, b'{"redirect_uris": ' + b"[" * 60_000):
                resp = await http.post(f"{world.origin}/register", content=body,
                                       headers={"content-type": "application/json"})  # fmt: skip
                assert_oauth_error(resp, "invalid_client_metadata")
            resp = await http.post(f"{world.origin}/register", content=b"{not json",
                                   headers={"content-type": "application/json"})  # fmt: skip
            assert_oauth_error(resp, "invalid_client_metadata")


# --- filling the store --------------------------------------------------------------------------------------


class Clock:
    """The store's clock, moved by the test: its TTLs without waiting."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_a_client_nobody_uses_lapses_soon_and_makes_room() -> None:
    clock = Clock()
    with proxied(InMemoryProxyStore(limits={"client": 2}, clock=clock), unused_client_ttl=600) as world:
        used, unused = await register(world, "used"), await register(world, "unused")
        async with httpx.AsyncClient() as http:
            resp = await http.post(f"{world.origin}/register", json={"redirect_uris": ["https://app.example/cb"]})
            assert_oauth_error(resp, "temporarily_unavailable", 503)  # full
            assert resp.headers["retry-after"]
        _, tokens = await tokens_for(world, used)  # its first code: kept client_ttl from now
        clock.now += 601
        async with httpx.AsyncClient() as http:
            resp = await http.get(f"{world.origin}/authorize", params={"client_id": unused["client_id"]})
            assert_oauth_error(resp, "invalid_request")  # unknown: it lapsed
            resp = await http.post(f"{world.origin}/register", json={"redirect_uris": ["https://app.example/cb"]})
            assert resp.status_code == 201, resp.text  # room again
        resp = await refresh(world, used, tokens["refresh_token"])
        assert resp.status_code == 200, resp.text  # the client that signed in is kept


async def test_a_registration_or_a_login_too_large_to_keep_is_refused() -> None:
    with proxied() as world:
        async with httpx.AsyncClient() as http:
            many = [f"https://app.example/{i}/" + "a" * 1000 for i in range(5)]  # 5 of 10, 5,000 characters
            resp = await http.post(f"{world.origin}/register", json={"redirect_uris": many})
            assert_oauth_error(resp, "invalid_redirect_uri")
            resp = await http.post(f"{world.origin}/register", json={"redirect_uris": many[:3]})
            assert resp.status_code == 201, resp.text
            padded = {"redirect_uris": ["https://app.example/cb"], "software_statement": "x" * 20_000}
            resp = await http.post(f"{world.origin}/register", json=padded)
            assert_oauth_error(resp, "invalid_client_metadata")
        client = await register(world)
        _, challenge = pkce()
        async with Browser() as browser:
            resp = await browser.http.get(authorize_url(world, client, challenge, state="s" * 1025))
            assert_oauth_error(resp, "invalid_request")
            assert "location" not in resp.headers
            assert "set-cookie" not in resp.headers  # nothing was kept
            resp = await browser.http.get(authorize_url(world, client, challenge, state="s" * 1024))
            assert resp.status_code == 200, resp.text  # the consent page


# --- loopback redirect URIs ---------------------------------------------------------------------------------


async def test_a_loopback_ip_redirect_uri_takes_any_port() -> None:
    with proxied() as world:
        client = await register(world, redirect_uris=["http://127.0.0.1/callback", "http://[::1]:1234/cb"])
        verifier, challenge = pkce()
        async with Browser() as browser:
            code = await code_for(world, browser, client, challenge)  # asked at http://127.0.0.1:9/callback
            again = await browser.http.get(authorize_url(world, client, challenge, redirect_uri="http://127.0.0.1:8/callback"))
            assert again.status_code == 302, again.text  # the approval holds at another port: straight upstream
            page = await browser.http.get(authorize_url(world, client, challenge, redirect_uri="http://[::1]:5555/cb"))
            assert page.status_code == 200, page.text
            assert "http://[::1]:5555/cb" in page.text  # the consent page names where the code goes
            refused = [
                "http://127.0.0.1:9/elsewhere",
                "http://localhost:9/callback",
                "http://127.0.0.1:9/callback?x=1",
                "http://127.0.0.1:x/callback",
                "http://u@127.0.0.1:9/callback",
                "https://127.0.0.1:9/callback",
            ]
            for other in refused:
                resp = await browser.http.get(authorize_url(world, client, challenge, redirect_uri=other))
                assert_oauth_error(resp, "invalid_request")
        resp = await exchange(world, client, code, verifier)  # with the redirect_uri it was asked with
        assert resp.status_code == 200, resp.text
        other = await register(world, redirect_uris=["http://localhost:8/callback", "https://app.example:8443/cb"])
        async with httpx.AsyncClient() as http:
            for uri in ("http://localhost:9/callback", "https://app.example:9443/cb"):  # names, not loopback IPs
                resp = await http.get(authorize_url(world, other, challenge, redirect_uri=uri))
                assert_oauth_error(resp, "invalid_request")


# --- the consent's Origin -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("issuer", "origin"), [("http://LOCALHOST:{port}", "http://localhost:{port}"),
                                                ("HTTP://127.0.0.1:80", "http://127.0.0.1")])  # fmt: skip
async def test_the_consent_origin_is_compared_as_a_browser_writes_it(issuer: str, origin: str) -> None:
    """An issuer given with capitals or its scheme's default port: the browser's
    ``Origin`` (lower-case, no default port) is this server's, and another is not."""
    up_sock, mcp_sock = listening_socket(), listening_socket()
    base, port = url_of(up_sock), mcp_sock.getsockname()[1]
    proxy = OAuthProxy(providers.github(base_url=base, api_url=f"{base}/api"), client_id="mcp-proxy", client_secret="s",
                       resource=url_of(mcp_sock, "/mcp"), issuer=issuer.format(port=port), signing_key=SIGNING_KEY)  # fmt: skip
    app = mcp_server().asgi_app(auth=proxy.resource_server(required_scopes=["mcp"]))
    with serving((up_sock, UpstreamIdP(base, "github").asgi()), (mcp_sock, app)):
        origin_url = url_of(mcp_sock)
        async with httpx.AsyncClient() as http:
            body = {"redirect_uris": ["http://127.0.0.1:9/callback"], "token_endpoint_auth_method": "none"}
            client = (await http.post(f"{origin_url}/register", json=body)).json()
            query = {"response_type": "code", "client_id": client["client_id"], "code_challenge": pkce()[1],
                     "code_challenge_method": "S256"}  # fmt: skip
            page = await http.get(f"{origin_url}/authorize", params=query)
            assert page.status_code == 200, page.text
            login = re.search(r'name=login value="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
            form = {"login": login, "decision": "allow"}
            for elsewhere in ("http://127.0.0.1:1", "null", f"https://localhost:{port}"):
                refused = await http.post(f"{origin_url}/consent", data=form, headers={"origin": elsewhere})
                assert refused.status_code == 403, elsewhere
            resp = await http.post(f"{origin_url}/consent", data=form, headers={"origin": origin.format(port=port)})
            assert resp.status_code == 302, resp.text  # on to the provider
            assert resp.headers["location"].startswith(base)


# --- small things -------------------------------------------------------------------------------------------


async def test_a_scope_of_only_spaces_is_no_scope_given() -> None:
    with proxied() as world:
        client = await register(world)
        verifier, challenge = pkce()
        async with Browser() as browser:
            params = redirected(await browser.go(authorize_url(world, client, challenge, scope="   "), CLIENT_REDIRECT))
        assert browser.scopes == [["mcp"]]  # the default scopes, asked of the user
        resp = await exchange(world, client, params["code"], verifier)
        assert resp.status_code == 200, resp.text
        assert resp.json()["scope"] == "mcp"
        resp = await post_token(world, grant_type="refresh_token", client_id=client["client_id"],
                                refresh_token=resp.json()["refresh_token"], scope="  ")  # fmt: skip
        assert resp.status_code == 200, resp.text
        assert resp.json()["scope"] == "mcp"  # the grant's scopes, not none
        assert (await call_mcp(world, resp.json()["access_token"])).status_code == 200


async def test_a_login_that_is_over_leaves_no_cookie() -> None:
    with proxied() as world:
        client = await register(world)
        for approves in (True, False):
            async with Browser(approves=approves) as browser:
                params = redirected(await browser.go(authorize_url(world, client, pkce()[1]), CLIENT_REDIRECT))
                assert ("code" in params) is approves
                left = [name for name in browser.http.cookies if name.startswith("mcpkit_login")]
                assert left == [], left
                if approves:
                    assert "mcpkit_consent" in browser.http.cookies  # the approval is remembered


# --- a rate limit per client address ------------------------------------------------------------------------


async def test_register_and_authorize_are_rate_limited_per_address() -> None:
    clock = Clock()
    buckets = InMemoryBuckets(clock=clock)
    with proxied(rate_limit=(2, 0.5), rate_limit_store=buckets) as world:
        first, second = await register(world), await register(world)  # the two of the burst
        async with httpx.AsyncClient() as http:
            resp = await http.post(f"{world.origin}/register", json={"redirect_uris": [CLIENT_REDIRECT]})
            assert_oauth_error(resp, "temporarily_unavailable", 429)
            assert resp.headers["retry-after"] == "2"  # one more in 2 s
            for client in (first, second):  # /authorize has a bucket of its own
                page = await http.get(authorize_url(world, client, pkce()[1]))
                assert page.status_code == 200, page.text
            resp = await http.get(authorize_url(world, first, pkce()[1]))
            assert_oauth_error(resp, "temporarily_unavailable", 429)
            assert (await http.get(f"{world.origin}/.well-known/oauth-authorization-server")).status_code == 200
            clock.now += 2
            assert (await http.get(authorize_url(world, first, pkce()[1]))).status_code == 200
    with pytest.raises(ValueError, match="positive"):
        OAuthProxy(providers.github(), client_id="c", client_secret="s", resource="https://m/mcp", rate_limit=(0, 1))
