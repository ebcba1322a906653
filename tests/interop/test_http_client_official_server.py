"""Interop: mcpkit's Streamable HTTP client transport against the official SDK's server (PyPI
mcp==2.3.0, tests/support/servers/http_official.py) in each of its modes, stateless and
stateful, JSON and SSE, over real loopback HTTP."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpkit import Client, ClientOptions, HttpTransport, RequestTimeout
from support.processes import servers

LEGACY = ClientOptions(protocol_version="2025-11-25")


def _text(result: Any) -> str:
    text: str = result.content[0].text
    return text


OFFICIAL_MODES = {
    "stateless-json": [],
    "stateless-sse": ["--sse"],
    "stateful-json": ["--stateful"],
    "stateful-sse": ["--stateful", "--sse", "--event-store"],
}


@pytest.fixture(scope="module")
def official() -> Iterator[dict[str, str]]:
    with servers({mode: ["http_official.py", *flags] for mode, flags in OFFICIAL_MODES.items()}) as urls:
        yield {mode: url + "/mcp" for mode, url in urls.items()}


@pytest.mark.parametrize("mode", list(OFFICIAL_MODES))
@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_official_server_end_to_end(official: dict[str, str], mode: str, era: str) -> None:
    transport = HttpTransport(official[mode])
    async with Client(transport, ClientOptions() if era == "modern" else LEGACY) as client:
        assert client.era == era
        assert (transport.session_id is not None) == (era == "legacy" and mode.startswith("stateful"))
        tools = await client.list_tools()
        assert {"echo", "count", "block", "region"} <= {t.name for t in tools.tools}
        assert _text(await client.call_tool("echo", {"text": "héllo"})) == "héllo"
        contents = (await client.read_resource("data://hello")).contents
        assert contents[0].text == "hello world"
        progress: list[tuple[float, float | None, str | None]] = []
        result = await client.call_tool("count", {"steps": 3}, on_progress=lambda p, t, m: progress.append((p, t, m)))
        assert _text(result) == "counted"
        if mode.endswith("sse"):  # JSON responses have nowhere to put notifications
            assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_official_server_checks_mirrored_param_headers(official: dict[str, str]) -> None:
    async with Client(HttpTransport(official["stateless-json"])) as client:
        assert client.era == "modern"
        # Not listed yet: the server answers HeaderMismatch, the transport lists the tools and retries.
        assert _text(await client.call_tool("region", {"region": "us-west1", "query": "q"})) == "us-west1|q"
        for value in ("Hello, 世界", " padded ", "=?base64?literal?=", "line1\nline2"):
            assert _text(await client.call_tool("region", {"region": value, "query": "q"})) == f"{value}|q"


@pytest.mark.parametrize(("mode", "options"), [("stateless-sse", None), ("stateful-sse", LEGACY), ("stateful-json", LEGACY)])
async def test_official_server_sees_deadline_as_cancellation(
    official: dict[str, str], mode: str, options: ClientOptions | None
) -> None:
    tag = f"deadline-{mode}-{options is not None}"
    async with Client(HttpTransport(official[mode]), options) as client:
        started = time.monotonic()
        with pytest.raises(RequestTimeout) as info:
            await client.call_tool("block", {"seconds": 10, "tag": tag}, timeout=1.0)
        assert info.value.local
        assert time.monotonic() - started < 5  # the deadline, not the handler's 10 s
        assert _text(await client.call_tool("settled", {"tag": tag})) == "cancelled"


async def test_official_server_stream_resumed_with_last_event_id(official: dict[str, str]) -> None:
    transport = HttpTransport(official["stateful-sse"])
    async with Client(transport, LEGACY) as client:
        progress: list[float] = []
        result = await client.call_tool("polled", {"steps": 6}, on_progress=lambda p, t, m: progress.append(p))
        assert _text(result) == "polled"
        assert progress == [1, 2, 3, 4, 5, 6]


async def test_official_server_session_deleted_behind_the_clients_back(official: dict[str, str]) -> None:
    transport = HttpTransport(official["stateful-json"])
    async with Client(transport, LEGACY) as client:
        old = transport.session_id
        assert old is not None
        async with httpx.AsyncClient() as http:
            gone = await http.delete(
                official["stateful-json"], headers={"Mcp-Session-Id": old, "MCP-Protocol-Version": "2025-11-25"}
            )
            assert gone.status_code == 200
            assert (await http.post(official["stateful-json"], headers={"Mcp-Session-Id": old}, json={})).status_code == 404
        assert _text(await client.call_tool("echo", {"text": "again"})) == "again"
        assert transport.session_id not in (None, old)
