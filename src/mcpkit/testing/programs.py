"""A server program run over HTTP for the length of a test: :func:`http_server` starts
it, waits until it accepts connections, and stops it; :func:`free_port` picks its port."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Mapping, Sequence

__all__ = ["free_port", "http_server", "ServerDidNotStart"]


class ServerDidNotStart(RuntimeError):
    """The program exited, or did not accept connections in time; the message holds
    the end of what it wrote to stderr."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that nothing listens on now (the system picks it). Another
    process could take it before the server binds it; on a test machine that is rare.
    Raises ``OSError`` if no socket can be bound."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.asynccontextmanager
async def http_server(
    command: Sequence[str],
    port: int,
    *,
    host: str = "127.0.0.1",
    path: str = "/mcp",
    env: Mapping[str, str] | None = None,
    ready_timeout: float = 30.0,
    stop_timeout: float = 10.0,
) -> AsyncIterator[str]:
    """Run ``command`` (a server program that serves HTTP on ``host``:``port``, such as
    one calling ``server.run("http", port=...)``) and yield its URL,
    ``http://host:port/path``, once the port accepts connections. On leaving, the
    program gets SIGTERM (a graceful stop), and SIGKILL after ``stop_timeout`` seconds.

    Raises :class:`ServerDidNotStart` if the program exits first or the port does not
    accept connections within ``ready_timeout`` seconds (its stderr ends the message);
    ``OSError`` if the command cannot be started. Cancelling the caller stops the
    program the same way.
    """
    proc = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env=dict(env) if env is not None else None,
    )
    tail = bytearray()
    drain = asyncio.create_task(_keep_tail(proc, tail))  # a full pipe would stall a chatty server
    try:
        await _wait_until_listening(proc, tail, host, port, ready_timeout)
        yield f"http://{host}:{port}{path}"
    finally:
        try:
            await _stop(proc, stop_timeout)
        finally:
            drain.cancel()


async def _keep_tail(proc: asyncio.subprocess.Process, tail: bytearray) -> None:
    """Read the program's stderr to its end, keeping the last 4 KiB in ``tail``."""
    assert proc.stderr is not None
    while chunk := await proc.stderr.read(4096):
        tail += chunk
        del tail[:-4096]


async def _wait_until_listening(proc: asyncio.subprocess.Process, tail: bytearray, host: str, port: int, timeout: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        if proc.returncode is not None:
            await asyncio.sleep(0.1)  # the last of its stderr
            text = tail.decode(errors="replace").strip()
            raise ServerDidNotStart(f"the server exited with {proc.returncode} before listening: {text}")
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout=1.0)
        except (OSError, TimeoutError):
            if loop.time() > deadline:
                text = tail.decode(errors="replace").strip()
                raise ServerDidNotStart(f"nothing listened on {host}:{port} after {timeout} s: {text}") from None
            await asyncio.sleep(0.05)
            continue
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        return


async def _stop(proc: asyncio.subprocess.Process, timeout: float) -> None:
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    try:
        await asyncio.wait_for(proc.wait(), timeout)
    except TimeoutError:
        _kill(proc)
        await proc.wait()
    except asyncio.CancelledError:
        _kill(proc)  # no waiting on: the caller is being cancelled
        raise


def _kill(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
