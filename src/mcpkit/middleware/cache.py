"""Caching idempotent reads: :class:`ResponseCache`, answers kept for a while per
principal, forgotten when the server announces a change (docs/subscriptions.md)."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from ..protocol.errors import McpError
from ..protocol.tasks import Task
from ..protocol.types import CallToolResult
from ..server.context import Context
from ..server.registry import CallNext
from ..server.server import Server
from .outcome import principal_of

__all__ = ["ResponseCache", "CACHEABLE"]

#: The methods a :class:`ResponseCache` caches by default, and the list whose change
#: makes it forget their answers (``tools/call``: read-only tools only).
CACHEABLE: Final = {
    "tools/list": "tools",
    "tools/call": "tools",
    "prompts/list": "prompts",
    "prompts/get": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resources",
    "resources/read": "resources",
}
#: The list each change notification names.
_CHANGED: Final = {
    "notifications/tools/list_changed": "tools",
    "notifications/prompts/list_changed": "prompts",
    "notifications/resources/list_changed": "resources",
}


@dataclass(slots=True)
class _Entry:
    result: Any
    expires: float
    group: str
    uri: str | None


class ResponseCache:
    """Middleware that answers repeated idempotent reads of ``server`` from a cache:
    ``tools/list``, ``prompts/list``, ``resources/list``, ``resources/templates/list``,
    ``resources/read``, ``prompts/get``, and ``tools/call`` of a tool whose annotations
    say ``readOnlyHint`` (``methods`` chooses among them; ``tools=`` names more tools
    whose calls may be cached, and ``read_only=False`` caches no tool by its
    annotations).

    An answer is kept ``ttl`` seconds on ``clock`` (monotonic), at most
    ``max_entries`` of them (past it the least recently used goes). It is keyed by the
    method, its params (``_meta`` left out), the protocol revision and the
    authenticated principal, so that one principal never gets another's answer (without
    authorization all clients share one, and a handler whose answer depends on who
    asks must not be cached). Only successful answers are kept: not errors, not
    ``isError`` tool results, not tasks.

    The cache forgets a list's answers when ``server`` announces that list changed
    (``tools``: its listing and its tools' calls; ``resources``: the listings and every
    read), and a resource's reads when it announces the resource updated — on this
    process or, through a shared bus, another; a change made on this process is
    forgotten when it is made, so the request that follows it is not answered stale. A read still running when such a change
    is announced is not kept. ``close()`` stops listening.

    A hit returns the cached result without running what comes after this middleware
    (the handler, the middleware registered later); cancellation propagates and keeps
    nothing. Raises ``ValueError`` at construction for a non-positive ``ttl``, a
    ``max_entries`` below 1 or a method it cannot cache.
    """

    def __init__(
        self,
        server: Server,
        *,
        ttl: float = 60.0,
        max_entries: int = 1000,
        methods: Collection[str] | None = None,
        read_only: bool = True,
        tools: Collection[str] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not ttl > 0 or max_entries < 1:
            raise ValueError("ttl must be positive and max_entries at least 1")
        chosen = frozenset(methods) if methods is not None else frozenset(CACHEABLE)
        unknown = chosen - CACHEABLE.keys()
        if unknown:
            raise ValueError(f"not cacheable: {sorted(unknown)}")
        self.ttl = ttl
        self.max_entries = max_entries
        self.methods = chosen
        self.read_only = read_only
        self.tools = frozenset(tools)
        self.hits = 0
        self.misses = 0
        self._server = server
        self._clock = clock
        self._entries: OrderedDict[bytes, _Entry] = OrderedDict()
        self._generation = 0  # bumped by every change: what was read before it is not kept
        self.close = server.on_change(self._changed, at_once=True)

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Forget every answer."""
        self._entries.clear()
        self._generation += 1

    async def __call__(self, ctx: Context, call_next: CallNext) -> Any:
        key = self._key(ctx)
        if key is None:
            return await call_next()
        now = self._clock()
        entry = self._entries.get(key)
        if entry is not None:
            if entry.expires > now:
                self._entries.move_to_end(key)
                self.hits += 1
                return entry.result
            del self._entries[key]
        self.misses += 1
        generation = self._generation
        result = await call_next()
        if generation == self._generation and _keepable(result):
            uri = ctx.params.get("uri") if ctx.method == "resources/read" else None
            self._entries[key] = _Entry(result, self._clock() + self.ttl, CACHEABLE[ctx.method], uri)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return result

    def _key(self, ctx: Context) -> bytes | None:
        if ctx.method not in self.methods:
            return None
        try:
            params = {k: v for k, v in ctx.params.items() if k != "_meta"}
        except McpError:
            return None
        if "task" in params:  # a task-augmented call: its answer is a new task each time
            return None
        if ctx.method == "tools/call" and not self._cacheable_tool(params.get("name")):
            return None
        who = principal_of(ctx)
        try:
            return msgspec.json.encode([ctx.method, ctx.protocol_version, who, params], order="deterministic")
        except (TypeError, msgspec.EncodeError):
            return None

    def _cacheable_tool(self, name: Any) -> bool:
        if not isinstance(name, str):
            return False
        if name in self.tools:
            return True
        if not self.read_only:
            return False
        tool = self._server.describe_tool(name)
        hints = tool.annotations if tool is not None else None
        return bool(hints is not None and hints.read_only_hint)

    def _changed(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/resources/updated":
            uri = params.get("uri")
            self._drop(lambda entry: entry.uri == uri)
        elif method in _CHANGED:
            group = _CHANGED[method]
            self._drop(lambda entry: entry.group == group)

    def _drop(self, which: Callable[[_Entry], bool]) -> None:
        self._generation += 1
        for key in [key for key, entry in self._entries.items() if which(entry)]:
            del self._entries[key]


def _keepable(result: Any) -> bool:
    if isinstance(result, Task):
        return False
    return not (isinstance(result, CallToolResult) and result.is_error)
