"""Shared helpers: paths, spawning Python servers (over stdio, or listening on
127.0.0.1), free ports, and a process's memory."""

from __future__ import annotations

import contextlib
import importlib.util
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
