"""Made-up tokens against a server that verifies opaque tokens by RFC 7662 introspection
(docs/auth.md, "Introspection"): the server must not turn a flood of garbage into a flood of
introspection requests against the authorization server.

A real server process (tests/support/servers/hostile_auth.py) introspects at an endpoint served on
loopback by this process (support.auth.KeyServer), which counts the requests it gets and the
most that were in flight at once. The verdicts are counts.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from support.auth import KeyServer, key_server, protected
from support.waiting import until
from support.wire import modern

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def keys() -> Iterator[tuple[KeyServer, str]]:
    with key_server() as found:
        yield found


async def _status(http: httpx.AsyncClient, url: str, tok: str) -> int:
    body, headers = modern("tools/call", {"name": "whoami", "arguments": {}}, headers={"authorization": f"Bearer {tok}"})
    return (await http.post(url, json=body, headers=headers)).status_code


async def test_a_repeated_forged_token_is_introspected_once(keys: tuple[KeyServer, str], tmp_path: Path) -> None:
    """The same made-up token 50 times: one introspection (the refusal is remembered for a
    while), 50 refusals with 401."""
    ks, base = keys
    with protected({"verifier": "introspection", "url": f"{base}/introspect"}, tmp_path) as server:
        forged = secrets.token_urlsafe(24)
        async with httpx.AsyncClient(timeout=30) as http:
            statuses = [await _status(http, server.url, forged) for _ in range(50)]
        print(f"one forged token sent 50 times: {ks.introspections} introspections")
        assert statuses == [401] * 50
        assert ks.introspections <= 2, f"{ks.introspections} introspections of one token"


async def test_concurrent_requests_with_one_token_share_one_introspection(keys: tuple[KeyServer, str], tmp_path: Path) -> None:
    """20 requests at once with the same unknown token, the endpoint taking 0.5 s: one
    introspection answers them all."""
    ks, base = keys
    ks.delay = 0.5
    with protected({"verifier": "introspection", "url": f"{base}/introspect"}, tmp_path) as server:
        forged = secrets.token_urlsafe(24)
        async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=50)) as http:
            statuses = await asyncio.gather(*(_status(http, server.url, forged) for _ in range(20)))
        print(f"one forged token in 20 concurrent requests: {ks.introspections} introspections")
        assert list(statuses) == [401] * 20
        assert ks.introspections == 1, f"{ks.introspections} introspections for one token"


async def test_a_flood_of_distinct_forged_tokens_keeps_introspections_in_flight_bounded(
    keys: tuple[KeyServer, str], tmp_path: Path
) -> None:
    """200 different made-up tokens at once against an endpoint taking 2 s: at most 16
    introspections are in flight at any moment (the default bound); every forged token is
    refused (401, or 503 for one that could not get an answer in time); a token verified
    before the flood goes on being served meanwhile, from the cache."""
    ks, base = keys
    ks.active["good-token"] = {"active": True, "sub": "alice", "scope": "mcp"}
    with protected({"verifier": "introspection", "url": f"{base}/introspect"}, tmp_path) as server:
        async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=300)) as http:
            assert await _status(http, server.url, "good-token") == 200
            ks.delay = 2.0
            ks.reset_counts()
            flood = [asyncio.ensure_future(_status(http, server.url, secrets.token_urlsafe(24))) for _ in range(200)]
            # the bound's worth of introspections are in flight (each takes 2 s)
            await until(lambda: ks.introspections >= 16, what="the flood reached the introspection endpoint")
            assert await _status(http, server.url, "good-token") == 200  # served while the flood waits
            statuses = await asyncio.gather(*flood)
        print(
            f"200 distinct forged tokens at once: {ks.introspections} introspections, at most {ks.peak} in flight, "
            f"statuses {sorted(set(statuses))}"
        )
        assert set(statuses) <= {401, 503}
        assert statuses.count(401) >= 1
        assert ks.peak <= 16, f"{ks.peak} introspections in flight at once"


async def test_what_cannot_be_a_token_is_not_introspected(keys: tuple[KeyServer, str], tmp_path: Path) -> None:
    """Bearer values outside RFC 6750's token syntax are refused without asking anyone."""
    ks, base = keys
    with protected({"verifier": "introspection", "url": f"{base}/introspect"}, tmp_path) as server:
        async with httpx.AsyncClient(timeout=30) as http:
            for junk in ('"quoted"', "a,b", "tok\\en", "{json}", "a=b", "<script>"):
                assert await _status(http, server.url, junk) == 401, junk
        assert ks.introspections == 0, f"{ks.introspections} introspections of values that cannot be tokens"
