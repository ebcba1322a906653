"""Client settings: :class:`ClientOptions` for the whole client, :class:`RequestOptions`
for one request."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

from .._version import __version__
from ..protocol.apps import UI_MIME_TYPE, with_apps_declared
from ..protocol.interactive import CreateMessageParams, ElicitRequestParams
from ..protocol.tasks import with_tasks_declared
from ..protocol.types import LOG_LEVELS, Implementation, LogLevel, Root
from ..protocol.versions import SUPPORTED_PROTOCOL_VERSIONS
from ..runtime.peer import ProgressCallback, check_timeout
from ..runtime.tracing import TracingOption, check_tracing
from .events import EventHandler
from .retry import RetryPolicy

__all__ = [
    "ClientOptions",
    "RequestOptions",
    "LogHandler",
    "NotificationCallback",
    "ElicitHandler",
    "SampleHandler",
    "ListChangedHandler",
    "RootsHandler",
]

LogHandler = Callable[[str, Any, str | None], Awaitable[None] | None]
#: ``on_elicit(request)``: the user's answer, as an ``ElicitResult`` or a dict.
ElicitHandler = Callable[[ElicitRequestParams], Any]
#: ``on_list_changed(kind)``: ``"tools"``, ``"prompts"`` or ``"resources"`` changed (sync or async).
ListChangedHandler = Callable[[str], Any]
#: ``on_roots()``: the roots offered now, as ``Root`` objects or dicts (sync or async).
RootsHandler = Callable[[], Any]
#: ``on_sample(request)``: the model's answer, as a ``CreateMessageResult`` or a dict.
SampleHandler = Callable[[CreateMessageParams], Any]
NotificationCallback = Callable[[str, dict[str, Any]], None]


@dataclasses.dataclass(frozen=True)
class ClientOptions:
    """Client-wide settings.

    ``request_timeout`` (seconds, default 30) is every request's deadline unless a call
    gives its own; it must be positive and finite (``ValueError`` otherwise).
    ``protocol_version`` pins a revision (a modern one skips the handshake, a legacy one
    goes straight to ``initialize``); None probes with ``server/discover`` and falls
    back to ``initialize``. ``discover_timeout`` bounds that probe.

    Answering the server (docs/interactive.md): ``on_elicit(ElicitRequestParams)`` and
    ``on_sample(CreateMessageParams)`` (sync callbacks run on a worker thread) return
    an ``ElicitResult`` / ``CreateMessageResult`` or the same as a dict; ``roots`` are
    the roots offered, or ``on_roots()`` returns them each time the server asks (for a
    client that relays another's, such as a proxy). Setting one declares the matching capability (elicitation in
    the ``elicitation_modes`` given; ``sampling.tools`` with ``sampling_tools``). In the
    modern era a request answered with ``input_required`` is retried with the answers,
    at most ``max_input_rounds`` times, all within the call's deadline.

    ``on_list_changed(kind)`` is called when the server says a list changed (legacy:
    whenever it does; modern: while a :meth:`Client.listen` subscription is open).

    Resilience (docs/timeouts-and-retries.md): ``retry`` is the
    :class:`~mcpkit.RetryPolicy` of every call that does not give its own (None: no
    retries); only idempotent calls are retried, only after transient failures.
    ``reset_timeout_on_progress`` restarts a call's deadline on each progress
    notification, for at most ``max_total_timeout`` seconds in all (None: ten times
    the call's timeout). ``on_event(event)`` is told of every attempt, timeout, retry,
    lost connection, restart and reconnection (a :class:`~mcpkit.ClientEvent`).

    ``tasks`` (docs/tasks.md): declare the 2026-07-28 tasks extension, so that a server
    may run a ``call_tool`` as a task (the client follows it to its end); False leaves
    it undeclared (the server answers every call itself, or refuses the tools that must
    be tasks with -32021). ``Client.start_task`` declares it on its own call either way.

    ``tracing`` (docs/tracing.md): an OpenTelemetry span per request, its context sent in
    ``_meta``; None (default) traces when the application has set a tracer provider, True
    always (``ImportError`` without ``mcpkit[otel]``), False never; a ``TracerProvider``
    traces with that provider instead of the global one.

    ``apps`` (docs/apps.md): declare the MCP Apps extension, in either era, with the view
    MIME types this client renders: True for ``text/html;profile=mcp-app``, or the types
    themselves; False (default) declares nothing, and servers may leave their views out.
    """

    request_timeout: float = 30.0
    protocol_version: str | None = None
    client_info: Implementation = dataclasses.field(default_factory=lambda: Implementation(name="mcpkit", version=__version__))
    capabilities: dict[str, Any] = dataclasses.field(default_factory=dict)
    discover_timeout: float = 5.0
    log_level: LogLevel | None = None
    on_log: LogHandler | None = None
    on_notification: NotificationCallback | None = None
    roots: list[Root] | None = None
    max_error_text: int = 1024
    on_elicit: ElicitHandler | None = None
    on_sample: SampleHandler | None = None
    elicitation_modes: tuple[str, ...] = ("form",)
    sampling_tools: bool = False
    max_input_rounds: int = 8
    on_list_changed: ListChangedHandler | None = None
    retry: RetryPolicy | None = None
    reset_timeout_on_progress: bool = False
    max_total_timeout: float | None = None
    on_event: EventHandler | None = None
    tasks: bool = True
    tracing: TracingOption = None
    on_roots: RootsHandler | None = None  # last: the fields before it keep their positions
    apps: bool | tuple[str, ...] = False

    def __post_init__(self) -> None:
        check_tracing(self.tracing)
        check_timeout(self.request_timeout)
        check_timeout(self.discover_timeout)
        if self.max_total_timeout is not None:
            check_timeout(self.max_total_timeout)
        if self.retry is not None and not isinstance(self.retry, RetryPolicy):
            raise TypeError("retry must be a RetryPolicy or None")
        if self.max_error_text < 16:
            raise ValueError("max_error_text must be at least 16 bytes")
        if self.protocol_version is not None and self.protocol_version not in SUPPORTED_PROTOCOL_VERSIONS:
            raise ValueError(f"unsupported protocol version {self.protocol_version!r}")
        if self.log_level is not None and self.log_level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {self.log_level!r}")
        if not self.elicitation_modes or not set(self.elicitation_modes) <= {"form", "url"}:
            raise ValueError("elicitation_modes must name 'form', 'url' or both")
        if self.max_input_rounds < 1:
            raise ValueError("max_input_rounds must be at least 1")
        if not isinstance(self.apps, bool) and (
            not isinstance(self.apps, tuple) or not self.apps or not all(isinstance(t, str) and t for t in self.apps)
        ):
            raise ValueError("apps is True, False or a tuple of MIME types")

    def capabilities_to_declare(self, *, modern: bool = False) -> dict[str, Any]:
        """The client capabilities to announce, in either era: ``capabilities`` plus
        those the callbacks and ``roots`` imply, the MCP Apps extension with ``apps``,
        and (``modern``) the tasks extension unless ``tasks`` is False."""
        caps = dict(self.capabilities)
        if self.roots is not None or self.on_roots is not None:
            caps.setdefault("roots", {"listChanged": True})
        if self.on_elicit is not None:
            caps.setdefault("elicitation", {mode: {} for mode in self.elicitation_modes})
        if self.on_sample is not None:
            caps.setdefault("sampling", {"tools": {}} if self.sampling_tools else {})
        if modern and self.tasks:
            caps = with_tasks_declared(caps)
        if self.apps is True:
            caps = with_apps_declared(caps, {"mimeTypes": [UI_MIME_TYPE]})
        elif self.apps:
            mime_types = list(self.apps)
            caps = with_apps_declared(caps, {"mimeTypes": mime_types})
        return caps


@dataclasses.dataclass(frozen=True)
class RequestOptions:
    """Per-request settings for :meth:`Client.send_request`: ``timeout`` in seconds
    (positive and finite, else ``ValueError``; None = the client's default) and an
    ``on_progress(progress, total, message)`` callback.

    ``retry`` overrides the client's :class:`~mcpkit.RetryPolicy` for this request;
    ``idempotent`` says whether it may run more than once (None: judged by its method,
    and for ``tools/call`` by the tool's annotations). ``reset_timeout_on_progress``
    and ``max_total_timeout`` override the client's (None: the client's setting).
    """

    timeout: float | None = None
    on_progress: ProgressCallback | None = None
    retry: RetryPolicy | None = None
    idempotent: bool | None = None
    reset_timeout_on_progress: bool | None = None
    max_total_timeout: float | None = None

    def __post_init__(self) -> None:
        if self.timeout is not None:
            check_timeout(self.timeout)
        if self.max_total_timeout is not None:
            check_timeout(self.max_total_timeout)
