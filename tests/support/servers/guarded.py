"""A server behind the whole middleware library (tests/unit/middleware), in the order
docs/howto/middleware.md gives: ``python tests/support/servers/guarded.py`` serves it over
stdio; :func:`build` makes one in process, on a clock the test moves.

Order: RequestLog (logger ``guarded.requests``), Timing (into ``timings``), RateLimit (3
``prompts/get`` per client, 1 a second back), ResponseCache (30 s), ConcurrencyLimit (1
call at a time per tool, refused beyond; ``echo`` 100), ErrorMapping (``KeyError`` ->
-32602, ``PermissionError`` -> a tool error), then ``deny``: a PermissionError for a
request whose ``_meta`` says ``deny``.

Tools: ``echo(text)``; ``counter()`` read-only, the number of times it or ``bump`` ran;
``bump()`` (not read-only) the same, one more; ``slow(tag)`` runs until ``release(tag)``
(``started(tag)`` answers once it has); ``touch()`` announces ``data://greeting``
updated, ``grow(name)`` adds a tool. Resource ``data://greeting`` (its reads counted
in ``reads``); prompt ``hello(name)``, which raises KeyError for ``name="nobody"`` and PermissionError for ``"root"``.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

from mcpkit import INVALID_PARAMS, CallNext, Context, Server, ToolAnnotations
from mcpkit.middleware import ConcurrencyLimit, ErrorMapping, Outcome, RateLimit, RequestLog, ResponseCache, Timing


class Clock:
    """A clock that moves only when told (seconds)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Guarded:
    """The server and what its middleware and handlers saw."""

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock or Clock()
        self.timings: list[tuple[str, str | None, float, Outcome]] = []
        self.runs = 0
        self.reads = 0
        self.started: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)
        self.gates: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)
        server = self.server = Server("guarded")
        clock = self.clock
        server.use(RequestLog("guarded.requests", clock=clock))
        server.use(Timing(lambda *sample: self.timings.append(sample), otel=False, clock=clock))
        self.rate = RateLimit(3, 1.0, key="client", methods=["prompts/get"], clock=clock)
        server.use(self.rate)
        self.cache = ResponseCache(server, ttl=30, clock=clock)
        server.use(self.cache)
        self.concurrency = ConcurrencyLimit(1, limits={"echo": 100})
        server.use(self.concurrency)
        server.use(ErrorMapping({KeyError: INVALID_PARAMS, PermissionError: "tool"}))

        @server.use
        async def deny(ctx: Context, call_next: CallNext) -> Any:
            """Raises PermissionError for a request whose ``_meta`` asks for it."""
            if ctx.meta.get("deny"):
                raise PermissionError("callers from outside may not do this")
            return await call_next()

        @server.tool
        def echo(text: str) -> str:
            return text

        @server.tool(annotations=ToolAnnotations(read_only_hint=True))
        def counter() -> int:
            self.runs += 1
            return self.runs

        @server.tool
        def bump() -> int:
            self.runs += 1
            return self.runs

        @server.tool
        async def slow(tag: str) -> str:
            self.started[tag].set()
            await self.gates[tag].wait()
            return f"{tag} done"

        @server.tool
        async def touch() -> str:
            """Announce that data://greeting changed."""
            await server.notify_resource_updated("data://greeting")
            return "touched"

        @server.tool
        def grow(name: str) -> str:
            """Add a tool (the tool list changes)."""
            server.add_tool(name, None, {"type": "object"}, lambda arguments: name)
            return "grown"

        @server.tool
        def release(tag: str) -> str:
            self.gates[tag].set()
            return "released"

        @server.tool
        async def started(tag: str) -> str:
            await self.started[tag].wait()
            return "started"

        @server.resource("data://greeting")
        def greeting() -> str:
            self.reads += 1
            return f"hello #{self.reads}"

        @server.prompt
        def hello(name: str) -> str:
            if name == "nobody":
                raise KeyError(f"no such person: {name}")
            if name == "root":
                raise PermissionError("root is not greeted")
            return f"Say hello to {name}."


def build(clock: Clock | None = None) -> Guarded:
    return Guarded(clock)


if __name__ == "__main__":
    build().server.run()
