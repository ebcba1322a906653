"""Spawning the servers the tests run (``tests/support/servers/``), waiting for them to
listen, stopping them, and reading a process's memory. Every wait is bounded."""

from __future__ import annotations

import contextlib
import importlib.util
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from support.paths import SERVERS


def server_command(name: str, *args: str) -> list[str]:
    """The command that runs tests/support/servers/<name>.py with this interpreter."""
    return [sys.executable, str(SERVERS / f"{name}.py"), *args]


def load_server(name: str) -> ModuleType:
    """Import tests/support/servers/<name>.py as a module (to use a server script in process)."""
    spec = importlib.util.spec_from_file_location(f"_mcpkit_tests_{name}", SERVERS / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # so that type hints naming its classes resolve
    spec.loader.exec_module(module)
    return module


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    """A process's resident memory (``VmRSS``) or its peak (``VmHWM``), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for pid {pid}")


def accepts(port: int) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:``port`` right now."""
    try:
        socket.create_connection(("127.0.0.1", port), 0.2).close()
    except OSError:
        return False
    return True


def wait_port(port: int, proc: subprocess.Popen[bytes] | None = None, timeout: float = 20.0) -> None:
    """Return once 127.0.0.1:``port`` accepts connections; fail when ``proc`` exits first or
    after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not accepts(port):
        if proc is not None and proc.poll() is not None:
            errors = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise AssertionError(f"{proc.args} exited with {proc.returncode} during start-up: {errors}")
        assert time.monotonic() < deadline, f"nothing listens on port {port} after {timeout:g} s"
        time.sleep(0.02)


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM, timeout: float = 10.0) -> None:
    """Send ``sig`` (if it still runs) and wait for it, with SIGKILL after ``timeout`` seconds."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
    proc.wait()


@contextlib.contextmanager
def listening(command: list[str], port: int, *, timeout: float = 20.0, **popen: Any) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``command``, a server that listens on 127.0.0.1:``port``; yield it once it
    accepts connections. At the end it gets SIGTERM, then SIGKILL after 5 s."""
    proc: subprocess.Popen[bytes] = subprocess.Popen(command, **popen)
    try:
        wait_port(port, proc, timeout)
        yield proc
    finally:
        stop(proc, timeout=5)
        if proc.stderr is not None:
            proc.stderr.close()
