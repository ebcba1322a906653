"""A server composed of two others with ``Server.mount``: ``weather`` (prefix ``weather``,
a lifespan, middleware, a tool time limit, every Context feature) and ``notes`` (prefix
``notes``, separator ``"."``, features added and removed while serving).

``python tests/support/servers/composed.py`` serves stdio; ``... --http PORT`` serves
127.0.0.1:PORT/mcp; ``--page-size N`` pages its lists by N. Both eras. Used by
tests/unit/server/test_mount.py, and as the server behind the proxies of
tests/e2e/test_proxy.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from mcpkit import CallNext, Context, Server

#: What the lifespans did, in order (read by the ``events`` tool).
events: list[str] = []


@dataclass
class ParentState:
    name: str


@dataclass
class WeatherState:
    units: str


@contextlib.asynccontextmanager
async def parent_life(server: Server) -> AsyncIterator[ParentState]:
    events.append("composed up")
    yield ParentState("composed")
    events.append("composed down")


@contextlib.asynccontextmanager
async def weather_life(server: Server) -> AsyncIterator[WeatherState]:
    events.append(f"weather up (composed {'up' if 'composed up' in events else 'not up'})")
    yield WeatherState("C")
    events.append("weather down")


parent = Server("composed", "1.0.0", lifespan=parent_life, state_key=b"a key every node shares, 32 b", tool_timeout=30)
weather = Server("weather", lifespan=weather_life, tool_timeout=1.0)
notes = Server("notes", mask_tool_errors=True)
server = parent


@parent.use
async def parent_mw(ctx: Context, call_next: CallNext) -> Any:
    ctx.state.setdefault("order", []).append(f"composed:{ctx.params.get('name')}")
    return await call_next()


@weather.use
async def weather_mw(ctx: Context, call_next: CallNext) -> Any:
    ctx.state.setdefault("order", []).append(f"weather:{ctx.params.get('name')}")
    return await call_next()


@parent.tool
def hello() -> str:
    return "hello from composed"


@parent.tool
def lifespan_events() -> str:
    return "; ".join(events)


# --- weather: every Context feature from a mounted handler ------------------------------------


@weather.tool
async def forecast(city: str, ctx: Context, state: WeatherState) -> str:
    """The forecast for a city."""
    await ctx.info(f"forecasting {city}")
    await ctx.report_progress(1, 2, "half")
    await ctx.report_progress(2, 2, "done")
    return f"{city}: 21 {state.units}"


@weather.tool
async def order(ctx: Context) -> str:
    """The middleware that ran, outermost first, and the lifespan state seen."""
    return ",".join(ctx.state["order"]) + f"|{ctx.params['name']}|{type(ctx.lifespan).__name__}"


@weather.tool
async def ask_city(ctx: Context) -> str:
    answer = await ctx.elicit("Which city?", {"type": "object", "properties": {"city": {"type": "string"}}})
    return f"city {answer.content['city']}" if answer.action == "accept" and answer.content else f"no city ({answer.action})"


@weather.tool
async def summarize(text: str, ctx: Context) -> str:
    reply = await ctx.sample(text, max_tokens=50)
    return f"{reply.model}: {reply.content['text']}"


@weather.tool
async def roots(ctx: Context) -> str:
    return ",".join(root.uri for root in await ctx.list_roots())


#: The ``seconds`` of each ``slow`` call that was cancelled.
cancelled: list[float] = []


@weather.tool
async def slow(seconds: float) -> str:
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        cancelled.append(seconds)
        raise
    return "slept"


@weather.tool
def cancellations() -> str:
    return ",".join(f"{s:g}" for s in cancelled)


#: A counter of this process (per upstream session, behind a proxy of a command).
calls = [0]


@weather.tool
def count() -> int:
    calls[0] += 1
    return calls[0]


@weather.tool(task=True)
async def report(city: str, ctx: Context) -> str:
    await ctx.report_progress(1, 1)
    return f"report for {city}"


@weather.resource("weather://stations", mime_type="text/plain")
def stations() -> str:
    return "north,south"


@weather.resource("weather://cities/{city}")
def city(city: str) -> str:
    return f"{city} is sunny"


@weather.prompt
def brief(city: str) -> str:
    """A briefing."""
    return f"Brief me on {city}."


@weather.completion(prompt="brief")
def complete_city(argument: str, value: str, context: dict[str, str]) -> list[str]:
    return [c for c in ("Paris", "Prague", "Oslo") if c.startswith(value)]


# --- notes: what is offered changes while serving ----------------------------------------------


@notes.tool
def add_note(title: str, body: str) -> str:
    notes.resource(f"note://{title}")(lambda: body)
    notes.add_tool(f"read_{title}", None, {"type": "object"}, lambda arguments: body)
    return "added"


@notes.tool
def remove_note(title: str) -> str:
    notes.remove_resource(f"note://{title}")
    notes.remove_tool(f"read_{title}")
    return "removed"


@notes.tool
async def touch(title: str) -> str:
    await notes.notify_resource_updated(f"note://{title}")
    return "touched"


@notes.tool
async def wait(seconds: float) -> str:
    """Waits (no time limit of its own: the parent's 30 s apply); a cancellation is recorded."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        cancelled.append(seconds)
        raise
    return "waited"


@notes.tool
def broken() -> str:
    raise RuntimeError("a secret")


@notes.prompt
def failing() -> str:
    raise RuntimeError("a secret of the prompt")


parent.mount(weather, prefix="weather")
parent.mount(notes, prefix="notes", separator=".")


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--page-size" in args:
        at = args.index("--page-size")
        server.page_size = int(args[at + 1])
        del args[at : at + 2]
    if len(args) > 1 and args[0] == "--http":
        server.run("http", port=int(args[1]))
    else:
        server.run()
