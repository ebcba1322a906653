"""The servers under test, and the interpreters they run on.

mcpkit runs on the interpreter that runs the harness when that one imports this
repository's mcpkit and uvicorn (``pip install -e '.[http]'``, or ``'.[bench]'``);
otherwise the harness makes a virtual environment for it. The official SDK and fastmcp
get a virtual environment each, made once under ``.cache/bench/venvs/`` (git-ignored)
with the pins below and made again when the pins change. The floors need the standard
library (and uvicorn, for the ASGI floor).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
BENCH = ROOT / "benchmarks" / "perf"
CACHE = ROOT / ".cache" / "bench"
SCRIPTS = BENCH / "servers"
CLIENT_SCRIPTS = BENCH / "clients"

#: What the other SDKs' environments get. fastmcp: the current release when this was written.
PINS = {"mcp": ["mcp==2.3.0"], "fastmcp": ["fastmcp==4.2.3"]}
#: Packages whose versions a results file records, per interpreter.
RECORDED = ["mcpkit", "mcp", "fastmcp", "uvicorn", "h11", "httptools", "uvloop", "anyio", "starlette", "pydantic", "msgspec"]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Server:
    """One server under test: how to start it, and which era the harness speaks to it."""

    name: str
    label: str
    python: str
    script: str
    era: str = "legacy"  # "legacy" (initialize first) or "modern" (stateless, _meta on every request)
    flags: tuple[str, ...] = ()
    import_stmt: str | None = None  # what a program using this library imports, for the import workload

    def argv(self, tools: int = 0, port: int | None = None, extra: tuple[str, ...] = ()) -> list[str]:
        argv = [self.python, str(SCRIPTS / self.script), *self.flags, *extra]
        if tools:
            argv += ["--tools", str(tools)]
        if port is not None:
            argv += ["--http", str(port)]
        return argv


def _imports_mcpkit_here(python: str) -> bool:
    code = "import mcpkit, uvicorn; print(mcpkit.__file__)"
    proc = subprocess.run([python, "-c", code], capture_output=True, text=True, check=False)
    return proc.returncode == 0 and Path(proc.stdout.strip()).resolve().is_relative_to(ROOT / "src")


def venv(name: str, requirements: list[str]) -> str:
    """The python of ``.cache/bench/venvs/<name>``, made (or made again) with ``requirements``."""
    home = CACHE / "venvs" / name
    python = home / "bin" / "python"
    marker = home / "bench-requirements.txt"
    wanted = "\n".join(requirements) + "\n"
    if python.exists() and marker.exists() and marker.read_text() == wanted:
        return str(python)
    log(f"setting up {home.relative_to(ROOT)}: pip install {' '.join(requirements)}")
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(home)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *requirements], check=True)
    marker.write_text(wanted)
    return str(python)


@dataclass
class Interpreters:
    """Where each library runs; each is found or set up on first use."""

    mcpkit_python: str | None = None
    sdk_python: str | None = None
    fastmcp_python: str | None = None
    baseline_python: str | None = None  # another mcpkit (a copy of an earlier tree), as "mcpkit-baseline"
    _resolved: dict[str, str] = field(default_factory=dict)

    def get(self, library: str) -> str:
        if library not in self._resolved:
            self._resolved[library] = self._find(library)
        return self._resolved[library]

    def _find(self, library: str) -> str:
        if library == "floor":
            return sys.executable
        if library == "mcpkit":
            if self.mcpkit_python:
                return self.mcpkit_python
            if _imports_mcpkit_here(sys.executable):
                return sys.executable
            return venv("mcpkit", ["-e", f"{ROOT}[http]"])
        if library == "baseline":
            if not self.baseline_python:
                raise ValueError("mcpkit-baseline needs --baseline-python")
            return self.baseline_python
        if library == "mcp":
            return self.sdk_python or venv("mcp", PINS["mcp"])
        if library == "fastmcp":
            return self.fastmcp_python or venv("fastmcp", PINS["fastmcp"])
        raise ValueError(library)

    def used(self) -> dict[str, str]:
        return dict(self._resolved)


#: name -> (library, label, script, era, flags, import statement)
CATALOGUE: dict[str, tuple[str, str, str, str, tuple[str, ...], str | None]] = {
    "floor": ("floor", "stdlib floor", "raw_floor.py", "legacy", (), None),
    "asgi-floor": ("mcpkit", "bare ASGI floor", "asgi_floor.py", "legacy", (), None),
    # the import_cpu workload's floor: what a server on mcpkit's stack imports anyway (no server)
    "import-floor": ("mcpkit", "import asyncio, msgspec", "raw_floor.py", "legacy", (), "import asyncio, msgspec"),
    "mcpkit": ("mcpkit", "mcpkit", "mcpkit_server.py", "legacy", (), "from mcpkit import Server"),
    "mcpkit-baseline": ("baseline", "mcpkit, baseline", "mcpkit_server.py", "legacy", (), "from mcpkit import Server"),
    "mcpkit-modern": ("mcpkit", "mcpkit, modern era", "mcpkit_server.py", "modern", (), None),
    "mcpkit-modern-baseline": ("baseline", "mcpkit, modern era, baseline", "mcpkit_server.py", "modern", (), None),
    "mcpkit-async": ("mcpkit", "mcpkit, async def tools", "mcpkit_server.py", "legacy", ("--async-tools",), None),
    "mcpkit-async-baseline": (
        "baseline",
        "mcpkit, async def tools, baseline",
        "mcpkit_server.py",
        "legacy",
        ("--async-tools",),
        None,
    ),
    "mcp": ("mcp", "official SDK", "official_server.py", "legacy", (), "from mcp.server.mcpserver import MCPServer"),
    "fastmcp": ("fastmcp", "fastmcp", "fastmcp_server.py", "legacy", (), "from fastmcp import FastMCP"),
}
LIBRARY = {name: entry[0] for name, entry in CATALOGUE.items()}


#: The clients of the client workloads, each against a floor server: name -> (library,
#: label, script under clients/, flags). ``Server.argv`` runs them the same way.
CLIENTS: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    "mcpkit": ("mcpkit", "mcpkit client", "mcpkit_client.py", ()),
    "mcpkit-group": ("mcpkit", "mcpkit ClientGroup (one server)", "mcpkit_client.py", ("--group",)),
    "mcp": ("mcp", "official SDK client", "official_client.py", ()),
    "fastmcp": ("fastmcp", "fastmcp client", "fastmcp_client.py", ()),
}


def server(name: str, interpreters: Interpreters, extra_flags: tuple[str, ...] = ()) -> Server:
    library, label, script, era, flags, import_stmt = CATALOGUE[name]
    return Server(name, label, interpreters.get(library), script, era, flags + extra_flags, import_stmt)


def client(name: str, interpreters: Interpreters) -> Server:
    """A client of the client workloads, as a ``Server`` (its argv runs the client script)."""
    library, label, script, flags = CLIENTS[name]
    return Server(name, label, interpreters.get(library), str(CLIENT_SCRIPTS / script), flags=flags)


def label(name: str, kind: str) -> str:
    """How the table names ``name`` in a workload of this kind."""
    return CLIENTS[name][1] if kind == "client" else CATALOGUE[name][1]


def versions(python: str) -> dict[str, str]:
    """The versions of the RECORDED packages that ``python`` has, and its own."""
    code = (
        "import importlib.metadata as m, json, platform\n"
        f"out = {{'python': platform.python_version()}}\n"
        f"for p in {RECORDED!r}:\n"
        "    try: out[p] = m.version(p)\n"
        "    except m.PackageNotFoundError: pass\n"
        "import importlib.util as u\n"  # what uvicorn's "auto" picks here (and mcpkit's run_uvicorn)
        "out['http_stack'] = ('httptools' if u.find_spec('httptools') else 'h11') + ' + ' + "
        "('uvloop' if u.find_spec('uvloop') else 'asyncio')\n"
        "print(json.dumps(out))"
    )
    proc = subprocess.run([python, "-c", code], capture_output=True, text=True, check=False)
    return dict(json.loads(proc.stdout)) if proc.returncode == 0 else {"error": proc.stderr[-300:]}
