"""A token verifier that fails in a way nobody foresaw — it raises an exception of its own,
or returns something that is not an identity (docs/auth.md, "Status codes"): the server must
fail closed as it does when the authorization server is unreachable (503 with
``Retry-After``), keep the cause in its log (without the token) and out of every response,
and go on serving.

A real server process (tests/support/servers/hostile_auth.py) with each broken verifier.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import httpx
import pytest

from support.auth import protected
from support.eras import LEGACY
from support.processes import load_server
from support.waiting import wait_until
from support.wire import ACCEPT, initialize, modern

pytestmark = pytest.mark.timeout(60)

SECRET = load_server("hostile_auth").SECRET


@pytest.mark.parametrize("verifier", ["raising", "wrong-type", "garbage"])
def test_a_broken_verifier_fails_closed_with_503(tmp_path: Path, verifier: str) -> None:
    tok = "tok-" + secrets.token_urlsafe(16)
    with protected({"verifier": verifier}, tmp_path) as server, httpx.Client(timeout=20) as http:
        auth = {"authorization": f"Bearer {tok}"}
        body, headers = modern("tools/call", {"name": "whoami", "arguments": {}}, headers=auth)
        answers = [
            http.post(server.url, json=body, headers=headers),  # modern
            http.post(server.url, json=initialize(LEGACY), headers={**auth, "accept": ACCEPT, "mcp-protocol-version": LEGACY}),
            http.get(server.url, headers={**auth, "accept": "text/event-stream"}),  # a GET stream
            http.get(server.url.removesuffix("/mcp") + "/sse", headers={**auth, "accept": "text/event-stream"}),  # HTTP+SSE
        ]
        for resp in answers:
            assert resp.status_code == 503, (
                f"{verifier}: {resp.request.method} {resp.request.url.path}: {resp.status_code} {resp.text}"
            )
            assert int(resp.headers["retry-after"]) >= 1
            for leak in (SECRET, "RuntimeError", "TypeError", tok, "Traceback"):
                assert leak not in resp.text
        # the process is fine: its metadata is still served
        metadata = http.get(server.url.removesuffix("/mcp") + "/.well-known/oauth-protected-resource/mcp")
        assert metadata.status_code == 200
        assert server.proc.poll() is None
        log = wait_until(lambda: server.log() if "the token verifier failed" in server.log() else "", what="the failure logged")
        print(f"{verifier}: statuses {[resp.status_code for resp in answers]}; log: {log.splitlines()[0][:160]}")
        assert tok not in log  # the cause is logged, the token is not
        if verifier == "raising":
            assert "RuntimeError: the user database is down" in log
            assert "[the token]" in log
        else:
            assert "TypeError" in log
