"""ErrorMapping through the public API: exception types to protocol errors or tool
errors, the most derived rule winning, masking, and what passes untouched; over every
transport and in both eras."""

from __future__ import annotations

import logging
from types import ModuleType
from typing import Any

import pytest

from mcpkit import (
    INVALID_PARAMS,
    CallNext,
    CallToolResult,
    Client,
    ClientOptions,
    Context,
    McpError,
    Server,
    TextContent,
    ToolError,
)
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


# --- a tool's own exceptions (tests/support/servers/mapped.py) ---------------------------


def texts(result: CallToolResult) -> list[str]:
    return [c.text for c in result.content if isinstance(c, TextContent)]


async def error_of(client: Client, tool: str, arguments: dict[str, Any] | None = None) -> McpError:
    with pytest.raises(McpError) as caught:
        await client.call_tool(tool, arguments or {})
    return caught.value


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_a_tools_exception_is_answered_as_the_rules_say(kind: str, era: str, mapped: ModuleType, connect: Any) -> None:
    server = mapped.build() if kind != "stdio" else None
    async with connect(kind, era, server, script="mapped") as client:
        denied = await error_of(client, "guarded")  # a code: that JSON-RPC error, the text kept
        assert (denied.code, denied.message, denied.data) == (-32001, "only the owner may do this", None)
        missing = await error_of(client, "lookup", {"key": "k9"})  # a function: what it returns
        assert (missing.code, missing.message, missing.data) == (-32004, "No record k9", {"key": "k9"})
        parsed = await client.call_tool("parse", {"text": "secret-42"})  # "tool", masked
        assert parsed.is_error
        [text] = texts(parsed)
        assert text.startswith("Request failed (reference ")
        assert "secret-42" not in text
        broken = await client.call_tool("broken")  # no rule: the server's own answer
        assert (broken.is_error, texts(broken)) == (True, ["disk on fire"])
        chosen = await client.call_tool("chosen")  # a ToolError: only its own rules match
        assert (chosen.is_error, texts(chosen)) == (True, ["try a smaller file"])
        refused = await error_of(client, "refused")  # ... and a rule keyed by its class does
        assert (refused.code, refused.message) == (-32003, "not today")
        stuck = await client.call_tool("stuck")  # a time limit: the tool raised nothing
        assert (stuck.is_error, texts(stuck)) == (True, ["Tool 'stuck' timed out after 0.2 s"])
        made = await client.call_tool("made")  # an isError result the tool returned: its own
        assert (made.is_error, texts(made)) == (True, ["made by the tool"])
        mounted = await error_of(client, "vault_open")  # a mounted server's tool: the parent's rules
        assert (mounted.code, mounted.message) == (-32001, "the vault is locked")
        checked = await client.call_tool("checked", {"value": "secret-43"})  # a transformed tool
        assert checked.is_error
        assert texts(checked)[0].startswith("Request failed (reference ")
        wrapped = await error_of(client, "wrapped", {"text": "z"})  # what a transformation's wrapper raises
        assert (wrapped.code, wrapped.message) == (-32001, "the wrapper refuses")


@pytest.mark.parametrize("era", ERAS)
async def test_masked_tool_exceptions_are_logged_under_the_reference_sent(
    era: str, mapped: ModuleType, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="mcpkit.server")
    async with Client(mapped.build(mask_tool_errors=True), ClientOptions(protocol_version=era)) as client:
        parsed = await client.call_tool("parse", {"text": "tenant 42 secret"})
        broken = await client.call_tool("broken")
        denied = await error_of(client, "guarded")
    [text] = texts(parsed)
    assert text.startswith("Request failed (reference ")
    assert "secret" not in text
    reference = text.removeprefix("Request failed (reference ").rstrip(")")
    assert f"tools/call failed (reference {reference})" in caplog.text
    assert "cannot parse tenant 42 secret" in caplog.text
    [masked] = texts(broken)  # unmatched: the server's mask_tool_errors answer, as it was
    assert broken.is_error
    assert masked.startswith("Tool 'broken' failed (reference ")
    assert (denied.code, denied.message) == (-32001, "only the owner may do this")  # the rule's own text


