"""One policy per protocol era: everything that differs between them, in one place.

Each side picks a policy once — the server per request (from ``_meta``, or from the
session's ``initialize``), the client once at negotiation — and asks it from then on,
instead of testing the era wherever a difference shows. The policies are stateless
and shared: :data:`MODERN` (2026-07-28) and :data:`LEGACY` (2025-11-25 back to
2024-11-05). Revision-level differences inside an era go through
:func:`~mcpkit.protocol.versions.supports`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Final, Literal, Protocol

import msgspec

from .errors import METHOD_NOT_FOUND, McpError, flatten_text
from .skills import DIRECTORY_READ, SKILL_METHODS, SKILLS_EXTENSION
from .types import Cacheable, Result
from .versions import LEGACY_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS, Era
from .wire_errors import has_status, internal_error, legacy_status_error, modern_status_error

__all__ = ["EraPolicy", "CachePolicy", "MODERN", "LEGACY", "BY_NAME"]


class CachePolicy(Protocol):
    """A server's defaults for the caching fields of modern results."""

    @property
    def cache_ttl_ms(self) -> int: ...

    @property
    def cache_scope(self) -> Literal["public", "private"]: ...


class EraPolicy(ABC):
    """What one era does differently. Subclassed once per era; never instantiated by
    users."""

    #: ``"modern"`` or ``"legacy"``.
    name: Era
    #: The revisions of this era, newest first.
    versions: tuple[str, ...]
    #: Requests carry the protocol version, capabilities and client info in ``_meta``;
    #: there is no handshake and no session.
    stateless: bool
    #: The request a client sends to check that the server answers.
    ping_method: str
    #: Log messages reach the client before it has chosen a level.
    log_by_default: bool
    #: Over HTTP: a client that disconnects cancels its request's handler.
    cancel_on_disconnect: bool
    #: Over HTTP: SSE streams are stored so that a dropped one can be resumed.
    resumable_streams: bool
    #: The tasks extension (docs/tasks.md) exists: a ``tools/call`` may become a task,
    #: ``tasks/*`` may be asked (2025-11-25's experimental tasks are another wire).
    tasks_extension: bool
    #: Methods that exist only in the other era (answered -32601 here).
    foreign_methods: frozenset[str]

    @abstractmethod
    def status_error(self, exc: BaseException, method: str, limit: int) -> McpError:
        """The error for a handler exception that carries an HTTP status."""

    @abstractmethod
    def error_status(self, error: McpError) -> int:
        """The HTTP status of a JSON response carrying ``error``."""

    def foreign_method(self, method: str) -> McpError:
        """The -32601 answer to ``method``, one of :attr:`foreign_methods`."""
        return McpError(METHOD_NOT_FOUND, f"Method not found: {flatten_text(method, 256)}")

    def finish_result(self, result: Any, server_meta: dict[str, Any], cache: CachePolicy) -> Any:
        """A handler's result as this era puts it on the wire; ``cache`` gives the
        server's default ``ttl_ms`` and ``cache_scope``."""
        return result

    def wire_error(self, exc: BaseException, method: str, *, expose: bool, limit: int) -> McpError:
        """The JSON-RPC error for an exception (not an ``McpError``) from a handler of
        ``method`` (docs/errors.md): one carrying an HTTP status maps as this era says
        (:meth:`status_error`); anything else is -32603 with only a reference id, the
        exception logged under it (its flattened text instead of ``"Internal error"``
        with ``expose``). Never raises."""
        if not has_status(exc):
            return internal_error(exc, f"handler for {method}", expose=expose, limit=limit)
        return self.status_error(exc, method, limit)

    def __repr__(self) -> str:
        return f"<{self.name} era policy>"


class _Modern(EraPolicy):
    name: Era = "modern"
    versions = MODERN_PROTOCOL_VERSIONS
    stateless = True
    ping_method = "server/discover"  # 2026-07-28 has no ping
    log_by_default = False
    cancel_on_disconnect = True
    resumable_streams = False
    tasks_extension = True
    foreign_methods = frozenset({"ping", "initialize", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"})

    def status_error(self, exc: BaseException, method: str, limit: int) -> McpError:
        return modern_status_error(exc, method, limit)

    def error_status(self, error: McpError) -> int:
        return error.http_status

    def finish_result(self, result: Any, server_meta: dict[str, Any], cache: CachePolicy) -> Any:
        """Every result says ``resultType: "complete"`` and names the server in
        ``_meta``; cacheable results get the server's TTL and scope unless they set
        their own."""
        if isinstance(result, Result):
            meta = {**result.meta, **server_meta} if result.meta else server_meta
            if isinstance(result, Cacheable):
                return msgspec.structs.replace(
                    result,
                    result_type="complete",
                    meta=meta,
                    ttl_ms=cache.cache_ttl_ms if result.ttl_ms is None else result.ttl_ms,
                    cache_scope=cache.cache_scope if result.cache_scope is None else result.cache_scope,
                )
            return msgspec.structs.replace(result, result_type="complete", meta=meta)
        if isinstance(result, dict):
            out = dict(result)
            out.setdefault("resultType", "complete")
            out["_meta"] = {**out.get("_meta", {}), **server_meta}
            return out
        return result


#: The skills extension's requests (docs/skills.md): defined against 2026-07-28 only.
_SKILLS_METHODS: Final = frozenset({*SKILL_METHODS, DIRECTORY_READ})


class _Legacy(EraPolicy):
    name: Era = "legacy"
    versions = LEGACY_PROTOCOL_VERSIONS
    stateless = False
    ping_method = "ping"
    log_by_default = True  # until the client sends logging/setLevel
    cancel_on_disconnect = False  # the handler runs on; the client may resume the stream
    resumable_streams = True
    tasks_extension = False
    foreign_methods = frozenset(
        {"server/discover", "subscriptions/listen", "tasks/get", "tasks/update", "tasks/cancel", *_SKILLS_METHODS}
    )

    def foreign_method(self, method: str) -> McpError:
        """-32601; for a method of the skills extension, saying which revision it needs."""
        if method in _SKILLS_METHODS:
            return McpError(
                METHOD_NOT_FOUND,
                f"Method not found: {method} is part of the skills extension ({SKILLS_EXTENSION}), which needs"
                f" protocol revision {MODERN_PROTOCOL_VERSIONS[0]}; this session negotiated an earlier one",
            )
        return super().foreign_method(method)

    def status_error(self, exc: BaseException, method: str, limit: int) -> McpError:
        return legacy_status_error(exc, limit)

    def error_status(self, error: McpError) -> int:
        return 200  # JSON-RPC errors ride on 200 in a session


MODERN: Final[EraPolicy] = _Modern()
LEGACY: Final[EraPolicy] = _Legacy()
#: Each era's policy by its name (what a peer's facts say: ``Client.era``).
BY_NAME: Final[dict[str, EraPolicy]] = {MODERN.name: MODERN, LEGACY.name: LEGACY}
