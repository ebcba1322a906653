"""OpenTelemetry tracing of requests, on both sides (docs/tracing.md).

A span per request: ``CLIENT`` on the side that sends it, ``SERVER`` on the side that
serves it, named ``{method} {tool or prompt}`` and carrying the attributes of
OpenTelemetry's MCP semantic conventions (``mcp.method.name``, ``mcp.protocol.version``,
``jsonrpc.request.id``, ``gen_ai.tool.name``, ``gen_ai.prompt.name``,
``mcp.resource.uri``, ``error.type``, ``rpc.response.status_code``) plus mcpkit's own
``mcpkit.era`` and ``mcpkit.outcome``. The trace context travels in the request's
``params._meta`` (``traceparent``, ``tracestate``: the W3C format of the global
propagator), so a client's trace continues in the server on every transport.

Only the OpenTelemetry *API* is used, and only when tracing is on: ``tracing=None`` (the
default of ``Server`` and ``ClientOptions``) turns it on when the application has
already imported ``opentelemetry`` and set a tracer provider — checked per request, by
looking in ``sys.modules``, so a program without OpenTelemetry imports nothing of it;
``True`` always traces (``ImportError`` if the API is missing); ``False`` never does;
a ``TracerProvider`` traces with that provider rather than the global one.

The hooks wrap one side's path to the wire — the client session's request function,
which the session keeps as its own (:func:`trace_client_requests`), and
``Dispatcher.serve`` — in a function that returns the original coroutine untouched
when tracing is off, and a traced one when it is on: no extra frame per request when off.
A server span reads what it names, and the trace context, from the request's head
(:mod:`mcpkit.protocol.head`): nothing of the params is decoded for it.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, Union

import msgspec

from ..protocol import meta as meta_keys
from ..protocol.eras import LEGACY, MODERN
from ..protocol.errors import ConnectionClosed, McpError, RequestTimeout
from ..protocol.events import RequestId, RequestReceived
from .peer import ProgressCallback

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer, TracerProvider

__all__ = [
    "TracingOption",
    "check_tracing",
    "active_tracer",
    "ClientRequest",
    "Agreed",
    "trace_client_requests",
    "trace_server_requests",
]

#: The ``tracing=`` option of ``Server`` and ``ClientOptions``: None (auto), True, False,
#: or a ``TracerProvider`` to use instead of the global one.
TracingOption = Union[bool, "TracerProvider", None]

#: The instrumentation scope of mcpkit's spans.
SCOPE = "mcpkit"

_HINT = "tracing needs the OpenTelemetry API: pip install 'mcpkit[otel]'"

#: id(provider) -> (provider, its tracer): ``get_tracer`` once per provider (a few at most).
_tracers: dict[int, tuple[Any, Tracer]] = {}


def check_tracing(setting: TracingOption) -> TracingOption:
    """Validate a ``tracing=`` setting. Raises ``TypeError`` for anything but a bool,
    None or a tracer provider, and ``ImportError`` (saying what to install) for ``True``
    without the OpenTelemetry API."""
    if setting is not None and not isinstance(setting, bool):
        if not callable(getattr(setting, "get_tracer", None)):
            raise TypeError("tracing must be True, False, None or an OpenTelemetry TracerProvider")
        return setting
    if setting:
        try:
            import opentelemetry.trace  # noqa: F401
        except ImportError as exc:
            raise ImportError(_HINT) from exc
    return setting


def active_tracer(setting: TracingOption) -> Tracer | None:
    """The tracer to use for one request, or None when it is not traced: never for
    ``False``; always for ``True`` (the global provider's) and for a provider (its own);
    for ``None`` only when ``opentelemetry.trace`` is already imported and a real (not
    the default no-op or proxy) global provider is set."""
    if setting is False:
        return None
    if setting is None or setting is True:
        trace: Any = sys.modules.get("opentelemetry.trace")
        if trace is None:
            if setting is None:
                return None
            import opentelemetry.trace

            trace = opentelemetry.trace
        provider: Any = trace.get_tracer_provider()
        if setting is None and isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
            return None
    else:
        provider = setting
    cached = _tracers.get(id(provider))
    if cached is not None and cached[0] is provider:
        return cached[1]
    from .._version import __version__

    tracer: Tracer = provider.get_tracer(SCOPE, __version__)
    if len(_tracers) >= 16:
        _tracers.clear()
    _tracers[id(provider)] = (provider, tracer)
    return tracer


# --- what a request says about itself ---------------------------------------------------------


class _ToolOutcome(msgspec.Struct, rename="camel"):
    is_error: Any = False


_decode_outcome = msgspec.json.Decoder(_ToolOutcome).decode


def _describe(method: str, name: Any, uri: Any) -> tuple[str, dict[str, Any]]:
    """The span name and the attributes that follow from the method and its target."""
    attrs: dict[str, Any] = {"mcp.method.name": method}
    span_name = method
    if method == "tools/call" and isinstance(name, str):
        attrs["gen_ai.tool.name"] = name
        attrs["gen_ai.operation.name"] = "execute_tool"
        span_name = f"{method} {name}"
    elif method == "prompts/get" and isinstance(name, str):
        attrs["gen_ai.prompt.name"] = name
        span_name = f"{method} {name}"
    if isinstance(uri, str) and method.startswith("resources/"):
        attrs["mcp.resource.uri"] = uri
    return span_name, attrs


def _request_id(value: Any) -> str:
    return str(value)


def _record_error(span: Span, exc: BaseException) -> None:
    """Mark ``span`` failed by ``exc``: ``error.type``, ``mcpkit.outcome``, the status."""
    from opentelemetry.trace import Status, StatusCode

    if isinstance(exc, McpError):
        code = str(exc.code)
        span.set_attribute("error.type", code)
        if not exc.local:
            span.set_attribute("rpc.response.status_code", code)
        if isinstance(exc, RequestTimeout):
            outcome = "timeout"
        elif isinstance(exc, ConnectionClosed):
            outcome = "connection_closed"
        else:
            outcome = "error"
        span.set_attribute("mcpkit.outcome", outcome)
        span.set_status(Status(StatusCode.ERROR, exc.message[:256]))
    elif isinstance(exc, (asyncio.CancelledError, GeneratorExit, KeyboardInterrupt, SystemExit)):
        span.set_attribute("mcpkit.outcome", "cancelled")
        span.set_attribute("error.type", "cancelled")
        span.set_status(Status(StatusCode.ERROR, "cancelled"))
    else:
        span.set_attribute("mcpkit.outcome", "error")
        span.set_attribute("error.type", type(exc).__qualname__)
        span.record_exception(exc)
        span.set_status(Status(StatusCode.ERROR, type(exc).__qualname__))


def _record_tool_error(span: Span) -> None:
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("mcpkit.outcome", "tool_error")
    span.set_attribute("error.type", "tool_error")
    span.set_status(Status(StatusCode.ERROR, "tool_error"))


class _MetaGetter:
    """Reads the trace context from ``_meta``: string members only."""

    def get(self, carrier: Mapping[str, Any], key: str) -> list[str] | None:
        value = carrier.get(key)
        return [value] if isinstance(value, str) else None

    def keys(self, carrier: Mapping[str, Any]) -> list[str]:
        return [k for k, v in carrier.items() if isinstance(v, str)]


# --- the client side ----------------------------------------------------------------------------


class ClientRequest(Protocol):
    """The client's one path to the wire: send ``method`` with ``params`` and return the
    raw result (the client session's ``request``)."""

    def __call__(
        self,
        method: str,
        params: dict[str, Any] | None,
        timeout: float,
        on_progress: ProgressCallback | None = None,
        on_start: Callable[[RequestId], None] | None = None,
        *,
        reset: bool = False,
        max_total: float | None = None,
    ) -> Awaitable[msgspec.Raw]: ...


class Agreed(Protocol):
    """What a client span reports of the connection: the era and revision agreed on
    (None before negotiation)."""

    @property
    def era(self) -> str | None: ...

    @property
    def protocol_version(self) -> str | None: ...


def trace_client_requests(request: ClientRequest, setting: TracingOption, agreed: Agreed) -> ClientRequest:
    """``request`` (the client's one path to the wire) with a ``CLIENT`` span around each
    call when tracing is on, the trace context added to the params' ``_meta``.
    ``agreed``'s ``era`` and ``protocol_version`` are read at each call."""

    def traced(
        method: str,
        params: dict[str, Any] | None,
        timeout: float,
        on_progress: ProgressCallback | None = None,
        on_start: Callable[[RequestId], None] | None = None,
        *,
        reset: bool = False,
        max_total: float | None = None,
    ) -> Awaitable[msgspec.Raw]:
        tracer = active_tracer(setting)
        if tracer is None:
            return request(method, params, timeout, on_progress, on_start, reset=reset, max_total=max_total)
        return _client_span(tracer, request, agreed, method, params, timeout, on_progress, on_start, reset, max_total)

    return traced


async def _client_span(
    tracer: Tracer,
    request: ClientRequest,
    agreed: Agreed,
    method: str,
    params: dict[str, Any] | None,
    timeout: float,
    on_progress: ProgressCallback | None,
    on_start: Callable[[RequestId], None] | None,
    reset: bool,
    max_total: float | None,
) -> msgspec.Raw:
    from opentelemetry import propagate
    from opentelemetry.trace import SpanKind

    name = params.get("name") if params else None
    uri = params.get("uri") if params else None
    span_name, attrs = _describe(method, name, uri)
    with tracer.start_as_current_span(
        span_name, kind=SpanKind.CLIENT, attributes=attrs, record_exception=False, set_status_on_exception=False
    ) as span:
        era, version = agreed.era, agreed.protocol_version
        if era:
            span.set_attribute("mcpkit.era", era)
        if version:
            span.set_attribute("mcp.protocol.version", version)
        carried = dict(params) if params else {}
        extra = carried.get("_meta")
        meta: dict[str, Any] = dict(extra) if isinstance(extra, dict) else {}
        propagate.inject(meta)
        carried["_meta"] = meta

        def started(request_id: RequestId) -> None:
            span.set_attribute("jsonrpc.request.id", _request_id(request_id))
            if on_start is not None:
                on_start(request_id)

        try:
            raw = await request(method, carried, timeout, on_progress, started, reset=reset, max_total=max_total)
        except BaseException as exc:
            _record_error(span, exc)
            raise
        if method == "tools/call" and _is_tool_error(raw):
            _record_tool_error(span)
        else:
            span.set_attribute("mcpkit.outcome", "ok")
        return raw


def _is_tool_error(raw: Any) -> bool:
    try:
        return _decode_outcome(raw).is_error is True
    except (msgspec.DecodeError, RecursionError, TypeError):
        return False


# --- the server side ----------------------------------------------------------------------------

#: ``Dispatcher.serve(request, *, session, outbound, loop=None)``.
ServerHandle = Callable[..., Awaitable[Any]]


def trace_server_requests(handle: ServerHandle, setting: TracingOption, modern_ok: Callable[[], bool]) -> ServerHandle:
    """``handle`` (the dispatcher's entry point) with a ``SERVER`` span around each
    request when tracing is on, continuing the trace context found in its ``_meta``.
    ``modern_ok()`` says whether the server serves modern requests (else a request's
    modern ``_meta`` does not make it modern)."""

    def traced(request: RequestReceived, *, session: Any, outbound: Any, loop: Any = None) -> Awaitable[Any]:
        # the keywords named, not gathered into a dict and spread again: this is every request's path
        if setting is None and "opentelemetry.trace" not in sys.modules:  # active_tracer's first answer, inlined
            return handle(request, session=session, outbound=outbound, loop=loop)
        tracer = active_tracer(setting)
        if tracer is None:
            return handle(request, session=session, outbound=outbound, loop=loop)
        return _server_span(tracer, handle, modern_ok, request, {"session": session, "outbound": outbound, "loop": loop})

    return traced


async def _server_span(
    tracer: Tracer,
    handle: ServerHandle,
    modern_ok: Callable[[], bool],
    request: RequestReceived,
    kwargs: dict[str, Any],
) -> Any:
    from opentelemetry import propagate
    from opentelemetry.trace import SpanKind

    name, uri, meta = request.head.described()  # None names and no context for params that cannot be decoded
    parent = propagate.extract(meta, getter=_MetaGetter()) if meta else None  # type: ignore[arg-type]
    span_name, attrs = _describe(request.method, name, uri)
    attrs["jsonrpc.request.id"] = _request_id(request.id)
    modern_version = meta.get(meta_keys.PROTOCOL_VERSION)
    with tracer.start_as_current_span(
        span_name,
        context=parent,
        kind=SpanKind.SERVER,
        attributes=attrs,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            result = await handle(request, **kwargs)
        except BaseException as exc:
            _record_error(span, exc)
            raise
        finally:
            _record_era(span, modern_version if modern_ok() else None, kwargs.get("session"))
        if getattr(result, "is_error", False) is True:
            _record_tool_error(span)
        elif getattr(result, "result_type", None) == "input_required":
            span.set_attribute("mcpkit.outcome", "input_required")  # the client retries with the answers
        else:
            span.set_attribute("mcpkit.outcome", "ok")
        return result


def _record_era(span: Span, modern_version: Any, session: Any) -> None:
    """The era and revision of a served request: modern when its ``_meta`` named a
    version, else the connection's (read after serving, so ``initialize`` has one)."""
    if isinstance(modern_version, str):
        span.set_attribute("mcpkit.era", MODERN.name)
        span.set_attribute("mcp.protocol.version", modern_version)
        return
    span.set_attribute("mcpkit.era", LEGACY.name)
    version = getattr(session, "protocol_version", None)
    if isinstance(version, str) and version:
        span.set_attribute("mcp.protocol.version", version)
