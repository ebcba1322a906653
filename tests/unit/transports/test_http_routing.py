"""How the Streamable HTTP endpoint routes a POST (transports/http/server/endpoint.py):
a modern request goes to its era before any session is looked up (it ignores
``Mcp-Session-Id``); anything else is looked up in the session it names and handed to
that session's engine, which answers an id already in progress there as it always did
(``Engine.adopt``)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import msgspec
import pytest

from mcpkit import Server
from mcpkit.protocol.engine import Engine
from mcpkit.protocol.events import Reply, RequestReceived
from support import wire


def test_engine_adopt_takes_a_request_another_engine_parsed() -> None:
    probe, session = Engine(), Engine()
    ev = probe.receive(b'{"jsonrpc":"2.0","id":7,"method":"tools/list"}')
    assert isinstance(ev, RequestReceived)
    probe.abandon(ev.id)
    assert session.adopt(ev) is ev
    assert 7 in session.incoming
    again = probe.receive(b'{"jsonrpc":"2.0","id":7,"method":"tools/list"}')
    assert isinstance(again, RequestReceived)
    refused = session.adopt(again)
    assert isinstance(refused, Reply)  # what receive answers for an id in use there, word for word
    direct = session.receive(b'{"jsonrpc":"2.0","id":7,"method":"tools/list"}')
    assert isinstance(direct, Reply)
    assert refused.data == direct.data
    assert (
        msgspec.json.decode(refused.data)["error"]["message"] == "Invalid Request: id is already in use by a request in progress"
    )


class _Fixture:
    def __init__(self) -> None:
        self.server = Server("routing")
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        fixture = self

        @self.server.tool
        async def hold() -> str:
            """Waits until the test releases it."""
            fixture.started.set()
            await fixture.release.wait()
            return "released"

        @self.server.tool
        async def echo(text: str) -> str:
            """The text, unchanged."""
            return text

        self.app = self.server.asgi_app(path="/mcp")
        self.lookups: list[str] = []
        sessions = self.app.sessions
        get = sessions.get  # what every lookup of this node's sessions comes to (find, too)

        def counting(session_id: str) -> Any:
            self.lookups.append(session_id)
            return get(session_id)

        sessions.get = counting  # type: ignore[method-assign]


@pytest.fixture
async def fx() -> AsyncIterator[tuple[_Fixture, httpx.AsyncClient]]:
    fixture = _Fixture()
    async with (
        fixture.app.lifespan(),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=fixture.app), base_url="http://127.0.0.1") as http,
    ):
        yield fixture, http


def _call(rid: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A legacy ``tools/call`` (no ``_meta``)."""
    return wire.request("tools/call", {"name": name, "arguments": arguments}, rid)


def _modern_call(
    rid: int, name: str, arguments: dict[str, Any], session: dict[str, str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A modern ``tools/call`` that also carries the legacy session's ``Mcp-Session-Id``."""
    return wire.modern(
        "tools/call", {"name": name, "arguments": arguments}, rid=rid, headers={"mcp-session-id": session["mcp-session-id"]}
    )


async def _session(http: httpx.AsyncClient) -> dict[str, str]:
    return await wire.aopen_session(http, "/mcp")


async def test_a_modern_request_is_served_without_looking_up_the_session_it_names(fx: tuple[_Fixture, httpx.AsyncClient]) -> None:
    fixture, http = fx
    legacy = await _session(http)
    fixture.lookups.clear()
    body, headers = _modern_call(2, "echo", {"text": "modern"}, legacy)
    resp = await http.post("/mcp", json=body, headers=headers)
    assert resp.status_code == 200, resp.text
    assert resp.json()["result"]["content"][0]["text"] == "modern"
    assert fixture.lookups == []  # neither looked up nor touched
    assert "mcp-session-id" not in resp.headers


async def test_a_legacy_request_is_looked_up_and_served_in_its_session(fx: tuple[_Fixture, httpx.AsyncClient]) -> None:
    fixture, http = fx
    headers = await _session(http)
    fixture.lookups.clear()
    resp = await http.post("/mcp", json=_call(2, "echo", {"text": "legacy"}), headers=headers)
    assert resp.json()["result"]["content"][0]["text"] == "legacy"
    assert fixture.lookups == [headers["mcp-session-id"]]
    unknown = {**headers, "mcp-session-id": "no-such-session"}
    resp = await http.post("/mcp", json=_call(3, "echo", {"text": "x"}), headers=unknown)
    assert resp.status_code == 404
    resp = await http.post("/mcp", content=b"{not json", headers={**unknown, "content-type": "application/json"})
    assert resp.status_code == 400  # a message that cannot be parsed is answered as before
    assert resp.json()["error"]["code"] == -32700


async def test_an_id_in_progress_in_the_session_is_refused_and_the_request_goes_on(
    fx: tuple[_Fixture, httpx.AsyncClient],
) -> None:
    fixture, http = fx
    headers = await _session(http)
    held = asyncio.ensure_future(http.post("/mcp", json=_call(5, "hold", {}), headers=headers))
    await asyncio.wait_for(fixture.started.wait(), 10)
    resp = await http.post("/mcp", json=_call(5, "echo", {"text": "again"}), headers=headers)
    assert resp.status_code == 400
    assert resp.json() == {
        "jsonrpc": "2.0",
        "id": 5,
        "error": {"code": -32600, "message": "Invalid Request: id is already in use by a request in progress"},
    }
    body, modern = _modern_call(5, "echo", {"text": "modern"}, headers)
    resp = await http.post("/mcp", json=body, headers=modern)
    assert resp.json()["result"]["content"][0]["text"] == "modern"  # not in the session: its ids are its own
    fixture.release.set()
    first = await asyncio.wait_for(held, 10)
    assert json.loads(first.text)["result"]["content"][0]["text"] == "released"
