"""The servers of a host, as hosts write them down: :class:`ServerConfig` (one server) and
:func:`load_config`, which reads the configuration files of the common hosts.

Two shapes are read, the two that hosts use:

* ``{"mcpServers": {name: entry}}`` — Claude Desktop, Claude Code (``.mcp.json``), Cursor,
  Windsurf, Cline and most others. A stdio entry has ``command``, ``args``, ``env`` and
  ``cwd``; a remote one ``url`` and ``headers`` (``type`` may say ``"http"``, ``"sse"`` or
  ``"stdio"``; without it, ``command`` means stdio and ``url`` Streamable HTTP);
* ``{"servers": {name: entry}, "inputs": [...]}`` — VS Code's ``mcp.json`` (also inside
  its ``settings.json`` as ``{"mcp": {...}}``), whose entries say ``"type": "stdio" |
  "http" | "sse"``, and may name an ``envFile``.

Values may refer to the environment and to what the host asks its user, in the forms
those files define (:func:`expand`): ``${env:NAME}`` (VS Code, Cursor), ``${NAME}`` and
``${NAME:-default}`` (Claude Code), ``${input:ID}`` (VS Code: the answers are given as
``inputs``), ``${userHome}``, ``${workspaceFolder}``, ``${workspaceFolderBasename}``,
``${pathSeparator}`` and ``${/}``. A reference that cannot be resolved — a variable
that is not set and has no default, an input nobody answered, a form we do not know —
is a :class:`ConfigError` that names the server and the reference; it is never replaced
by an empty string.

Entries with ``"disabled": true`` are kept but not started. Keys this module does not
use (``autoApprove``, ``timeout``, ``description``, ...) are ignored. A problem with one
entry is that entry's :class:`ConfigError` (:func:`read_config` keeps the others); a
problem with the document itself (not JSON, no server table) raises at once.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

if TYPE_CHECKING:
    from ..runtime.channel import Transport
    from ..transports.restart import RestartPolicy

__all__ = ["ServerConfig", "ConfigError", "load_config", "read_config", "expand", "strip_json_comments", "ConfigSource"]

Kind = Literal["stdio", "http", "sse"]
#: What a configuration is read from: a file's path, its JSON text, or the parsed document.
ConfigSource = str | os.PathLike[str] | Mapping[str, Any]

_TYPES: Final[dict[str, Kind]] = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamablehttp": "http",
    "streamable_http": "http",
    "sse": "sse",
}
_REFERENCE: Final = re.compile(r"\$\{([^{}]*)\}")
_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ConfigError(ValueError):
    """A server configuration that cannot be used: ``server`` names the entry (None for a
    problem with the document itself), the message says what is wrong and where."""

    def __init__(self, message: str, server: str | None = None) -> None:
        super().__init__(f"server {server!r}: {message}" if server is not None else message)
        self.server = server


@dataclasses.dataclass(frozen=True)
class ServerConfig:
    """How to start or reach one server of a :class:`~mcpkit.ClientGroup`.

    ``kind`` is ``"stdio"`` (``command`` with ``args``, ``env`` and ``cwd``: a process
    spawned and spoken to over its stdin and stdout), ``"http"`` (``url`` and ``headers``:
    Streamable HTTP, falling back to HTTP+SSE when the server speaks only that) or
    ``"sse"`` (the deprecated HTTP+SSE transport). ``env`` is merged over a safe part of
    the host's environment (``PATH``, ``HOME``, the locale: see
    :class:`~mcpkit.StdioTransport`). ``disabled`` entries are listed but not started.
    Build one with :meth:`stdio` or :meth:`http`, or read them with :func:`load_config`.
    Raises ``ValueError`` for a config that names neither a command nor a URL.
    """

    name: str
    kind: Kind
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    disabled: bool = False

    def __post_init__(self) -> None:
        if self.kind == "stdio" and not self.command:
            raise ValueError(f"server {self.name!r}: a stdio server needs a command")
        if self.kind in ("http", "sse") and not self.url:
            raise ValueError(f"server {self.name!r}: an {self.kind} server needs a url")

    @classmethod
    def stdio(
        cls,
        name: str,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
    ) -> ServerConfig:
        """A server spawned as ``command`` with ``args``."""
        return cls(name, "stdio", command=command, args=tuple(args), env=dict(env) if env else None, cwd=_path(cwd))

    @classmethod
    def http(cls, name: str, url: str, *, headers: Mapping[str, str] | None = None, sse: bool = False) -> ServerConfig:
        """A server at ``url``: Streamable HTTP, or the deprecated HTTP+SSE with ``sse``."""
        return cls(name, "sse" if sse else "http", url=url, headers=dict(headers or {}))

    def transport(
        self, *, restart: RestartPolicy | None = None, stderr: Literal["inherit", "capture", "devnull"] = "capture"
    ) -> Transport:
        """A new transport to this server: a :class:`~mcpkit.StdioTransport` (its stderr
        kept by default, to explain a failure; restarted under ``restart``), an
        :class:`~mcpkit.HttpTransport` (reconnecting under ``restart``, the default
        policy when None) or an :class:`~mcpkit.SseTransport`."""
        if self.kind == "stdio":
            from ..transports.stdio.process import StdioTransport

            assert self.command is not None
            return StdioTransport([self.command, *self.args], env=self.env, cwd=self.cwd, stderr=stderr, restart=restart or False)
        assert self.url is not None
        if self.kind == "sse":
            from ..transports.http.sse.client import SseTransport

            return SseTransport(self.url, headers=self.headers or None)
        from ..transports.http.transport import HttpTransport

        return HttpTransport(self.url, headers=self.headers or None, reconnect=restart or True)

    def describe(self) -> str:
        """One line saying what this server is: its command line or its URL."""
        if self.kind == "stdio":
            return " ".join([self.command or "", *self.args])
        return f"{self.url} ({self.kind})"


def load_config(
    source: ConfigSource,
    *,
    inputs: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
    workspace: str | os.PathLike[str] | None = None,
) -> dict[str, ServerConfig]:
    """Every server of a host's configuration (see the module's docstring), by name.

    ``source`` is a file's path, its JSON text (a string starting with ``{``), or the
    parsed document; ``inputs`` answer
    its ``${input:ID}`` references; ``environ`` (default: ours) resolves the environment
    references; ``workspace`` is ``${workspaceFolder}`` (relative ``cwd`` and ``envFile``
    paths are taken from the file's folder otherwise). Raises :class:`ConfigError` for the
    first problem found, with a document or with any entry; ``OSError`` if the file cannot
    be read."""
    servers, errors = read_config(source, inputs=inputs, environ=environ, workspace=workspace)
    if errors:
        raise next(iter(errors.values()))
    return servers


def read_config(
    source: ConfigSource,
    *,
    inputs: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
    workspace: str | os.PathLike[str] | None = None,
) -> tuple[dict[str, ServerConfig], dict[str, ConfigError]]:
    """:func:`load_config`, but an entry's problem is that entry's: the servers that can be
    used, and a :class:`ConfigError` for each that cannot, by name. Raises
    :class:`ConfigError` for a problem with the document itself, ``OSError`` if the file
    cannot be read."""
    doc, base = _document(source)
    table, declared = _server_table(doc)
    env = dict(os.environ if environ is None else environ)
    folder = str(Path(workspace).resolve()) if workspace is not None else None
    context = _Context(env, dict(inputs or {}), declared, folder, base)
    servers: dict[str, ServerConfig] = {}
    errors: dict[str, ConfigError] = {}
    for name, entry in table.items():
        if not isinstance(name, str) or not name:
            raise ConfigError("server names must be non-empty strings")
        try:
            servers[name] = _entry(name, entry, context)
        except ConfigError as exc:
            errors[name] = exc
        except ValueError as exc:
            errors[name] = ConfigError(str(exc).removeprefix(f"server {name!r}: "), name)
    return servers, errors


# --- the document ----------------------------------------------------------------------------------


def _document(source: ConfigSource) -> tuple[Any, Path | None]:
    """The parsed document and the folder of its file (None when not read from a file)."""
    if isinstance(source, Mapping):
        return source, None
    if isinstance(source, str) and source.lstrip()[:1] in ("{", "["):
        text, base = source, None
    else:
        path = Path(source)
        text, base = path.read_text(encoding="utf-8"), path.resolve().parent
    try:
        return json.loads(strip_json_comments(text)), base
    except ValueError as exc:
        raise ConfigError(f"not valid JSON: {exc}") from None


def strip_json_comments(text: str) -> str:
    """``text`` without the ``//`` and ``/* */`` comments and trailing commas VS Code's JSON
    files allow (JSONC); strings are left as they are."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif c == ",":
            j = i + 1
            while j < n and text[j] in " \t\r\n":
                j += 1
            if j < n and text[j] in "]}":
                i += 1  # a trailing comma
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _server_table(doc: Any) -> tuple[Mapping[str, Any], dict[str, str]]:
    """The document's table of servers, and the ``inputs`` it declares (id -> description)."""
    if not isinstance(doc, Mapping):
        raise ConfigError("a configuration is a JSON object with an 'mcpServers' (or VS Code's 'servers') table")
    if "mcp" in doc and isinstance(doc["mcp"], Mapping) and "mcpServers" not in doc and "servers" not in doc:
        doc = doc["mcp"]  # VS Code's settings.json
    found = [key for key in ("mcpServers", "servers") if key in doc]
    if not found:
        raise ConfigError("no server table: expected 'mcpServers' (Claude Desktop, Cursor, ...) or 'servers' (VS Code)")
    if len(found) == 2:
        raise ConfigError("both 'mcpServers' and 'servers' are present: which table is meant?")
    table = doc[found[0]]
    if not isinstance(table, Mapping):
        raise ConfigError(f"{found[0]!r} must be an object of servers by name")
    declared: dict[str, str] = {}
    inputs = doc.get("inputs", [])
    if isinstance(inputs, list):
        for item in inputs:
            if isinstance(item, Mapping) and isinstance(item.get("id"), str):
                declared[item["id"]] = str(item.get("description") or "")
    return table, declared


# --- one entry -------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Context:
    environ: dict[str, str]
    inputs: dict[str, str]
    declared: dict[str, str]
    workspace: str | None
    base: Path | None


def _entry(name: str, entry: Any, context: _Context) -> ServerConfig:
    if not isinstance(entry, Mapping):
        raise ConfigError("an entry must be a JSON object", name)

    def text(key: str) -> str | None:
        value = entry.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise ConfigError(f"{key!r} must be a string", name)
        return expand(
            value, context.environ, inputs=context.inputs, declared=context.declared, workspace=context.workspace, server=name
        )

    def table(key: str) -> dict[str, str]:
        value = entry.get(key) or {}
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise ConfigError(f"{key!r} must be an object of strings", name)
        out: dict[str, str] = {}
        for k, v in value.items():
            if isinstance(v, bool) or not isinstance(v, (str, int, float)):
                raise ConfigError(f"{key}.{k} must be a string", name)
            out[k] = expand(
                str(v),
                context.environ,
                inputs=context.inputs,
                declared=context.declared,
                workspace=context.workspace,
                server=name,
            )
        return out

    disabled = entry.get("disabled") is True
    declared_type = entry.get("type", entry.get("transport"))
    if declared_type is not None and (not isinstance(declared_type, str) or declared_type.lower() not in _TYPES):
        raise ConfigError(f"unknown type {declared_type!r}: expected 'stdio', 'http' or 'sse'", name)
    url_key = "url" if "url" in entry else "serverUrl"  # Windsurf says serverUrl
    kind: Kind | None = _TYPES[declared_type.lower()] if isinstance(declared_type, str) else None
    if kind is None:
        if "command" in entry:
            kind = "stdio"
        elif url_key in entry:
            kind = "http"
        else:
            raise ConfigError("an entry needs a 'command' (stdio) or a 'url' (HTTP)", name)
    if kind == "stdio":
        command = text("command")
        if not command:
            raise ConfigError("a stdio server needs a 'command'", name)
        raw_args = entry.get("args") or []
        if not isinstance(raw_args, list) or not all(
            isinstance(a, (str, int, float)) and not isinstance(a, bool) for a in raw_args
        ):
            raise ConfigError("'args' must be a list of strings", name)
        args = tuple(
            expand(
                str(a),
                context.environ,
                inputs=context.inputs,
                declared=context.declared,
                workspace=context.workspace,
                server=name,
            )
            for a in raw_args
        )
        env = _env_file(text("envFile"), context, name)
        env.update(table("env"))
        cwd = text("cwd")
        if cwd is not None and context.base is not None and not os.path.isabs(cwd):
            cwd = str(context.base / cwd)
        return ServerConfig(name, "stdio", command=command, args=args, env=env or None, cwd=cwd, disabled=disabled)
    url = text(url_key)
    if not url:
        raise ConfigError(f"an {kind} server needs a 'url'", name)
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"'url' must be an http:// or https:// URL, not {url!r}", name)
    return ServerConfig(name, kind, url=url, headers=table("headers"), disabled=disabled)


