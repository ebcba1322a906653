"""A small mcpkit server for the stdio tests: ``python tests/support/servers/basic.py``.

Tools:

* ``echo(text)`` returns ``text``;
* ``sleep(seconds, tag="")`` sleeps; with a ``tag`` it records its request id, that the
  call started and, if it is cancelled, that it was cancelled;
* ``wait_for(tag, state, timeout=5.0)`` waits until the ``sleep`` call tagged ``tag``
  reached ``state`` (``"started"`` or ``"cancelled"``) and returns it (or ``"timeout"``), so that a
  test over stdio can observe server-side cancellation without sleeping;
* ``meet(tag, n, timeout=10.0)`` answers ``"met"`` once ``n`` calls tagged ``tag`` are
  in progress at the same time (``"timeout"`` if that does not happen in time), so that
  a test can prove handlers overlap without timing them;
* ``request_id(tag)`` returns the JSON-RPC id of the ``sleep`` call tagged ``tag`` (as
  JSON text), so that a test can match it with what its client saw;
* ``whoami()`` returns ``"<era> <protocol version>"`` as the server sees the request;
* ``count(steps)`` reports progress ``1..steps`` of ``steps`` and returns ``"counted"``;
* ``fail(message)`` raises an ordinary exception (an ``isError`` result);
* ``mcp_error(code, message)`` raises ``McpError`` (a JSON-RPC error, verbatim).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import defaultdict

from mcpkit import Context, McpError, Server

server = Server("basic", "1.0.0")

_events: defaultdict[tuple[str, str], asyncio.Event] = defaultdict(asyncio.Event)
_request_ids: dict[str, int | str] = {}
_arrived: defaultdict[str, int] = defaultdict(int)


@server.tool
def echo(text: str) -> str:
    """Return the text unchanged.

    Args:
        text: What to echo.
    """
    return text


@server.tool
async def sleep(seconds: float, ctx: Context, tag: str = "") -> str:
    """Sleep for a while.

    Args:
        seconds: How long to sleep.
        tag: A name under which the start and a cancellation are recorded.
    """
    if tag:
        _request_ids[tag] = ctx.request_id
        _events[(tag, "started")].set()
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        if tag:
            _events[(tag, "cancelled")].set()
            print(f"basic.py: sleep {tag!r} cancelled", file=sys.stderr, flush=True)
        raise
    return f"slept {seconds}"


@server.tool
async def wait_for(tag: str, state: str, timeout: float = 5.0) -> str:
    """Wait until the ``sleep`` call tagged ``tag`` reached ``state``; returns ``state``,
    or ``"timeout"`` if it did not get there in time.

    Args:
        tag: The tag given to ``sleep``.
        state: ``started`` or ``cancelled``.
        timeout: How long to wait, in seconds.
    """
    try:
        await asyncio.wait_for(_events[(tag, state)].wait(), timeout)
    except TimeoutError:
        return "timeout"
    return state


@server.tool
async def meet(tag: str, n: int, timeout: float = 10.0) -> str:
    """Wait until ``n`` calls tagged ``tag`` are in progress together; ``"met"``, or
    ``"timeout"`` if they were not in time.

    Args:
        tag: Names the meeting.
        n: How many calls meet.
        timeout: How long to wait, in seconds.
    """
    _arrived[tag] += 1
    if _arrived[tag] >= n:
        _events[(tag, "met")].set()
    try:
        await asyncio.wait_for(_events[(tag, "met")].wait(), timeout)
    except TimeoutError:
        return "timeout"
    return "met"


@server.tool
def request_id(tag: str) -> str:
    """The JSON-RPC id of the ``sleep`` call tagged ``tag``, as JSON (``null`` if none).

    Args:
        tag: The tag given to ``sleep``.
    """
    return json.dumps(_request_ids.get(tag))


@server.tool
def whoami(ctx: Context) -> str:
    """The era and protocol version of this request, as the server sees them."""
    return f"{ctx.era} {ctx.protocol_version}"


@server.tool
async def count(steps: int, ctx: Context) -> str:
    """Report progress ``steps`` times.

    Args:
        steps: How many progress notifications to send.
    """
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i}")
    return "counted"


@server.tool
def fail(message: str) -> str:
    """Raise an ordinary exception.

    Args:
        message: The exception's message.
    """
    raise RuntimeError(message)


@server.tool
def mcp_error(code: int, message: str) -> str:
    """Raise a deliberate protocol error.

    Args:
        code: The JSON-RPC error code.
        message: The error message.
    """
    raise McpError(code, message, {"detail": "chosen on purpose"})


if __name__ == "__main__":
    server.run()
