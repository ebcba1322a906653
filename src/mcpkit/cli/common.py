"""What every client command shares: its options (``--era``, ``--timeout``, ``--json``,
``-H``, ``--log-level``), the client's options made from them, and running one action
against a TARGET with its failures turned into the documented exit codes. Used by
``main.py`` and by the command groups of their own modules (``skills.py``)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import click

from .session import INTERRUPTED, client_options, parse_target, run_session

if TYPE_CHECKING:
    from ..client.client import Client
    from ..client.options import ClientOptions
    from .render import Output

__all__ = ["ERAS", "LOG_LEVELS", "Common", "common_options", "headers_of", "options_of", "client_command"]

ERAS = click.Choice(["auto", "modern", "legacy"])
LOG_LEVELS = click.Choice(["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"])


@dataclasses.dataclass(frozen=True)
class Common:
    """The options every client command takes."""

    era: str
    timeout: float
    as_json: bool
    headers: tuple[str, ...]
    log_level: str | None


def common_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with the options of :class:`Common` added."""
    options = [
        click.option("--era", type=ERAS, default="auto", show_default=True,
                     help="Protocol era: probe (auto), modern (2026-07-28) or legacy (2025-11-25)."),
        click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=30.0, show_default=True,
                     help="Seconds to wait for each answer (exit code 3 past it)."),
        click.option("--json", "as_json", is_flag=True, help="Print the result (or the error) as JSON on stdout."),
        click.option("-H", "--header", "headers", multiple=True, metavar="'NAME: VALUE'",
                     help="An HTTP header for a URL target (repeatable)."),
        click.option("--log-level", type=LOG_LEVELS, default=None,
                     help="Ask the server for log messages from this level on; they are printed on stderr."),
    ]  # fmt: skip
    for option in reversed(options):
        fn = option(fn)
    return fn


def headers_of(values: Sequence[str]) -> dict[str, str]:
    """The ``-H 'Name: value'`` options as headers. Raises ``click.BadParameter``."""
    headers: dict[str, str] = {}
    for value in values:
        name, sep, text = value.partition(":")
        if not sep or not name.strip():
            raise click.BadParameter(f"{value!r} is not 'Name: value'", param_hint="--header")
        headers[name.strip()] = text.strip()
    return headers


def client_command(target: str, common: Common, action: Callable[[Client, Output], Awaitable[int]]) -> int:
    """Run ``action`` against ``target``; the exit code."""
    from .render import Output

    out = Output(common.as_json)
    try:
        where = parse_target(target, headers_of(common.headers))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="TARGET") from None

    def on_log(level: str, data: Any, logger: str | None) -> None:
        text = data if isinstance(data, str) else json.dumps(data)
        out.err.print(f"[dim]log {level}{' ' + logger if logger else ''}: {text}[/]", markup=True, highlight=False)

    options = options_of(common, on_log)
    try:
        return asyncio.run(run_session(where, options, lambda client: action(client, out), out.error))
    except KeyboardInterrupt:
        return INTERRUPTED


def options_of(common: Common, on_log: Callable[[str, Any, str | None], None] | None) -> ClientOptions:
    """The client's options for ``common``. Raises ``click.BadParameter`` for a bad timeout."""
    try:
        return client_options(common.era, common.timeout, on_log, common.log_level)  # type: ignore[arg-type]
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
