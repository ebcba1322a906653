"""``mcpkit install HOST TARGET``: add a server to the configuration file of a common host —
Claude Desktop, Claude Code, Cursor or VS Code (docs/cli.md).

Each host keeps its servers in a JSON file of its own, in a shape of its own:

==============  ==========================================================  ===============
host            file (``--scope user``, the default; ``project``)           table
==============  ==========================================================  ===============
claude-desktop  macOS ``~/Library/Application Support/Claude/``, Windows     ``mcpServers``
                ``%APPDATA%\\Claude\\``, Linux ``$XDG_CONFIG_HOME/Claude/``
                (``~/.config``): ``claude_desktop_config.json``
claude-code     ``~/.claude.json``; project: ``./.mcp.json``                 ``mcpServers``
cursor          ``~/.cursor/mcp.json``; project: ``./.cursor/mcp.json``      ``mcpServers``
vscode          the user folder of VS Code (macOS ``~/Library/Application    ``servers``
                Support/Code/User``, Windows ``%APPDATA%\\Code\\User``, Linux
                ``$XDG_CONFIG_HOME/Code/User``): ``mcp.json``; project:
                ``./.vscode/mcp.json``
==============  ==========================================================  ===============

The entry is what that host expects: ``command``/``args``/``env`` for a spawned server
(with ``"type": "stdio"`` for Claude Code and VS Code), ``url``/``headers`` for a remote
one (``"type": "http"`` for Claude Code and VS Code; Claude Desktop's file takes only
servers it spawns, so a URL is refused there). A command run with this interpreter's
Python — ``python``, ``python3``, a ``.py`` file, or ``mcpkit`` itself — is written with the
interpreter's absolute path, and files named on the command line with absolute paths,
since the host starts it from elsewhere.

The rest of the file is kept as it was. An entry of the same name is never replaced
without ``--force`` (the same entry again is left alone); a file that is not plain JSON
(comments, as VS Code allows) is not rewritten without ``--force`` either, since its
comments would be lost. The file is written whole, then moved into place.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal

from ..host.config import strip_json_comments
from .session import Target

__all__ = ["HOSTS", "Host", "InstallError", "Installed", "config_path", "install", "entry_for", "default_name"]

Host = Literal["claude-desktop", "claude-code", "cursor", "vscode"]
HOSTS: Final[dict[str, str]] = {
    "claude-desktop": "Claude Desktop",
    "claude-code": "Claude Code",
    "cursor": "Cursor",
    "vscode": "VS Code",
}


class InstallError(Exception):
    """The entry cannot be installed: ``refused`` when it would replace something (exit 1),
    else the file cannot be read or written (exit 74)."""

    def __init__(self, message: str, *, refused: bool = False) -> None:
        super().__init__(message)
        self.refused = refused


@dataclasses.dataclass(frozen=True)
class Installed:
    """What :func:`install` did: the file, the entry, and whether the file changed."""

    path: Path
    name: str
    entry: dict[str, Any]
    changed: bool


def config_path(host: Host, scope: Literal["user", "project"] = "user", *, environ: Mapping[str, str] | None = None) -> Path:
    """The configuration file of ``host`` (see the module's docstring), from ``HOME``,
    ``APPDATA`` and ``XDG_CONFIG_HOME`` in ``environ`` (default: ours) and the current
    folder for ``project``. Raises ``InstallError`` for a scope the host does not have."""
    env = os.environ if environ is None else environ
    home = Path(env.get("HOME") or Path.home())
    if scope == "project":
        project = {"claude-code": Path(".mcp.json"), "cursor": Path(".cursor/mcp.json"), "vscode": Path(".vscode/mcp.json")}
        if host not in project:
            raise InstallError(f"{HOSTS[host]} has no project configuration: use --scope user")
        return Path.cwd() / project[host]
    if host == "claude-code":
        return home / ".claude.json"
    if host == "cursor":
        return home / ".cursor" / "mcp.json"
    folder = {"claude-desktop": Path("Claude"), "vscode": Path("Code") / "User"}[host]
    name = "claude_desktop_config.json" if host == "claude-desktop" else "mcp.json"
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / folder / name
    if sys.platform == "win32":
        return Path(env.get("APPDATA") or home / "AppData" / "Roaming") / folder / name
    return Path(env.get("XDG_CONFIG_HOME") or home / ".config") / folder / name


def entry_for(host: Host, target: Target, env: Mapping[str, str]) -> dict[str, Any]:
    """The host's entry for ``target`` with ``env`` (see the module's docstring). Raises
    ``ValueError`` for a URL on Claude Desktop, or environment variables for a URL."""
    typed = host in ("claude-code", "vscode")
    if target.url is not None:
        if host == "claude-desktop":
            raise ValueError(
                "Claude Desktop's configuration file takes only servers it starts itself: add a remote server in "
                "its settings (Connectors), or give the command that runs the server"
            )
        if env:
            raise ValueError("--env is for a server the host starts; a remote server takes headers (-H)")
        entry: dict[str, Any] = {"type": "http"} if typed else {}
        entry["url"] = target.url
        if target.headers:
            entry["headers"] = dict(target.headers)
        return entry
    assert target.command is not None
    command, *args = _runnable(target.command)
    entry = {"type": "stdio"} if typed else {}
    entry.update(command=command, args=args)
    if env:
        entry["env"] = dict(env)
    return entry


def _runnable(words: list[str]) -> list[str]:
    """``words`` as the host should run them: ``mcpkit`` as this interpreter's module,
    files that exist here by their absolute paths."""
    if words[0] == "mcpkit":
        words = [sys.executable, "-m", "mcpkit.cli", *words[1:]]
    out = [words[0]]
    for word in words[1:]:
        path, sep, rest = word.partition(":")  # app.py:server
        if not word.startswith("-") and path and Path(path).exists():
            word = str(Path(path).resolve()) + sep + rest
        out.append(word)
    return out


def default_name(target: Target) -> str:
    """A name for the server: a script's or program's stem, or a URL's host."""
    if target.url is not None:
        host = urllib.parse.urlsplit(target.url).hostname or "server"
        return host.split(".")[0] if host not in ("127.0.0.1", "localhost", "::1") else "local"
    assert target.command is not None
    for word in reversed(target.command):
        stem = Path(word.partition(":")[0]).stem
        if word.endswith(".py") or ".py:" in word:
            return stem
    return Path(target.command[0]).stem


