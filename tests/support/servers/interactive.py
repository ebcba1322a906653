"""A server whose handlers ask the client: elicitation (form and URL), sampling, roots.

``python tests/support/servers/interactive.py`` serves stdio; ``... --http PORT`` serves
127.0.0.1:PORT/mcp. Both eras; the same handlers. Used by tests/unit/server/test_interactive.py.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Literal

import msgspec

from mcpkit import Context, McpError, Server, ToolError

server = Server("interactive", "1.0.0", state_key=b"a key every node shares, 32 b", ask_timeout=30)


class Contact(msgspec.Struct):
    name: str
    age: int = 0
    colour: Literal["red", "green"] = "red"


@server.tool
async def ask_name(ctx: Context) -> str:
    """Ask the user's name with a schema dict."""
    answer = await ctx.elicit(
        "What is your name?",
        {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        key="user_name",
    )
    if answer.action != "accept":
        return f"no name ({answer.action})"
    return f"Hello, {answer.content['name'] if answer.content else '?'}!"


@server.tool
async def ask_contact(ctx: Context) -> str:
    """Ask with a class: the handler gets a Contact."""
    answer = await ctx.elicit("Who are you?", Contact)
    if not answer.accepted:
        return answer.action
    contact = answer.value
    assert isinstance(contact, Contact)
    return f"{contact.name} {contact.age} {contact.colour}"


@server.tool
async def two_steps(ctx: Context) -> str:
    """Two questions, one after the other (two input rounds in the modern era)."""
    first = await ctx.elicit("Step 1", {"type": "object", "properties": {"name": {"type": "string"}}}, key="step1")
    second = await ctx.elicit("Step 2", {"type": "object", "properties": {"colour": {"type": "string"}}}, key="step2")
    return f"{(first.content or {}).get('name')} likes {(second.content or {}).get('colour')}"


@server.tool
async def all_at_once(ctx: Context) -> str:
    """Three questions asked together (one input round in the modern era)."""
    name, greeting, roots = await asyncio.gather(
        ctx.elicit("Name?", {"type": "object", "properties": {"name": {"type": "string"}}}, key="user_name"),
        ctx.sample("Generate a greeting", 50, key="greeting"),
        ctx.list_roots(key="client_roots"),
    )
    return f"{(name.content or {}).get('name')}|{greeting.text}|{','.join(r.uri for r in roots)}"


@server.tool
async def ask_model(ctx: Context, question: str) -> str:
    """Sampling: what the client's model says."""
    result = await ctx.sample(question, 100, system_prompt="Be brief.")
    return f"{result.model}: {result.text}"


@server.tool
async def roots(ctx: Context) -> str:
    """The client's roots."""
    return ",".join(r.uri for r in await ctx.list_roots())


@server.tool
async def open_url(ctx: Context) -> str:
    """URL-mode elicitation, then the completion notice."""
    answer = await ctx.elicit_url("Set your API key", "https://example.com/key", "el-1")
    if answer.accepted:
        await ctx.complete_elicitation("el-1")
    return answer.action


@server.tool
async def impatient(ctx: Context) -> str:
    """A question with a short deadline (legacy era): the timeout becomes a tool error."""
    try:
        await ctx.elicit("Quick!", {"type": "object", "properties": {"x": {"type": "string"}}}, timeout=0.5)
    except McpError as exc:
        raise ToolError(f"no answer: {exc.message}") from None
    return "answered"


@server.tool
async def careful(ctx: Context) -> str:
    """Catches every Exception around a question: the modern input round still works."""
    try:
        answer = await ctx.elicit("Sure?", {"type": "object", "properties": {"ok": {"type": "boolean"}}}, key="confirm")
    except Exception as exc:  # the point of the test
        return f"caught {type(exc).__name__}"
    return f"state-ok {answer.action}"


@server.prompt
async def with_context(ctx: Context) -> str:
    """A prompt that asks for input first."""
    answer = await ctx.elicit(
        "What context should the prompt use?",
        {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]},
        key="user_context",
    )
    return f"Use this context: {(answer.content or {}).get('context')}"


@server.resource("note://asked")
async def asked_note(ctx: Context) -> str:
    """A resource whose text comes from the user."""
    answer = await ctx.elicit("Note text?", {"type": "object", "properties": {"text": {"type": "string"}}}, key="text")
    return str((answer.content or {}).get("text"))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        server.run("http", host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    else:
        server.run()
