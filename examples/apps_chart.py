"""An MCP Apps server: a chart tool whose results a host shows as an interactive bar chart
(docs/apps.md).

    python examples/apps_chart.py            # over stdio
    python examples/apps_chart.py --http     # Streamable HTTP on http://127.0.0.1:8000/mcp

``chart`` is the model's tool: it returns a text summary (for the model, and for hosts
without MCP Apps) and the bars as structured content, and links to the view
``ui://charts/bar.html``. The view is one self-contained page: it speaks the extension's
JSON-RPC over ``postMessage`` with its host (``ui/initialize``, then the tool's input and
result as notifications), draws the bars as SVG, and its Refresh button calls
``chart_series`` — a tool only views may call (``visibility=["app"]``), which the host
forwards to this server and leaves out of the model's tool list.
"""

from __future__ import annotations

import sys

from mcpkit import CallToolResult, Server, TextContent

#: The series this server knows; a real one would query a database.
SERIES: dict[str, dict[str, float]] = {
    "sales": {"Jan": 12, "Feb": 19, "Mar": 7, "Apr": 15},
    "visits": {"Mon": 40, "Tue": 32, "Wed": 51, "Thu": 28, "Fri": 45, "Sat": 12},
}

#: The bar color (the test of this example looks for it in a screenshot).
BAR_COLOR = "#1f77b4"

VIEW = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Bar chart</title>
<style>
  :root { color-scheme: light; }
  html, body { margin: 0; background: #ffffff; font-family: sans-serif; }
  #refresh { position: absolute; left: 8px; top: 8px; width: 80px; height: 28px; }
  #title { position: absolute; left: 100px; top: 12px; margin: 0; font-size: 16px; }
  #chart { position: absolute; left: 0; top: 44px; }
</style>
</head>
<body>
<button id="refresh" disabled>Refresh</button>
<h1 id="title">Waiting for data</h1>
<svg id="chart" width="600" height="300" xmlns="http://www.w3.org/2000/svg"></svg>
<script>
"use strict";
const BAR = "__BAR_COLOR__";
let nextId = 1, series = null;
const pending = new Map();

function send(message) { window.parent.postMessage(message, "*"); }
function request(method, params) {
  const id = nextId++;
  send({jsonrpc: "2.0", id, method, params});
  return new Promise((resolve, reject) => pending.set(id, {resolve, reject}));
}
function notify(method, params) { send({jsonrpc: "2.0", method, params: params || {}}); }

function draw(data) {
  const svg = document.getElementById("chart");
  const bars = data.bars || [];
  const top = Math.max(1, ...bars.map(b => b.value));
  const width = 600 / Math.max(1, bars.length);
  svg.replaceChildren();
  bars.forEach((bar, i) => {
    const height = Math.round(260 * bar.value / top);
    const rect = document.createElementNS("http://www.w3.org/2000/svg", "rect");
    rect.setAttribute("x", String(i * width + 8));
    rect.setAttribute("y", String(270 - height));
    rect.setAttribute("width", String(width - 16));
    rect.setAttribute("height", String(height));
    rect.setAttribute("fill", BAR);
    svg.appendChild(rect);
    const label = document.createElementNS("http://www.w3.org/2000/svg", "text");
    label.setAttribute("x", String(i * width + width / 2));
    label.setAttribute("y", "290");
    label.setAttribute("text-anchor", "middle");
    label.setAttribute("font-size", "12");
    label.textContent = bar.label;
    svg.appendChild(label);
  });
  document.getElementById("title").textContent = data.title || "";
  series = data.series || series;
  document.getElementById("refresh").disabled = !series;
  // Tell the host the size drawn, then log it (MCP's notifications/message).
  notify("ui/notifications/size-changed", {width: 600, height: 344});
  notify("notifications/message", {level: "info", logger: "chart", data: `drew ${bars.length} bars of ${series}`});
}

window.addEventListener("message", event => {
  const message = event.data;
  if (!message || message.jsonrpc !== "2.0") return;
  if (message.id !== undefined && pending.has(message.id)) {
    const waiter = pending.get(message.id);
    pending.delete(message.id);
    if (message.error) waiter.reject(new Error(message.error.message)); else waiter.resolve(message.result);
  } else if (message.method === "ui/notifications/tool-result") {
    if (message.params && message.params.structuredContent) draw(message.params.structuredContent);
  } else if (message.method === "ui/resource-teardown") {
    send({jsonrpc: "2.0", id: message.id, result: {}});
  }
});

document.getElementById("refresh").addEventListener("click", async () => {
  const result = await request("tools/call", {name: "chart_series", arguments: {series: "visits"}});
  if (result && result.structuredContent) draw(result.structuredContent);
});

request("ui/initialize", {
  appInfo: {name: "bar-chart", version: "1.0.0"},
  appCapabilities: {availableDisplayModes: ["inline"]},
  protocolVersion: "2026-01-26",
}).then(() => notify("ui/notifications/initialized"));
</script>
</body>
</html>
""".replace("__BAR_COLOR__", BAR_COLOR)

server = Server("charts", "1.0.0")

server.add_ui(
    "ui://charts/bar.html",
    VIEW,
    title="Bar chart",
    description="An SVG bar chart of a series",
    prefers_border=True,
)


def _bars(series: str) -> CallToolResult:
    values = SERIES.get(series)
    if values is None:
        return CallToolResult(content=[TextContent(text=f"no series {series!r}; try {', '.join(SERIES)}")], is_error=True)
    summary = ", ".join(f"{label} {value:g}" for label, value in values.items())
    bars = [{"label": label, "value": value} for label, value in values.items()]
    return CallToolResult(
        content=[TextContent(text=f"{series}: {summary}")],
        structured_content={"series": series, "title": f"{series} ({len(bars)} bars)", "bars": bars},
    )


@server.tool(ui="ui://charts/bar.html")
def chart(series: str) -> CallToolResult:
    """Show a series as a bar chart ("sales" or "visits")."""
    return _bars(series)


@server.tool(ui="ui://charts/bar.html", visibility=["app"])
def chart_series(series: str) -> CallToolResult:
    """The bars of a series, for the chart's Refresh button."""
    return _bars(series)


if __name__ == "__main__":
    server.run("http" if "--http" in sys.argv[1:] else "stdio")
