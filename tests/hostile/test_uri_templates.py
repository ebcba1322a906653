"""URI-template matching attacked over HTTP (issue 24, finding 2): URIs made to make a
backtracking matcher try every split between a template's variables.

Before: the templates were backtracking regexes run on the event loop: against
``x://{+a}/{+b}`` a 24,000-character URI stalled every client of the process for 3.7 s
(O(n²); a 100,000-character one, about a minute), and with three ``{+…}`` variables
1,000 characters cost 3.3 s (O(n³)); ``resources/subscribe`` matched them too, and URIs
had no length bound. After: matching is linear in the URI's length whatever the
template (100,000 characters against either template: about 15-30 ms of matching), and a
URI longer than ``Server(max_uri_length=...)`` (16,384 characters) is refused with
-32602 before anything matches it.

A modern ``resources/read`` over HTTP mirrors its URI in the ``Mcp-Name`` header, so the
head's cap (``max_header_bytes``, 16 KiB) refuses a URI of that size first; the 100,000-
character URIs are therefore read in a legacy session, and the bound is tested in the
modern era with a lower ``max_uri_length``.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import pytest

from support.store_attacks import answer, post, request, spawn
from support.wire import open_session, request as legacy_request

pytestmark = pytest.mark.timeout(120)

#: 100,000-character URIs that match nothing (a "?" at the end that no variable may
#: contain), the worst case for a backtracking matcher, and ones that match.
HOSTILE = {
    "x://{+a}/{+b}, no match": "x://" + "/" * 100_000 + "?",
    "y://{+a}/{+b}/{+c}, no match": "y://" + "/" * 100_000 + "?",
    "x://{+a}/{+b}, a match": "x://" + "a/" * 50_000,
    "y://{+a}/{+b}/{+c}, a match": "y://" + "ab/" * 33_333,
}


async def _ping_latencies(http: httpx.AsyncClient, url: str, stop: asyncio.Event) -> list[float]:
    """List the tools over and over until ``stop`` (a cheap request); each one's latency in seconds."""
    latencies = []
    while not stop.is_set():
        body, headers = request("tools/list")
        started = time.monotonic()
        resp = await http.post(url, content=json.dumps(body), headers=headers)
        latencies.append(time.monotonic() - started)
        assert resp.status_code == 200, resp.text
        await asyncio.sleep(0.05)  # the pace of the measuring requests, not a wait for anything
    return latencies


async def _read(http: httpx.AsyncClient, url: str, session: dict[str, str], uri: str) -> tuple[float, httpx.Response]:
    """Read ``uri`` in the legacy ``session`` (whose requests carry no mirrored header)."""
    started = time.monotonic()
    resp = await http.post(url, json=legacy_request("resources/read", {"uri": uri}), headers=session)
    return time.monotonic() - started, resp


async def test_matching_is_linear_in_the_uri_and_other_clients_go_on() -> None:
    """Each 100,000-character URI is answered well within 10 s (a generous bound: the
    old matcher took a minute on the first one and far longer on the three-variable
    ones), and a client pinging meanwhile is never held up for seconds."""
    with spawn("--server-option", "max_uri_length=200000") as (_, url):
        with httpx.Client(timeout=30) as opening:
            session = open_session(opening, url)
        async with httpx.AsyncClient(timeout=30) as http:
            stop = asyncio.Event()
            pinging = asyncio.ensure_future(_ping_latencies(http, url, stop))
            timings: dict[str, float] = {}
            try:
                for name, uri in HOSTILE.items():
                    seconds, resp = await _read(http, url, session, uri)
                    timings[name] = seconds
                    reply = answer(resp)
                    if "no match" in name:
                        assert resp.status_code == 200, resp.text[:300]  # legacy: the error rides a 200
                        assert reply["error"]["code"] == -32602, reply
                        assert reply["error"]["message"] == "Resource not found", reply
                    else:
                        assert resp.status_code == 200, resp.text[:300]
                        assert "contents" in reply["result"], reply
            finally:
                stop.set()
                latencies = await pinging
            print(f"answered in {', '.join(f'{k}: {v:.2f} s' for k, v in timings.items())}; worst ping {max(latencies):.2f} s")
            assert max(timings.values()) < 10, timings
            assert max(latencies) < 5, latencies


def test_legacy_subscribe_matches_templates_in_linear_time() -> None:
    """``resources/subscribe`` asks whether the URI is a resource the server has: the
    same matching, the same bound."""
    with spawn("--server-option", "max_uri_length=200000") as (_, url), httpx.Client(timeout=30) as http:
        session = open_session(http, url)
        for name, uri in HOSTILE.items():
            started = time.monotonic()
            resp = http.post(url, json=legacy_request("resources/subscribe", {"uri": uri}), headers=session)
            seconds = time.monotonic() - started
            reply = answer(resp)
            assert seconds < 10, (name, seconds)
            if "no match" in name:
                assert reply["error"]["code"] == -32002, reply
            else:
                assert reply["result"] == {}, reply


@pytest.mark.parametrize("where", ["read", "subscribe", "listen"])
def test_a_uri_past_the_bound_is_refused_before_matching(where: str) -> None:
    """At the default bound (16,384 characters) a 20,000-character URI is -32602 saying
    so, at once; one at the bound is matched as usual. A modern read carries the URI in a
    header too, which must fit the head's 16 KiB: there the bound is set to 8,192."""
    bound = 8_192 if where == "read" else 16_384
    too_long = "x://" + "/" * (bound + 3_612) + "?"
    at_bound = "x://a/" + "b" * (bound - 6)
    options = ("--server-option", f"max_uri_length={bound}") if where == "read" else ()
    with spawn(*options) as (_, url), httpx.Client(timeout=30) as http:
        for uri, refused in ((too_long, True), (at_bound, False)):
            reply, status = _ask(http, url, where, uri)
            if refused:
                assert status in (200, 400), status
                assert reply["error"]["code"] == -32602, reply
                assert f"longer than {bound} characters" in reply["error"]["message"], reply
                assert len(json.dumps(reply["error"].get("data", {}))) < 1024, "the URI is not echoed whole"
            else:
                assert "error" not in reply, reply


def _ask(http: httpx.Client, url: str, where: str, uri: str) -> tuple[dict[str, Any], int]:
    """(the JSON-RPC reply, the HTTP status) of reading, subscribing to or listening to ``uri``."""
    if where == "read":
        resp = post(http, url, "resources/read", {"uri": uri})
        return answer(resp), resp.status_code
    if where == "subscribe":
        session = open_session(http, url)
        resp = http.post(url, json=legacy_request("resources/subscribe", {"uri": uri}), headers=session)
        return answer(resp), resp.status_code
    body, headers = request("subscriptions/listen", {"notifications": {"resourceSubscriptions": [uri]}})
    with http.stream("POST", url, content=json.dumps(body), headers=headers) as resp:
        status = resp.status_code
        if status != 200 or not resp.headers["content-type"].startswith("text/event-stream"):
            resp.read()
            return answer(resp), status
        for line in resp.iter_lines():  # the acknowledgement: the listen was accepted
            if line.startswith("data:"):
                return json.loads(line[5:]), status
    raise AssertionError("the listen ended without a message")
