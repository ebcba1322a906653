"""The client's side of stdio: spawn the server process, talk to it over its stdin
and stdout, and supervise it (shutdown per the spec: close stdin, wait, SIGTERM,
wait, SIGKILL; with ``restart``, a new process after a crash, within a
:class:`~mcpkit.transports.restart.RestartPolicy`). The pipes' tuning and flow control
are :mod:`.pipes`', shared with the server's side (:mod:`.server`).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Literal

from ...protocol.errors import ConnectionClosed, flatten_text
from ...protocol.framing import NEWLINE, LineFramer
from ..base import OnClose, OnMessage
from ..restart import CrashLog, RestartPolicy
from .pipes import Flow, Inbox, small_reads, widen_pipe

__all__ = ["StdioTransport"]


class _ProcessProtocol(asyncio.SubprocessProtocol):
    """One process's pipes; once a newer process is started, this one's news is ignored."""

    def __init__(self, owner: StdioTransport) -> None:
        self._owner = owner

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if self._owner._protocol is self:
            self._owner._data(fd, data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if self._owner._protocol is self:
            self._owner._pipe_lost(fd)

    def process_exited(self) -> None:
        if self._owner._protocol is self:
            self._owner._exited()

    def pause_writing(self) -> None:
        if self._owner._protocol is self:
            self._owner._flow.pause_writing()

    def resume_writing(self) -> None:
        if self._owner._protocol is self:
            self._owner._flow.resume_writing()


class StdioTransport:
    """The client's side of stdio: spawns the server process and supervises it.

    ``stderr`` is ``"inherit"`` (the server's stderr goes to ours, the default),
    ``"capture"`` (kept in memory, the last ``stderr_limit`` bytes readable from
    :attr:`stderr_output`) or ``"devnull"``. Closing follows the spec's shutdown:
    close the server's stdin, wait ``shutdown_timeout`` seconds, SIGTERM, wait, SIGKILL.
    :meth:`pause_reading` stops reading the server's stdout (what was read is held).

    ``restart=True`` (or a :class:`~mcpkit.RestartPolicy`) makes the client supervise
    the server: when the process exits or closes its stdout on its own, the client
    starts a new one after a back-off delay, negotiates again and re-opens its
    subscriptions; calls in flight at the crash fail with ``ConnectionClosed`` (a
    :class:`~mcpkit.RetryPolicy` retries the idempotent ones). After more crashes
    than the policy allows within its window, it gives up with a ``ConnectionClosed``
    that says so (docs/timeouts-and-retries.md).
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
        restart: bool | RestartPolicy = False,
    ) -> None:
        if not command:
            raise ValueError("command must name a program")
        #: How a crashed server is restarted (None: it is not).
        self.restart_policy = RestartPolicy() if restart is True else (restart or None)
        self._crashes = CrashLog(self.restart_policy) if self.restart_policy is not None else None
        self._protocol: _ProcessProtocol | None = None
        self._stopped = False  # close() was called: never restart
        self.command = list(command)
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.stderr = stderr
        self.shutdown_timeout = shutdown_timeout
        self._framer = LineFramer(max_message_size)
        self._flow = Flow()
        self._stderr_buf: deque[bytes] = deque()
        self._stderr_size = 0
        self._stderr_limit = stderr_limit
        self._proc: asyncio.SubprocessTransport | None = None
        self._stdin: asyncio.WriteTransport | None = None
        self._inbox = Inbox(lambda data: None)
        self._stdout: asyncio.ReadTransport | None = None
        self._on_close: OnClose | None = None
        self._closed = False
        self._exit: asyncio.Future[None] | None = None
        self._eof_timer: asyncio.TimerHandle | None = None
        self._stdout_done = False

    @property
    def pid(self) -> int | None:
        """The server process's id (None before :meth:`start`)."""
        return self._proc.get_pid() if self._proc is not None else None

    @property
    def returncode(self) -> int | None:
        """The server's exit status once it has exited (negative: killed by that
        signal), else None."""
        return self._proc.get_returncode() if self._proc is not None else None

    @property
    def stderr_output(self) -> bytes:
        """The tail of what the server wrote to stderr (with ``stderr="capture"``)."""
        return b"".join(self._stderr_buf)

    @property
    def restarts(self) -> int:
        """How many times the server process was restarted after a crash."""
        return self._crashes.restarts if self._crashes is not None else 0

    async def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        """Spawn the process (after a crash: a new one, once the old one is shut down).
        Raises ``OSError`` if it cannot be started."""
        if self._proc is not None:  # a restart: the old process goes, and all its state
            await self._shut_down()
            if self._eof_timer is not None:
                self._eof_timer.cancel()
            self._proc = self._stdin = self._stdout = self._eof_timer = None
            self._framer = LineFramer(self._framer.max_size)
            self._flow = Flow()
            self._inbox = Inbox(on_message)
            self._closed = self._stdout_done = False
        loop = asyncio.get_running_loop()
        self._stopped = False
        self._inbox.on_message = on_message
        self._on_close = on_close
        self._exit = loop.create_future()
        err = {"inherit": None, "capture": subprocess.PIPE, "devnull": subprocess.DEVNULL}[self.stderr]
        proc, _ = await loop.subprocess_exec(
            self._new_protocol,
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
        stdin.set_write_buffer_limits(high=0)  # paused (write_blocked) whenever anything waits to be written
        self._stdin = stdin
        stdout = proc.get_pipe_transport(1)
        assert isinstance(stdout, asyncio.ReadTransport)
        self._stdout = stdout
        # Short reads without an mmap each, and room in the pipe for a large answer to
        # arrive in a few writes (transports/stdio/pipes.py). stdin keeps the default buffer:
        # requests are small, and a narrow pipe tells a slow server's back-pressure sooner.
        small_reads(stdout)
        pipe = stdout.get_extra_info("pipe")
        if pipe is not None:
            widen_pipe(pipe.fileno())
        if not self._inbox.hungry:  # paused before the process started
            stdout.pause_reading()

    def _new_protocol(self) -> _ProcessProtocol:
        self._protocol = _ProcessProtocol(self)
        return self._protocol

    def restart_delay(self, reason: str) -> float | None:
        """The server went away (``reason``): seconds to wait before starting it again,
        or None without ``restart`` (or after :meth:`close`). Raises
        :class:`~mcpkit.ConnectionClosed` when the policy gives up."""
        crashes = self._crashes
        if crashes is None or self._stopped:
            return None
        delay = crashes.crashed(asyncio.get_running_loop().time())
        if delay is None:
            policy = crashes.policy
            tail = flatten_text(self.stderr_output[-300:].decode("utf-8", "replace").strip(), 300)
            rc = self.returncode
            code = f", exit code {rc}" if rc is not None and f"(code {rc})" not in reason else ""
            raise ConnectionClosed(
                f"The server process crashed {crashes.recent} times within {policy.window:g} s; "
                f"not restarting it again (last: {reason}{code}){'; stderr: ' + tail if tail else ''}"
            )
        return delay

    @property
    def write_blocked(self) -> bool:
        """Whether earlier bytes still wait to be written to the server's stdin."""
        stdin = self._stdin
        return stdin is not None and not stdin.is_closing() and stdin.get_write_buffer_size() > 0

    def _data(self, fd: int, data: bytes) -> None:
        if fd == 1:
            inbox = self._inbox
            inbox.put(self._framer.feed(data))
            if not inbox.hungry and self._stdout is not None:
                self._stdout.pause_reading()
        elif fd == 2:
            self._stderr_buf.append(data)
            self._stderr_size += len(data)
            while self._stderr_size > self._stderr_limit and len(self._stderr_buf) > 1:
                self._stderr_size -= len(self._stderr_buf.popleft())

    def _pipe_lost(self, fd: int) -> None:
        if fd == 1:
            self._inbox.put(self._framer.eof())
            self._stdout_done = True
            if self._exit is not None and self._exit.done():
                self._finish(self._exit_reason())
            else:  # the process is probably exiting: a moment for its status, which the reason names
                self._finish_soon("server closed its stdout")
        elif fd == 0:
            self._flow.release()

    def _exited(self) -> None:
        if self._exit is not None and not self._exit.done():
            self._exit.set_result(None)
        if self._stdout_done:
            self._finish(self._exit_reason())
        else:
            # Give stdout a moment to deliver what the process wrote before it exited,
            # then consider the connection gone even if a grandchild holds stdout open.
            self._finish_soon(self._exit_reason())

    def _exit_reason(self) -> str:
        return f"server process exited (code {self.returncode})"

    def _finish_soon(self, reason: str) -> None:
        if not self._closed:
            if self._eof_timer is not None:
                self._eof_timer.cancel()
            self._eof_timer = asyncio.get_running_loop().call_later(0.2, self._finish, reason)

    def _finish(self, reason: str) -> None:
        if self._closed:
            return
        self._closed = True
        self._flow.release()
        if self._eof_timer is not None:
            self._eof_timer.cancel()
        if self._on_close is not None:
            self._on_close(reason)

    def pause_reading(self) -> None:
        """Stop handing on the server's messages and reading its stdout. Never raises."""
        self._inbox.paused = True
        if self._stdout is not None:
            self._stdout.pause_reading()

    def resume_reading(self) -> None:
        """Hand on what was held (now, until paused again), then read the server's
        stdout again. Never raises, except what ``on_message`` raises."""
        inbox = self._inbox
        if inbox.paused:
            inbox.paused = False
            inbox.release()
            if inbox.hungry and self._stdout is not None and not self._closed:
                self._stdout.resume_reading()

    def send(self, data: bytes) -> None:
        """Queue one message for the server's stdin, with its newline. Never blocks or
        raises: after the pipe closed the message is dropped (pending calls fail with
        ``ConnectionClosed`` through ``on_close``)."""
        if self._stdin is not None and not self._stdin.is_closing():
            self._stdin.write(data + NEWLINE)

    async def drain(self) -> None:
        """Wait while the server is slow to read its stdin (the pipe's buffer is full)."""
        await self._flow.drain()

    async def close(self) -> None:
        """Shut the server down: close stdin, wait, SIGTERM, wait, SIGKILL.

        Safe to call more than once; never raises for a process that already exited.
        On cancellation the process is killed before ``CancelledError`` propagates.
        A closed transport is not restarted.
        """
        self._stopped = True
        await self._shut_down()

    async def _shut_down(self) -> None:
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
