"""A small server exercising the server features over stdio (logging, progress,
structured output, resource templates, prompts, completions, pagination).

Run as a stdio server: ``python contract_features.py``; the tests also import :func:`build`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypedDict

from mcpkit import Context, Server


class Weather(TypedDict):
    city: str
    celsius: float


def build(page_size: int = 2) -> Server:
    server = Server("contract-features", "2.0.1", instructions="Ask about the weather.", page_size=page_size)

    @server.tool
    async def chatty(steps: int, ctx: Context) -> str:
        """Log at three levels, then report progress ``steps`` times.

        Args:
            steps: How many progress notifications to send.
        """
        await ctx.debug("debug message")
        await ctx.info({"structured": True})
        await ctx.log("warning", "careful", logger="contract.logger")
        for i in range(1, steps + 1):
            await ctx.report_progress(i, steps, f"step {i}")
        return "done"

    @server.tool
    def weather(city: str) -> Weather:
        """Current weather for a city."""
        return {"city": city, "celsius": 21.5}

    @server.tool
    def who(ctx: Context) -> str:
        """Who is asking, in which era."""
        name = ctx.client_info.name if ctx.client_info is not None else "?"
        return f"{ctx.era} {ctx.protocol_version} {name}"

    def numbered(i: int) -> Callable[[], str]:
        def tool() -> str:
            return str(i)

        return tool

    for i in range(3):
        server.tool(name=f"numbered_{i}", description=f"Tool number {i}.")(numbered(i))

    @server.resource("users://{user_id}/profile")
    def profile(user_id: str) -> str:
        return f"profile of {user_id}"

    @server.resource("files://{+path}")
    def file(path: str) -> str:
        return f"file at {path}"

    @server.resource("data://bytes", mime_type="application/octet-stream")
    def raw_bytes() -> bytes:
        return bytes(range(256))

    @server.prompt
    def review(code: str, language: str = "python") -> str:
        """Review some code.

        Args:
            code: The code to review.
            language: The language it is written in.
        """
        return f"Review this {language} code: {code}"

    @server.completion(prompt="review")
    def complete_language(argument: str, value: str, context: dict[str, str]) -> list[str]:
        return [lang for lang in ("python", "pyret", "rust", "go") if lang.startswith(value)]

    return server


if __name__ == "__main__":
    build(page_size=int(sys.argv[1]) if len(sys.argv) > 1 else 2).run()
