"""Shared helpers: paths, spawning Python servers (over stdio, or listening on
127.0.0.1), free ports, and a process's memory; the npm peers of the interop tests
(installed by the session fixtures ``node``, ``everything`` and ``inspector``, pinned in
tests/peers.py)."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import peers

ROOT = Path(__file__).resolve().parent.parent
SERVERS = Path(__file__).resolve().parent / "servers"
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ERAS = [pytest.param(MODERN, id="modern"), pytest.param(LEGACY, id="legacy")]


@pytest.fixture
def python() -> str:
    return sys.executable


def server_command(name: str, *args: str) -> list[str]:
    """The command that runs tests/servers/<name>.py with this interpreter."""
    return [sys.executable, str(SERVERS / f"{name}.py"), *args]


def load_server(name: str) -> ModuleType:
    """Import tests/servers/<name>.py as a module (for in-process use of a server script)."""
    spec = importlib.util.spec_from_file_location(f"_mcpkit_tests_{name}", SERVERS / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # so that type hints naming its classes resolve
    spec.loader.exec_module(module)
    return module


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    """A process's resident memory (``VmRSS``) or its peak (``VmHWM``), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for pid {pid}")


@contextlib.contextmanager
def listening(command: list[str], port: int, *, timeout: float = 20.0, **popen: Any) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``command``, a server that listens on 127.0.0.1:``port``; yield it once it
    accepts connections. At the end it gets SIGTERM, then SIGKILL after 5 s."""
    proc: subprocess.Popen[bytes] = subprocess.Popen(command, **popen)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                errors = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                raise AssertionError(f"server exited during start-up: {errors}")
            assert time.monotonic() < deadline, f"server did not start listening within {timeout:g} s"
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
        proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


@contextlib.contextmanager
def serve_in_thread(app: Any) -> Iterator[int]:
    """Run ``app`` under uvicorn on 127.0.0.1 in a thread; yield the port. Bounded start-up
    (10 s) and shutdown (graceful for at most 2 s)."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started:
            assert thread.is_alive(), "uvicorn exited during start-up"
            assert time.monotonic() < deadline, "uvicorn did not start within 10 s"
            time.sleep(0.01)
        yield port
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
        assert not thread.is_alive(), "uvicorn did not shut down within 10 s"


# --- npm peers (tests/peers.py) --------------------------------------------------------------


@pytest.fixture(scope="session")
def node() -> str:
    """The ``node`` that runs the npm peers of ``.cache/peers`` (the machine's), once the
    pinned ``NPM_PEERS`` are installed there. Fails, rather than skips, when node or npm
    is missing or npm fails."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("the npm peers need node on PATH")
    peers.npm_install(peers.PEERS, peers.NPM_PEERS, timeout=100)
    return node


@pytest.fixture(scope="session")
def everything(node: str) -> list[str]:
    """The command that runs server-everything over stdio."""
    return [node, str(peers.PEERS / "node_modules" / peers.EVERYTHING / "dist" / "index.js"), "stdio"]


@pytest.fixture(scope="session")
def inspector(tmp_path_factory: pytest.TempPathFactory) -> peers.Inspector:
    """The MCP Inspector's CLI, on the Node 22 that ``INSPECTOR_PEERS`` installs into
    ``.cache/inspector``, with ``HOME`` in a temporary folder (where it would keep its
    catalog and settings) and Node's compile cache in ``.cache/inspector`` (a run starts
    faster)."""
    peers.npm_install(peers.INSPECTOR_PREFIX, peers.INSPECTOR_PEERS)
    modules = peers.INSPECTOR_PREFIX / "node_modules"
    launcher = modules / peers.INSPECTOR / "clients" / "launcher" / "build" / "index.js"
    home = tmp_path_factory.mktemp("inspector-home")
    env = {**os.environ, "HOME": str(home), "NODE_COMPILE_CACHE": str(peers.INSPECTOR_PREFIX / "compile-cache")}
    return peers.Inspector([str(modules / peers.NODE22 / "bin" / "node"), str(launcher), "--cli"], env)


def debian_tool(command: str, package: str) -> str:
    """The path of ``command``; when it is missing, install Debian's ``package`` first
    (as root, as CI runs: ``apt-get``, under a lock so parallel runs install it once).
    Fails the test, never skips, when it cannot be had."""
    import fcntl
    import os
    import shutil

    found = shutil.which(command)
    if found:
        return found
    if os.geteuid() != 0:
        pytest.fail(f"{command} is needed: apt-get install -y {package} (as root), or run .ci/run")
    lock_path = ROOT / ".cache" / "apt.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not shutil.which(command):
            for step in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", package]):
                proc = subprocess.run(step, capture_output=True, text=True, timeout=600, env=env)
                if proc.returncode != 0:
                    pytest.fail(f"could not install {package}: {proc.stderr[-500:]}")
    found = shutil.which(command)
    if not found:
        pytest.fail(f"{package} installed, but {command} is still not on PATH")
    return found
