"""What the layout review found, fixed and kept fixed, through the public API over a
real stdio server process in both eras: callable objects with ``async def __call__``
work as every kind of handler; the client declares ``roots`` in both eras; importing
the client does not import the server's modules."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcpkit import Client, ClientOptions, Root, StdioTransport, TextContent
from support.eras import ERAS, MODERN
from support.paths import ROOT
from support.processes import server_command

pytestmark = pytest.mark.timeout(30)


def connect(era: str, **options: object) -> Client:
    transport = StdioTransport(server_command("callable_objects"), stderr="devnull")
    return Client(transport, ClientOptions(protocol_version=era, request_timeout=10, **options))  # type: ignore[arg-type]


def only_text(blocks: list[object]) -> str:
    assert len(blocks) == 1
    block = blocks[0]
    assert isinstance(block, TextContent)
    return block.text


@pytest.mark.parametrize("era", ERAS)
async def test_callable_objects_serve_as_every_kind_of_handler(era: str) -> None:
    logs: list[object] = []

    def on_log(level: str, data: object, logger: str | None) -> None:
        logs.append(data)

    async with connect(era, on_log=on_log, log_level="debug") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["greet"].description == "Greet someone."
        assert tools["greet"].input_schema["properties"]["name"] == {"type": "string", "description": "Who to greet."}
        assert "ctx" not in tools["greet"].input_schema["properties"]
        greeted = await client.call_tool("greet", {"name": "Ada"})
        assert not greeted.is_error
        assert only_text(list(greeted.content)) == f"Hello, Ada ({client.era})"
        assert logs == ["greeting Ada"]
        shouted = await client.call_tool("shout", {"text": "quiet"})
        assert only_text(list(shouted.content)) == "QUIET"
        assert (await client.read_resource("doc://main")).contents[0].text == "the document"
        assert (await client.read_resource("doc://pages/7")).contents[0].text == "page 7 via resources/read"
        prompt = await client.get_prompt("ask", {"topic": "owls"})
        assert prompt.description == "Ask about a topic."
        content = prompt.messages[0].content
        assert isinstance(content, TextContent)
        assert content.text == "Tell me about owls"
        completion = await client.complete({"type": "ref/prompt", "name": "ask"}, "topic", "al")
        assert completion.completion.values == ["alpha", "alps"]


@pytest.mark.parametrize("era", ERAS)
async def test_roots_capability_is_declared_in_both_eras(era: str) -> None:
    async with connect(era, roots=[Root(uri="file:///work", name="work")], capabilities={"experimental": {}}) as client:
        result = await client.call_tool("capabilities")
        seen = json.loads(only_text(list(result.content)))
        assert seen == {"experimental": {}, "roots": {"listChanged": True}, **_tasks(era)}


@pytest.mark.parametrize("era", ERAS)
async def test_no_roots_capability_without_roots(era: str) -> None:
    async with connect(era) as client:
        result = await client.call_tool("capabilities")
        assert json.loads(only_text(list(result.content))) == _tasks(era)


def _tasks(era: str) -> dict[str, object]:
    """What a 2026-07-28 client declares besides: the tasks extension (docs/tasks.md)."""
    return {"extensions": {"io.modelcontextprotocol/tasks": {}}} if era == MODERN else {}


def test_a_client_program_does_not_import_the_server() -> None:
    code = (
        "import sys; from mcpkit import Client, ClientOptions, HttpTransport, StdioTransport, McpError; "
        "print(','.join(sorted(m for m in sys.modules if m.startswith(('mcpkit.server', 'mcpkit.transports.http.server')))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


def test_import_mcpkit_loads_no_subpackage_until_a_name_is_used() -> None:
    code = "import sys, mcpkit; print(sorted(m for m in sys.modules if m.startswith('mcpkit.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "['mcpkit._version']"


def test_design_doc_names_every_module() -> None:
    """docs/design.md's tree stays true: every module outside the HTTP transport
    directories is named there (those directories are named as a whole)."""
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    src = ROOT / "src" / "mcpkit"
    missing = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src)
        if path.name == "__init__.py":
            if rel.parent != Path(".") and f"{rel.parent.name}/" not in text:
                missing.append(rel.parent.as_posix() + "/")
        elif rel.parts[:2] != ("transports", "http") and path.name not in text:
            missing.append(rel.as_posix())
    assert missing == []
