"""The authorization checks at the HTTP edge (src/mcpkit/transports/http/server/edge_auth.py,
docs/auth.md), over real HTTP: what the Protected Resource Metadata endpoint answers, which
requests the bearer check refuses before their message is known and which once it is, a
legacy session refused to another principal, and a step-up retry of a refused request.

The verifier is a ``FunctionVerifier`` over a table of tokens: the subject and the scopes
of each are what the test says, with no clock or key set in the way.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpkit.auth.server import ResourceServer
from mcpkit.auth.verifiers import FunctionVerifier
from support.auth import ISSUER, challenge, make_server
from support.eras import LEGACY
from support.serving import serve_in_thread
from support.wire import ACCEPT, legacy_headers, messages, modern, open_session, request

pytestmark = pytest.mark.timeout(60)

#: token -> what the verifier says of it
TOKENS: dict[str, dict[str, Any]] = {
    "alice": {"sub": "alice", "scope": "mcp"},
    "alice-admin": {"sub": "alice", "scope": "mcp admin"},
    "alice-bare": {"sub": "alice", "scope": "other"},  # alice, without the server's scope
    "bob": {"sub": "bob", "scope": "mcp"},
}

METADATA = ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp")


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    auth = ResourceServer(
        resource="http://127.0.0.1/mcp",
        authorization_servers=[ISSUER],
        verifier=FunctionVerifier(TOKENS.get),
        required_scopes=["mcp"],
    )
    with serve_in_thread(make_server().asgi_app(auth=auth)) as port:
        yield f"http://127.0.0.1:{port}"


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


# --- the Protected Resource Metadata --------------------------------------------------------------


@pytest.mark.parametrize("method", ["GET", "HEAD"])
@pytest.mark.parametrize("path", [*METADATA, *(p + "/" for p in METADATA)])
def test_the_metadata_is_served_to_anyone_with_its_caching_and_cors_headers(base: str, method: str, path: str) -> None:
    resp = httpx.request(method, base + path, timeout=10)  # no token
    assert resp.status_code == 200, resp.text
    assert resp.headers["cache-control"] == "max-age=3600"
    assert resp.headers["access-control-allow-origin"] == "*"
    assert "www-authenticate" not in resp.headers
    if method == "GET":
        assert resp.json()["authorization_servers"] == [ISSUER]


def test_other_methods_and_other_paths_are_not_the_metadata(base: str) -> None:
    """Only a trailing slash is forgiven: a path that merely begins like the metadata's is
    another path."""
    for path in METADATA:
        resp = httpx.post(base + path, json={}, timeout=10)
        assert resp.status_code == 404, (path, resp.status_code)  # passed on, to the path check
        assert ISSUER not in resp.text
        for near in (path + "X", path + "/X", path + "//x"):
            resp = httpx.get(base + near, timeout=10)
            assert resp.status_code == 404, (near, resp.status_code)
            assert ISSUER not in resp.text


# --- scopes: at the edge, or once the message is known -------------------------------------------


def test_a_post_without_the_servers_scope_is_refused_naming_every_scope_it_needs(base: str) -> None:
    """A POST's scopes are checked once its request is known: the refusal names the tool's
    scope as well as the server's, so one step-up gets them all."""
    body, headers = modern("tools/call", {"name": "admin", "arguments": {}}, headers=bearer("alice-bare"))
    resp = httpx.post(f"{base}/mcp", json=body, headers=headers, timeout=10)
    assert resp.status_code == 403, resp.text
    assert 'error="insufficient_scope"' in challenge(resp)
    assert 'scope="admin mcp"' in challenge(resp) or 'scope="mcp admin"' in challenge(resp), challenge(resp)


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_a_get_or_delete_without_the_servers_scope_is_refused_at_the_edge(base: str, method: str) -> None:
    """No message to look at: the server's scopes are checked with the token, before the
    session or the stream is looked at."""
    headers = {**legacy_headers("0" * 43), "accept": "text/event-stream"}
    refused = httpx.request(method, f"{base}/mcp", headers={**headers, **bearer("alice-bare")}, timeout=10)
    assert refused.status_code == 403, refused.text
    assert 'error="insufficient_scope"' in challenge(refused)
    assert 'scope="mcp"' in challenge(refused)
    passed = httpx.request(method, f"{base}/mcp", headers={**headers, **bearer("alice")}, timeout=10)
    assert passed.status_code == 404, passed.text  # past the edge: no such session


def test_a_notification_needs_only_the_servers_scope(base: str) -> None:
    with httpx.Client(timeout=10) as http:
        session = open_session(http, f"{base}/mcp", headers=bearer("alice"))  # its notifications/initialized: 202
        note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}}
        assert http.post(f"{base}/mcp", json=note, headers=session).status_code == 202
        refused = http.post(f"{base}/mcp", json=note, headers={**session, **bearer("alice-bare")})
        assert refused.status_code == 403, refused.text
        assert 'scope="mcp"' in challenge(refused)


def test_a_refused_request_can_be_retried_with_its_id_after_a_step_up(base: str) -> None:
    """Refused for a missing scope, the request is forgotten by the session: the client
    retries the same id with a token that has the scope, in the same session."""
    with httpx.Client(timeout=10) as http:
        session = open_session(http, f"{base}/mcp", headers=bearer("alice"))
        call = request("tools/call", {"name": "admin", "arguments": {}}, rid=5)
        refused = http.post(f"{base}/mcp", json=call, headers=session)
        assert refused.status_code == 403, refused.text
        assert "admin" in challenge(refused)
        retried = http.post(f"{base}/mcp", json=call, headers={**session, **bearer("alice-admin")})
        assert retried.status_code == 200, retried.text
        (answer,) = messages(retried)
        assert answer["id"] == 5
        assert answer["result"]["content"][0]["text"] == "admin ok", answer


# --- a legacy session belongs to its principal ---------------------------------------------------


def test_a_session_another_principal_opened_is_refused_with_403(base: str) -> None:
    with httpx.Client(timeout=10) as http:
        session = open_session(http, f"{base}/mcp", headers=bearer("alice"))
        stolen = {**session, **bearer("bob")}
        answers = [
            http.post(f"{base}/mcp", json=request("tools/call", {"name": "whoami", "arguments": {}}), headers=stolen),
            http.get(f"{base}/mcp", headers={**stolen, "accept": "text/event-stream"}),
            http.delete(f"{base}/mcp", headers=stolen),
        ]
        for resp in answers:
            assert resp.status_code == 403, (resp.request.method, resp.text)
            assert resp.text == "Forbidden: this session belongs to another identity\n", resp.text
            assert "insufficient_scope" not in challenge(resp)
        mine = http.post(f"{base}/mcp", json=request("tools/call", {"name": "whoami", "arguments": {}}), headers=session)
        assert mine.status_code == 200
        assert messages(mine)[-1]["result"]["content"][0]["text"].startswith("alice")


def test_the_session_check_lets_the_owner_in_with_another_of_its_tokens(base: str) -> None:
    with httpx.Client(timeout=10) as http:
        session = open_session(http, f"{base}/mcp", headers=bearer("alice"))
        resp = http.post(f"{base}/mcp", json=request("ping"), headers={**session, **bearer("alice-admin")})
        assert resp.status_code == 200, resp.text
        assert http.post(f"{base}/mcp", json=request("ping"), headers={**session, "accept": ACCEPT}).status_code == 200
    assert LEGACY in session.values()
