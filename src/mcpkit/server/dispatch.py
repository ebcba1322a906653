"""The dual-era dispatcher: one request in, its result or its error out.

A request whose ``params._meta`` names a protocol version is served statelessly in
the modern era (2026-07-28); otherwise the connection must have completed the
``initialize`` handshake (legacy era, 2025-11-25 back to 2024-11-05). The era is
resolved here, once per request, into an :class:`~mcpkit.protocol.eras.EraPolicy`
that everything downstream asks; which eras are served at all is the policies the
server's settings hold (``Server(eras=...)``), never a comparison of era names.

What the request's params say for era resolution, the ``Context`` and a modern retry's
answers is read from its head (:class:`~mcpkit.protocol.head.RequestHead`), decoded once
for every layer that serves it. Then one method table: the method names its params type
and its request handler (:mod:`.features`). The dispatcher decodes the method's own
params (the one other decode of the bytes), makes the request's
:class:`~.context.Call` (the server's side of it: session, way back, asker) and its
:class:`~.context.Context` on it, runs the middleware and the handler, and finishes the
call when the handler is done — a call that became a task is finished by the task
manager instead. Every exception from user code is mapped here to its wire outcome
(docs/errors.md), through the era's policy; a store that cannot be reached
(:class:`~mcpkit.StoreUnavailable`, from the task store say) is -32603 "Service
unavailable" with HTTP status 503, in both eras.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from logging import getLogger
from typing import Any, Final

import msgspec

from ..auth.identity import CURRENT
from ..protocol import meta as meta_keys
from ..protocol.eras import LEGACY, MODERN, EraPolicy
from ..protocol.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
    McpError,
    echo,
    flatten_text,
)
from ..protocol.events import RequestReceived
from ..protocol.head import RequestHead
from ..protocol.interactive import MRTR_METHODS
from ..protocol.skills import DIRECTORY_READ, DirectoryReadParams, GetSkillParams
from ..protocol.tasks import TASK_RESULT, Task, TaskIdParams, UpdateTaskParams
from ..protocol.types import (
    LOG_LEVELS,
    CallToolParams,
    CompleteParams,
    CursorParams,
    DiscoverResult,
    EmptyResult,
    GetPromptParams,
    Implementation,
    InitializeParams,
    InitializeResult,
    Params,
    ReadResourceParams,
    SetLevelParams,
)
from ..protocol.versions import LEGACY_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from ..protocol.wire_errors import bounded, internal_error
from ..runtime.outbound import Outbound
from ..stores.errors import StoreUnavailable
from .context import Call, Context
from .features import completions, logging, prompts, resources, subscriptions, tools
from .interaction import Asker, InputRequired, LiveAsker, NoAsker, ReplayAsker
from .lifespan import LifespanRunner
from .registry import Registry, run_middleware
from .session import Session

__all__ = ["Dispatcher", "store_unavailable"]

log = getLogger("mcpkit.server")

#: ``handler(registry, ctx, call, params)``: serves one method (the request handlers of
#: :mod:`.features`); ``call`` is the server's side of the request (its session, its way
#: back, the task it may become), ``params`` are decoded as the method's table entry says.
MethodHandler = Callable[[Registry, Context, Call, Any], Awaitable[Any]]


async def _ping(reg: Registry, ctx: Context, call: Call, params: Any) -> EmptyResult:
    return EmptyResult()


#: method -> (params type, handler). Which era has which method is the policies' call.
#: The methods of the tasks and skills extensions are added by :data:`_LATER`.
_METHODS: Final[dict[str, tuple[type[Any], MethodHandler]]] = {
    "ping": (Params, _ping),
    "tools/list": (CursorParams, tools.list_tools),
    "tools/call": (CallToolParams, tools.call_tool),
    "resources/list": (CursorParams, resources.list_resources),
    "resources/templates/list": (CursorParams, resources.list_templates),
    "resources/read": (ReadResourceParams, resources.read_resource),
    "prompts/list": (CursorParams, prompts.list_prompts),
    "prompts/get": (GetPromptParams, prompts.get_prompt),
    "completion/complete": (CompleteParams, completions.complete),
    "logging/setLevel": (SetLevelParams, logging.set_level),
    "resources/subscribe": (ReadResourceParams, subscriptions.subscribe),
    "resources/unsubscribe": (ReadResourceParams, subscriptions.unsubscribe),
    "subscriptions/listen": (subscriptions.ListenParams, subscriptions.listen),
}


def _task_methods() -> dict[str, tuple[type[Any], MethodHandler]]:
    """The tasks extension's entries of the method table (docs/tasks.md)."""
    from .features import tasks  # loaded with the first tasks/* request: start-up cost of the servers without

    return {
        "tasks/get": (TaskIdParams, tasks.get_task),
        "tasks/update": (UpdateTaskParams, tasks.update_task),
        "tasks/cancel": (TaskIdParams, tasks.cancel_task),
    }


