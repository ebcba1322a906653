"""What ``mcpkit proxy`` serves (docs/cli.md): the upstream of a TARGET, or those of the
servers of a host's configuration file, each a function that opens a fresh transport for
every upstream session. Loaded by that command only."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import click

from ..host.config import ConfigError, load_config
from ..transports.stdio.process import StdioTransport
from .session import parse_target

__all__ = ["target_upstream", "configured_upstreams"]


def target_upstream(target: str, headers: Mapping[str, str]) -> Callable[[], Any]:
    """A fresh transport to TARGET (a command, spawned with its stderr this process's, or
    a URL with ``headers``) for each upstream session. Raises ``BadParameter``."""
    try:
        found = parse_target(target, dict(headers))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="TARGET") from None
    command = found.command

    def connect() -> Any:
        return found.transport() if command is None else StdioTransport(command, stderr="inherit")

    return connect


def configured_upstreams(config: str, servers: Sequence[str]) -> dict[str, Callable[[], Any]]:
    """A fresh transport for each upstream session, for each enabled server of the host
    configuration at ``config`` (or those ``servers`` name), by name. Raises
    ``UsageError`` for a file that cannot be used, a server it does not have, or none
    enabled."""
    try:
        found = load_config(config, workspace=os.getcwd())
    except (ConfigError, OSError) as exc:
        raise click.UsageError(f"cannot use {config}: {exc}") from None
    unknown = [name for name in servers if name not in found]
    if unknown:
        raise click.UsageError(f"no server {unknown[0]!r} in {config} (it has {', '.join(found) or 'none'})")
    chosen = [found[name] for name in servers] if servers else [entry for entry in found.values() if not entry.disabled]
    if not chosen:
        raise click.UsageError(f"{config} has no enabled server to proxy")
    return {entry.name: functools.partial(entry.transport, stderr="inherit") for entry in chosen}
