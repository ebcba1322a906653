"""Tracing with OpenTelemetry: a span per request on both sides, the client's trace
continued by the server through ``traceparent`` in ``_meta`` — in memory, over HTTP
and across processes over stdio — exported by the SDK's in-memory exporter; nothing of
OpenTelemetry imported when tracing is not asked for.

The tests give the client and the server a ``TracerProvider`` of their own
(``tracing=provider``) rather than setting the global one, which would make every later
test of this process trace."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from mcpkit import Client, ClientOptions, Context, HttpTransport, McpError, RequestTimeout, Server, StdioTransport, ToolError
from support.eras import ERAS
from support.paths import SERVERS
from support.serving import serve_in_thread
from support.waiting import until

pytestmark = pytest.mark.timeout(30)


Exported = tuple[TracerProvider, InMemorySpanExporter]


@pytest.fixture
def exported() -> Iterator[Exported]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def traced_server(provider: TracerProvider) -> Server:
    server = Server("traced", tracing=provider)

    @server.tool
    def echo(text: str) -> str:
        return text

    @server.tool
    def fail() -> str:
        raise ToolError("no")

    @server.tool
    async def slow(ctx: Context) -> str:
        await asyncio.sleep(5)
        return "late"

    @server.resource("doc://one")
    def one() -> str:
        return "one"

    return server


def by_kind(spans: tuple[ReadableSpan, ...] | list[ReadableSpan], name: str) -> tuple[ReadableSpan, ReadableSpan]:
    """The client and the server span named ``name`` (exactly one of each)."""
    client = [s for s in spans if s.name == name and s.kind is SpanKind.CLIENT]
    server = [s for s in spans if s.name == name and s.kind is SpanKind.SERVER]
    assert (len(client), len(server)) == (1, 1), [(s.name, s.kind) for s in spans]
    return client[0], server[0]


def assert_joined(client: ReadableSpan, server: ReadableSpan) -> None:
    """The server's span continues the client's: same trace, the client span its parent."""
    assert server.parent is not None
    assert server.context.trace_id == client.context.trace_id
    assert server.parent.span_id == client.context.span_id
    assert server.parent.is_remote


@pytest.mark.parametrize("version", ERAS)
async def test_client_and_server_spans_join_in_memory(exported: Exported, version: str) -> None:
    provider, exporter = exported
    era = "modern" if version.startswith("2026") else "legacy"
    tracer = provider.get_tracer("app")
    async with Client(traced_server(provider), ClientOptions(protocol_version=version, tracing=provider)) as client:
        with tracer.start_as_current_span("the app's work") as root:
            assert (await client.call_tool("echo", {"text": "hi"})).content[0].text == "hi"  # type: ignore[union-attr]
            assert (await client.call_tool("fail")).is_error
            with pytest.raises(McpError):
                await client.read_resource("doc://missing")
            with pytest.raises(McpError):
                await client.call_tool("nope")
    spans = exporter.get_finished_spans()

    client_span, server_span = by_kind(spans, "tools/call echo")
    assert_joined(client_span, server_span)
    assert client_span.parent is not None
    assert client_span.parent.span_id == root.get_span_context().span_id  # inside the app's own trace
    for span in (client_span, server_span):
        attrs = span.attributes or {}
        assert attrs["mcp.method.name"] == "tools/call"
        assert attrs["gen_ai.tool.name"] == "echo"
        assert attrs["gen_ai.operation.name"] == "execute_tool"
        assert attrs["mcpkit.era"] == era
        assert attrs["mcp.protocol.version"] == version
        assert attrs["mcpkit.outcome"] == "ok"
        assert "error.type" not in attrs
        assert span.status.status_code is StatusCode.UNSET
    assert client_span.attributes["jsonrpc.request.id"] == server_span.attributes["jsonrpc.request.id"]  # type: ignore[index]

    failed = by_kind(spans, "tools/call fail")
    assert_joined(*failed)
    for span in failed:
        assert span.attributes["mcpkit.outcome"] == "tool_error"  # type: ignore[index]
        assert span.attributes["error.type"] == "tool_error"  # type: ignore[index]
        assert span.status.status_code is StatusCode.ERROR

    for name in ("resources/read", "tools/call nope"):
        pair = by_kind(spans, name)
        assert_joined(*pair)
        for span in pair:
            assert span.attributes["mcpkit.outcome"] == "error"  # type: ignore[index]
            assert span.attributes["error.type"] == "-32602"  # type: ignore[index]
            assert span.attributes["rpc.response.status_code"] == "-32602"  # type: ignore[index]
            assert span.status.status_code is StatusCode.ERROR
    assert by_kind(spans, "resources/read")[1].attributes["mcp.resource.uri"] == "doc://missing"  # type: ignore[index]


async def test_a_timeout_and_a_cancellation(exported: Exported) -> None:
    provider, exporter = exported
    async with Client(traced_server(provider), ClientOptions(tracing=provider)) as client:
        with pytest.raises(RequestTimeout):
            await client.call_tool("slow", timeout=0.2)
        ended = exporter.get_finished_spans
        await until(lambda: sum(s.name == "tools/call slow" for s in ended()) == 2, what="the server span ended")
    client_span, server_span = by_kind(exporter.get_finished_spans(), "tools/call slow")
    assert_joined(client_span, server_span)
    assert client_span.attributes["mcpkit.outcome"] == "timeout"  # type: ignore[index]
    assert client_span.attributes["error.type"] == "-32001"  # type: ignore[index]
    assert "rpc.response.status_code" not in (client_span.attributes or {})  # local: the server never said so
    assert server_span.attributes["mcpkit.outcome"] == "cancelled"  # type: ignore[index]


@pytest.mark.e2e
@pytest.mark.parametrize("version", ERAS)
async def test_spans_join_over_http(exported: Exported, version: str) -> None:
    provider, exporter = exported
    with serve_in_thread(traced_server(provider).asgi_app()) as port:
        transport = HttpTransport(f"http://127.0.0.1:{port}/mcp")
        async with Client(transport, ClientOptions(protocol_version=version, tracing=provider)) as client:
            await client.call_tool("echo", {"text": "over http"})
    assert_joined(*by_kind(exporter.get_finished_spans(), "tools/call echo"))


def read_spans(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.e2e
async def test_the_trace_continues_in_a_server_process(exported: Exported, tmp_path: Path) -> None:
    """Over stdio, the server in its own process with the SDK set globally (so it traces
    by default) writes its spans to a file; they continue the client's trace."""
    provider, exporter = exported
    trace_file = tmp_path / "server-spans.jsonl"
    command = [sys.executable, str(SERVERS / "traced.py")]
    transport = StdioTransport(command, env={**os.environ, "TRACE_FILE": str(trace_file)}, stderr="capture")
    async with Client(transport, ClientOptions(tracing=provider)) as client:
        await client.call_tool("echo", {"text": "across processes"})
        await client.call_tool("fail")
    client_echo = next(s for s in exporter.get_finished_spans() if s.name == "tools/call echo")
    server_spans = read_spans(trace_file)
    echo = next(s for s in server_spans if s["name"] == "tools/call echo")
    assert echo["kind"] == "SERVER"
    assert echo["trace_id"] == f"{client_echo.context.trace_id:032x}"
    assert echo["parent_id"] == f"{client_echo.context.span_id:016x}"
    assert echo["attributes"]["mcpkit.era"] == "modern"
    work = next(s for s in server_spans if s["name"] == "work")  # the handler's own span is a child
    assert (work["trace_id"], work["parent_id"]) == (echo["trace_id"], echo["span_id"])
    fail = next(s for s in server_spans if s["name"] == "tools/call fail")
    assert (fail["attributes"]["mcpkit.outcome"], fail["status"]) == ("tool_error", "ERROR")


