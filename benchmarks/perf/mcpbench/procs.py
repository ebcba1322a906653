"""Server processes: spawning them, waiting for a port, stopping them, and reading their
memory and CPU time from ``/proc`` (Linux)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import time
from pathlib import Path
from typing import IO

_TICK = os.sysconf("SC_CLK_TCK")


class BenchError(Exception):
    """The measurement could not be made: a server died, hung, or broke the protocol."""


def memory_kb(pid: int) -> dict[str, int]:
    """``VmHWM`` (peak RSS) and ``VmRSS`` of a live process, in kB; {} once it is gone."""
    found: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("VmHWM:", "VmRSS:")):
                key, value = line.split(":", 1)
                found[key] = int(value.split()[0])
    return found


def peak_rss_mb(pid: int) -> float | None:
    kb = memory_kb(pid).get("VmHWM")
    return round(kb / 1024, 1) if kb is not None else None


def rss_mb(pid: int) -> float | None:
    kb = memory_kb(pid).get("VmRSS")
    return round(kb / 1024, 2) if kb is not None else None


def cpu_seconds(pid: int) -> float | None:
    """User plus system CPU time of a live process and its finished children."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    # after the command name: state is fields[0], utime fields[11], stime fields[12]
    return (int(fields[11]) + int(fields[12])) / _TICK


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def log_file(path: Path | None) -> IO[bytes] | int:
    """Where a server's stderr goes: appended to ``path``, or discarded."""
    if path is None:
        return asyncio.subprocess.DEVNULL
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.open("ab")


async def spawn_http(argv: list[str], port: int, stderr: Path | None, timeout: float = 60.0) -> asyncio.subprocess.Process:
    """Start an HTTP server (in a session of its own) and wait until it accepts connections."""
    err = log_file(stderr)
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=err, start_new_session=True
        )
    finally:
        if not isinstance(err, int):
            err.close()
    deadline = time.monotonic() + timeout
    while True:
        if proc.returncode is not None:
            raise BenchError(f"{' '.join(argv)} exited with {proc.returncode} before listening (see {stderr})")
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            if time.monotonic() > deadline:
                await stop(proc)
                raise BenchError(f"{' '.join(argv)} did not listen on port {port} within {timeout} s") from None
            await asyncio.sleep(0.02)
            continue
        writer.close()
        return proc


async def stop(proc: asyncio.subprocess.Process, grace: float = 5.0) -> None:
    """SIGTERM the process group, then SIGKILL it after ``grace`` seconds."""
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        await asyncio.wait_for(proc.wait(), grace)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()


def raise_fd_limit() -> int:
    """Raise this process's descriptor limit to its hard limit (children inherit it)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def counters(pid: int) -> dict[str, float]:
    """CPU seconds (user, system) and context switches (voluntary, involuntary, all
    threads) of a live process, for per-request costs: take them before and after."""
    out: dict[str, float] = {"user_s": 0.0, "system_s": 0.0, "voluntary": 0, "involuntary": 0}
    with contextlib.suppress(OSError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        out["user_s"], out["system_s"] = int(fields[11]) / _TICK, int(fields[12]) / _TICK
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                for line in (task / "status").read_text().splitlines():
                    if line.startswith("voluntary_ctxt_switches:"):
                        out["voluntary"] += int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches:"):
                        out["involuntary"] += int(line.split()[1])
    return out


def per_op(before: dict[str, float], after: dict[str, float], ops: int) -> str:
    """What one operation cost the process, from two ``counters`` readings."""
    if not ops:
        return "no operations"
    d = {k: (after[k] - before[k]) / ops for k in before}
    return (
        f"per request: {d['user_s'] * 1e6:.0f} µs user + {d['system_s'] * 1e6:.0f} µs system CPU, "
        f"{d['voluntary']:.2f} voluntary + {d['involuntary']:.2f} involuntary context switches"
    )
