"""``mcpkit dev``: the app served over HTTP (``mcpkit run --http`` in a child process)
and the MCP Inspector's web UI (:mod:`.inspector`) against it, supervised together:
Ctrl-C or SIGTERM stops both; when either ends on its own, the other is stopped."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from types import FrameType

import click

from .session import CONNECTION, OK, UNAVAILABLE

__all__ = ["run_dev"]

_START_TIMEOUT = 30.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(proc: subprocess.Popen[bytes], port: int, timeout: float) -> bool:
    """Whether ``proc`` accepts connections on 127.0.0.1:``port`` within ``timeout``
    seconds (False if it exits first or takes longer)."""
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def _stop(proc: subprocess.Popen[bytes] | None) -> None:
    """SIGTERM, then SIGKILL after 5 s."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def run_dev(app: str, *, port: int, inspector_port: int, era: str, open_browser: bool) -> int:
    """Serve ``app`` and run the Inspector on it until interrupted; the exit code (0
    when stopped by Ctrl-C or SIGTERM, 69 without an Inspector, 4 when the server
    does not start, else the code of the child that ended first)."""
    from .inspector import Unavailable, find_or_install

    try:
        inspector = find_or_install()
    except Unavailable as exc:
        click.echo(f"mcpkit dev: {exc}", err=True)
        return UNAVAILABLE
    port = port or _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    server: subprocess.Popen[bytes] | None = None
    ui: subprocess.Popen[bytes] | None = None
    try:
        server = subprocess.Popen([sys.executable, "-m", "mcpkit.cli", "run", app, "--http", "--port", str(port)])
        if not _wait_listening(server, port, _START_TIMEOUT):
            code = server.poll()
            click.echo(f"mcpkit dev: the server {'exited with ' + str(code) if code is not None else 'did not start'}", err=True)
            return CONNECTION
        env = {**os.environ, "CLIENT_PORT": str(inspector_port)}
        if not open_browser:
            env["MCP_AUTO_OPEN_ENABLED"] = "false"
        click.echo(f"mcpkit dev: starting the MCP Inspector on port {inspector_port} for {url} (Ctrl-C stops both)", err=True)
        ui = subprocess.Popen(inspector.web(url, era), env=env)
        while True:
            for name, proc in (("the server", server), ("the Inspector", ui)):
                code = proc.poll()
                if code is not None:
                    click.echo(f"mcpkit dev: {name} exited with {code}", err=True)
                    return code or OK
            time.sleep(0.2)
    except KeyboardInterrupt:
        return OK
    finally:
        signal.signal(signal.SIGTERM, previous)
        _stop(ui)
        _stop(server)
