"""The ``mcpkit`` command (docs/cli.md): ``run`` and ``dev`` serve a server of yours;
``list``, ``call``, ``read`` and ``prompt`` talk to any server, spawned (a command
line) or remote (a URL), or to all the servers of a host's configuration file;
``skills`` lists, gets and reads (verified) a server's skills (``skills.py``);
``install`` adds a server to a host's configuration.

Exit codes: 0 ok, 1 the tool failed (``isError``) or ``install`` refused to replace an
entry, 2 the server answered with a protocol error, 3 timeout, 4 the server could not be
started or reached; 64 a usage error, 65 a skill's content failed verification (``skills
read``), 69 ``dev`` without an Inspector, 74 ``install`` cannot write the host's file, 130
interrupted. ``--config FILE`` runs ``list``, ``call``,
``read`` and ``prompt`` over the servers of a host's configuration file (``hosting.py``),
and ``proxy`` serves them all through one proxy (``proxying.py``); ``install`` adds a
server to a host's (``install.py``).

Built on click (the command-line library uvicorn already depends on) and rich (the
tables and the progress bar); rich is imported only by the commands that print.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .._version import __version__
from ..protocol.versions import supports
from .common import (
    ERAS as _ERAS,
    Common as _Common,
    client_command as _client_command,
    common_options as _common_options,
    headers_of as _headers,
    options_of as _options,
)
from .serving import serve
from .session import (
    CANT_WRITE,
    INTERRUPTED,
    OK,
    TOOL_ERROR,
    USAGE,
    client_options,
    parse_target,
)
from .skills import skills

if TYPE_CHECKING:
    from ..client.client import Client
    from ..host.group import ClientGroup
    from ..protocol.types import CallToolResult
    from ..server.server import Server
    from .hosting import GroupCommand, Plan
    from .render import Output

__all__ = ["main", "cli"]


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
            raise click.BadParameter('must be a JSON object, such as \'{"name": "value"}\'', param_hint="ARGUMENTS")
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


def _group_command(config: str, common: _Common, plan: Callable[[ClientGroup], Plan], action: GroupCommand) -> int:
    """Run ``action`` over the servers of the configuration at ``config``; the exit code."""
    from .hosting import run_group
    from .render import Output

    if common.headers:
        raise click.UsageError("-H is for a URL TARGET; with --config, a server's headers are in the file")
    logging.getLogger("mcpkit").addHandler(logging.NullHandler())  # the servers' failures are noted below, once
    out = Output(common.as_json)
    options = _options(common, None)
    try:
        return asyncio.run(run_group(config, options, plan, action, out))
    except KeyboardInterrupt:
        return INTERRUPTED


def _words(config: str | None, words: Sequence[str], names: Sequence[str], optional: int) -> list[str | None]:
    """The positional arguments of a client command: ``names`` (TARGET first, which
    --config leaves out), the last ``optional`` of them optional. Raises ``UsageError``."""
    wanted = list(names[1:]) if config is not None else list(names)
    required = len(wanted) - optional
    if len(words) < required:
        missing = wanted[len(words)]
        raise click.UsageError(f"missing argument {missing}" + (" (with --config there is no TARGET)" if config else ""))
    if len(words) > len(wanted):
        raise click.UsageError(f"unexpected argument {words[len(wanted)]!r} (expected {' '.join(wanted)})")
    return [*words, *([None] * (len(wanted) - len(words)))]


def _routed(name: str) -> Callable[[ClientGroup], Plan]:
    """The plan of a command on one item named ``server.name``: start that server only."""

    def plan(group: ClientGroup) -> Plan:
        from .hosting import server_of

        server = server_of(name, list(group.servers))
        if server is None:
            servers = ", ".join(group.servers) or "none"
            raise ValueError(f"{name!r} names no server of the configuration: use server.name (servers: {servers})")
        return [server], lambda _: server

    return plan


def _log_printer(out: Output) -> Callable[[str, str, Any, str | None], None]:
    def on_log(server: str, level: str, data: Any, logger: str | None) -> None:
        text = data if isinstance(data, str) else json.dumps(data)
        out.err.print(f"[dim]log {level} {server}{' ' + logger if logger else ''}: {text}[/]", markup=True, highlight=False)

    return on_log


# --- the commands ------------------------------------------------------------------------------


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="mcpkit", message="%(prog)s %(version)s")
@click.option("--config", "config", metavar="FILE", default=None,
              help="A host's configuration file (mcpServers, or VS Code's servers): list, call, read and prompt "
                   "work on all its servers, naming items server.name, and proxy serves them all; they take no "
                   "TARGET.")  # fmt: skip
@click.pass_context
def cli(ctx: click.Context, config: str | None) -> None:
    """Run, inspect and call Model Context Protocol servers.

    TARGET is a server command, spawned and spoken to over stdio ("python server.py",
    "node build/index.js stdio"), or the URL of a Streamable HTTP endpoint
    (http://127.0.0.1:8000/mcp). With --config FILE, the servers of a host's
    configuration instead (mcpkit --config servers.json call weather.forecast ...).

    Exit codes: 0 ok, 1 tool error, 2 protocol error, 3 timeout, 4 connection
    (the server could not be started or reached); 64 usage error.
    """
    ctx.obj = config


@cli.command()
@click.argument("app")
@click.option("--http", "use_http", is_flag=True, help="Serve Streamable HTTP instead of stdio.")
@click.option("--host", default=None, help="The address to listen on with --http.  [default: 127.0.0.1]")
@click.option("--port", type=click.IntRange(0, 65535), default=None, help="The port to listen on with --http.  [default: 8000]")
@click.option("--path", default=None, help="The endpoint's path with --http.  [default: /mcp]")
def run(app: str, use_http: bool, host: str | None, port: int | None, path: str | None) -> int:
    """Serve APP over stdio, or over HTTP with --http.

    APP is a file or an importable module, with the server's name after a colon when
    it is not called server, mcp or app: app.py, app.py:my_server, package.module:server.
    """
    from .loader import AppNotFound, load_server

    try:
        server = load_server(app)
    except AppNotFound as exc:
        raise click.BadParameter(str(exc), param_hint="APP") from None
    serve(server, app, use_http=use_http, host=host, port=port, path=path)
    return OK


@cli.command("proxy")
@click.argument("words", nargs=-1, metavar="[TARGET]")
@click.option("--http", "use_http", is_flag=True, help="Serve Streamable HTTP instead of stdio.")
@click.option("--host", default=None, help="The address to listen on with --http.  [default: 127.0.0.1]")
@click.option("--port", type=click.IntRange(0, 65535), default=None, help="The port to listen on with --http.  [default: 8000]")
@click.option("--path", default=None, help="The endpoint's path with --http.  [default: /mcp]")
@click.option(
    "--era",
    type=_ERAS,
    default="auto",
    show_default=True,
    help="The protocol era to speak to TARGET: probe (auto), modern (2026-07-28) or legacy (2025-11-25).",
)
@click.option(
    "-H",
    "--header",
    "headers",
    multiple=True,
    metavar="'NAME: VALUE'",
    help="An HTTP header for a URL target: the proxy's own credentials (repeatable).",
)
@click.option("--name", default="proxy", show_default=True, help="The proxy's server name.")
@click.option(
    "--shared", is_flag=True, help="One upstream session for every client (default: one for each legacy client session)."
)
@click.option("--server", "servers", multiple=True, metavar="NAME", help="With --config: only this server (repeatable).")
@click.pass_obj
def proxy_(config: str | None, /, words: tuple[str, ...], use_http: bool, host: str | None, port: int | None, path: str | None,
           era: str, headers: tuple[str, ...], name: str, shared: bool, servers: tuple[str, ...]) -> int:  # fmt: skip
    """Serve TARGET through a proxy, over stdio or over HTTP with --http.

    TARGET is a server command (spawned over stdio; its stderr goes to this one's) or an
    http(s):// URL, as for list and call. Both eras are served whatever TARGET speaks. A
    client's credentials are never sent to TARGET: only the -H headers are. With
    --config, every server of the file (or those of --server) through one proxy, each
    under its name as a prefix (github_search, notes://github/...); a server's headers
    are the file's.
    """
    from ..proxy.proxy import Proxy, proxy_of
    from .proxying import configured_upstreams, target_upstream

    if servers and config is None:
        raise click.UsageError("--server goes with --config")
    options = dataclasses.replace(client_options(era, 300.0, None, None), reset_timeout_on_progress=True)  # type: ignore[arg-type]
    server: Server
    if config is None:
        (target,) = _words(None, words, ("TARGET",), optional=0)
        assert target is not None
        connect = target_upstream(target, _headers(headers))
        server = Proxy(connect() if shared else connect, name, client_options=options)
    else:
        if words:
            raise click.UsageError(f"unexpected argument {words[0]!r} (with --config there is no TARGET)")
        if headers:
            raise click.UsageError("-H is for a URL TARGET; with --config, a server's headers are in the file")
        upstreams = {key: (connect() if shared else connect) for key, connect in configured_upstreams(config, servers).items()}
        try:
            server = proxy_of(upstreams, name, client_options=options)
        except ValueError as exc:
            raise click.UsageError(f"cannot use {config}: {exc}") from None
        target = f"{', '.join(upstreams)} ({config})"
    serve(server, f"a proxy of {target}", use_http=use_http, host=host, port=port, path=path)
    return OK


_WHAT = ("all", "tools", "resources", "templates", "prompts")


@cli.command("list")
@click.argument("words", nargs=-1, metavar="TARGET [WHAT]")
@click.option("--server", "servers", multiple=True, metavar="NAME", help="With --config: only this server (repeatable).")
@_common_options
@click.pass_obj
def list_(config: str | None, /, words: tuple[str, ...], servers: tuple[str, ...], **common: Any) -> int:
    """List what TARGET offers: its tools, resources, resource templates and prompts
    (all by default, or only WHAT: tools, resources, templates or prompts). With
    --config, what all the file's servers offer (or those of --server)."""
    given = _words(config, words, ("TARGET", "WHAT"), optional=1)
    target, what = (given[0], given[1]) if config is None else (None, given[0])
    what = what or "all"
    if what not in _WHAT:
        raise click.BadParameter(f"{what!r} is not one of {', '.join(_WHAT)}", param_hint="WHAT")
    if servers and config is None:
        raise click.UsageError("--server goes with --config")

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
        return _show_lists(out, found)

    if config is not None:
        return _group_command(config, _Common(**common), lambda group: (list(servers) or None, lambda _: None), _list_group(what))
    assert target is not None
    return _client_command(target, _Common(**common), action)


def _list_group(what: str) -> GroupCommand:
    async def action(group: ClientGroup, out: Output) -> int:
        from .hosting import states_json

        found: dict[str, Any] = {}
        if what in ("all", "tools"):
            found["tools"] = await group.list_tools()
        if what in ("all", "resources"):
            found["resources"] = await group.list_resources()
        if what in ("all", "templates"):
            found["resourceTemplates"] = await group.list_resource_templates()
        if what in ("all", "prompts"):
            found["prompts"] = await group.list_prompts()
        if what == "all":
            found = {key: items for key, items in found.items() if items}
        if out.as_json:
            out.json({**found, "servers": states_json(group)})
            return OK
        return _show_lists(out, found)

    return action


def _show_lists(out: Output, found: dict[str, Any]) -> int:
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


@cli.command()
@click.argument("words", nargs=-1, metavar="TARGET TOOL [ARGUMENTS]")
@click.option("-a", "--arg", "pairs", multiple=True, metavar="NAME=VALUE",
              help="An argument (repeatable); VALUE is JSON if it parses as JSON, else a string.")  # fmt: skip
@click.option("--no-progress", is_flag=True, help="No progress bar (it shows only on a terminal anyway).")
@_common_options
@click.pass_obj
def call(config: str | None, /, words: tuple[str, ...], pairs: tuple[str, ...], no_progress: bool, **common: Any) -> int:
    """Call TOOL on TARGET with ARGUMENTS, a JSON object (with --config, TOOL is
    server.tool and there is no TARGET).

    Prints the tool's content (or, with --json, its whole result). While it runs, the
    server's progress notifications drive a progress bar on stderr. Exits 1 when the
    tool reports an error.
    """
    if config is None:
        target, tool, arguments = _words(config, words, ("TARGET", "TOOL", "ARGUMENTS"), optional=1)
    else:
        target, (tool, arguments) = None, _words(config, words, ("TARGET", "TOOL", "ARGUMENTS"), optional=1)
    assert tool is not None
    args = _arguments(arguments, pairs)

    async def call_with(make_call: Callable[[Any], Awaitable[CallToolResult]], out: Output) -> int:
        from .render import ProgressBar

        with ProgressBar(out, tool, enabled=not no_progress) as bar:
            result = await make_call(bar.update if bar.enabled else None)
        out.tool_result(result)
        return TOOL_ERROR if result.is_error else OK

    if config is not None:

        async def on_group(group: ClientGroup, out: Output) -> int:
            return await call_with(lambda progress: group.call_tool(tool, args, on_progress=progress), out)

        return _group_command(config, _Common(**common), _routed(tool), on_group)

    async def action(client: Client, out: Output) -> int:
        return await call_with(lambda progress: client.call_tool(tool, args, on_progress=progress), out)

    assert target is not None
    return _client_command(target, _Common(**common), action)


@cli.command()
@click.argument("words", nargs=-1, metavar="TARGET URI")
@click.option("--server", default=None, metavar="NAME", help="With --config: the server to read from (else the one listing URI).")
@_common_options
@click.pass_obj
def read(config: str | None, /, words: tuple[str, ...], server: str | None, **common: Any) -> int:
    """Read the resource at URI from TARGET (text as it is; binary contents described).
    With --config, from the server that lists it (or --server)."""
    if server is not None and config is None:
        raise click.UsageError("--server goes with --config")
    if config is not None:
        (wanted,) = _words(config, words, ("TARGET", "URI"), optional=0)
        assert wanted is not None
        where: str = wanted

        async def on_group(group: ClientGroup, out: Output) -> int:
            out.resource(await group.read_resource(where, server=server))
            return OK

        def plan(group: ClientGroup) -> Plan:
            return ([server] if server else None), lambda g: server or g.server_of_uri(where)

        return _group_command(config, _Common(**common), plan, on_group)
    target, uri = _words(config, words, ("TARGET", "URI"), optional=0)
    assert target is not None
    assert uri is not None

    async def action(client: Client, out: Output) -> int:
        out.resource(await client.read_resource(uri))
        return OK

    return _client_command(target, _Common(**common), action)


@cli.command()
@click.argument("words", nargs=-1, metavar="TARGET NAME [ARGUMENTS]")
@click.option("-a", "--arg", "pairs", multiple=True, metavar="NAME=VALUE", help="An argument (repeatable).")
@_common_options
@click.pass_obj
def prompt(config: str | None, /, words: tuple[str, ...], pairs: tuple[str, ...], **common: Any) -> int:
    """Get the prompt NAME from TARGET, filled in with ARGUMENTS (a JSON object of
    strings). With --config, NAME is server.prompt and there is no TARGET."""
    if config is None:
        target, name, arguments = _words(config, words, ("TARGET", "NAME", "ARGUMENTS"), optional=1)
    else:
        target, (name, arguments) = None, _words(config, words, ("TARGET", "NAME", "ARGUMENTS"), optional=1)
    assert name is not None
    args = _arguments(arguments, pairs, strings=True)
    if config is not None:

        async def on_group(group: ClientGroup, out: Output) -> int:
            out.prompt(await group.get_prompt(name, args or None))
            return OK

        return _group_command(config, _Common(**common), _routed(name), on_group)

    async def action(client: Client, out: Output) -> int:
        out.prompt(await client.get_prompt(name, args or None))
        return OK

    assert target is not None
    return _client_command(target, _Common(**common), action)


@cli.command()
@click.argument("host", type=click.Choice(["claude-desktop", "claude-code", "cursor", "vscode"]))
@click.argument("target")
@click.option(
    "--name", default=None, help="The server's name in the host.  [default: the script's or program's name, or the URL's host]"
)
@click.option(
    "-e", "--env", "env_pairs", multiple=True, metavar="NAME=VALUE", help="An environment variable for the server (repeatable)."
)
@click.option(
    "-H", "--header", "headers", multiple=True, metavar="'NAME: VALUE'", help="An HTTP header for a URL TARGET (repeatable)."
)
@click.option(
    "--scope",
    type=click.Choice(["user", "project"]),
    default="user",
    show_default=True,
    help="The user's configuration, or the project's (in the current folder; not for Claude Desktop).",
)
@click.option(
    "--config-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write this file instead of the host's own.",
)
@click.option("--force", is_flag=True, help="Replace an entry of the same name (or rewrite a file with comments).")
def install(host: str, target: str, name: str | None, env_pairs: tuple[str, ...], headers: tuple[str, ...], scope: str,
            config_file: Path | None, force: bool) -> int:  # fmt: skip
    """Add TARGET, a server command or a URL, to the configuration of HOST, and print the
    file changed.

    HOST is claude-desktop, claude-code, cursor or vscode. A command run with Python (or
    mcpkit) is written with this interpreter's absolute path, and the files it names with
    theirs: mcpkit install claude-desktop "python server.py" --env API_KEY=... An
    existing entry of that name is never replaced without --force (exit 1).
    """
    from .install import HOSTS, InstallError, config_path, default_name, entry_for, install as add

    try:
        where = parse_target(target, _headers(headers))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="TARGET") from None
    env: dict[str, str] = {}
    for pair in env_pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{pair!r} is not NAME=VALUE", param_hint="--env")
        env[key] = value
    if headers and where.url is None:
        raise click.UsageError("-H is for a URL TARGET")
    chosen = name or default_name(where)
    try:
        entry = entry_for(host, where, env)  # type: ignore[arg-type]
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    try:
        path = config_file or config_path(host, scope)  # type: ignore[arg-type]
        done = add(path, host, chosen, entry, force=force)  # type: ignore[arg-type]
    except InstallError as exc:
        click.echo(f"mcpkit: {exc}", err=True)
        return TOOL_ERROR if exc.refused else CANT_WRITE
    if done.changed:
        click.echo(f"added server {chosen!r} to {done.path} ({HOSTS[host]})")
    else:
        click.echo(f"server {chosen!r} is already in {done.path} ({HOSTS[host]}), unchanged")
    return OK


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


cli.add_command(skills)  # `mcpkit skills list|get|read` (skills.py)


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