def _skill_methods() -> dict[str, tuple[type[Any], MethodHandler]]:
    """The skills extension's entries of the method table (docs/skills.md)."""
    from .features import skills  # loaded with the first skills request: start-up cost of the servers without

    return {
        "skills/list": (CursorParams, skills.list_skills),
        "skills/get": (GetSkillParams, skills.get_skill),
        DIRECTORY_READ: (DirectoryReadParams, skills.read_directory),
    }


#: The methods of the extensions most servers do not serve -> what makes their entries of
#: the method table, added to a dispatcher's table at the first such request.
_LATER: Final[dict[str, Callable[[], dict[str, tuple[type[Any], MethodHandler]]]]] = {
    **dict.fromkeys(("tasks/get", "tasks/update", "tasks/cancel"), _task_methods),
    **dict.fromkeys(("skills/list", "skills/get", DIRECTORY_READ), _skill_methods),
}


def store_unavailable(exc: StoreUnavailable, what: str) -> McpError:
    """The answer to a request that needed a store that cannot be reached: -32603
    "Service unavailable" with HTTP status 503 (and ``Retry-After`` over HTTP). What
    failed, and where, goes to the log only."""
    log.warning("%s failed: %s", what, exc)
    return McpError(INTERNAL_ERROR, "Service unavailable: the server's store cannot be reached; try again later", status=503)


_decoders: dict[type, Any] = {}


def _typed(head: RequestHead, raw: msgspec.Raw, tp: type[Any]) -> Any:
    """The method's own params, of type ``tp``: from the head when it holds them all
    (``tools/call``, ``resources/read``: its typed members are what a decode of ``tp``
    would give), else decoded from ``raw`` (as :func:`_decode` raises)."""
    if head.complete:
        if tp is CallToolParams and isinstance(head.name, str):
            return CallToolParams(name=head.name, arguments=head.arguments)
        if tp is ReadResourceParams and isinstance(head.uri, str):
            return ReadResourceParams(uri=head.uri)
    return _decode(raw, tp)


def _decode(raw: msgspec.Raw, tp: type[Any]) -> Any:
    """``raw`` params decoded as ``tp``. Raises ``McpError(-32602)`` for params of the
    wrong shape and for valid JSON that cannot be represented (a number out of range,
    nesting too deep)."""
    dec = _decoders.get(tp)
    if dec is None:
        dec = _decoders[tp] = msgspec.json.Decoder(tp)
    try:
        return dec.decode(raw if raw else b"{}")
    except msgspec.DecodeError as exc:  # ValidationError included
        raise McpError(INVALID_PARAMS, f"Invalid params: {flatten_text(str(exc), 512)}") from None
    except RecursionError:
        raise McpError(INVALID_PARAMS, "Invalid params: nested too deeply") from None


#: Who is asking, in which era: (policy, protocol version, client capabilities, client
#: info, log level) — the outcome of era resolution (a tuple: built per request).
_Resolved = tuple[EraPolicy, str, dict[str, Any], Implementation | None, str | None]

_UNINITIALIZED: Final[_Resolved] = (LEGACY, "", {}, None, None)


