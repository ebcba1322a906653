"""ErrorMapping through the public API: exception types to protocol errors or tool
errors, the most derived rule winning, masking, and what passes untouched; over every
transport and in both eras."""

from __future__ import annotations

import logging
from types import ModuleType
from typing import Any

import pytest

from mcpkit import INVALID_PARAMS, CallNext, CallToolResult, Client, ClientOptions, Context, McpError, Server, TextContent
from mcpkit.middleware import ErrorMapping
from support.eras import ERAS, LEGACY, MODERN
from support.transports import TRANSPORTS

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_mapped_exceptions_become_the_errors_the_rules_say(kind: str, era: str, guarded: ModuleType, connect: Any) -> None:
    app = guarded.build() if kind != "stdio" else None
    async with connect(kind, era, app.server if app else None) as client:
        with pytest.raises(McpError) as caught:
            await client.get_prompt("hello", {"name": "nobody"})
        assert (caught.value.code, caught.value.message) == (INVALID_PARAMS, "'no such person: nobody'")
        denied = await client.call_tool("echo", {"text": "x"}, meta={"deny": True})
        assert denied.is_error
        assert [c.text for c in denied.content if isinstance(c, TextContent)] == ["callers from outside may not do this"]
        with pytest.raises(McpError) as refused:  # a "tool" rule on another method: -32603 with the text
            await client.get_prompt("hello", {"name": "root"})
        assert (refused.value.code, refused.value.message) == (-32603, "root is not greeted")


def failing(mapping: ErrorMapping, exc: BaseException) -> Server:
    server = Server("failing")
    server.use(mapping)

    @server.resource("data://x")
    def x() -> str:
        raise exc

    return server


@pytest.mark.parametrize("era", ERAS)
async def test_the_most_derived_rule_wins(era: str) -> None:
    mapping = ErrorMapping({LookupError: -32004, KeyError: INVALID_PARAMS})
    async with Client(failing(mapping, KeyError("k")), ClientOptions(protocol_version=era)) as client:
        with pytest.raises(McpError) as caught:
            await client.read_resource("data://x")
        assert caught.value.code == INVALID_PARAMS
    async with Client(failing(mapping, IndexError("i")), ClientOptions(protocol_version=era)) as client:
        with pytest.raises(McpError) as caught:
            await client.read_resource("data://x")
        assert (caught.value.code, caught.value.message) == (-32004, "i")


async def test_unmapped_exceptions_are_the_servers_internal_errors(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="mcpkit.server")
    mapping = ErrorMapping({KeyError: INVALID_PARAMS})
    async with Client(failing(mapping, RuntimeError("db password is hunter2")), ClientOptions(protocol_version=MODERN)) as c:
        with pytest.raises(McpError) as caught:
            await c.read_resource("data://x")
    assert (caught.value.code, caught.value.message) == (-32603, "Internal error")
    assert "hunter2" not in str(caught.value.data)
    assert "hunter2" in caplog.text  # logged under the reference


async def test_masked_text_is_a_reference_and_the_exception_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="mcpkit.server")
    mapping = ErrorMapping({KeyError: INVALID_PARAMS}, mask=True)
    async with Client(failing(mapping, KeyError("tenant 42 secret")), ClientOptions(protocol_version=LEGACY)) as client:
        with pytest.raises(McpError) as caught:
            await client.read_resource("data://x")
    assert caught.value.code == INVALID_PARAMS
    assert caught.value.message.startswith("Request failed (reference ")
    reference = caught.value.message.removeprefix("Request failed (reference ").rstrip(")")
    assert "secret" not in caught.value.message
    assert f"(reference {reference})" in caplog.text
    assert "tenant 42 secret" in caplog.text


async def test_rule_functions_and_what_passes_untouched() -> None:
    def as_result(exc: BaseException) -> CallToolResult:
        return CallToolResult(content=[TextContent(text=f"sorry: {exc}")], is_error=True)

    server = Server("functions")
    server.use(ErrorMapping({TimeoutError: as_result, McpError: INVALID_PARAMS}))

    @server.use
    async def inner(ctx: Context, call_next: CallNext) -> Any:
        how = ctx.meta.get("raise")
        if how == "timeout":
            raise TimeoutError("upstream slow")
        if how == "mcp":
            raise McpError(-32099, "kept as it is")
        return await call_next()

    @server.tool
    def echo(text: str) -> str:
        return text

    async with Client(server, ClientOptions(protocol_version=MODERN)) as client:
        result = await client.call_tool("echo", {"text": "x"}, meta={"raise": "timeout"})
        assert result.is_error
        assert result.content[0].text == "sorry: upstream slow"  # type: ignore[union-attr]
        with pytest.raises(McpError) as caught:
            await client.call_tool("echo", {"text": "x"}, meta={"raise": "mcp"})
        assert (caught.value.code, caught.value.message) == (-32099, "kept as it is")


def test_rules_are_checked_when_made() -> None:
    with pytest.raises(TypeError, match="exception types"):
        ErrorMapping({"KeyError": INVALID_PARAMS})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="error code"):
        ErrorMapping({KeyError: "params"})  # type: ignore[dict-item]
