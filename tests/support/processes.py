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

import httpx

from support.paths import SERVERS
from support.ports import free_port


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


# --- several HTTP servers of tests/support/servers/, started at once ------------------------------


#: Server scripts that serve on a listening socket the test bound (``--fd``).
INHERIT_SOCKET = {"http_fake.py"}


def _start(script: str, flags: list[str]) -> tuple[subprocess.Popen[bytes], int]:
    """Spawn a server script. One that takes ``--fd`` gets a socket bound and listening
    here, so no other process can take its port between choosing and binding it."""
    if script not in INHERIT_SOCKET:
        port = free_port()
        return subprocess.Popen([sys.executable, str(SERVERS / script), str(port), *flags], stdout=subprocess.DEVNULL), port
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        fd = sock.fileno()
        cmd = [sys.executable, str(SERVERS / script), "--fd", str(fd), *flags]
        return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, pass_fds=[fd]), int(sock.getsockname()[1])


def _wait_listening(name: str, script: str, proc: subprocess.Popen[bytes], port: int, deadline: float) -> None:
    """Return once the server answers on ``port``: an HTTP answer from a server on an
    inherited socket (connections queue there from the start), else a TCP connection."""
    if script in INHERIT_SOCKET:
        with httpx.Client(timeout=max(1.0, deadline - time.monotonic())) as http:
            assert http.get(f"http://127.0.0.1:{port}/_log").status_code == 200, f"server {name} is not the fake"
        return
    while True:
        assert proc.poll() is None, f"server {name} exited with {proc.returncode}"
        assert time.monotonic() < deadline, f"server {name} did not start listening"
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)


@contextlib.contextmanager
def servers(commands: dict[str, list[str]]) -> Iterator[dict[str, str]]:
    """Start every server at once; yield name -> base URL once all listen (30 s at most)."""
    procs: dict[str, tuple[subprocess.Popen[bytes], int]] = {}
    try:
        for name, args in commands.items():
            procs[name] = _start(args[0], args[1:])
        deadline = time.monotonic() + 30
        for name, (proc, port) in procs.items():
            _wait_listening(name, commands[name][0], proc, port, deadline)
        yield {name: f"http://127.0.0.1:{port}" for name, (_, port) in procs.items()}
    finally:
        for proc, _ in procs.values():
            proc.terminate()
        for proc, _ in procs.values():
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
