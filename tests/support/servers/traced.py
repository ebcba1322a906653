"""A server that traces with the OpenTelemetry SDK (tests/unit/runtime/test_tracing.py): the global
tracer provider is set, so ``Server()`` traces without being told (``tracing=None``);
each finished span is appended as a JSON line to the file named by ``$TRACE_FILE``.
``python tests/support/servers/traced.py`` serves stdio."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from mcpkit import Server, ToolError


class JsonLines(SpanExporter):
    def __init__(self, path: str) -> None:
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with open(self.path, "a", encoding="utf-8") as f:
            for span in spans:
                parent = span.parent
                f.write(json.dumps({
                    "name": span.name,
                    "kind": span.kind.name,
                    "trace_id": f"{span.context.trace_id:032x}",
                    "span_id": f"{span.context.span_id:016x}",
                    "parent_id": f"{parent.span_id:016x}" if parent is not None else None,
                    "attributes": dict(span.attributes or {}),
                    "status": span.status.status_code.name,
                }) + "\n")  # fmt: skip
        return SpanExportResult.SUCCESS


provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(JsonLines(os.environ["TRACE_FILE"])))
trace.set_tracer_provider(provider)

server = Server("traced")


@server.tool
def echo(text: str) -> str:
    """Return the text, inside a span of its own."""
    with trace.get_tracer("traced-app").start_as_current_span("work"):
        return text


@server.tool
def fail() -> str:
    """Fail (an isError result)."""
    raise ToolError("no")


if __name__ == "__main__":
    server.run()
