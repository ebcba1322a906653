"""What every benchmark server shares: its command line and its tools (stdlib only, so
that the servers of the other SDKs, in their own virtual environments, import it too).

Every server offers the same tools:

- ``echo(text: str) -> str``: the text, unchanged;
- ``fail() -> str``: raises ``RuntimeError`` inside the handler;
- ``blob(size: int) -> str``: ``size`` times ``"x"`` (the large-result workload);
- ``dummy_0`` … ``dummy_{N-1}`` with ``--tools N``: two typed parameters each, so that
  every library builds a realistic input schema (the ``tools/list`` workload).

Flags: ``--tools N``; ``--http PORT`` serves Streamable HTTP on 127.0.0.1:PORT/mcp
instead of stdio; ``--stateful`` keeps sessions (the other SDKs are stateless over HTTP
unless told; mcpkit serves legacy clients with sessions and modern ones without, always);
``--async-tools`` declares ``echo``, ``fail`` and ``blob`` ``async def`` (by default they
are plain ``def``, which every library runs on a worker thread); ``--scale`` keeps
sessions and lifts the session and connection caps, for the scale figures; ``--ask``
(mcpkit's server only) also registers ``ask(text)``, an ``async def`` tool that asks the
client one question (an input round in the modern era, an ``elicitation/create`` round
trip in the legacy era); ``--listen`` (mcpkit's server only, HTTP) also registers the
resource ``bench://counter`` and ``touch()``, a tool that changes it and announces the
change to its subscribers, and lifts the caps on listens and connections (the fan-out).

``MCPBENCH_WRONG_ANSWERS=1`` in the environment makes the stdio floor's echo, mcpkit's
``ask`` and ``touch`` answer wrongly (a changed text, a changed name, every change
announced twice): how tests/perf/test_bench_workloads.py sees that the harness and the
clients catch a wrong answer and that ``run.py`` then exits 1. Never set for a measurement.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

#: The fault switch of the benchmark's own tests (see the module's docstring).
WRONG = os.environ.get("MCPBENCH_WRONG_ANSWERS") == "1"

DESCRIPTION = "Dummy tool number {i}; takes a name and a count and does nothing useful."


def parse_args(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--tools", type=int, default=0, help="extra dummy tools (the tools/list workload)")
    parser.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on 127.0.0.1:PORT/mcp")
    parser.add_argument("--stateful", action="store_true", help="HTTP: keep sessions")
    parser.add_argument("--async-tools", action="store_true", help="echo, fail and blob as async def")
    parser.add_argument("--scale", action="store_true", help="keep sessions; lift the session and connection caps")
    parser.add_argument("--ask", action="store_true", help="mcpkit only: also the ask tool, which asks the client once")
    parser.add_argument(
        "--listen", action="store_true", help="mcpkit only: the bench://counter resource and its touch tool (fan-out)"
    )
    return parser.parse_args()


def make_dummy(i: int) -> Callable[..., str]:
    """A distinct function per dummy tool, with two typed parameters and a docstring."""

    def dummy(name: str, count: int = 1) -> str:
        return f"{name}:{count}:{i}"

    dummy.__name__ = dummy.__qualname__ = f"dummy_{i}"
    dummy.__doc__ = DESCRIPTION.format(i=i)
    return dummy


def sync_tools() -> list[Callable[..., str]]:
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    def fail() -> str:
        """Always raises."""
        raise RuntimeError("intentional failure")

    def blob(size: int) -> str:
        """Return size times the letter x."""
        return "x" * size

    return [echo, fail, blob]


def async_tools() -> list[Callable[..., object]]:
    async def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    async def fail() -> str:
        """Always raises."""
        raise RuntimeError("intentional failure")

    async def blob(size: int) -> str:
        """Return size times the letter x."""
        return "x" * size

    return [echo, fail, blob]


def tools(args: argparse.Namespace) -> list[Callable[..., object]]:
    """The tools to register, in order: echo, fail, blob, then the dummies."""
    base: list[Callable[..., object]] = [*async_tools()] if args.async_tools else [*sync_tools()]
    return base + [make_dummy(i) for i in range(args.tools)]
