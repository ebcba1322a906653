"""Two different callers whose tokens an authorization server wrote so that their names
collide (docs/auth.md, "Who a caller is"): a user whose ``sub`` is ``client:svc`` against the
``client_credentials`` client ``svc`` (a token without ``sub``), and one ``sub`` from two
issuers. Each must be a principal of its own wherever the server binds something to a
caller: tasks, ``requestState``, legacy sessions and their GET streams, and the deprecated
HTTP+SSE transport's ``/messages``.

A real server process (tests/support/servers/hostile_auth.py) introspects the tokens at an
endpoint this process serves on loopback (support.auth.KeyServer), which says what each
token is.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpkit import Client, ClientOptions, HttpTransport, McpError
from support.auth import Protected, key_server, protected
from support.eras import LEGACY, MODERN
from support.wire import ACCEPT, initialize, modern, request, sse_events

pytestmark = pytest.mark.timeout(90)

#: What the introspection endpoint says about each token.
TOKENS = {
    # a service acting for itself: client_credentials, no subject
    "svc-token": {"active": True, "client_id": "svc", "scope": "mcp", "iss": "https://as.example.test"},
    # a user the authorization server happened to call "client:svc"
    "mallory-token": {"active": True, "sub": "client:svc", "client_id": "app", "scope": "mcp", "iss": "https://as.example.test"},
    # the same sub from two issuers
    "alice-1": {"active": True, "sub": "alice", "scope": "mcp", "iss": "https://one.example.test"},
    "alice-2": {"active": True, "sub": "alice", "scope": "mcp", "iss": "https://two.example.test"},
}
PAIRS = [pytest.param("svc-token", "mallory-token", id="client-vs-sub"), pytest.param("alice-1", "alice-2", id="two-issuers")]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Protected]:
    with key_server() as (ks, base):
        ks.active.update(TOKENS)
        with protected(
            {"verifier": "introspection", "url": f"{base}/introspect"}, tmp_path_factory.mktemp("principals")
        ) as found:
            yield found


def _client(server: Protected, tok: str, version: str = MODERN, **extra: Any) -> Client:
    options = ClientOptions(protocol_version=version, request_timeout=20, capabilities={"elicitation": {}}, **extra)
    return Client(HttpTransport(server.url, headers={"authorization": f"Bearer {tok}"}), options)


async def test_the_principals_differ(server: Protected) -> None:
    """What each caller is, as the handler sees it: four different principals."""
    seen = []
    for tok in TOKENS:
        async with _client(server, tok) as client:
            seen.append(json.loads((await client.call_tool("whoami")).content[0].text)["principal"])  # type: ignore[union-attr]
    print("principals:", seen)
    assert len(set(seen)) == 4, seen


@pytest.mark.parametrize(("owner", "other"), PAIRS)
async def test_a_task_is_not_anothers(server: Protected, owner: str, other: str) -> None:
    """``owner`` starts a task; to ``other`` its id is unknown (-32602) for a get, a wait and
    a cancel, and a listen naming it is not agreed to it and hears nothing of it; the owner
    gets its result."""
    heard: list[tuple[str, dict[str, Any]]] = []
    acknowledged = asyncio.Event()

    def overheard(method: str, params: dict[str, Any]) -> None:
        heard.append((method, params))
        acknowledged.set()

    overhear = {"on_notification": overheard}
    async with _client(server, owner) as mine, _client(server, other, **overhear) as theirs:
        handle = await mine.start_task("hold", {"seconds": 1.0})
        assert handle.task_id is not None
        task_id = handle.task_id
        attempts = (
            lambda: theirs.get_task(task_id),
            lambda: theirs.task(task_id).wait(timeout=10),
            lambda: theirs.cancel_task(task_id),
        )
        for attempt in attempts:  # made one at a time: one that does not raise fails the test, the rest never start
            with pytest.raises(McpError) as hidden:
                await attempt()
            assert hidden.value.code == -32602
        listen = asyncio.ensure_future(theirs.send_request("subscriptions/listen", {"notifications": {"taskIds": [task_id]}}))
        await asyncio.wait_for(acknowledged.wait(), 20)  # the acknowledgement comes first
        assert heard[0][0] == "notifications/subscriptions/acknowledged"
        assert heard[0][1]["notifications"] == {"taskIds": []}
        assert (await handle.wait(timeout=20)).content[0].text.startswith("held by")  # type: ignore[union-attr]
        listen.cancel()
        await asyncio.gather(listen, return_exceptions=True)
    assert [method for method, _ in heard] == ["notifications/subscriptions/acknowledged"]


@pytest.mark.parametrize(("owner", "other"), PAIRS)
async def test_a_request_state_is_not_anothers(server: Protected, owner: str, other: str) -> None:
    """``owner`` gets a ``requestState``; ``other`` cannot continue the exchange with it."""
    async with httpx.AsyncClient(timeout=20) as http:

        async def call(tok: str, extra: dict[str, object]) -> httpx.Response:
            params = {"name": "redeem", "arguments": {"code": f"{owner}-code"}, **extra}
            body, headers = modern(
                "tools/call",
                params,
                headers={"authorization": f"Bearer {tok}"},
                meta={"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}},
            )
            return await http.post(server.url, json=body, headers=headers)

        first = (await call(owner, {})).json()["result"]
        assert first["resultType"] == "input_required"
        retry = {"requestState": first["requestState"], "inputResponses": {"confirm": {"action": "accept", "content": {}}}}
        stolen = await call(other, retry)
        assert stolen.status_code == 400, stolen.text
        assert "another principal" in stolen.json()["error"]["message"]
        own = (await call(owner, retry)).json()
        assert own["result"]["content"][0]["text"] == f"redeemed {owner}-code"


@pytest.mark.parametrize(("owner", "other"), PAIRS)
async def test_a_legacy_session_and_its_stream_are_not_anothers(server: Protected, owner: str, other: str) -> None:
    """``owner`` opens a legacy session; ``other`` presenting its id gets 403 for a request,
    the GET stream and DELETE; the session goes on."""
    transport = HttpTransport(server.url, headers={"authorization": f"Bearer {owner}"})
    async with Client(transport, ClientOptions(protocol_version=LEGACY, request_timeout=20)) as mine:
        await mine.list_tools()
        assert transport.session_id
        headers = {
            "authorization": f"Bearer {other}",
            "mcp-session-id": transport.session_id,
            "mcp-protocol-version": LEGACY,
            "accept": ACCEPT,
        }
        async with httpx.AsyncClient(timeout=10) as http:
            assert (await http.post(server.url, json=request("tools/list"), headers=headers)).status_code == 403
            assert (await http.get(server.url, headers={**headers, "accept": "text/event-stream"})).status_code == 403
            assert (await http.delete(server.url, headers=headers)).status_code == 403
        assert "whoami" in [tool.name for tool in (await mine.list_tools()).tools]


@pytest.mark.parametrize(("owner", "other"), PAIRS)
async def test_an_sse_session_is_not_anothers(server: Protected, owner: str, other: str) -> None:
    """``owner`` opens a session of the deprecated HTTP+SSE transport; ``other`` cannot post
    to its ``/messages`` (403), the owner can (202)."""
    base = server.url.removesuffix("/mcp")
    opening = {"authorization": f"Bearer {owner}", "accept": "text/event-stream"}
    async with httpx.AsyncClient(timeout=20) as http, http.stream("GET", f"{base}/sse", headers=opening) as stream:
        assert stream.status_code == 200
        chunks = stream.aiter_text()  # kept open (not left by a break, which would close the stream and end the session)
        text = ""
        while "event: endpoint" not in text or "\n\n" not in text.split("event: endpoint", 1)[1]:
            text += await anext(chunks)
        endpoint = next(data for _, data in sse_events(text) if data.startswith("/"))
        stolen = await http.post(base + endpoint, json=initialize(), headers={"authorization": f"Bearer {other}"})
        assert stolen.status_code == 403, stolen.text
        own = await http.post(base + endpoint, json=initialize(), headers={"authorization": f"Bearer {owner}"})
        assert own.status_code == 202, (endpoint, own.text)
