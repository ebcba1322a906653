"""RequestLog through the public API: one record per request, its fields, and no argument
values unless asked; in memory and over real HTTP, in both eras."""

from __future__ import annotations

import asyncio
import logging
from types import ModuleType
from typing import Any

import pytest

from mcpkit import Client, ClientOptions, McpError, Server
from mcpkit.middleware import RequestLog
from support.eras import ERAS, LEGACY
from support.transports import HTTP, MEMORY
from support.waiting import until

pytestmark = pytest.mark.timeout(60)


def records(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [r.mcp for r in caplog.records if r.name == "guarded.requests"]  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", [MEMORY, HTTP])
@pytest.mark.parametrize("era", ERAS)
async def test_one_record_per_request_with_its_outcome(
    kind: str, era: str, guarded: ModuleType, connect: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="guarded.requests")
    app = guarded.build()
    async with connect(kind, era, app.server) as client:
        await client.call_tool("echo", {"text": "secret-value"})
        with pytest.raises(McpError):
            await client.get_prompt("hello", {"name": "nobody"})  # KeyError, mapped to -32602
        denied = await client.call_tool("echo", {"text": "x"}, meta={"deny": True})
        assert denied.is_error
    seen = records(caplog)
    calls = [r for r in seen if r["method"] in ("tools/call", "prompts/get")]
    assert [(r["method"], r["name"], r["outcome"], r["code"]) for r in calls] == [
        ("tools/call", "echo", "ok", None),
        ("prompts/get", "hello", "error", -32602),
        ("tools/call", "echo", "tool_error", None),
    ]
    first = calls[0]
    assert first["client"] == "mcpkit"
    assert first["principal"] is None
    assert first["duration_ms"] == 0.0  # the guarded server's clock stands still
    assert (first["session_id"] is not None) == (era == LEGACY)
    assert first["request_id"] is not None
    assert "arguments" not in first
    assert not any("secret-value" in r.getMessage() or "secret-value" in str(r.mcp) for r in caplog.records if hasattr(r, "mcp"))
    error = next(r for r in caplog.records if getattr(r, "mcp", {}).get("outcome") == "error")
    assert error.levelno == logging.WARNING
    assert error.getMessage() == "prompts/get hello: error -32602 in 0.0 ms"


async def test_argument_values_only_when_asked_and_bounded(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="requests")
    server = Server("logged")
    server.use(RequestLog("requests", arguments=True, max_arguments=40))

    @server.tool
    def echo(text: str) -> str:
        return text

    async with Client(server, ClientOptions(protocol_version=LEGACY)) as client:
        await client.call_tool("echo", {"text": "short"})
        await client.call_tool("echo", {"text": "x" * 500})
    logged = [r.mcp for r in caplog.records if r.name == "requests" and r.mcp["method"] == "tools/call"]  # type: ignore[attr-defined]
    assert logged[0]["arguments"] == '{"text":"short"}'
    assert len(logged[1]["arguments"].encode()) <= 40
    assert logged[1]["arguments"].endswith("…")


async def test_a_session_id_is_the_same_for_a_session_and_differs_between_sessions() -> None:
    ids: list[str | None] = []
    server = Server("sessions")

    @server.tool
    def who() -> str:
        return "me"

    @server.use
    async def record(ctx: Any, call_next: Any) -> Any:
        if ctx.method == "tools/call":
            ids.append(ctx.session_id)
        return await call_next()

    options = ClientOptions(protocol_version=LEGACY)
    async with Client(server, options) as one, Client(server, options) as two:
        await one.call_tool("who")
        await one.call_tool("who")
        await two.call_tool("who")
    assert ids[0] is not None
    assert ids[0] == ids[1] != ids[2]


@pytest.mark.parametrize("era", ERAS)
async def test_a_cancelled_request_is_logged_as_cancelled(era: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="requests")
    started = asyncio.Event()
    server = Server("cancelled")
    server.use(RequestLog("requests"))

    @server.tool
    async def forever() -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    async with Client(server, ClientOptions(protocol_version=era)) as client:
        call = asyncio.create_task(client.call_tool("forever"))
        await started.wait()
        call.cancel()

        def logged() -> list[Any]:
            return [r.mcp for r in caplog.records if r.name == "requests" and r.mcp["name"] == "forever"]  # type: ignore[attr-defined]

        await until(logged)
    assert [(r["outcome"], r["code"]) for r in logged()] == [("cancelled", None)]