def test_tracing_off_sends_no_trace_context(exported: Exported) -> None:
    provider, exporter = exported
    seen: list[dict[str, Any]] = []
    server = Server("plain", tracing=False)

    @server.tool
    def meta(ctx: Context) -> str:
        seen.append(dict(ctx.meta))
        return "ok"

    async def main() -> None:
        tracer = provider.get_tracer("app")
        async with Client(server, ClientOptions(tracing=False)) as client:
            with tracer.start_as_current_span("root"):
                await client.call_tool("meta")

    asyncio.run(main())
    assert "traceparent" not in seen[0]
    assert [s.name for s in exporter.get_finished_spans()] == ["root"]


def _run(code: str) -> str:
    proc = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


_PROGRAM = """
import asyncio, sys
from mcpkit import Client, ClientOptions, Server
server = Server("s")
@server.tool
def echo(text: str) -> str:
    return text
async def main():
    async with Client(server) as client:
        await client.call_tool("echo", {"text": "x"})
"""


def test_nothing_of_opentelemetry_is_imported_unless_asked_for() -> None:
    assert _run(_PROGRAM + "asyncio.run(main())\nprint([m for m in sys.modules if m.startswith('opentelemetry')])") == "[]"


def test_auto_traces_once_the_application_sets_a_provider() -> None:
    code = (
        "from opentelemetry import trace\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n"
        "from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter\n"
        + _PROGRAM
        + "asyncio.run(main())\n"  # no provider yet: nothing traced
        "exporter = InMemorySpanExporter()\n"
        "provider = TracerProvider()\n"
        "provider.add_span_processor(SimpleSpanProcessor(exporter))\n"
        "trace.set_tracer_provider(provider)\n"
        "asyncio.run(main())\n"
        "print(sorted(f'{s.kind.name} {s.name}' for s in exporter.get_finished_spans()))\n"
    )
    spans = _run(code)
    # the second run only (the first had no provider), the probe included
    assert spans == "['CLIENT server/discover', 'CLIENT tools/call echo', 'SERVER server/discover', 'SERVER tools/call echo']"


def test_tracing_true_without_opentelemetry_says_what_to_install() -> None:
    code = (
        "import sys\n"
        "sys.modules['opentelemetry'] = None\n"
        "from mcpkit import ClientOptions, Server\n"
        "for make in (lambda: Server('s', tracing=True), lambda: ClientOptions(tracing=True)):\n"
        "    try:\n"
        "        make()\n"
        "    except ImportError as exc:\n"
        "        print(exc)\n"
        "Server('s'); ClientOptions()\n"  # the default needs nothing
    )
    assert _run(code).splitlines() == ["tracing needs the OpenTelemetry API: pip install 'mcpkit[otel]'"] * 2


def test_a_bad_tracing_option_is_refused() -> None:
    with pytest.raises(TypeError):
        Server("s", tracing="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ClientOptions(tracing=1)  # type: ignore[arg-type]
