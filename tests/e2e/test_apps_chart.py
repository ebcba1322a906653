"""examples/apps_chart.py end to end, as a host runs it (docs/apps.md): the server over
HTTP (uvicorn on 127.0.0.1), mcpkit's client reading the chart tool's view and calling
the tool, and the view itself in headless Chromium (Debian's ``chromium``, over the
DevTools Protocol) inside a sandboxed iframe of a small host page. The page passes the
view's ``postMessage`` traffic to this test (a DevTools binding) and back; the test's
:class:`AppBridge` answers it — ``ui/initialize``, then the tool's input and result, and
the view's own ``tools/call`` when its Refresh button is clicked, forwarded to the server
over HTTP. Every step waits for the message that says it happened; the screenshots are
decoded and their bars counted by color."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import runpy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpkit import AppBridge, Client, ClientOptions, HttpTransport, LlmTools
from support.browser import Browser
from support.paths import ROOT
from support.png import decode_png
from support.serving import serve_in_thread
from support.system import require

EXAMPLE = ROOT / "examples" / "apps_chart.py"
WIDTH, HEIGHT = 640, 400
#: The host page: the view in a sandboxed iframe (scripts only: an opaque origin), its
#: messages handed to the test's binding, the test's delivered to it.
HOST_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>host</title></head>
<body style="margin:0;background:#fff">
<iframe id="view" sandbox="allow-scripts" style="display:block;border:0;width:%(width)dpx;height:%(height)dpx"></iframe>
<script>
const frame = document.getElementById("view");
window.addEventListener("message", event => {
  if (event.source === frame.contentWindow) mcpHost(JSON.stringify(event.data));
});
window.deliver = message => frame.contentWindow.postMessage(message, "*");
frame.srcdoc = %(html)s;
</script>
</body></html>
"""


def _hex(color: str) -> tuple[int, int, int]:
    return int(color[1:3], 16), int(color[3:5], 16), int(color[5:7], 16)


@pytest.fixture
def tab() -> Iterator[tuple[Browser, str]]:
    browser = Browser(require("chromium"))
    try:
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime"):
            browser.send(f"{domain}.enable", session=session)
        browser.send("Runtime.addBinding", {"name": "mcpHost"}, session=session)
        metrics = {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False}
        browser.send("Emulation.setDeviceMetricsOverride", metrics, session=session)
        yield browser, session
    finally:
        browser.close()


class Host:
    """The host's loop: each message the view sends, answered by the bridge, until the
    view logs ``until``."""

    def __init__(self, browser: Browser, session: str, bridge: AppBridge, logs: list[str]) -> None:
        self.browser, self.session, self.bridge, self.logs = browser, session, bridge, logs
        self.received: list[dict[str, Any]] = []

    async def deliver(self, message: dict[str, Any]) -> None:
        expression = {"expression": f"deliver({json.dumps(message)})", "returnByValue": True}
        await asyncio.to_thread(self.browser.send, "Runtime.evaluate", expression, self.session)

    async def serve_until(self, until: str, on_initialized: Callable[[], list[dict[str, Any]]] | None = None) -> None:
        while until not in self.logs:
            event = await asyncio.to_thread(self.browser.wait_for, "Runtime.bindingCalled")
            message = json.loads(event["params"]["payload"])
            self.received.append(message)
            answer = await self.bridge.handle(message)
            if answer is not None:
                await self.deliver(answer)
            if message.get("method") == "ui/notifications/initialized" and on_initialized:
                for outgoing in on_initialized():  # only now: the host must wait for it
                    await self.deliver(outgoing)

    async def screenshot(self) -> Any:
        shot = await asyncio.to_thread(self.browser.send, "Page.captureScreenshot", {"format": "png"}, self.session)
        return decode_png(base64.b64decode(shot["data"]))


def _bars_on_row(row: list[tuple[int, int, int]], color: tuple[int, int, int]) -> int:
    """How many separate runs of ``color`` the row crosses."""
    runs, inside = 0, False
    for pixel in row:
        hit = pixel == color
        runs += hit and not inside
        inside = hit
    return runs


