"""Interop: the MCP Inspector's CLI (``--app-info``) reads the MCP Apps metadata of
examples/apps_chart.py, over stdio and Streamable HTTP, in both eras: another
implementation of the extension finds each tool's view, its visibility and the view's
media type where mcpkit put them."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from support.paths import ROOT
from support.peers import Inspector
from support.ports import free_port
from support.processes import listening

EXAMPLE = ROOT / "examples" / "apps_chart.py"
RUN_LIMIT = 30.0  # seconds for one run of the CLI
pytestmark = pytest.mark.timeout(300)

VIEW = {"resourceUri": "ui://charts/bar.html", "prefersBorder": True, "resourceMimeType": "text/html;profile=mcp-app"}


@pytest.fixture(scope="module")
def chart_url() -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "MCPKIT_PORT": str(port), "MCPKIT_HOST": "127.0.0.1"}
    with listening([sys.executable, str(EXAMPLE), "--http"], port, env=env):
        yield f"http://127.0.0.1:{port}/mcp"


async def app_info(inspector: Inspector, era: str, target: list[str], *args: str) -> list[dict[str, Any]]:
    command = [*inspector.command, "-q", "--format", "json", "--protocol-era", era, *target, "--app-info", *args]
    with anyio.fail_after(RUN_LIMIT):
        proc = await anyio.run_process(command, env=inspector.env, check=False)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return [json.loads(line) for line in proc.stdout.decode().splitlines() if line.startswith("{")]


@pytest.mark.parametrize("era", ["modern", "legacy"])
@pytest.mark.parametrize("where", ["stdio", "http"])
async def test_the_inspector_finds_every_tools_view(inspector: Inspector, chart_url: str, where: str, era: str) -> None:
    target = [sys.executable, str(EXAMPLE)] if where == "stdio" else [chart_url]
    listed = await app_info(inspector, era, target, "--method", "tools/list")
    assert listed == [
        {"hasApp": True, "toolName": "chart", **VIEW},
        {"hasApp": True, "toolName": "chart_series", "visibility": ["app"], **VIEW},
    ]
    (one,) = await app_info(inspector, era, target, "--method", "tools/call", "--tool-name", "chart")
    assert one == {"appInfo": {"hasApp": True, "toolName": "chart", **VIEW}}  # probed, not called