def _env_file(path: str | None, context: _Context, server: str) -> dict[str, str]:
    """The variables of an ``envFile`` (``NAME=value`` lines, ``#`` comments, optional
    quotes, an optional ``export``)."""
    if path is None:
        return {}
    file = Path(path)
    if not file.is_absolute():
        file = Path(context.workspace or context.base or ".") / file
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read its envFile {str(file)!r}: {exc.strerror or exc}", server) from None
    env: dict[str, str] = {}
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.removeprefix("export ").partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not _NAME.fullmatch(key):
            continue
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        env[key] = value
    return env


def expand(
    value: str,
    environ: Mapping[str, str],
    *,
    inputs: Mapping[str, str] | None = None,
    declared: Mapping[str, str] | None = None,
    workspace: str | None = None,
    server: str | None = None,
) -> str:
    """``value`` with its ``${...}`` references resolved (see the module's docstring).
    Raises :class:`ConfigError` (naming ``server``) for one that cannot be."""

    def resolve(match: re.Match[str]) -> str:
        ref = match.group(1)
        kind, colon, arg = ref.partition(":")
        if colon and kind == "env":
            if arg not in environ:
                raise ConfigError(f"${{env:{arg}}} is not set in the environment", server)
            return environ[arg]
        if colon and kind == "input":
            if inputs is not None and arg in inputs:
                return inputs[arg]
            about = (declared or {}).get(arg)
            said = f" ({about})" if about else ""
            raise ConfigError(f"${{input:{arg}}}{said} needs an answer: pass it in inputs={{{arg!r}: ...}}", server)
        if ref in ("userHome",):
            return str(Path.home())
        if ref in ("workspaceFolder", "workspaceFolderBasename"):
            if workspace is None:
                raise ConfigError(f"${{{ref}}} needs the workspace folder: pass workspace=...", server)
            return workspace if ref == "workspaceFolder" else Path(workspace).name
        if ref in ("pathSeparator", "/"):
            return os.sep
        name, dash, default = ref.partition(":-")
        if _NAME.fullmatch(name) and (dash or not colon):
            if name in environ:
                return environ[name]
            if dash:
                return default
            raise ConfigError(f"${{{name}}} is not set in the environment and has no default (${{{name}:-default}})", server)
        raise ConfigError(f"cannot resolve ${{{ref}}}: not a reference this configuration format defines", server)

    return _REFERENCE.sub(resolve, value) if "${" in value else value


def _path(value: str | os.PathLike[str] | None) -> str | None:
    return os.fspath(value) if value is not None else None
