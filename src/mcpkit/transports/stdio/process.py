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
import sys
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Final, Literal, cast

from ...protocol.errors import ConnectionClosed, flatten_text
from ...protocol.framing import NEWLINE, LineFramer
from ..base import OnClose, OnMessage
from ..restart import CrashLog, RestartPolicy
from .pipes import Flow, Inbox, small_reads, widen_pipe

__all__ = ["StdioTransport", "SAFE_ENVIRONMENT", "safe_environment"]

_STDERR_NOTE: Final = "; stderr: "
_STDERR_TAIL: Final = 300  # characters of the server's stderr a reason carries

#: The variables a server given an ``env`` of its own still inherits from ours by default:
#: where programs are found, who and where the user is, the locale, the terminal, the
#: temporary directory, and on Windows what its programs need to run at all.
SAFE_ENVIRONMENT: Final = (
    ("APPDATA", "COMSPEC", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT", "PROCESSOR_ARCHITECTURE",
     "PROGRAMDATA", "PROGRAMFILES", "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "TMP", "USERNAME", "USERPROFILE", "WINDIR")
    if sys.platform == "win32"
    else ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LANGUAGE", "TMPDIR", "TZ")
)  # fmt: skip


def safe_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The part of ``environ`` (ours by default) a server with an ``env`` of its own
    inherits: :data:`SAFE_ENVIRONMENT`, and the ``LC_*`` locale variables. A value that
    starts with ``()`` (an exported shell function) is never passed on."""
    source = os.environ if environ is None else environ
    upper = sys.platform == "win32"  # Windows variable names are case-insensitive
    wanted = set(SAFE_ENVIRONMENT)
    return {
        key: value
        for key, value in source.items()
        if ((key.upper() if upper else key) in wanted or key.startswith("LC_")) and not value.startswith("()")
    }


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

    The server's environment: without ``env`` it inherits ours, all of it. Given an
    ``env``, those variables are merged over a safe part of ours
    (:func:`safe_environment`: ``PATH``, ``HOME``, the user, the locale, the terminal,
    the temporary directory, the platform's essentials), as the official SDK does, so
    that ``python3`` or ``node`` resolve as they do for us and nothing else leaks.
    ``inherit_env=False`` passes exactly ``env`` (nothing of ours); ``inherit_env=True``
    merges it over the whole of ours.

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
        inherit_env: bool | None = None,
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
        self.inherit_env = inherit_env
        self.cwd = cwd
        self.stderr = stderr
        self.shutdown_timeout = shutdown_timeout
        self._framer = LineFramer(max_message_size)
        self._flow = Flow()
        self._stderr_buf: deque[bytes] = deque()
        self._stderr_size = 0
        self._stderr_limit = stderr_limit
        self._stderr_written = 0  # bytes in all, and as of the current process's start:
        self._stderr_since = 0  # what a reason quotes is the current process's alone
        self._proc: asyncio.SubprocessTransport | None = None
        self._stdin: asyncio.WriteTransport | None = None
        self._inbox = Inbox(lambda data: None)
        self._stdout: asyncio.ReadTransport | None = None
        self._on_close: OnClose | None = None
        self._closed = False
        self._exit: asyncio.Future[None] | None = None
        self._eof_timer: asyncio.TimerHandle | None = None
        self._stdout_done = False
        self._stderr_closed = asyncio.Event()  # the captured stderr was read to its end
        self._stderr_closed.set()  # (nothing to read until a start captures it)

    @property
    def environment(self) -> dict[str, str] | None:
        """The environment the server is started with (None: ours, unchanged)."""
        env, inherit = self.env, self.inherit_env
        if inherit is False:
            return dict(env or {})
        if env is None:
            return None
        base = dict(os.environ) if inherit else safe_environment()
        return {**base, **(env or {})}

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
        self._stderr_closed = asyncio.Event()
        if self.stderr != "capture":
            self._stderr_closed.set()
        self._stderr_since = self._stderr_written
        proc, _ = await loop.subprocess_exec(
            self._new_protocol,
            *self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            env=self.environment,
            cwd=self.cwd,
            start_new_session=False,
        )
        self._proc = proc
        # asyncio's pipe transports, or an event loop's own with the same methods (uvloop's
        # do not derive from asyncio's classes, so nothing here checks the class).
        stdin = cast("asyncio.WriteTransport | None", proc.get_pipe_transport(0))
        stdout = cast("asyncio.ReadTransport | None", proc.get_pipe_transport(1))
        if stdin is None or stdout is None:  # not with PIPE asked for both; an event loop's bug
            proc.kill()
            raise OSError("the event loop gave the server process no stdin or stdout pipe")
        stdin.set_write_buffer_limits(high=0)  # paused (write_blocked) whenever anything waits to be written
        self._stdin = stdin
        self._stdout = stdout
        # Short reads without an mmap each, and room in the pipe for a large answer to
        # arrive in a few writes (transports/stdio/pipes.py). stdin keeps the default buffer:
        # requests are small, and a narrow pipe tells a slow server's back-pressure sooner.
        small_reads(stdout)
        pipe = stdout.get_extra_info("pipe")
        try:
            fd = pipe.fileno() if pipe is not None else None
        except ValueError:  # closed already: the process exited at once (its exit is on its way)
            fd = None
        if fd is not None:
            widen_pipe(fd)
        if not self._inbox.hungry:  # paused before the process started
            stdout.pause_reading()

    def _new_protocol(self) -> _ProcessProtocol:
        self._protocol = _ProcessProtocol(self)
        return self._protocol

    def restart_delay(self, reason: str) -> float | None:
        """The server went away (``reason``): seconds to wait before starting it again,
        or None without ``restart`` (or after :meth:`close`). Raises
        :class:`~mcpkit.ConnectionClosed` when the policy gives up; its message names the
        last reason and, with ``stderr="capture"``, the tail of the server's stderr."""
        crashes = self._crashes
        if crashes is None or self._stopped:
            return None
        delay = crashes.crashed(asyncio.get_running_loop().time())
        if delay is None:
            policy = crashes.policy
            rc = self.returncode
            code = f", exit code {rc}" if rc is not None and f"(code {rc})" not in reason else ""
            tail = self._stderr_note() if _STDERR_NOTE not in reason else ""
            raise ConnectionClosed(
                f"The server process crashed {crashes.recent} times within {policy.window:g} s; "
                f"not restarting it again (last: {reason}{code}){tail}"
            )
        return delay

    @property
    def supervises_start(self) -> bool:
        """Whether a server that fails while the client first connects (it exits, or
        closes its stdout, before the handshake is done) is restarted like a crash: the
        restart policy's ``supervise_start``."""
        return self.restart_policy is not None and self.restart_policy.supervise_start

    def _stderr_note(self) -> str:
        """``"; stderr: …"`` with the last 300 bytes the current process wrote to its
        (captured) stderr, flattened to one line; nothing if it wrote none."""
        own = min(self._stderr_written - self._stderr_since, _STDERR_TAIL)
        tail = flatten_text(self.stderr_output[-own:].decode("utf-8", "replace").strip(), _STDERR_TAIL) if own else ""
        return f"{_STDERR_NOTE}{tail}" if tail else ""

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
            self._stderr_written += len(data)
            while self._stderr_size > self._stderr_limit and len(self._stderr_buf) > 1:
                self._stderr_size -= len(self._stderr_buf.popleft())

    def _pipe_lost(self, fd: int) -> None:
        if fd == 1:
            self._inbox.put(self._framer.eof())
            self._stdout_done = True
            self._settle("server closed its stdout")
        elif fd == 2:
            self._stderr_closed.set()
            self._settle(None)
        elif fd == 0:
            self._flow.release()

    def _exited(self) -> None:
        if self._exit is not None and not self._exit.done():
            self._exit.set_result(None)
        self._settle(None)

    def _settle(self, hint: str | None) -> None:
        """A pipe closed or the process exited: the connection ends once the process has
        exited and its pipes are read to the end (so that the reason carries the last of
        its stderr). It ends anyway a moment after the exit — a grandchild may hold a pipe
        open — or a moment after stdout closed (``hint``) while the process still runs."""
        if self._exit is not None and self._exit.done():
            if self._stdout_done and self._stderr_closed.is_set():
                self._finish(self._exit_reason())
            else:
                self._finish_soon(self._exit_reason())
        elif hint is not None:
            self._finish_soon(hint)

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
            self._on_close(reason if reason == "closed" else reason + self._stderr_note())

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

    async def _read_stderr_to_the_end(self) -> None:
        """Once the process has exited, let its captured stderr be read to its end (at
        most a second: a grandchild may hold the pipe open), so that
        :attr:`stderr_output` has the last it wrote once :meth:`close` returns."""
        try:
            await asyncio.wait_for(self._stderr_closed.wait(), 1.0)
        except TimeoutError:
            pass

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
            await self._read_stderr_to_the_end()
        except BaseException:
            if not exited.done():
                proc.kill()
            raise
        finally:
            self._finish("closed")
            proc.close()
