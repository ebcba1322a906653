"""Timing through the public API: the hooks get each request's method, name, duration
(on the injected clock) and outcome; OpenTelemetry's histogram, with the SDK's in-memory
reader, when asked for; nothing of OpenTelemetry loaded when not."""

from __future__ import annotations

import subprocess
import sys
from types import ModuleType
from typing import Any

import pytest

from mcpkit import Client, ClientOptions, McpError, Server
from mcpkit.middleware import Outcome, Timing
from support.eras import ERAS, MODERN
from support.transports import HTTP, MEMORY

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("kind", [MEMORY, HTTP])
@pytest.mark.parametrize("era", ERAS)
async def test_every_request_is_timed_with_its_outcome(kind: str, era: str, guarded: ModuleType, connect: Any) -> None:
    app = guarded.build()
    async with connect(kind, era, app.server) as client:
        await client.call_tool("echo", {"text": "x"})
        await client.read_resource("data://greeting")
        with pytest.raises(McpError):
            await client.get_prompt("hello", {"name": "nobody"})
    timed = [(method, name, outcome) for method, name, _, outcome in app.timings if method != "server/discover"]
    assert timed == [
        ("tools/call", "echo", Outcome("ok")),
        ("resources/read", "data://greeting", Outcome("ok")),
        ("prompts/get", "hello", Outcome("error", -32602)),
    ]


async def test_the_duration_is_measured_on_the_clock() -> None:
    now = [0.0]
    seen: list[float] = []
    server = Server("timed")
    server.use(Timing(lambda method, name, seconds, outcome: seen.append(seconds), otel=False, clock=lambda: now[0]))

    @server.tool
    def work(seconds: float) -> str:
        now[0] += seconds  # the work "takes" this long
        return "done"

    async with Client(server, ClientOptions(protocol_version=MODERN)) as client:
        await client.call_tool("work", {"seconds": 2.5})
    assert seen[-1] == 2.5


async def test_a_failing_hook_is_logged_and_the_request_still_answers(caplog: pytest.LogCaptureFixture) -> None:
    def broken(*_: Any) -> None:
        raise RuntimeError("hook broke")

    server = Server("timed")
    server.use(Timing(broken, otel=False))

    @server.tool
    def echo(text: str) -> str:
        return text

    async with Client(server, ClientOptions(protocol_version=MODERN)) as client:
        assert (await client.call_tool("echo", {"text": "fine"})).content[0].text == "fine"
    assert "a Timing hook failed for tools/call" in caplog.text


async def test_opentelemetry_histogram() -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    server = Server("metered")
    server.use(Timing(meter_provider=MeterProvider(metric_readers=[reader])))

    @server.tool
    def echo(text: str) -> str:
        return text

    async with Client(server, ClientOptions(protocol_version=MODERN)) as client:
        await client.call_tool("echo", {"text": "x"})
        await client.call_tool("echo", {"text": "y"})
    data = reader.get_metrics_data()
    assert data is not None
    metrics = [m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics]
    histogram = next(m for m in metrics if m.name == "mcp.server.operation.duration")
    assert histogram.unit == "s"
    points = {tuple(sorted(p.attributes.items())): p.count for p in histogram.data.data_points}
    assert points[(("gen_ai.tool.name", "echo"), ("mcp.method.name", "tools/call"))] == 2


def test_importing_the_middleware_loads_no_opentelemetry() -> None:
    code = "import sys, mcpkit.middleware as m; m.Timing(); print(any(n.startswith('opentelemetry') for n in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
