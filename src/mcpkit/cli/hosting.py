"""``mcpkit --config FILE list|call|read|prompt``: the client commands over the servers of
a host's configuration file, as one :class:`~mcpkit.ClientGroup` (docs/cli.md).

Items are named ``server.name``. A command starts only the servers it needs — ``call`` and
``prompt`` the one their name begins with, ``list`` and ``read`` all of them (or those of
``--server``) — and reports every server that could not start on stderr, with the last
lines of its stderr, without failing the others: ``list`` succeeds while any server
answers. A call's failure becomes the exit code a single server's would (docs/cli.md).
Imported only by those commands (it prints with rich)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from rich.markup import escape

from ..client.options import ClientOptions
from ..host.config import ConfigError
from ..host.group import ClientGroup
from ..protocol.errors import McpError
from .render import Output
from .session import CONNECTION, USAGE, report_failure, without_inline_tail

__all__ = ["GroupCommand", "Plan", "run_group", "server_of", "states_json"]

#: What a command does with the group: ``action(group, out)`` -> exit code.
GroupCommand = Callable[[ClientGroup, Output], Awaitable[int]]
#: Which servers a command starts (None: all), and which one its failures concern (known
#: after they started: ``focus(group)``, None when it is not one).
Plan = tuple[Sequence[str] | None, Callable[[ClientGroup], str | None]]


def server_of(name: str, servers: Sequence[str]) -> str | None:
    """The server of ``servers`` that an item named ``server.name`` belongs to (the
    longest that fits: server names may hold dots too), or None."""
    fitting = [server for server in servers if name.startswith(server + ".") and len(name) > len(server) + 1]
    return max(fitting, key=len) if fitting else None


async def run_group(
    path: str, options: ClientOptions, plan: Callable[[ClientGroup], Plan], action: GroupCommand, out: Output
) -> int:
    """Read the configuration at ``path``, start the servers ``plan(group)`` names, run
    ``action`` and close; the exit code. Servers that failed to start are noted on stderr;
    none at all up is a connection failure; the action's failures are reported as a
    single server's would be, with that server's stderr."""
    try:
        group = ClientGroup.from_config(path, options, restart=False, workspace=os.getcwd())
    except (ConfigError, OSError) as exc:
        out.error(USAGE, "usage", None, f"cannot use {path}: {exc}", None)
        return USAGE
    try:
        names, focus = plan(group)
    except ValueError as exc:
        out.error(USAGE, "usage", None, str(exc), None)
        return USAGE
    started = list(names) if names is not None else list(group.servers)
    unknown = [name for name in started if name not in group.servers]
    if unknown:
        out.error(USAGE, "usage", None, f"no server {unknown[0]!r} in {path} (it has {', '.join(group.servers) or 'none'})", None)
        return USAGE
    try:
        await group.start(*started)
        states = group.servers
        for name in started:
            state = states[name]
            if state.state == "failed":
                tail = group.stderr(name)
                error = without_inline_tail(state.error or "") if tail else state.error
                note = f"server {name!r} is not available: {error}" + "".join(f"\n  {line}" for line in tail)
                out.note(f"[yellow]{escape(note)}[/]")
        if not any(states[name].healthy for name in started):
            out.error(
                CONNECTION, "connection", None, f"no server could be reached ({', '.join(started) or 'none configured'})", None
            )
            return CONNECTION
        try:
            return await action(group, out)
        except (McpError, OSError) as exc:
            server = _focus(focus, group)
            url = _url(group, server)
            await group.close()  # a spawned server's stderr is read to its end
            stderr = group.stderr(server, lines=500) if server is not None else []
            return report_failure(exc, options, out.error, stderr=stderr, url=url)
    finally:
        await asyncio.shield(group.close())


def _focus(focus: Callable[[ClientGroup], str | None], group: ClientGroup) -> str | None:
    try:
        return focus(group)
    except ValueError:  # an ambiguous URI, say
        return None


def _url(group: ClientGroup, server: str | None) -> str | None:
    if server is None:
        return None
    description = group.state(server).description
    return description.split(" ", 1)[0] if description.startswith(("http://", "https://")) else None


def states_json(group: ClientGroup) -> dict[str, Any]:
    """Every server's state for ``--json``: name -> ``{"state", "error"}``."""
    return {name: {"state": s.state, "error": s.error} for name, s in group.servers.items()}
