"""A stdio server for the resilience tests (tests/e2e/stdio/test_supervision.py,
tests/unit/client/test_progress_deadlines.py): ``python tests/support/servers/resilient.py LOG``.

Every start appends ``start <pid> <monotonic time>`` to the file ``LOG``, and every
call that matters appends a line too, so that a test can count what the server saw
across restarts. With ``--crash-after N`` a start after the first ``N`` exits at once
with status 3 (a server that crashes on every start from then on); with ``--hang-after N``
it never answers instead; with ``--fail-first N`` each of the first ``N`` starts writes
``cannot start: attempt K`` to stderr and exits with status 2 (a server that fails while
the client first connects).

Tools: ``lookup(tag)`` (read-only) and ``charge(tag)`` (not idempotent) log their call;
the first call with a ``tag`` reports progress once and then waits for ever (until the
process is killed), later ones answer. ``tick(seconds, interval)`` reports progress every
``interval`` seconds for ``seconds`` seconds. ``crash()`` exits with status 1 at once.
``pid()``. ``record(text)`` logs its text (the tests look for what never arrived).
``touch(uri)`` reports that resource ``data://<name>`` changed. Imported rather than
run (to serve it over HTTP in the test's process), it keeps its log in ``LINES``.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

from mcpkit import Context, Server, ToolAnnotations

server = Server("resilient", "1.0.0")
LOG = Path(sys.argv[1]) if __name__ == "__main__" else None  # imported (served in this process): in memory
LINES: list[str] = []


def log(line: str) -> None:
    if LOG is None:
        LINES.append(line)
        return
    with LOG.open("a", encoding="utf-8") as f:
        f.write(line + "\n")


def seen(line: str) -> int:
    lines = LOG.read_text(encoding="utf-8").splitlines() if LOG is not None else LINES
    return lines.count(line)


async def _first_hangs(kind: str, tag: str, ctx: Context) -> str:
    log(f"{kind} {tag}")
    if seen(f"{kind} {tag}") == 1:
        await ctx.report_progress(1, None, "started")
        await asyncio.Event().wait()
    return f"{kind} {tag} by {os.getpid()}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def lookup(tag: str, ctx: Context) -> str:
    """Read something (read-only: safe to retry)."""
    return await _first_hangs("lookup", tag, ctx)


@server.tool
async def charge(tag: str, ctx: Context) -> str:
    """Charge a card (not idempotent: never retried)."""
    return await _first_hangs("charge", tag, ctx)


@server.tool
async def tick(seconds: float, interval: float, ctx: Context) -> str:
    """Report progress every ``interval`` seconds for ``seconds`` seconds."""
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    step = 0
    while loop.time() < end:
        await asyncio.sleep(interval)
        step += 1
        await ctx.report_progress(step, None, f"tick {step}")
    return f"ticked {step} times"


@server.tool
def crash() -> str:
    """Exit at once, mid-call."""
    os._exit(1)


@server.tool
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool
def record(text: str) -> str:
    """Log ``text``."""
    log(f"record {text[:40]}")
    return "recorded"


@server.resource("data://{name}")
def data(name: str) -> str:
    """A resource that ``touch`` reports changed."""
    return f"data {name}"


@server.tool
async def touch(name: str) -> str:
    """Report that ``data://<name>`` changed."""
    await server.notify_resource_updated(f"data://{name}")
    return "touched"


if __name__ == "__main__":
    assert LOG is not None
    log(f"start {os.getpid()} {time.monotonic():.3f}")
    starts = sum(1 for line in LOG.read_text(encoding="utf-8").splitlines() if line.startswith("start "))
    if "--fail-first" in sys.argv and starts <= int(sys.argv[sys.argv.index("--fail-first") + 1]):
        print(f"cannot start: attempt {starts}", file=sys.stderr, flush=True)
        sys.exit(2)
    if "--crash-after" in sys.argv and starts > int(sys.argv[sys.argv.index("--crash-after") + 1]):
        sys.exit(3)
    if "--hang-after" in sys.argv and starts > int(sys.argv[sys.argv.index("--hang-after") + 1]):
        time.sleep(3600)  # started, but never answers
    server.run()
