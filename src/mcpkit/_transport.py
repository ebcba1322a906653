"""Transports move whole JSON-RPC messages; they know nothing of their content.

A transport is started with two callbacks — ``on_message(bytes)`` for each complete
message and ``on_close(reason)`` once, when the channel ends — and offers ``send``
(queue bytes, never blocks), ``drain`` (wait while the peer is slow to read) and
``close``. This module holds the newline framing (sans-IO), the stdio transports
(the server's own stdin/stdout, and a spawned server process for the client) and the
in-memory pair.
"""

from __future__ import annotations

import asyncio
import os
import signal
import stat
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Protocol

__all__ = [
    "Transport",
    "LineFramer",
    "OVERSIZED",
    "StdioTransport",
    "memory_pair",
]

OnMessage = Callable[[bytes], None]
OnClose = Callable[[str | None], None]


class Transport(Protocol):
    """What the engine's driver needs from a channel."""

    async def start(self, on_message: OnMessage, on_close: OnClose) -> None: ...

    def send(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    async def close(self) -> None: ...


#: Yielded by :class:`LineFramer` in place of a message that exceeded the size limit.
OVERSIZED = b""


class LineFramer:
    """Split a byte stream into newline-delimited messages (sans-IO).

    Messages longer than ``max_size`` bytes are discarded as they stream in (never
    buffered whole) and reported once as :data:`OVERSIZED`. Blank lines are skipped.
    """

    def __init__(self, max_size: int) -> None:
        self.max_size = max_size
        self._parts: list[bytes] = []
        self._size = 0
        self._discarding = False

    def feed(self, data: bytes) -> list[bytes]:
        out: list[bytes] = []
        start = 0
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                break
            chunk = data[start:nl]
            start = nl + 1
            if self._discarding:
                self._discarding = False
                continue
            if self._parts:
                self._parts.append(chunk)
                line = b"".join(self._parts)
                self._parts.clear()
                self._size = 0
            else:
                line = chunk
            if len(line) > self.max_size:
                out.append(OVERSIZED)
            elif line.strip():
                out.append(line)
        rest = data[start:]
        if rest and not self._discarding:
            self._size += len(rest)
            if self._size > self.max_size:
                self._parts.clear()
                self._size = 0
                self._discarding = True
                out.append(OVERSIZED)
            else:
                self._parts.append(rest)
        return out

    def eof(self) -> list[bytes]:
        """The stream ended: a final unterminated line still counts as a message."""
        if self._parts and not self._discarding:
            line = b"".join(self._parts)
            self._parts.clear()
            self._size = 0
            if line.strip():
                return [line]
        return []


class _Flow:
    """Write-side flow control shared by the pipe protocols."""

    def __init__(self) -> None:
        self._resume: asyncio.Future[None] | None = None
        self.closed = False

    def pause_writing(self) -> None:
        if self._resume is None:
            self._resume = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._resume is not None and not self._resume.done():
            self._resume.set_result(None)
        self._resume = None

    async def drain(self) -> None:
        if self._resume is not None and not self.closed:
            await asyncio.shield(self._resume)

    def release(self) -> None:
        self.closed = True
        self.resume_writing()


class _ReadProtocol(asyncio.Protocol):
    def __init__(self, framer: LineFramer, on_message: OnMessage, on_eof: Callable[[], None]) -> None:
        self._framer = framer
        self._on_message = on_message
        self._on_eof = on_eof

    def data_received(self, data: bytes) -> None:
        for msg in self._framer.feed(data):
            self._on_message(msg)

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        for msg in self._framer.eof():
            self._on_message(msg)
        self._on_eof()


class _WriteProtocol(asyncio.BaseProtocol):
    def __init__(self, flow: _Flow, on_lost: Callable[[], None]) -> None:
        self._flow = flow
        self._on_lost = on_lost

    def pause_writing(self) -> None:
        self._flow.pause_writing()

    def resume_writing(self) -> None:
        self._flow.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self._flow.release()
        self._on_lost()


def _pollable(fd: int) -> bool:
    """Whether the event loop can watch ``fd`` (a pipe, a socket or a terminal)."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


class ServerStdio:
    """The server's side of stdio: messages in on stdin, out on stdout.

    While it runs, file descriptor 1 is pointed at stderr so that a stray ``print`` in
    user code cannot corrupt the protocol stream; protocol output goes to a private
    duplicate of the original stdout.
    """

    def __init__(self, *, max_message_size: int) -> None:
        self._framer = LineFramer(max_message_size)
        self._flow = _Flow()
        self._writer: asyncio.WriteTransport | None = None
        self._reader: asyncio.ReadTransport | None = None
        self._out_file: Any = None
        self._on_close: OnClose | None = None
        self._closed = False
        self._lost_writer: asyncio.Future[None] | None = None

    async def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        loop = asyncio.get_running_loop()
        self._on_close = on_close
        self._lost_writer = loop.create_future()
        sys.stdout.flush()
        out = os.fdopen(os.dup(1), "wb", buffering=0)
        os.dup2(2, 1)  # stray prints now go to stderr
        try:
            wt, _ = await loop.connect_write_pipe(lambda: _WriteProtocol(self._flow, self._lost), out)
            self._writer = wt
        except (ValueError, OSError):  # stdout is a regular file (or similar): plain blocking writes
            self._out_file = out
        stdin = os.fdopen(os.dup(0), "rb", buffering=0)
        if _pollable(stdin.fileno()):
            rt, _ = await loop.connect_read_pipe(lambda: _ReadProtocol(self._framer, on_message, self._eof), stdin)
            self._reader = rt
        else:  # a regular file or /dev/null, which epoll refuses: read it on a daemon thread
            threading.Thread(target=self._read_file, args=(loop, stdin, on_message), name="mcpkit-stdin", daemon=True).start()

    def _read_file(self, loop: asyncio.AbstractEventLoop, f: Any, on_message: OnMessage) -> None:
        try:
            while chunk := f.read(65536):
                for msg in self._framer.feed(chunk):
                    loop.call_soon_threadsafe(on_message, msg)
            for msg in self._framer.eof():
                loop.call_soon_threadsafe(on_message, msg)
            loop.call_soon_threadsafe(self._eof)
        except (OSError, RuntimeError):  # the loop closed under us: nobody listens any more
            pass

    def _eof(self) -> None:
        self._finish("stdin closed")

    def _lost(self) -> None:
        if self._lost_writer is not None and not self._lost_writer.done():
            self._lost_writer.set_result(None)
        self._finish("stdout closed")

    def _finish(self, reason: str) -> None:
        if not self._closed:
            self._closed = True
            if self._on_close is not None:
                self._on_close(reason)

    def send(self, data: bytes) -> None:
        if self._writer is not None:
            if not self._writer.is_closing():
                self._writer.write(data)
        elif self._out_file is not None:
            try:
                self._out_file.write(data)
            except OSError:
                self._out_file = None
                self._finish("stdout closed")

    async def drain(self) -> None:
        await self._flow.drain()

    async def close(self) -> None:
        """Stop reading, flush what is buffered for stdout (up to 5 s), close."""
        if self._reader is not None:
            self._reader.close()
        writer = self._writer
        if writer is not None and not writer.is_closing():
            writer.close()  # flushes the buffer, then reports connection_lost
            if self._lost_writer is not None:
                try:
                    await asyncio.wait_for(asyncio.shield(self._lost_writer), 5.0)
                except TimeoutError:
                    writer.abort()
        self._finish("closed")


class _ProcessProtocol(asyncio.SubprocessProtocol):
    def __init__(self, owner: StdioTransport) -> None:
        self._owner = owner

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self._owner._data(fd, data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self._owner._pipe_lost(fd)

    def process_exited(self) -> None:
        self._owner._exited()

    def pause_writing(self) -> None:
        self._owner._flow.pause_writing()

    def resume_writing(self) -> None:
        self._owner._flow.resume_writing()


class StdioTransport:
    """The client's side of stdio: spawns the server process and supervises it.

    ``stderr`` is ``"inherit"`` (the server's stderr goes to ours, the default),
    ``"capture"`` (kept in memory, the last ``stderr_limit`` bytes readable from
    :attr:`stderr_output`) or ``"devnull"``. Closing follows the spec's shutdown:
    close the server's stdin, wait ``shutdown_timeout`` seconds, SIGTERM, wait, SIGKILL.
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stderr: Literal["inherit", "capture", "devnull"] = "inherit",
        max_message_size: int = 64 * 1024 * 1024,
        shutdown_timeout: float = 2.0,
        stderr_limit: int = 64 * 1024,
    ) -> None:
        if not command:
            raise ValueError("command must name a program")
        self.command = list(command)
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.stderr = stderr
        self.shutdown_timeout = shutdown_timeout
        self._framer = LineFramer(max_message_size)
        self._flow = _Flow()
        self._stderr_buf: deque[bytes] = deque()
        self._stderr_size = 0
        self._stderr_limit = stderr_limit
        self._proc: asyncio.SubprocessTransport | None = None
        self._stdin: asyncio.WriteTransport | None = None
        self._on_message: OnMessage | None = None
        self._on_close: OnClose | None = None
        self._closed = False
        self._exit: asyncio.Future[None] | None = None
        self._eof_timer: asyncio.TimerHandle | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.get_pid() if self._proc is not None else None

    @property
    def returncode(self) -> int | None:
        return self._proc.get_returncode() if self._proc is not None else None

    @property
    def stderr_output(self) -> bytes:
        """The tail of what the server wrote to stderr (with ``stderr="capture"``)."""
        return b"".join(self._stderr_buf)

    async def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        """Spawn the process. Raises ``OSError`` if it cannot be started."""
        loop = asyncio.get_running_loop()
        self._on_message = on_message
        self._on_close = on_close
        self._exit = loop.create_future()
        err = {"inherit": None, "capture": subprocess.PIPE, "devnull": subprocess.DEVNULL}[self.stderr]
        proc, _ = await loop.subprocess_exec(
            lambda: _ProcessProtocol(self),
            *self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            env=self.env,
            cwd=self.cwd,
            start_new_session=False,
        )
        self._proc = proc
        stdin = proc.get_pipe_transport(0)
        assert isinstance(stdin, asyncio.WriteTransport)
        self._stdin = stdin

    def _data(self, fd: int, data: bytes) -> None:
        if fd == 1:
            assert self._on_message is not None
            for msg in self._framer.feed(data):
                self._on_message(msg)
        elif fd == 2:
            self._stderr_buf.append(data)
            self._stderr_size += len(data)
            while self._stderr_size > self._stderr_limit and len(self._stderr_buf) > 1:
                self._stderr_size -= len(self._stderr_buf.popleft())

    def _pipe_lost(self, fd: int) -> None:
        if fd == 1:
            assert self._on_message is not None
            for msg in self._framer.eof():
                self._on_message(msg)
            self._finish("server closed its stdout")
        elif fd == 0:
            self._flow.release()

    def _exited(self) -> None:
        if self._exit is not None and not self._exit.done():
            self._exit.set_result(None)
        if not self._closed:
            # Give stdout a moment to deliver what the process wrote before it exited,
            # then consider the connection gone even if a grandchild holds stdout open.
            loop = asyncio.get_running_loop()
            self._eof_timer = loop.call_later(0.2, self._finish, f"server process exited (code {self.returncode})")

    def _finish(self, reason: str) -> None:
        if self._closed:
            return
        self._closed = True
        self._flow.release()
        if self._eof_timer is not None:
            self._eof_timer.cancel()
        if self._on_close is not None:
            self._on_close(reason)

    def send(self, data: bytes) -> None:
        if self._stdin is not None and not self._stdin.is_closing():
            self._stdin.write(data)

    async def drain(self) -> None:
        await self._flow.drain()

    async def close(self) -> None:
        """Shut the server down: close stdin, wait, SIGTERM, wait, SIGKILL.

        Safe to call more than once; never raises for a process that already exited.
        On cancellation the process is killed before ``CancelledError`` propagates.
        """
        proc, exited = self._proc, self._exit
        if proc is None or exited is None:
            return
        try:
            if self._stdin is not None:
                self._stdin.close()
            for sig in (None, signal.SIGTERM, signal.SIGKILL):
                if exited.done():
                    break
                if sig is not None:
                    try:
                        proc.send_signal(sig)
                    except ProcessLookupError:
                        pass
                try:
                    await asyncio.wait_for(asyncio.shield(exited), self.shutdown_timeout)
                except TimeoutError:
                    continue
        except BaseException:
            if not exited.done():
                proc.kill()
            raise
        finally:
            self._finish("closed")
            proc.close()


class _MemoryEnd:
    """One end of an in-memory pair; messages reach the other end on the next loop turn."""

    def __init__(self) -> None:
        self.other: _MemoryEnd | None = None
        self._on_message: OnMessage | None = None
        self._on_close: OnClose | None = None
        self._closed = False
        self._backlog: list[bytes] = []

    async def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        self._on_message = on_message
        self._on_close = on_close
        backlog, self._backlog = self._backlog, []
        for data in backlog:
            on_message(data)

    def _deliver(self, data: bytes) -> None:
        if self._closed:
            return
        if self._on_message is None:
            self._backlog.append(data)
        else:
            self._on_message(data)

    def send(self, data: bytes) -> None:
        other = self.other
        if other is not None and not self._closed:
            asyncio.get_running_loop().call_soon(other._deliver, data.rstrip(b"\n"))

    async def drain(self) -> None:
        return None

    def _end(self, reason: str) -> None:
        if not self._closed:
            self._closed = True
            if self._on_close is not None:
                self._on_close(reason)

    async def close(self) -> None:
        other = self.other
        self._end("closed")
        if other is not None:
            asyncio.get_running_loop().call_soon(other._end, "peer closed the connection")


def memory_pair() -> tuple[_MemoryEnd, _MemoryEnd]:
    """Two connected in-memory transports (client end, server end)."""
    a, b = _MemoryEnd(), _MemoryEnd()
    a.other, b.other = b, a
    return a, b
