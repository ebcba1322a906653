"""A server whose ErrorMapping maps its tools' own exceptions (tests/unit/middleware):
``python tests/support/servers/mapped.py`` serves it over stdio; :func:`build` makes one in
process (``mask_tool_errors`` as given).

Middleware, outermost first: ``ErrorMapping({PermissionError: -32001, KeyError: a function
answering -32004 with the key in data, ToolError subclass Refusal: -32003})``, then
``ErrorMapping({ValueError: "tool", TimeoutError: "tool"}, mask=True)`` (a tool past its time
limit raised nothing: the second rule must leave it).

Tools: ``guarded()`` raises PermissionError; ``parse(text)`` ValueError with the text;
``lookup(key)`` KeyError; ``broken()`` RuntimeError (no rule); ``chosen()`` a ToolError (no
rule for it); ``refused()`` a Refusal (a ToolError with a
rule); ``stuck()`` runs past its 0.2 s time limit; ``made()`` returns an ``isError`` result
of its own; ``checked(value)`` is ``convert(text)`` (a ValueError) transformed,
``wrapped(text)`` is ``plain(text)`` behind a wrapper that raises PermissionError. Mounted
under ``vault_``: a server whose ``open()`` raises PermissionError.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcpkit import ArgTransform, CallToolResult, Context, McpError, Server, TextContent, ToolError
from mcpkit.middleware import ErrorMapping


class Refusal(ToolError):
    """A ToolError that a rule of its own maps."""


def missing(exc: BaseException) -> McpError:
    key = exc.args[0] if exc.args else None
    return McpError(-32004, f"No record {key}", {"key": key})


def build(*, mask_tool_errors: bool = False) -> Server:
    server = Server("mapped", mask_tool_errors=mask_tool_errors)
    server.use(ErrorMapping({PermissionError: -32001, KeyError: missing, Refusal: -32003}))
    server.use(ErrorMapping({ValueError: "tool", TimeoutError: "tool"}, mask=True))

    @server.tool
    def guarded() -> str:
        raise PermissionError("only the owner may do this")

    @server.tool
    def parse(text: str) -> str:
        raise ValueError(f"cannot parse {text}")

    @server.tool
    async def lookup(key: str) -> str:
        raise KeyError(key)

    @server.tool
    def broken() -> str:
        raise RuntimeError("disk on fire")

    @server.tool
    def chosen() -> str:
        raise ToolError("try a smaller file")

    @server.tool
    def refused() -> str:
        raise Refusal("not today")

    @server.tool(timeout=0.2)
    async def stuck() -> str:
        await asyncio.sleep(30)
        return "never"

    @server.tool
    def made() -> CallToolResult:
        return CallToolResult(content=[TextContent(text="made by the tool")], is_error=True)

    @server.tool
    def convert(text: str) -> str:
        raise ValueError(f"cannot convert {text}")

    @server.tool
    def plain(text: str) -> str:
        return text

    async def owners_only(arguments: dict[str, Any], forward: Any, ctx: Context) -> Any:
        raise PermissionError("the wrapper refuses")

    server.transform_tool("convert", name="checked", args={"text": ArgTransform(name="value")})
    server.transform_tool("plain", name="wrapped", wrap=owners_only)

    vault = Server("vault")

    @vault.tool
    def open() -> str:
        raise PermissionError("the vault is locked")

    server.mount(vault, prefix="vault")
    return server


if __name__ == "__main__":
    build().run()
