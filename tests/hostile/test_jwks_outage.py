"""The key set endpoint of a JWT-verifying server is slow, down, or gone for longer than the
cache lasts (docs/auth.md, "When the key set cannot be fetched").

A real server process (tests/support/servers/hostile_auth.py) verifies JWTs against a key set
served on loopback by this process (support.auth.KeyServer), which the tests make hang or fail
and which counts every request it gets. The verdicts count fetches; the few timings asserted
have margins of several seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from support.auth import ISSUER, KeyServer, Protected, key_server, protected, token
from support.waiting import until, wait_until
from support.wire import modern

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def keys() -> Iterator[tuple[KeyServer, str]]:
    with key_server() as found:
        yield found


def _server(keys: tuple[KeyServer, str], tmp_path: Path, **options: float) -> contextlib.AbstractContextManager[Protected]:
    """The protected server, verifying JWTs against ``keys`` with ``options``."""
    return protected({"verifier": "jwt", "url": f"{keys[1]}/jwks", "issuer": ISSUER, "options": options}, tmp_path)


def _whoami(tok: str) -> tuple[dict[str, object], dict[str, object]]:
    """(body, headers) of a modern tools/call of whoami with ``tok``."""
    return modern("tools/call", {"name": "whoami", "arguments": {}}, headers={"authorization": f"Bearer {tok}"})


async def _call(http: httpx.AsyncClient, url: str, tok: str) -> tuple[int, float, httpx.Headers]:
    """One call of whoami with ``tok``: (status, seconds it took, headers)."""
    body, headers = _whoami(tok)
    started = time.monotonic()
    resp = await http.post(url, json=body, headers=headers)
    return resp.status_code, time.monotonic() - started, resp.headers


async def test_concurrent_requests_share_one_fetch_of_a_hanging_key_set(keys: tuple[KeyServer, str], tmp_path: Path) -> None:
    """The key set takes 8 s to answer and the verifier waits 2 s: six requests arriving
    together wait for one fetch and are all refused when its one deadline passes — not one
    after another (2, 4, 6 … 12 s), each with a fetch of its own."""
    ks, _ = keys
    ks.delay = 8.0
    with _server(keys, tmp_path, timeout=2.0) as server:
        tok = token(keys, server.url)
        async with httpx.AsyncClient(timeout=60) as http:
            answers = await asyncio.gather(*(_call(http, server.url, tok) for _ in range(6)))
        statuses = [status for status, _, _ in answers]
        slowest = max(seconds for _, seconds, _ in answers)
        print(f"6 concurrent requests, key set hanging: statuses {statuses}, slowest {slowest:.1f} s, fetches {ks.jwks_requests}")
        assert statuses == [503] * 6
        assert all(headers.get("retry-after") for _, _, headers in answers)
        assert ks.jwks_requests == 1, f"{ks.jwks_requests} fetches for 6 concurrent requests"
        assert slowest < 8.0, f"the last request waited {slowest:.1f} s"  # one 2 s deadline for all (before: 12 s)
        # the endpoint comes back: a fetch after the back-off serves every request again
        ks.delay = 0.0
        async with httpx.AsyncClient(timeout=30) as http:

            async def served() -> bool:
                return (await _call(http, server.url, tok))[0] == 200

            await until(served, what="a request is served once the key set answers")


async def test_a_dead_key_set_is_not_fetched_for_every_request(keys: tuple[KeyServer, str], tmp_path: Path) -> None:
    """While the key set answers 500, 50 requests cause a few fetches (a negative cache with
    back-off), not 50; each is refused at once with 503 and a ``Retry-After``."""
    ks, _ = keys
    ks.down = True
    with _server(keys, tmp_path, timeout=2.0) as server:
        tok = token(keys, server.url)
        async with httpx.AsyncClient(timeout=30) as http:
            answers = [await _call(http, server.url, tok) for _ in range(50)]
            print(f"50 requests while the key set is down: {ks.jwks_requests} fetches")
            assert [status for status, _, _ in answers] == [503] * 50
            assert all(int(headers["retry-after"]) >= 1 for _, _, headers in answers)
            assert ks.jwks_requests <= 5, f"{ks.jwks_requests} fetches for 50 requests"
            ks.down = False

            async def served() -> bool:
                return (await _call(http, server.url, tok))[0] == 200

            await until(served, what="the key set is fetched again once it is back")
        assert "cannot fetch the key set" in server.log()


@pytest.mark.parametrize("outage", ["down", "hanging"])
async def test_the_last_good_key_set_serves_through_an_outage(keys: tuple[KeyServer, str], tmp_path: Path, outage: str) -> None:
    """The key set was fetched, then its endpoint fails (500, or hangs past the verifier's
    timeout) and the cache's 1 s expire: tokens are still verified with the keys held — at
    once, and with a few fetch attempts, not one per request."""
    ks, _ = keys
    with _server(keys, tmp_path, timeout=2.0, cache_ttl=1.0) as server:
        tok = token(keys, server.url)
        async with httpx.AsyncClient(timeout=60) as http:
            assert (await _call(http, server.url, tok))[0] == 200
            assert ks.fetches == 1
            if outage == "down":
                ks.down = True
            else:
                ks.delay = 8.0
            await asyncio.sleep(1.5)  # past cache_ttl: the key set is stale (a later wake-up only makes it staler)
            ks.reset_counts()
            answers = [await _call(http, server.url, tok) for _ in range(20)]
        statuses = [status for status, _, _ in answers]
        slowest = max(seconds for _, seconds, _ in answers)
        print(
            f"20 requests with the key set {outage} past its cache: {statuses.count(200)} served, slowest {slowest:.1f} s, "
            f"{ks.jwks_requests} fetch attempts"
        )
        assert statuses == [200] * 20
        assert ks.jwks_requests <= 3, f"{ks.jwks_requests} fetch attempts for 20 requests"
        assert slowest < 2.0 + 3.0  # nobody waits for the failing refresh (before: every one waited its 2 s, then 503)


def test_stale_keys_are_refused_past_max_stale(keys: tuple[KeyServer, str], tmp_path: Path) -> None:
    """The staleness is bounded: with ``cache_ttl=1`` and ``max_stale=4`` the keys serve while
    the endpoint is down until 5 s after they were fetched, then every token gets 503."""
    ks, _ = keys
    with _server(keys, tmp_path, timeout=2.0, cache_ttl=1.0, max_stale=4.0) as server:
        tok = token(keys, server.url)
        fetched = time.monotonic()
        with httpx.Client(timeout=30) as http:

            def status() -> int:
                return _sync_call(http, server, tok)

            assert status() == 200
            ks.down = True
            time.sleep(1.5)  # stale, well within the 5 s
            assert status() == 200
            time.sleep(max(0.0, fetched + 6.0 - time.monotonic()))  # past cache_ttl + max_stale
            assert status() == 503
            ks.down = False
            wait_until(lambda: status() == 200, what="fresh keys once the endpoint is back")
        assert "serves at most" in server.log()


def _sync_call(http: httpx.Client, server: Protected, tok: str) -> int:
    body, headers = _whoami(tok)
    return http.post(server.url, json=body, headers=headers).status_code


async def test_without_caching_every_request_gets_fresh_keys(keys: tuple[KeyServer, str], tmp_path: Path) -> None:
    """``cache_ttl=0, max_stale=0``: no key set is used once it is older than its fetch, so
    each request fetches — and requests arriving together still share one fetch."""
    ks, _ = keys
    with _server(keys, tmp_path, cache_ttl=0.0, max_stale=0.0) as server:
        tok = token(keys, server.url)
        async with httpx.AsyncClient(timeout=30) as http:
            assert [(await _call(http, server.url, tok))[0] for _ in range(3)] == [200] * 3
            assert ks.fetches == 3
            ks.delay = 0.5
            answers = await asyncio.gather(*(_call(http, server.url, tok) for _ in range(5)))
        assert [status for status, _, _ in answers] == [200] * 5
        assert ks.fetches <= 3 + 2, f"{ks.fetches - 3} fetches for 5 concurrent requests"
