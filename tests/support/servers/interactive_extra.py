"""An mcpkit server with the questions tests/support/servers/interactive.py does not ask, for
the interop tests with foreign clients (tests/interop/test_interactive.py).

``python tests/support/servers/interactive_extra.py`` serves stdio, both eras. Tools:

- ``weather_agent(city)``: sampling with tools (2025-11-25 tool use). Asks the client's
  model with a ``get_weather`` tool, expects a ``tool_use`` block back, sends the tool's
  result in a second sampling request (a conversation whose messages hold lists of
  ``tool_use`` / ``tool_result`` blocks) and returns
  ``"<stopReason>:<tool>(<city>) -> <stopReason>: <text>"``.
- ``pick_instruments``: a form asked with a class whose field is a multi-select enum
  (``list[Literal[...]]``); returns the picks joined with ``+``, or the action.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from mcpkit import Context, Server

server = Server("interactive-extra", "1.0.0", state_key=b"interactive extra test key, 32 b", ask_timeout=30)

WEATHER = {
    "name": "get_weather",
    "description": "The weather of a city",
    "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


@server.tool
async def weather_agent(ctx: Context, city: str) -> str:
    """Two sampling requests with a tool: the call, then its result."""
    question: dict[str, Any] = {"role": "user", "content": {"type": "text", "text": f"Weather in {city}?"}}
    first = await ctx.sample([question], 100, tools=[WEATHER], tool_choice={"mode": "auto"}, key="first")
    blocks: list[dict[str, Any]] = first.content if isinstance(first.content, list) else [first.content]
    use = next(block for block in blocks if block.get("type") == "tool_use")
    result = {"type": "tool_result", "toolUseId": use["id"], "content": [{"type": "text", "text": "sunny"}]}
    conversation: list[dict[str, Any]] = [
        question,
        {"role": "assistant", "content": blocks},
        {"role": "user", "content": [result]},
    ]
    final = await ctx.sample(conversation, 100, tools=[WEATHER], key="second")
    return f"{first.stop_reason}:{use['name']}({use['input']['city']}) -> {final.stop_reason}: {final.text}"


class Instruments(msgspec.Struct):
    instruments: list[Literal["guitar", "piano", "drums"]]


@server.tool
async def pick_instruments(ctx: Context) -> str:
    """A multi-select enum asked with a class."""
    answer = await ctx.elicit("Which instruments do you play?", Instruments)
    if not answer.accepted:
        return answer.action
    return "+".join(answer.value.instruments)


if __name__ == "__main__":
    server.run()
