"""OpenTelemetry metrics of the requests a server serves: :class:`OtelHistogram`, the
``mcp.server.operation.duration`` histogram (the OpenTelemetry semantic conventions for
MCP), fed by :class:`~mcpkit.middleware.Timing`. The only module of the middleware that
imports OpenTelemetry (the ``otel`` extra), and only when one is made (docs/tracing.md)."""

from __future__ import annotations

import sys
from typing import Any, Final

from .outcome import Outcome

__all__ = ["OtelHistogram", "otel_loaded"]

#: The histogram's name and unit, as the semantic conventions for MCP name them.
HISTOGRAM: Final = "mcp.server.operation.duration"
#: The attribute that names what a request targets, by method (bounded sets: what is
#: registered; resource URIs are left out, they are not).
_NAME_ATTRIBUTE: Final = {"tools/call": "gen_ai.tool.name", "prompts/get": "gen_ai.prompt.name"}


def otel_loaded() -> bool:
    """Whether the program has already imported OpenTelemetry's metrics API."""
    return "opentelemetry.metrics" in sys.modules


class OtelHistogram:
    """Records each request's duration (seconds) on the ``mcp.server.operation.duration``
    histogram of ``meter_provider`` (default: the global one), with the attributes
    ``mcp.method.name``, ``gen_ai.tool.name`` or ``gen_ai.prompt.name``, and
    ``error.type`` (``tool_error``, ``cancelled``, or an error's JSON-RPC code).

    Raises ``RuntimeError`` when ``opentelemetry-api`` is not installed."""

    def __init__(self, meter_provider: Any = None) -> None:
        try:
            from opentelemetry import metrics
        except ImportError:
            raise RuntimeError("OpenTelemetry metrics need the otel extra: pip install 'mcpkit[otel]'") from None
        provider = meter_provider if meter_provider is not None else metrics.get_meter_provider()
        meter = provider.get_meter("mcpkit")
        self._histogram = meter.create_histogram(HISTOGRAM, unit="s", description="The duration of MCP requests served")

    def __call__(self, method: str, name: str | None, seconds: float, outcome: Outcome) -> None:
        attributes: dict[str, str] = {"mcp.method.name": method}
        attribute = _NAME_ATTRIBUTE.get(method)
        if attribute is not None and name is not None:
            attributes[attribute] = name
        if outcome.kind == "error":
            attributes["error.type"] = str(outcome.code)
        elif outcome.kind != "ok":
            attributes["error.type"] = outcome.kind
        self._histogram.record(seconds, attributes)