async def test_the_tools_text_is_flattened_and_cut_and_a_failing_rule_is_an_internal_error() -> None:
    def fails(exc: BaseException) -> McpError:
        raise RuntimeError("the rule itself broke")

    server = Server("cut")
    server.use(ErrorMapping({ValueError: -32050, LookupError: fails}, max_text=16))

    @server.tool
    def long() -> str:
        raise ValueError("line one\nline two and much more")

    @server.tool
    def lookup() -> str:
        raise IndexError("i")

    async with Client(server, ClientOptions(protocol_version=MODERN)) as client:
        cut = await error_of(client, "long")
        assert (cut.code, cut.message) == (-32050, "line one line…")  # 16 bytes, the "…" included
        internal = await error_of(client, "lookup")
        assert (internal.code, internal.message) == (-32603, "Internal error")


@pytest.mark.parametrize("era", ERAS)
async def test_middleware_that_does_not_ask_still_sees_the_tools_isError_result(era: str) -> None:
    seen: list[tuple[str, bool, str | None]] = []
    server = Server("seen")
    server.use(ErrorMapping({PermissionError: -32001}))

    @server.use
    async def look(ctx: Context, call_next: CallNext) -> Any:
        result = await call_next()
        if isinstance(result, CallToolResult):
            exc = ctx.tool_exception(result)
            seen.append((ctx.params["name"], result.is_error, type(exc).__name__ if exc else None))
            if ctx.params["name"] == "replaced":  # a result of this middleware's own: not the tool's
                return CallToolResult(content=[TextContent(text="replaced")], is_error=True)
        return result

    @server.tool
    def ok() -> str:
        return "fine"

    @server.tool
    def denied() -> str:
        raise PermissionError("no")

    @server.tool
    def replaced() -> str:
        raise PermissionError("no")

    async with Client(server, ClientOptions(protocol_version=era)) as client:
        assert texts(await client.call_tool("ok")) == ["fine"]
        assert (await error_of(client, "denied")).code == -32001
        result = await client.call_tool("replaced")
        assert (result.is_error, texts(result)) == (True, ["replaced"])
    assert seen == [("ok", False, None), ("denied", True, "PermissionError"), ("replaced", True, "PermissionError")]


@pytest.mark.parametrize("era", ERAS)
async def test_a_tools_ToolError_is_matched_only_by_rules_for_ToolError(era: str) -> None:
    server = Server("chosen")
    server.use(ErrorMapping({Exception: -32050}))

    @server.use
    async def refuse(ctx: Context, call_next: CallNext) -> Any:
        if ctx.meta.get("refuse"):
            raise ToolError("raised by middleware")  # no special meaning outside a tool
        return await call_next()

    @server.tool
    def chosen() -> str:
        raise ToolError("words the tool chose")

    @server.tool
    def plain() -> str:
        raise ValueError("an ordinary failure")

    async with Client(server, ClientOptions(protocol_version=era)) as client:
        kept = await client.call_tool("chosen")
        assert (kept.is_error, texts(kept)) == (True, ["words the tool chose"])
        assert (await error_of(client, "plain")).code == -32050
        with pytest.raises(McpError) as caught:
            await client.call_tool("chosen", meta={"refuse": True})
        assert (caught.value.code, caught.value.message) == (-32050, "raised by middleware")


@pytest.mark.parametrize("era", ERAS)
async def test_a_task_tools_exception_is_mapped_until_the_call_is_a_task(era: str) -> None:
    server = Server("tasks")
    server.use(ErrorMapping({PermissionError: -32001}))

    @server.tool(task="deferred")
    async def early() -> str:  # fails before it could become a task: the call's own answer
        raise PermissionError("not allowed")

    @server.tool(task=True)
    async def tasked() -> str:  # a task for a client of the extension: its failure comes later
        raise PermissionError("not allowed either")

    async with Client(server, ClientOptions(protocol_version=era)) as client:
        assert (await error_of(client, "early")).code == -32001
        if era == MODERN:  # the client waits for the task: tasks/result reports the isError result
            result = await client.call_tool("tasked")
            assert (result.is_error, texts(result)) == (True, ["not allowed either"])
        else:  # no tasks extension in 2025-11-25: a plain call
            assert (await error_of(client, "tasked")).code == -32001
