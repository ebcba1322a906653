"""tests/support/servers/resilient.py served over HTTP in a process of its own, its log in a
file the tests read (what reached the server, and when it started): killed and started
again on the same port by the reconnection tests, put behind HAProxy by the nodes tests.
And :class:`Events`, an ``on_event`` handler that keeps what the client reported."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from mcpkit import ClientEvent
from support.paths import SERVERS
from support.waiting import until

#: ``python -c SCRIPT RESILIENT_PY LOG PORT [sse] [go=FILE] [retry=SECONDS]``: ``sse`` serves the
#: HTTP+SSE transport too (on /sse); ``go=FILE``: everything imported first, it listens only
#: once FILE exists (a test can have it take over a port at once); ``retry``: the SSE retry field.
_SERVE = """
import importlib.util, os, sys, time
from pathlib import Path
spec = importlib.util.spec_from_file_location("resilient", sys.argv[1])
module = importlib.util.module_from_spec(spec)
sys.modules["resilient"] = module
spec.loader.exec_module(module)
import uvicorn
module.LOG = Path(sys.argv[2])
flags = dict(arg.partition("=")[::2] for arg in sys.argv[4:])
if "go" in flags:
    while not Path(flags["go"]).exists():
        time.sleep(0.01)
module.log(f"start {os.getpid()} {time.monotonic():.3f}")
extra = {"retry_interval": float(flags["retry"])} if "retry" in flags else {}
module.server.run("http", port=int(sys.argv[3]), health_path="/healthz", sse_transport="sse" in flags, **extra)
"""


async def accepting(proc: asyncio.subprocess.Process, port: int, timeout: float = 20.0) -> None:
    """Return once 127.0.0.1:``port`` accepts connections; fail when ``proc`` exits first."""

    async def accepts() -> bool:
        assert proc.returncode is None, "the server exited during start-up"
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            return False
        writer.close()
        return True

    await until(accepts, timeout=timeout, interval=0.02, what=f"the server listens on port {port}")


@contextlib.asynccontextmanager
async def resilient_server(
    log: Path, port: int, *, sse: bool = False, go: Path | None = None, retry_interval: float | None = None
) -> AsyncIterator[asyncio.subprocess.Process]:
    """The server on 127.0.0.1:``port``, once it accepts connections (unless ``go`` is given:
    then it listens once that file exists, and the test waits with :func:`accepting`);
    killed at the end."""
    flags = [*(["sse"] if sse else []), *([f"go={go}"] if go else []), *([f"retry={retry_interval}"] if retry_interval else [])]
    args = ["-c", _SERVE, str(SERVERS / "resilient.py"), str(log), str(port), *flags]
    proc = await asyncio.create_subprocess_exec(sys.executable, *args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if go is None:
            await accepting(proc, port)
        yield proc
    finally:
        if proc.returncode is None:
            proc.kill()
        async with asyncio.timeout(10):
            await proc.wait()


def logged(log: Path, line: str) -> int:
    """How many times the server logged ``line``."""
    return log.read_text(encoding="utf-8").splitlines().count(line) if log.exists() else 0


class Events:
    """An ``on_event`` handler that keeps the client's events; :meth:`of` gives one kind."""

    def __init__(self) -> None:
        self.events: list[ClientEvent] = []

    def __call__(self, event: ClientEvent) -> None:
        self.events.append(event)

    @property
    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.kind == kind]
