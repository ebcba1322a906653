"""A server whose tools are transformed (``Server.transform_tool``): its own ``convert``
renamed with an argument renamed and one fixed, the mounted ``weather`` server's
``forecast`` wrapped with code before and after, and ``weather``'s ``alerts`` (which a
test adds and removes through the ``toggle_alerts`` tool) transformed before it exists.

``python tests/support/servers/transformed.py`` serves stdio; ``... --http PORT`` serves
127.0.0.1:PORT/mcp. Both eras. Used by tests/unit/server/test_transform.py.
"""

from __future__ import annotations

import sys
from typing import Any, Literal

from mcpkit import ArgTransform, CallNext, Context, Server, ToolError

weather = Server("weather")
#: What the mounted server's middleware saw, in order (read by the ``seen`` tool).
seen: list[str] = []


@weather.use
async def note(ctx: Context, call_next: CallNext) -> Any:
    seen.append(f"weather middleware: {ctx.params['name']} {sorted((ctx.params.get('arguments') or {}).items())}")
    return await call_next()


@weather.tool(tags=["read"])
def forecast(city: str, units: Literal["metric", "imperial"] = "metric", days: int = 1) -> str:
    """The weather in a city.

    Args:
        city: The city's name.
    """
    if city == "Atlantis":
        raise ValueError("no weather under the sea")
    return f"{city}: sunny for {days} day(s), in {units} units"


server = Server("transformed")


@server.tool
def convert(amount: float, currency: str, rate_table: str) -> str:
    """Convert an amount into euros."""
    return f"{amount} {currency} in euros, by the {rate_table} table"


@server.tool
def seen_so_far() -> list[str]:
    return seen


alerting = [False]


@server.tool
def toggle_alerts() -> str:
    if alerting[0]:
        weather.remove_tool("alerts")
    else:
        weather.tool(name="alerts")(lambda region: f"no alerts in {region}")
    alerting[0] = not alerting[0]
    return "added" if alerting[0] else "removed"


async def audited(arguments: dict[str, Any], forward: Any, ctx: Context) -> Any:
    """Before: refuse a city, log; after: add a line to the source's answer."""
    if arguments["place"] == "Nowhere":
        raise ToolError("Nowhere has no weather")
    await ctx.info(f"forecast asked for {arguments['place']}")
    result = await forward({**arguments, "days": arguments["days"] + 1})
    if not result.is_error:
        result.content[0].text += " (checked by the wrapper)"
    return result


server.mount(weather, prefix="weather")
server.transform_tool(
    "convert",
    name="to_euros",
    description="An amount in euros.",
    args={
        "currency": ArgTransform(name="from_currency", description="ISO 4217 code"),
        "rate_table": ArgTransform(hide=True, default="ECB"),
    },
)
server.transform_tool(
    "weather_forecast",
    name="forecast",
    description="Tomorrow's weather where you are going.",
    args={
        "city": ArgTransform(name="place"),
        "units": ArgTransform(hide=True, default="imperial"),
        "days": ArgTransform(default=2),
    },
    wrap=audited,
    tags=["travel"],
)
server.transform_tool("weather_alerts", name="alerts", args={"region": ArgTransform(default="north")})


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) > 1 and args[0] == "--http":
        server.run("http", port=int(args[1]))
    else:
        server.run()