@pytest.mark.timeout(120)
async def test_the_chart_view_renders_in_a_browser(tab: tuple[Browser, str], tmp_path: Path) -> None:
    example = runpy.run_path(str(EXAMPLE))
    server, color = example["server"], _hex(example["BAR_COLOR"])
    browser, session = tab
    with serve_in_thread(server.asgi_app()) as port:
        async with Client(HttpTransport(f"http://127.0.0.1:{port}/mcp"), ClientOptions(apps=True)) as client:
            ui = await client.tool_ui("chart")
            assert ui is not None
            assert ui.uri == "ui://charts/bar.html"
            assert ui.meta.prefers_border is True
            arguments = {"series": "sales"}
            result = await client.call_tool("chart", arguments)
            assert result.content[0].text == "sales: Jan 12, Feb 19, Mar 7, Apr 15"  # type: ignore[union-attr]

            logs: list[str] = []
            bridge = AppBridge(client, ui, on_log=lambda level, data, logger: logs.append(data))
            host = Host(browser, session, bridge, logs)
            page = tmp_path / "host.html"
            view = json.dumps(ui.html).replace("</", "<\\/")  # inside <script>
            page.write_text(HOST_PAGE % {"width": WIDTH, "height": HEIGHT, "html": view}, encoding="utf-8")
            await asyncio.to_thread(browser.send, "Page.navigate", {"url": page.as_uri()}, session)

            # The handshake, then the call's input and result: the view draws and says so.
            await host.serve_until("drew 4 bars of sales", lambda: [bridge.tool_input(arguments), bridge.tool_result(result)])
            methods = [m.get("method") for m in host.received]
            assert methods[:2] == ["ui/initialize", "ui/notifications/initialized"]
            assert bridge.app_info is not None
            assert bridge.app_info.name == "bar-chart"
            assert bridge.size == (600, 344)
            shot = await host.screenshot()
            assert (shot.width, shot.height) == (WIDTH, HEIGHT)
            bar_pixels = sum(row.count(color) for row in shot.rows)
            assert bar_pixels > 4 * 50 * 80, bar_pixels  # four bars, each wide and tall
            baseline = 44 + 265  # the chart's top, and just above its bars' common foot
            assert _bars_on_row(shot.rows[baseline], color) == 4

            # Refresh: the view calls the app-only tool; the host forwards it over HTTP.
            for kind in ("mousePressed", "mouseReleased"):
                click = {"type": kind, "x": 48, "y": 22, "button": "left", "clickCount": 1}
                await asyncio.to_thread(browser.send, "Input.dispatchMouseEvent", click, session)
            await host.serve_until("drew 6 bars of visits")
            calls = [m for m in host.received if m.get("method") == "tools/call"]
            assert [c["params"] for c in calls] == [{"name": "chart_series", "arguments": {"series": "visits"}}]
            shot = await host.screenshot()
            assert _bars_on_row(shot.rows[baseline], color) == 6

            # The server lists both tools; a model is offered only its own.
            listed = await client.list_all_tools()
            assert {t.name for t in listed} == {"chart", "chart_series"}
            assert LlmTools(listed).hidden == ["chart_series"]
            assert [d["function"]["name"] for d in LlmTools(listed).definitions] == ["chart"]


def test_the_page_quotes_the_example_verbatim() -> None:
    """docs/apps.md quotes examples/apps_chart.py: each quoted block is in the file as is."""
    page = (ROOT / "docs" / "apps.md").read_text(encoding="utf-8")
    source = EXAMPLE.read_text(encoding="utf-8")
    quoted = re.findall(r"<!-- not-run: [^>]*quoted from[^>]*examples/apps_chart\.py[^>]*-->\n```\w+\n(.*?)```", page, re.DOTALL)
    assert len(quoted) == 3, quoted
    for block in quoted:
        assert block in source, block
