"""A legacy request cancelled by the client over Streamable HTTP (issue 10, item 6): its POST
is answered with a -32800 error, never an empty 204; and mcpkit's own client cancelling a
legacy call goes on as before."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpkit import Client, ClientOptions, HttpTransport, Server
from support.eras import LEGACY
from support.processes import load_server
from support.serving import serve_in_thread
from support.waiting import until
from support.wire import messages, open_session

pytestmark = pytest.mark.timeout(60)

polling = load_server("polling_http")
SERVER: Server = polling.server


@pytest.fixture(scope="module")
def urls() -> Iterator[dict[str, str]]:
    """The server answering in JSON when it can ("auto"), and always in SSE ("sse")."""
    with serve_in_thread(SERVER.asgi_app()) as auto, serve_in_thread(SERVER.asgi_app(json_response=False)) as sse:
        yield {"auto": f"http://127.0.0.1:{auto}/mcp", "sse": f"http://127.0.0.1:{sse}/mcp"}


@pytest.mark.parametrize(("tool", "mode"), [("wait", "auto"), ("talk_then_wait", "auto"), ("wait", "sse")])
async def test_a_cancelled_legacy_request_gets_a_32800_error_not_an_empty_204(urls: dict[str, str], tool: str, mode: str) -> None:
    url = urls[mode]
    async with httpx.AsyncClient(timeout=10) as http:
        with httpx.Client(timeout=10) as sync_http:
            headers = await asyncio.to_thread(open_session, sync_http, url)
        params: dict[str, Any] = {"name": tool, "arguments": {}}
        if tool == "talk_then_wait":
            params["_meta"] = {"progressToken": "t"}
        call = {"jsonrpc": "2.0", "id": 77, "method": "tools/call", "params": params}
        pending = asyncio.create_task(http.post(url, json=call, headers=headers))
        await until(lambda: polling.RUNNING[tool] > 0, what=f"{tool} is running")
        note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 77, "reason": "no"}}
        assert (await http.post(url, json=note, headers=headers)).status_code == 202
        resp = await asyncio.wait_for(pending, 10)
    assert resp.status_code == 200
    kind = resp.headers["content-type"]
    assert kind.startswith("application/json" if (tool, mode) == ("wait", "auto") else "text/event-stream")
    last = messages(resp)[-1]
    assert last == {"jsonrpc": "2.0", "id": 77, "error": {"code": -32800, "message": "Request cancelled"}}


async def test_the_mcpkit_client_cancelling_a_legacy_call_is_unaffected(urls: dict[str, str]) -> None:
    async with Client(HttpTransport(urls["auto"]), ClientOptions(protocol_version=LEGACY, request_timeout=10)) as client:
        task = asyncio.create_task(client.call_tool("wait"))
        await until(lambda: polling.RUNNING["wait"] > 0, what="wait is running")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert (await client.call_tool("echo", {"text": "still here"})).content[0].text == "still here"  # type: ignore[union-attr]
