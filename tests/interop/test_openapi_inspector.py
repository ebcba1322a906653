"""Interop: the MCP Inspector's CLI (pinned, tests/support/peers.py) against an mcpkit
server generated from a real FastAPI app's OpenAPI document (the app under uvicorn on
loopback, tests/support/servers/openapi_app.py; the generated server over stdio,
tests/support/servers/openapi_mcp.py): it lists the tools with ``--strict`` (every
generated schema portable), calls one with a nested JSON body, gets a tool error for an
error status, and reads a resource template's file."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from support.paths import SERVERS
from support.peers import Inspector
from support.ports import free_port
from support.processes import listening, server_command

RUN_LIMIT = 30.0
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def api() -> Iterator[str]:
    """The FastAPI app under uvicorn on 127.0.0.1: its port."""
    port = free_port()
    with listening(server_command("openapi_app", str(port)), port):
        yield str(port)


def _last_json(output: bytes) -> dict[str, Any] | None:
    lines = [line for line in output.decode(errors="replace").splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else None


async def _run(inspector: Inspector, api: str, era: str, *args: str) -> tuple[int, dict[str, Any] | None, dict[str, Any] | None]:
    target = [sys.executable, str(SERVERS / "openapi_mcp.py"), api]
    command = [*inspector.command, "-q", "--format", "json", "--protocol-era", era, *target, *args]
    with anyio.fail_after(RUN_LIMIT):
        proc = await anyio.run_process(command, env=inspector.env, check=False)
    out, err = _last_json(proc.stdout), _last_json(proc.stderr)
    return proc.returncode, out["result"] if out else None, err["error"] if err else None


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_inspector_drives_the_generated_server(inspector: Inspector, api: str, era: str) -> None:
    runs: dict[str, tuple[int, dict[str, Any] | None, dict[str, Any] | None]] = {}
    calls = {
        "list": ("--method", "tools/list", "--strict"),
        "create": (
            "--method",
            "tools/call",
            "--tool-name",
            "create_item",
            "--tool-args-json",
            json.dumps({"name": "shelf", "color": "red", "dimensions": {"width": 80, "height": 180}}),
        ),
        "missing": ("--method", "tools/call", "--tool-name", "get_item", "--tool-args-json", '{"item_id": 404}'),
        "file": ("--method", "resources/read", "--uri", "api://files/badge"),
    }
    limiter = anyio.CapacityLimiter(2)

    async def one(key: str, args: tuple[str, ...]) -> None:
        async with limiter:
            runs[key] = await _run(inspector, api, era, *args)

    async with anyio.create_task_group() as tasks:
        for key, args in calls.items():
            tasks.start_soon(one, key, args)
    code, listed, error = runs["list"]
    assert (code, error) == (0, None), runs["list"]
    assert listed is not None
    names = sorted(tool["name"] for tool in listed["tools"])
    assert names == ["api_key", "brew", "create_item", "flaky", "get_item", "greeting", "list_items", "rename_item"]
    code, created, error = runs["create"]
    assert (code, error) == (0, None), runs["create"]
    assert created is not None
    assert created["structuredContent"]["name"] == "shelf"
    assert created["structuredContent"]["dimensions"] == {"width": 80.0, "height": 180.0, "unit": "cm"}
    code, missing, error = runs["missing"]
    assert code == 5, runs["missing"]  # the CLI's exit for a tool error
    text = json.dumps([missing, error])
    assert "HTTP 404 Not Found from GET /items/{item_id}" in text
    code, read, error = runs["file"]
    assert (code, error) == (0, None), runs["file"]
    assert read is not None
    (contents,) = read["contents"]
    assert (contents["uri"], contents["mimeType"]) == ("api://files/badge", "image/png")
