"""The server's side of stdio: JSON-RPC messages in on stdin, out on stdout,
newline-delimited, with write-side flow control.

The pieces shared with the spawned-process transport (:mod:`.process`) — flow control
and the pipe protocols — live here too.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import threading
from collections.abc import Callable
from typing import Any

from ..protocol.framing import NEWLINE, LineFramer
from .base import OnClose, OnMessage

__all__ = ["ServerStdio", "Flow"]


class Flow:
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
    def __init__(self, flow: Flow, on_lost: Callable[[], None]) -> None:
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
        self._flow = Flow()
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
                self._writer.write(data + NEWLINE)
        elif self._out_file is not None:
            try:
                self._out_file.write(data + NEWLINE)
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
