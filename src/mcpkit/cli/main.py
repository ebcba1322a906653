"""The ``mcpkit`` command (docs/cli.md): ``run`` and ``dev`` serve a server of yours;
``list``, ``call``, ``read`` and ``prompt`` talk to any server, spawned (a command
line) or remote (a URL).

Exit codes: 0 ok, 1 the tool failed (``isError``), 2 the server answered with a
protocol error, 3 timeout, 4 the server could not be started or reached; 64 a usage
error, 69 ``dev`` without an Inspector, 130 interrupted.

Built on click (the command-line library uvicorn already depends on) and rich (the
tables and the progress bar); rich is imported only by the commands that print.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import click

from .._version import __version__
from ..protocol.versions import supports
from .session import (
    INTERRUPTED,
    OK,
    TOOL_ERROR,
    USAGE,
    client_options,
    parse_target,
    run_session,
)

if TYPE_CHECKING:
    from ..client.client import Client
    from .render import Output

__all__ = ["main", "cli"]

_ERAS = click.Choice(["auto", "modern", "legacy"])
_LOG_LEVELS = click.Choice(["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"])


@dataclasses.dataclass(frozen=True)
class _Common:
    """The options every client command takes."""

    era: str
    timeout: float
    as_json: bool
    headers: tuple[str, ...]
    log_level: str | None


def _common_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--era", type=_ERAS, default="auto", show_default=True,
                     help="Protocol era: probe (auto), modern (2026-07-28) or legacy (2025-11-25)."),
        click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=30.0, show_default=True,
                     help="Seconds to wait for each answer (exit code 3 past it)."),
        click.option("--json", "as_json", is_flag=True, help="Print the result (or the error) as JSON on stdout."),
        click.option("-H", "--header", "headers", multiple=True, metavar="'NAME: VALUE'",
                     help="An HTTP header for a URL target (repeatable)."),
        click.option("--log-level", type=_LOG_LEVELS, default=None,
                     help="Ask the server for log messages from this level on; they are printed on stderr."),
    ]  # fmt: skip
    for option in reversed(options):
        fn = option(fn)
    return fn


def _headers(values: Sequence[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for value in values:
        name, sep, text = value.partition(":")
        if not sep or not name.strip():
            raise click.BadParameter(f"{value!r} is not 'Name: value'", param_hint="--header")
        headers[name.strip()] = text.strip()
    return headers


def _arguments(text: str | None, pairs: Sequence[str], *, strings: bool = False) -> dict[str, Any]:
    """The arguments of a call: a JSON object, then ``NAME=VALUE`` pairs (a value is
    JSON when it parses as JSON, else a string). ``strings``: every value as a string
    (prompt arguments)."""
    args: dict[str, Any] = {}
    if text:
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise click.BadParameter(f"not valid JSON: {exc}", param_hint="ARGUMENTS") from None
        if not isinstance(value, dict):
            raise click.BadParameter("must be a JSON object, such as '{\"name\": \"value\"}'", param_hint="ARGUMENTS")
        args.update(value)
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"{pair!r} is not NAME=VALUE", param_hint="--arg")
        try:
            args[name] = json.loads(raw)
        except ValueError:
            args[name] = raw
    if strings:
        args = {key: value if isinstance(value, str) else json.dumps(value) for key, value in args.items()}
    return args


def _client_command(target: str, common: _Common, action: Callable[[Client, Output], Awaitable[int]]) -> int:
    """Run ``action`` against ``target``; the exit code."""
    from .render import Output

    out = Output(common.as_json)
    try:
        where = parse_target(target, _headers(common.headers))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="TARGET") from None

    def on_log(level: str, data: Any, logger: str | None) -> None:
        text = data if isinstance(data, str) else json.dumps(data)
        out.err.print(f"[dim]log {level}{' ' + logger if logger else ''}: {text}[/]", markup=True, highlight=False)

    try:
        options = client_options(common.era, common.timeout, on_log, common.log_level)  # type: ignore[arg-type]
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    try:
        return asyncio.run(run_session(where, options, lambda client: action(client, out), out.error))
    except KeyboardInterrupt:
        return INTERRUPTED


# --- the commands ------------------------------------------------------------------------------


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="mcpkit", message="%(prog)s %(version)s")
def cli() -> None:
    """Run, inspect and call Model Context Protocol servers.

    TARGET is a server command, spawned and spoken to over stdio ("python server.py",
    "node build/index.js stdio"), or the URL of a Streamable HTTP endpoint
    (http://127.0.0.1:8000/mcp).

    Exit codes: 0 ok, 1 tool error, 2 protocol error, 3 timeout, 4 connection
    (the server could not be started or reached); 64 usage error.
    """


@cli.command()
@click.argument("app")
@click.option("--http", "use_http", is_flag=True, help="Serve Streamable HTTP instead of stdio.")
@click.option("--host", default=None, help="The address to listen on with --http.  [default: 127.0.0.1]")
@click.option("--port", type=click.IntRange(0, 65535), default=None, help="The port to listen on with --http.  [default: 8000]")
@click.option("--path", default="/mcp", show_default=True, help="The endpoint's path with --http.")
def run(app: str, use_http: bool, host: str | None, port: int | None, path: str) -> int:
    """Serve APP over stdio, or over HTTP with --http.

    APP is a file or an importable module, with the server's name after a colon when
    it is not called server, mcp or app: app.py, app.py:my_server, package.module:server.
    """
    from .loader import AppNotFound, load_server

    if not use_http and (host is not None or port is not None):
        raise click.UsageError("--host and --port need --http")
    try:
        server = load_server(app)
    except AppNotFound as exc:
        raise click.BadParameter(str(exc), param_hint="APP") from None
    if use_http:
        host, port = host or "127.0.0.1", 8000 if port is None else port
        shown = f"[{host}]" if ":" in host else host
        click.echo(f"mcpkit: serving {app} at http://{shown}:{port}{path} (Ctrl-C stops)", err=True)
        server.run("http", host=host, port=port, path=path)
    else:
        server.run()
    return OK


@cli.command("list")
@click.argument("target")
@click.argument("what", type=click.Choice(["all", "tools", "resources", "templates", "prompts"]), default="all")
@_common_options
def list_(target: str, what: str, **common: Any) -> int:
    """List what TARGET offers: its tools, resources, resource templates and prompts
    (all by default, or only WHAT)."""

    async def action(client: Client, out: Output) -> int:
        caps = client.server_capabilities
        version = client.protocol_version
        if not caps and version is not None and not supports(version, "sessions"):  # no handshake told them (pinned): ask
            caps = (await client.discover()).capabilities or {}
        wanted = ["tools", "resources", "templates", "prompts"] if what == "all" else [what]
        if what == "all":  # only what the server says it has
            wanted = [kind for kind in wanted if ("resources" if kind == "templates" else kind) in caps]
        found: dict[str, Any] = {}
        if "tools" in wanted:
            found["tools"] = await client.list_all_tools()
        if "resources" in wanted:
            found["resources"] = await client.list_all_resources()
        if "templates" in wanted:
            found["resourceTemplates"] = await client.list_all_resource_templates()
        if "prompts" in wanted:
            found["prompts"] = await client.list_all_prompts()
        if out.as_json:
            out.json(found)
            return OK
        for key, show in (("tools", out.tools), ("resources", out.resources),
                          ("resourceTemplates", out.templates), ("prompts", out.prompts)):  # fmt: skip
            if key in found:
                show(found[key])
        if not found:
            out.note("the server offers no tools, resources or prompts")
        return OK

    return _client_command(target, _Common(**common), action)


@cli.command()
@click.argument("target")
@click.argument("tool")
@click.argument("arguments", required=False)
@click.option("-a", "--arg", "pairs", multiple=True, metavar="NAME=VALUE",
              help="An argument (repeatable); VALUE is JSON if it parses as JSON, else a string.")  # fmt: skip
@click.option("--no-progress", is_flag=True, help="No progress bar (it shows only on a terminal anyway).")
@_common_options
def call(target: str, tool: str, arguments: str | None, pairs: tuple[str, ...], no_progress: bool, **common: Any) -> int:
    """Call TOOL on TARGET with ARGUMENTS, a JSON object.

    Prints the tool's content (or, with --json, its whole result). While it runs, the
    server's progress notifications drive a progress bar on stderr. Exits 1 when the
    tool reports an error.
    """
    args = _arguments(arguments, pairs)

    async def action(client: Client, out: Output) -> int:
        from .render import ProgressBar

        with ProgressBar(out, tool, enabled=not no_progress) as bar:
            result = await client.call_tool(tool, args, on_progress=bar.update if bar.enabled else None)
        out.tool_result(result)
        return TOOL_ERROR if result.is_error else OK

    return _client_command(target, _Common(**common), action)


@cli.command()
@click.argument("target")
@click.argument("uri")
@_common_options
def read(target: str, uri: str, **common: Any) -> int:
    """Read the resource at URI from TARGET (text as it is; binary contents described)."""

    async def action(client: Client, out: Output) -> int:
        out.resource(await client.read_resource(uri))
        return OK

    return _client_command(target, _Common(**common), action)


@cli.command()
@click.argument("target")
@click.argument("name")
@click.argument("arguments", required=False)
@click.option("-a", "--arg", "pairs", multiple=True, metavar="NAME=VALUE", help="An argument (repeatable).")
@_common_options
def prompt(target: str, name: str, arguments: str | None, pairs: tuple[str, ...], **common: Any) -> int:
    """Get the prompt NAME from TARGET, filled in with ARGUMENTS (a JSON object of strings)."""
    args = _arguments(arguments, pairs, strings=True)

    async def action(client: Client, out: Output) -> int:
        out.prompt(await client.get_prompt(name, args or None))
        return OK

    return _client_command(target, _Common(**common), action)


@cli.command()
@click.argument("app")
@click.option("--port", type=click.IntRange(0, 65535), default=0, help="The server's port.  [default: a free one]")
@click.option("--inspector-port", type=click.IntRange(1, 65535), default=6274, show_default=True,
              help="The Inspector's web UI port.")  # fmt: skip
@click.option("--era", type=_ERAS, default="auto", show_default=True, help="The protocol era the Inspector speaks.")
@click.option("--open/--no-open", "open_browser", default=True, help="Open the Inspector in a browser.")
def dev(app: str, port: int, inspector_port: int, era: str, open_browser: bool) -> int:
    """Serve APP over HTTP and open the MCP Inspector on it.

    Needs Node.js: the Inspector (@modelcontextprotocol/inspector, pinned) is found in
    .cache/inspector or the user cache, or installed there with npm on first use.
    Ctrl-C stops both.
    """
    from .dev import run_dev

    return run_dev(app, port=port, inspector_port=inspector_port, era=era, open_browser=open_browser)


def main(argv: Sequence[str] | None = None) -> None:
    """The ``mcpkit`` entry point: run the command, exit with its code. Usage errors
    exit 64 (click's usual 2 would read as a protocol error)."""
    try:
        code = cli.main(args=list(argv) if argv is not None else None, prog_name="mcpkit", standalone_mode=False)
    except click.UsageError as exc:
        exc.show()
        sys.exit(USAGE)
    except click.Abort:
        click.echo("interrupted", err=True)
        sys.exit(INTERRUPTED)
    except click.ClickException as exc:
        exc.show()
        sys.exit(USAGE if exc.exit_code == 2 else exc.exit_code)
    sys.exit(code if isinstance(code, int) else OK)