class Dispatcher:
    """Serves requests for one server: era resolution, the method table, middleware,
    the handshake, and the error contract."""

    def __init__(self, registry: Registry, info: Implementation, instructions: str | None, lifespan: LifespanRunner) -> None:
        self.registry = registry
        self._lifespan = lifespan
        self.info = info
        self.instructions = instructions
        self._server_meta = {meta_keys.SERVER_INFO: {"name": info.name, "version": info.version}}
        self._methods: dict[str, tuple[type[Any], MethodHandler]] = {**_METHODS, "server/discover": (Params, self._discover)}

    @property
    def supported_versions(self) -> list[str]:
        """The revisions of the eras served, newest first."""
        return [version for policy in self.registry.settings.policies for version in policy.versions]

    async def serve(
        self,
        request: RequestReceived,
        *,
        session: Session,
        outbound: Outbound,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> Any:
        """Serve one request; returns the result or raises :class:`McpError`. Only
        ``CancelledError`` propagates otherwise (the handler is cancelled with it).
        ``loop`` is the running loop, when the caller knows it (asking for it is a
        system call, ``getpid``, on Python 3.11)."""
        self.registry.hub.serving(loop if loop is not None else asyncio.get_running_loop())
        method = request.method
        head = request.head
        meta = head.read_meta()
        policy, version, caps, info, level = self._resolve(method, head, session)
        if method in policy.foreign_methods:
            raise policy.foreign_method(method)
        if method == "initialize":  # the handshake: no handler, no middleware
            return self._initialize(request.params, session)
        spec = self._methods.get(method)
        if spec is None:
            spec = self._later(method)
        params_type, handler = spec
        raw_params = request.params
        if method == "subscriptions/listen":  # what a listen holds for its life: checked before decoding
            subscriptions.check_size(raw_params, self.registry.settings)
        params = _typed(head, raw_params, params_type)
        registry = self.registry
        settings = registry.settings
        asker = self._asker(policy, method, params, head, outbound)
        call = Call(session, outbound, asker, policy, params_size=len(raw_params))
        # __init__ called as a function: calling the class with these keywords makes Python
        # 3.11 pack them into a dict for __init__ (0.8 µs a request, against 0.3)
        ctx = Context.__new__(Context)
        Context.__init__(
            ctx,
            request_id=request.id,
            method=method,
            policy=policy,
            protocol_version=version,
            client_info=info,
            client_capabilities=caps,
            meta=meta if meta is not None else {},
            raw_params=raw_params,
            outbound=call,
            log_level=level,
            max_text=settings.max_error_text,
            ask_timeout=settings.ask_timeout,
            lifespan=self._lifespan.state,
        )
        try:
            if registry.middleware:
                result = await run_middleware(registry.middleware, ctx, lambda: handler(registry, ctx, call, params))
            else:
                result = await handler(registry, ctx, call, params)
        except asyncio.CancelledError:
            raise
        except InputRequired:
            if not isinstance(asker, ReplayAsker):  # raised by user code outside an input round
                raise self._wire_error(RuntimeError("InputRequired raised outside an input round"), policy, method) from None
            return msgspec.structs.replace(asker.result(), meta=self._server_meta)
        except BaseException as exc:  # of any type: only this request fails
            raise self._wire_error(exc, policy, method) from None
        finally:
            call.finish()
        if isinstance(result, Task) and result.result_type == TASK_RESULT:  # the call became a task (server/tasks.py)
            return msgspec.structs.replace(result, meta=self._server_meta)
        return policy.finish_result(result, self._server_meta, settings)

    def _later(self, method: str) -> tuple[type[Any], MethodHandler]:
        """The table entry of ``method`` when it is one of :data:`_LATER`'s (the entries
        of its extension added to the table now). Raises -32601 for any other method."""
        entries = _LATER.get(method)
        if entries is None:
            raise McpError(METHOD_NOT_FOUND, f"Method not found: {flatten_text(method, 256)}")
        self._methods.update(entries())
        return self._methods[method]

    def _asker(self, policy: EraPolicy, method: str, params: Any, head: RequestHead, outbound: Outbound) -> Asker:
        """How this request's handler asks the client: requests on the wire (legacy),
        answers replayed from the retry (modern, on the methods that allow input
        rounds). Raises ``McpError(-32602)`` for malformed ``inputResponses`` or a
        ``requestState`` that fails verification."""
        if not policy.stateless:
            return LiveAsker(outbound)
        if method not in MRTR_METHODS:
            return NoAsker(method)
        responses, state = head.answers()

        def salient() -> dict[str, Any]:
            return {name: msgspec.to_builtins(getattr(params, name)) for name in params.__struct_fields__}

        identity = CURRENT.get()  # the state is bound to who asked, when authorization says
        subject = identity.principal if identity is not None else None
        sealer = self.registry.settings.state_sealer
        return ReplayAsker(sealer, method, salient, responses, state, subject)

    def _wire_error(self, exc: BaseException, policy: EraPolicy, method: str) -> McpError:
        """The error to answer with for an exception from a handler or middleware."""
        settings = self.registry.settings
        expose, limit = settings.expose_internal_errors, settings.max_error_text
        if isinstance(exc, McpError):
            if exc.local:  # e.g. a RequestTimeout from a client the handler used: not ours to forward
                return internal_error(exc, f"handler for {method}", expose=expose, limit=limit)
            return bounded(exc, limit)
        if isinstance(exc, StoreUnavailable):
            return store_unavailable(exc, method)
        return policy.wire_error(exc, method, expose=expose, limit=limit)

    def _resolve(self, method: str, head: RequestHead, session: Session) -> _Resolved:
        """The era of one request and who sent it. Raises -32022 for a modern version we
        do not speak, -32602 for a malformed modern ``_meta``, -32600 for a legacy
        request before ``initialize``."""
        served = self.registry.settings.policies
        version = head.version
        if version is not None and MODERN in served:  # modern _meta: even initialize is modern (-32601)
            return self._resolve_modern(version, head)
        legacy = LEGACY in served
        if method == "initialize" or (method == "ping" and legacy and not session.initialized):
            return _UNINITIALIZED
        if session.initialized and legacy:
            return LEGACY, session.protocol_version, session.client_capabilities, session.client_info, session.log_level
        if not legacy or method in LEGACY.foreign_methods:
            # only a modern request can mean this: it lacks its required _meta field
            raise McpError(INVALID_PARAMS, f"Invalid params: _meta is missing required field {meta_keys.PROTOCOL_VERSION}")
        raise McpError(
            INVALID_REQUEST,
            "Invalid Request: received a request before initialization "
            f"(send initialize first, or put {meta_keys.PROTOCOL_VERSION} in params._meta)",
        )

    def _resolve_modern(self, version: Any, head: RequestHead) -> _Resolved:
        if version not in MODERN_PROTOCOL_VERSIONS:
            raise McpError(
                UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version",
                {"supported": self.supported_versions, "requested": echo(version)},
            )
        caps = head.client_capabilities
        if not isinstance(caps, dict):
            raise McpError(INVALID_PARAMS, f"Invalid params: _meta is missing required field {meta_keys.CLIENT_CAPABILITIES}")
        level = head.log_level
        if level is not None and level not in LOG_LEVELS:
            raise McpError(INVALID_PARAMS, f"Invalid params: unknown log level in {meta_keys.LOG_LEVEL}")
        return MODERN, version, caps, head.client_info, level

    def _initialize(self, raw: msgspec.Raw, session: Session) -> InitializeResult:
        params = _decode(raw, InitializeParams)
        if LEGACY not in self.registry.settings.policies:
            raise McpError(
                UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version: this server speaks only " + ", ".join(MODERN_PROTOCOL_VERSIONS),
                {"supported": list(MODERN_PROTOCOL_VERSIONS), "requested": echo(params.protocol_version)},
            )
        if session.initialized:
            raise McpError(INVALID_REQUEST, "Invalid Request: the session is already initialized")
        requested = params.protocol_version
        version = requested if requested in LEGACY_PROTOCOL_VERSIONS else LEGACY_PROTOCOL_VERSIONS[0]
        session.initialized = True
        session.protocol_version = version
        session.client_info = params.client_info
        session.client_capabilities = params.capabilities
        return InitializeResult(
            protocol_version=version,
            capabilities=self.registry.capabilities,
            server_info=self.info,
            instructions=self.instructions,
        )

    async def _discover(self, reg: Registry, ctx: Context, call: Call, params: Any) -> DiscoverResult:
        return DiscoverResult(
            supported_versions=self.supported_versions, capabilities=reg.modern_capabilities, instructions=self.instructions
        )
