"""Running the ``mcpkit`` command as a subprocess, as a person would: its output captured, or
on a pseudo-terminal (where it draws its progress bar); and the stdio server the command
tests aim it at (tests/support/servers/cli_app.py)."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from support.paths import ROOT, SERVERS

APP = str(SERVERS / "cli_app.py")
#: The stdio target: a command line, as a person would type it.
STDIO = f"python {APP}"
MCPKIT = [sys.executable, "-m", "mcpkit.cli"]


def mcpkit(
    *args: str, timeout: float = 30, env: dict[str, str] | None = None, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MCPKIT, *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)


def as_json(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout)


def run_in_pty(command: list[str], timeout: float = 30) -> tuple[int, str]:
    """Run ``command`` with stdin, stdout and stderr on a pseudo-terminal; its exit code
    and everything it wrote there."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(command, stdin=slave, stdout=slave, stderr=slave, cwd=ROOT, close_fds=True)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the other side is closed
                break
            if not data:
                break
            chunks.append(data)
        code = proc.wait(10)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return code, b"".join(chunks).decode(errors="replace")