def install(path: Path, host: Host, name: str, entry: dict[str, Any], *, force: bool = False) -> Installed:
    """Add ``entry`` as ``name`` to the host's file at ``path`` (created, with its folder,
    if missing). Raises :class:`InstallError`: ``refused`` for an entry of that name that
    differs, or a file with comments, without ``force``; otherwise for a file that cannot
    be read, parsed or written."""
    table_key = "servers" if host == "vscode" else "mcpServers"
    doc = _read(path, force=force)
    table = doc.setdefault(table_key, {})
    if not isinstance(table, dict):
        raise InstallError(f"{path}: {table_key!r} is not an object; not touching it")
    existing = table.get(name)
    if existing == entry:
        return Installed(path, name, entry, changed=False)
    if existing is not None and not force:
        raise InstallError(
            f"{path} already has a server {name!r} ({_describe(existing)}); --force replaces it, --name chooses another name",
            refused=True,
        )
    table[name] = entry
    _write(path, doc)
    return Installed(path, name, entry, changed=True)


def _describe(entry: Any) -> str:
    """An entry in a few words, without its environment or headers (they may be secrets)."""
    if not isinstance(entry, dict):
        return "not an object"
    if isinstance(entry.get("url"), str):
        return f"url {entry['url']}"
    words = [entry.get("command"), *(entry.get("args") or [])]
    return "command " + " ".join(str(w) for w in words if w is not None)


def _read(path: Path, *, force: bool) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise InstallError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not text.strip():
        return {}
    try:
        doc = json.loads(text)
    except ValueError:
        try:
            doc = json.loads(strip_json_comments(text))
        except ValueError as exc:
            raise InstallError(f"{path} is not valid JSON ({exc}); not touching it") from None
        if not force:
            raise InstallError(
                f"{path} has comments, which rewriting it would lose; --force rewrites it anyway", refused=True
            ) from None
    if not isinstance(doc, dict):
        raise InstallError(f"{path} is not a JSON object; not touching it")
    return doc


def _write(path: Path, doc: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o600  # hosts' files may hold secrets
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
            os.chmod(temp, mode)
            os.replace(temp, path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise InstallError(f"cannot write {path}: {exc.strerror or exc}") from None
