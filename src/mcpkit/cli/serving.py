"""Serving from the command line (``mcpkit run``, ``mcpkit proxy``): where to serve —
stdio, or HTTP on a host, port and path — from the flags, else from the ``MCPKIT_*``
variables :meth:`Server.run` reads (docs/deploy.md#settings-from-the-environment)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ..server.environment import from_environment

if TYPE_CHECKING:
    from ..server.server import Server

__all__ = ["serve"]


def serve(server: Server, what: str, *, use_http: bool, host: str | None, port: int | None, path: str | None) -> None:
    """Serve ``server`` until stopped, saying on stderr where when it is HTTP: over HTTP
    when ``use_http`` or ``MCPKIT_TRANSPORT=http``, each of ``host``, ``port`` and
    ``path`` that is None taken from the environment, else its default. Raises
    ``click.UsageError`` for ``--host``, ``--port`` or ``--path`` without HTTP, or for
    an ``MCPKIT_*`` variable that does not parse."""
    try:
        env = from_environment().run
    except ValueError as exc:
        raise click.UsageError(f"cannot use the environment: {exc}") from None
    if not use_http and env.get("transport") != "http":
        if host is not None or port is not None or path is not None:
            raise click.UsageError("--host, --port and --path need --http (or MCPKIT_TRANSPORT=http)")
        server.run("stdio")
        return
    host = host if host is not None else env.get("host", "127.0.0.1")
    port = port if port is not None else env.get("port", 8000)
    path = path if path is not None else env.get("path", "/mcp")
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"mcpkit: serving {what} at http://{shown}:{port}{path} (Ctrl-C stops)", err=True)
    server.run("http", host=host, port=port, path=path)
