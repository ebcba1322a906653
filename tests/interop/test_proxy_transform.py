"""Interop: tools of ``@modelcontextprotocol/server-everything`` (stdio, its own JSON
Schemas, draft-07) behind an mcpkit ``Proxy``,
transformed there (``transform_tool``): renamed, an argument renamed, one fixed, and
called by mcpkit's client in both eras."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcpkit import ArgTransform, Client, ClientOptions, McpError, Proxy, StdioTransport, TextContent
from support.eras import ERAS

LIMIT = 60.0


def proxy(everything: list[str]) -> Proxy:
    behind = Proxy(lambda: StdioTransport(everything, stderr="devnull"), client_options=ClientOptions(request_timeout=20))
    behind.transform_tool("echo", name="say", description="Says it back.", args={"message": ArgTransform(name="text")})
    behind.transform_tool("get-sum", name="plus_ten", args={"b": ArgTransform(hide=True, default=10)})
    return behind


def text_of(result: Any) -> str:
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


@pytest.mark.parametrize("era", ERAS)
async def test_server_everythings_tools_transformed_behind_a_proxy(everything: list[str], era: str) -> None:
    with anyio.fail_after(LIMIT):
        async with Client(proxy(everything), ClientOptions(protocol_version=era, request_timeout=20)) as client:
            tools = {tool.name: tool for tool in await client.list_all_tools()}
            assert {"say", "plus_ten"} <= tools.keys()
            assert not {"echo", "get-sum"} & tools.keys()
            say = tools["say"]
            assert say.description == "Says it back."
            assert list(say.input_schema["properties"]) == ["text"]
            assert say.input_schema["required"] == ["text"]
            assert say.input_schema["$schema"] == "http://json-schema.org/draft-07/schema#"
            assert list(tools["plus_ten"].input_schema["properties"]) == ["a"]
            assert text_of(await client.call_tool("say", {"text": "hi"})) == "Echo: hi"
            assert text_of(await client.call_tool("plus_ten", {"a": 2})) == "The sum of 2 and 10 is 12."
            for name, arguments in [("say", {"message": "hi"}), ("plus_ten", {"a": 2, "b": 1}), ("say", {"text": 5})]:
                with pytest.raises(McpError) as caught:
                    await client.call_tool(name, arguments)
                assert caught.value.code == -32602, arguments
