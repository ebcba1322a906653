"""What the layout review found, fixed and kept fixed, through the public API over a
real stdio server process in both eras: callable objects with ``async def __call__``
work as every kind of handler; the client declares ``roots`` in both eras; importing
the client does not import the server's modules."""

from __future__ import annotations

import json

import pytest

from mcpkit import Client, ClientOptions, Root, StdioTransport, TextContent
from support.eras import ERAS, MODERN
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
