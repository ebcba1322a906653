"""A server built with the official SDK (PyPI ``mcp``) whose tools ask the client.

``python tests/support/servers/official_interactive.py`` serves stdio; ``... --http PORT`` serves
Streamable HTTP (stateful, SSE responses) on 127.0.0.1:PORT/mcp. Used by
tests/interop/test_interactive.py.

The tools that ask through resolvers (a ``Resolve(...)`` parameter whose function
returns ``Elicit`` / ``Sample`` / ``ListRoots``) work in both eras: a server→client
request mid-call up to 2025-11-25, an ``InputRequiredResult`` round in 2026-07-28.
``direct_name`` and ``direct_model`` call ``ctx.elicit`` and
``ctx.session.create_message`` themselves, which only the legacy era allows.

Tools: ``ask_name`` ("Hello, <name>!" / "no name (<action>)"); ``book(hotel)`` (a form
with an integer default); ``ask_model(question)`` ("<model>: <text>"); ``weather(city)``
(sampling with tools: "<stopReason>: <tool>(<input>)"); ``greet`` (asks a name, then
samples with it: two input rounds in the modern era); ``roots`` (the root URIs, comma
separated); ``direct_name``; ``direct_model(question)``; ``ask_name_late_withdrawal``
(``direct_name`` with a slow withdrawal: when the call is cancelled, the question is
cancelled on the wire — ``notifications/cancelled`` on the call's SSE stream — only
0.3 s later, as a busy server would).
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import AsyncIterator
from typing import Annotated, Any, cast

import anyio
import anyio.abc
from mcp.server.mcpserver import Context, Elicit, ElicitationResult, ListRoots, MCPServer, Resolve, Sample
from mcp_types import (
    CreateMessageResult,
    CreateMessageResultWithTools,
    ListRootsResult,
    SamplingMessage,
    TextContent,
    Tool,
    ToolChoice,
    ToolUseContent,
)
from pydantic import BaseModel


@contextlib.asynccontextmanager
async def background(server: MCPServer[Any]) -> AsyncIterator[anyio.abc.TaskGroup]:
    """A task group that outlives requests (for ``ask_name_late_withdrawal``)."""
    async with anyio.create_task_group() as tasks:
        yield tasks
        tasks.cancel_scope.cancel()


mcp = MCPServer("official-interactive", log_level="WARNING", lifespan=background)

WEATHER = Tool(
    name="get_weather",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


class Name(BaseModel):
    name: str


class Booking(BaseModel):
    guest: str
    nights: int = 1


def _user(text: str) -> SamplingMessage:
    return SamplingMessage(role="user", content=TextContent(type="text", text=text))


def _said(result: CreateMessageResult) -> str:
    content = result.content
    return f"{result.model}: {content.text if isinstance(content, TextContent) else '?'}"


def name_question() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


def booking_question(hotel: str) -> Elicit[Booking]:
    return Elicit(f"Who is staying at {hotel}?", Booking)


def model_question(question: str) -> Sample:
    return Sample([_user(question)], max_tokens=64, system_prompt="Be brief.")


def weather_question(city: str) -> Sample:
    return Sample([_user(f"Weather in {city}?")], max_tokens=64, tools=[WEATHER], tool_choice=ToolChoice(mode="required"))


def greeting_question(name: Annotated[Name, Resolve(name_question)]) -> Sample:
    return Sample([_user(f"Greet {name.name}")], max_tokens=32)


def roots_question() -> ListRoots:
    return ListRoots()


@mcp.tool()
async def ask_name(answer: Annotated[ElicitationResult[Name], Resolve(name_question)]) -> str:
    """Ask the user's name (form elicitation)."""
    if answer.action != "accept":
        return f"no name ({answer.action})"
    return f"Hello, {answer.data.name}!"


@mcp.tool()
async def book(hotel: str, booking: Annotated[ElicitationResult[Booking], Resolve(booking_question)]) -> str:
    """Ask who stays, and for how many nights (default 1)."""
    if booking.action != "accept":
        return f"no booking ({booking.action})"
    return f"{booking.data.nights} night(s) at {hotel} for {booking.data.guest}"


@mcp.tool()
async def ask_model(question: str, reply: Annotated[CreateMessageResult, Resolve(model_question)]) -> str:
    """Sampling: what the client's model says."""
    return _said(reply)


@mcp.tool()
async def weather(city: str, reply: Annotated[CreateMessageResultWithTools, Resolve(weather_question)]) -> str:
    """Sampling with tools (2025-11-25): the model answers with a tool call."""
    blocks = reply.content if isinstance(reply.content, list) else [reply.content]
    calls = [f"{block.name}({block.input})" for block in blocks if isinstance(block, ToolUseContent)]
    return f"{reply.stop_reason}: {', '.join(calls)}"


@mcp.tool()
async def greet(reply: Annotated[CreateMessageResult, Resolve(greeting_question)]) -> str:
    """A question that depends on the answer to another one."""
    return _said(reply)


@mcp.tool()
async def roots(listed: Annotated[ListRootsResult, Resolve(roots_question)]) -> str:
    """The client's roots."""
    return ",".join(str(root.uri) for root in listed.roots)


@mcp.tool()
async def direct_name(ctx: Context) -> str:
    """Legacy era only: ``ctx.elicit`` sends ``elicitation/create`` mid-call."""
    answer = await ctx.elicit("What is your name?", Name)
    if answer.action != "accept":
        return f"no name ({answer.action})"
    return f"Hello, {answer.data.name}!"


@mcp.tool()
async def direct_model(question: str, ctx: Context) -> str:
    """Legacy era only: ``create_message`` sends ``sampling/createMessage`` mid-call."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sampling is deprecated as of 2026-07-28
        reply = await ctx.session.create_message([_user(question)], max_tokens=64)
    return _said(reply)


@mcp.tool()
async def ask_name_late_withdrawal(ctx: Context) -> str:
    """Legacy era: ``direct_name``, asked from a background task so that cancelling the
    call withdraws the question 0.3 s later rather than at once."""
    tasks = cast(anyio.abc.TaskGroup, ctx.request_context.lifespan_context)
    scope = anyio.CancelScope()
    finished = anyio.Event()
    outcome: list[ElicitationResult[Name] | Exception] = []

    async def ask() -> None:
        try:
            with scope:
                outcome.append(await ctx.elicit("What is your name?", Name))
        except Exception as exc:  # reported by the tool, never left to end the task group
            outcome.append(exc)
        finally:
            finished.set()

    tasks.start_soon(ask)
    try:
        await finished.wait()
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            await anyio.sleep(0.3)
            scope.cancel()  # the SDK now sends notifications/cancelled for its elicitation
            await finished.wait()
        raise
    if not outcome:
        return "no name (withdrawn)"
    answer = outcome[0]
    if isinstance(answer, Exception):
        raise answer
    return f"Hello, {answer.data.name}!" if answer.action == "accept" else f"no name ({answer.action})"


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        mcp.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]), streamable_http_path="/mcp")
    else:
        mcp.run()
