"""Request timing: :class:`Timing`, each request's duration handed to histogram hooks
(and to OpenTelemetry's metrics, :mod:`.metrics`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from ..server.context import Context
from ..server.registry import CallNext
from .metrics import OtelHistogram, otel_loaded
from .outcome import Outcome, measured, target

__all__ = ["Timing", "TimingHook"]

log = logging.getLogger("mcpkit.server")

#: ``hook(method, name, seconds, outcome)``: ``name`` the tool or prompt name or the
#: resource URI (None for other methods), ``seconds`` the request's duration.
TimingHook = Callable[[str, str | None, float, Outcome], None]


class Timing:
    """Middleware that times every request and calls each of ``hooks`` with
    ``(method, name, seconds, outcome)`` when it ends (a histogram's ``observe``, say).

    ``otel``: record on OpenTelemetry's ``mcp.server.operation.duration`` histogram too
    (:class:`~mcpkit.middleware.metrics.OtelHistogram`, of ``meter_provider`` or the
    global one) — ``True`` always (raises ``RuntimeError`` without the ``otel`` extra),
    ``False`` never, ``None`` (the default) when the program has imported
    OpenTelemetry's metrics API by the time this is made; a ``meter_provider`` implies
    ``True``. ``clock`` (seconds) times the request.

    A hook that raises is logged and stops neither the others nor the request; the
    request's result or error is never changed; cancellation propagates (timed as
    ``cancelled``).
    """

    def __init__(
        self,
        *hooks: TimingHook,
        otel: bool | None = None,
        meter_provider: Any = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.hooks: list[TimingHook] = list(hooks)
        if meter_provider is not None or otel or (otel is None and otel_loaded()):
            self.hooks.append(OtelHistogram(meter_provider))
        self._clock = clock

    async def __call__(self, ctx: Context, call_next: CallNext) -> Any:
        return await measured(call_next, self._clock, lambda outcome, seconds: self._observe(ctx, seconds, outcome))

    def _observe(self, ctx: Context, seconds: float, outcome: Outcome) -> None:
        name = target(ctx)
        for hook in self.hooks:
            try:
                hook(ctx.method, name, seconds, outcome)
            except Exception:
                log.exception("a Timing hook failed for %s", ctx.method)
