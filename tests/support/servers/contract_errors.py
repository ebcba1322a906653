"""A server whose handlers fail in every way docs/errors.md §2 lists, for the error-contract tests.

Run as a stdio server: ``python contract_errors.py [--expose] [--mask]``. The tests also
import :func:`build` to serve the very same handlers in memory.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any, TypedDict

from mcpkit import (
    CallToolResult,
    Context,
    HttpError,
    McpError,
    Server,
    TextContent,
    ToolError,
)

#: Text that must never reach a client unless the server opts in.
SECRET = "s3cr3t-hunter2-DO-NOT-LEAK"
#: What every deliberate McpError in this server carries.
CUSTOM_CODE = 4001
CUSTOM_MESSAGE = "Quota exceeded for this key"
CUSTOM_DATA: dict[str, Any] = {"retryAfterSeconds": 7, "nested": [1, "two", None], "ok": False}


class StatusCodeError(Exception):
    """Like Starlette's HTTPException: an exception with an integer ``status_code``."""

    def __init__(self, status_code: int, detail: str) -> None:
        super().__init__(detail)
        self.status_code = status_code
        self.detail = detail


class FatalBase(BaseException):
    """Not an Exception at all."""


class Point(TypedDict):
    x: int
    y: int


def _custom_error() -> McpError:
    return McpError(CUSTOM_CODE, CUSTOM_MESSAGE, CUSTOM_DATA)


def build(*, expose: bool = False, mask: bool = False) -> Server:
    server = Server("contract-errors", "1.2.3", expose_internal_errors=expose, mask_tool_errors=mask)

    # --- middleware: guards tools whose name starts with "guarded_" ---------------------------

    @server.use
    async def guard(ctx: Context, call_next: Any) -> Any:
        if ctx.method == "tools/call":
            name = ctx.params.get("name", "")
            if name == "guarded_plain":
                raise PermissionError(f"middleware refused: {SECRET}")
            if name == "guarded_mcp":
                raise _custom_error()
            if name == "guarded_http":
                raise HttpError(403, "forbidden by middleware")
        return await call_next()

    # --- tools ------------------------------------------------------------------------------

    @server.tool
    def echo(text: str) -> str:
        """Return the text."""
        return text

    @server.tool
    def sync_boom(message: str) -> str:
        raise ValueError(message)

    @server.tool
    async def async_boom(message: str) -> str:
        await asyncio.sleep(0)
        raise RuntimeError(message)

    @server.tool
    def typed_boom(message: str, count: int, ratio: float = 0.5, tags: list[str] | None = None) -> dict[str, int]:
        raise LookupError(message)

    def raw_boom(arguments: dict[str, Any]) -> Any:
        raise OSError(arguments["message"])

    async def raw_async_boom(arguments: dict[str, Any], ctx: Context) -> Any:
        raise ArithmeticError(arguments["message"])

    message_schema = {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}
    server.add_tool("raw_boom", "Raw sync tool that raises.", message_schema, raw_boom)
    server.add_tool("raw_async_boom", "Raw async tool that raises.", message_schema, raw_async_boom)

    @server.tool
    def tool_error(message: str) -> str:
        raise ToolError(message)

    @server.tool
    def returns_error() -> CallToolResult:
        return CallToolResult(
            is_error=True,
            content=[TextContent(text="returned failure"), TextContent(text="second block")],
        )

    @server.tool
    async def mcp_error() -> str:
        raise _custom_error()

    @server.tool
    def http_error(status: int, message: str) -> str:
        raise HttpError(status, message)

    @server.tool
    async def status_code_error(status: int, message: str) -> str:
        raise StatusCodeError(status, message)

    @server.tool
    def secret_tool() -> str:
        raise RuntimeError(f"database password is {SECRET}")

    @server.tool
    def bad_point() -> Point:
        return {"x": 1}  # type: ignore[typeddict-item]  # breaks its own outputSchema on purpose

    def no_structured(arguments: dict[str, Any]) -> Any:
        return CallToolResult(content=[TextContent(text="forgot the structure")])

    server.add_tool(
        "no_structured",
        "Declares an outputSchema but returns no structuredContent.",
        {"type": "object"},
        no_structured,
        output_schema={"type": "object", "properties": {"v": {"type": "integer"}}, "required": ["v"]},
    )

    @server.tool
    def guarded_plain() -> str:
        return "unreachable"

    @server.tool
    def guarded_mcp() -> str:
        return "unreachable"

    @server.tool
    def guarded_http() -> str:
        return "unreachable"

    @server.tool
    def exit_sync() -> str:
        raise SystemExit(3)

    @server.tool
    async def exit_async() -> str:
        raise SystemExit(4)

    @server.tool
    async def base_exception() -> str:
        raise FatalBase("not an Exception")

    # --- resources ----------------------------------------------------------------------------

    @server.resource("contract://ok")
    def ok_resource() -> str:
        return "fine"

    @server.resource("contract://boom")
    def boom_resource() -> str:
        raise RuntimeError(f"resource exploded\nwhile reading {SECRET}")

    @server.resource("contract://long-boom")
    async def long_boom_resource() -> str:
        raise RuntimeError("é" * 5000)

    @server.resource("contract://mcp-error")
    async def mcp_error_resource() -> str:
        raise _custom_error()

    @server.resource("contract://http/{status}")
    def http_resource(status: str) -> str:
        raise HttpError(int(status), "resource is gone")

    @server.resource("contract://items/{item_id}")
    async def item(item_id: str) -> str:
        raise KeyError(f"item {item_id} lookup failed: {SECRET}")

    # --- prompts and completions ----------------------------------------------------------------

    @server.prompt
    def ok_prompt(topic: str) -> str:
        """A prompt that works."""
        return f"Tell me about {topic}"

    @server.prompt
    def boom_prompt(topic: str = "x") -> str:
        raise RuntimeError(f"prompt exploded: {SECRET}")

    @server.prompt
    async def mcp_error_prompt() -> str:
        raise _custom_error()

    @server.completion(prompt="ok_prompt")
    def complete_topic(argument: str, value: str, context: dict[str, str]) -> list[str]:
        return [t for t in ("python", "pytest", "rust") if t.startswith(value)]

    @server.completion(prompt="boom_prompt")
    def complete_boom(argument: str, value: str, context: dict[str, str]) -> list[str]:
        raise RuntimeError(f"completion exploded: {SECRET}")

    @server.completion(prompt="mcp_error_prompt")
    async def complete_mcp_error(argument: str, value: str, context: dict[str, str]) -> list[str]:
        raise _custom_error()

    return server


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    build(expose="--expose" in sys.argv, mask="--mask" in sys.argv).run()
