"""The server's side of stdio: JSON-RPC messages in on stdin, out on stdout,
newline-delimited, with flow control both ways.

Reading pauses while the :class:`~mcpkit.runtime.peer.Peer` asks (its in-flight bound)
and while stdout is backed up (a client that does not read what it is answered), so a
client cannot make the server hold more than a bounded amount on its behalf. While
paused, the server still notices a client that hangs up (closes stdin; Linux): what is
left in the pipe is then read and handed on regardless of the bound (a closed pipe
holds a bounded amount), so that end of input is seen, and shutdown starts, promptly.
When the server stops on a signal, :meth:`ServerStdio.stop_reading` ends reading for
good while writing goes on (requests in progress are still answered).

The read-side and write-side flow control are :mod:`.pipes`' (the spawned-process
transport, :mod:`.process`, uses them too).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import stat
import sys
import threading
from collections.abc import Callable, Coroutine
from typing import Any

from ...protocol.framing import NEWLINE, LineFramer
from ..base import OnClose, OnMessage
from .pipes import BulkWriter, Flow, Inbox, small_reads, widen_pipe

__all__ = ["ServerStdio"]


class _ReadProtocol(asyncio.Protocol):
    def __init__(self, owner: ServerStdio) -> None:
        self._owner = owner

    def data_received(self, data: bytes) -> None:
        self._owner._received(data)

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._owner._read_lost()


class _WriteProtocol(asyncio.BaseProtocol):
    def __init__(self, owner: ServerStdio) -> None:
        self._owner = owner

    def pause_writing(self) -> None:
        self._owner._flow.pause_writing()
        self._owner._hold_for_writing(True)

    def resume_writing(self) -> None:
        self._owner._flow.resume_writing()
        self._owner._hold_for_writing(False)

    def connection_lost(self, exc: Exception | None) -> None:
        self._owner._flow.release()
        self._owner._lost()


def _pollable(fd: int) -> bool:
    """Whether the event loop can watch ``fd`` (a pipe, a socket or a terminal)."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


#: Above this size an answer and its newline are written separately (no joined copy).
_JOIN_BELOW = 1 << 16


class _HangupWatch:
    """Reports, while started, that the other end of ``fd`` stopped writing — even
    though unread data is left — without reading it: an epoll set holding ``fd`` for
    hang-ups only, watched by the loop. Where there is no epoll it never reports."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, on_hangup: Callable[[], None]) -> None:
        self._loop = loop
        self._on_hangup = on_hangup
        self._ep: Any = None
        self._watching = False
        epoll = getattr(select, "epoll", None)
        if epoll is not None:
            ep = epoll()
            try:
                ep.register(fd, select.EPOLLRDHUP)  # a pipe's hang-up is always reported; RDHUP: a socket's half-close
            except OSError:
                ep.close()
            else:
                self._ep = ep

    def start(self) -> None:
        if self._ep is not None and not self._watching:
            self._watching = True
            self._loop.add_reader(self._ep.fileno(), self._fired)

    def stop(self) -> None:
        if self._watching:
            self._watching = False
            self._loop.remove_reader(self._ep.fileno())

    def _fired(self) -> None:
        self.stop()
        self._on_hangup()

    def close(self) -> None:
        self.stop()
        if self._ep is not None:
            self._ep.close()
            self._ep = None


class ServerStdio:
    """The server's side of stdio: messages in on stdin, out on stdout.

    While it runs, file descriptor 1 is pointed at stderr so that a stray ``print`` in
    user code cannot corrupt the protocol stream; protocol output goes to a private
    duplicate of the original stdout. A stdin that the event loop cannot watch (a
    regular file) is read on a thread, one chunk at a time as the messages are taken.
    """

    def __init__(self, *, max_message_size: int) -> None:
        self._framer = LineFramer(max_message_size)
        self._flow = Flow()
        self._inbox = Inbox(lambda data: None)
        self._writer: asyncio.WriteTransport | None = None
        self._batch: list[bytes] = []  # short messages given to send_in_turn in this turn of the loop
        self._loop: asyncio.AbstractEventLoop  # set by start, before anything is written
        self._bulk: BulkWriter | None = None  # large answers, straight from their bytes
        self._reader: asyncio.ReadTransport | None = None
        self._hangup: _HangupWatch | None = None
        self._out_file: Any = None
        self._on_close: OnClose | None = None
        self._closed = False
        self._stopped = False
        self._lost_writer: asyncio.Future[None] | None = None
        # why reading is held back: the peer asked, stdout is backed up; or not, to_eof
        self._peer_hold = False
        self._write_hold = False
        self._to_eof = False  # the client hung up: read what is left, whatever the holds
        self._reading = True  # the reader (or the file thread) is let to read
        self._more = threading.Event()  # the file thread may read its next chunk
        self._eof_pending = False  # the file thread hit the end while messages were held

    async def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        """Take over stdin and stdout. Raises ``OSError`` if they cannot be used."""
        loop = self._loop = asyncio.get_running_loop()
        self._on_close = on_close
        self._inbox.on_message = on_message
        self._lost_writer = loop.create_future()
        sys.stdout.flush()
        out = os.fdopen(os.dup(1), "wb", buffering=0)
        os.dup2(2, 1)  # stray prints now go to stderr
        widen_pipe(out.fileno())
        try:
            wt, _ = await loop.connect_write_pipe(lambda: _WriteProtocol(self), out)
            self._writer = wt
            self._bulk = BulkWriter(wt, self._bulk_busy)
        except (ValueError, OSError):  # stdout is a regular file (or similar): plain blocking writes
            self._out_file = out
        stdin = os.fdopen(os.dup(0), "rb", buffering=0)
        if _pollable(stdin.fileno()):
            rt, _ = await loop.connect_read_pipe(lambda: _ReadProtocol(self), stdin)
            small_reads(rt)
            self._reader = rt
            self._hangup = _HangupWatch(loop, stdin.fileno(), self._hung_up)
        else:  # a regular file or /dev/null, which epoll refuses: read it on a daemon thread
            threading.Thread(target=self._read_file, args=(loop, stdin), name="mcpkit-stdin", daemon=True).start()

    # --- reading ---------------------------------------------------------------------------

    def _received(self, data: bytes) -> None:
        if not self._stopped:
            self._inbox.put(self._framer.feed(data))
            if not self._inbox.hungry:
                self._update()

    def _read_lost(self) -> None:
        if self._stopped:
            self._eof()
            return
        self._inbox.put(self._framer.eof())
        self._eof_pending = True  # reported once nothing is held
        self._update()

    def _read_file(self, loop: asyncio.AbstractEventLoop, f: Any) -> None:
        try:
            with f:  # the duplicate of stdin is this thread's to close
                while chunk := f.read(65536):
                    self._more.clear()
                    loop.call_soon_threadsafe(self._take, self._framer.feed(chunk), False)
                    self._more.wait()
                    if self._stopped:  # closed or stopping: what is left stays in the file
                        return
                loop.call_soon_threadsafe(self._take, self._framer.eof(), True)
        except (OSError, RuntimeError):  # the loop closed under us: nobody listens any more
            pass

    def _take(self, messages: list[bytes], eof: bool) -> None:
        """A chunk from the file thread (on the loop)."""
        if self._stopped:
            return
        self._reading = False  # the thread waits for its next go
        self._inbox.put(messages)
        self._eof_pending = eof
        self._update()

    def pause_reading(self) -> None:
        """Hand on no message until :meth:`resume_reading` (the peer's in-flight bound);
        reading stops once what was read is held. Never raises."""
        if not self._peer_hold:
            self._peer_hold = True
            self._update()

    def resume_reading(self) -> None:
        """Hand on the held messages (now, until paused again), then read more. Never
        raises, except what ``on_message`` raises."""
        if self._peer_hold:
            self._peer_hold = False
            self._update()

    def stop_reading(self) -> None:
        """Read no more, for good (the server is stopping: SIGINT, SIGTERM): messages
        read but not yet handed on are dropped, and what is left in stdin stays there.
        Writing goes on, so that requests in progress are still answered. Never raises."""
        if self._stopped:
            return
        self._stopped = True
        self._inbox.clear()
        self._more.set()  # the file thread reads on; what it reads is ignored
        if self._hangup is not None:
            self._hangup.stop()
        if self._reader is not None:
            self._reader.pause_reading()

    def _hold_for_writing(self, hold: bool) -> None:
        self._write_hold = hold
        self._update()

    def _hung_up(self) -> None:
        self._to_eof = True
        self._update()

    def _update(self) -> None:
        """Bring the inbox and the reader in line with the holds."""
        inbox = self._inbox
        inbox.paused = (self._peer_hold or self._write_hold) and not self._to_eof
        if not inbox.paused:
            inbox.release()  # may pause again, through the peer
        if self._stopped:
            return
        want = inbox.hungry
        if self._eof_pending:
            if want:
                self._eof_pending = False
                self._eof()
            return
        if want == self._reading:
            return
        self._reading = want
        reader, hangup = self._reader, self._hangup
        if reader is None:  # the file thread
            if want:
                self._more.set()
        elif want:
            assert hangup is not None
            hangup.stop()
            reader.resume_reading()
        else:
            reader.pause_reading()
            assert hangup is not None
            hangup.start()

    # --- the end ---------------------------------------------------------------------------

    def _eof(self) -> None:
        self._finish("stdin closed")

    def _lost(self) -> None:
        if self._bulk is not None:
            self._bulk.close()
        if self._lost_writer is not None and not self._lost_writer.done():
            self._lost_writer.set_result(None)
        self._finish("stdout closed")

    def _finish(self, reason: str) -> None:
        if not self._closed:
            self._closed = True
            if self._on_close is not None:
                self._on_close(reason)

    # --- writing ---------------------------------------------------------------------------

    def send(self, data: bytes) -> None:
        """Write one message and its newline, after those given to :meth:`send_in_turn`
        in this turn (a short one in the same write as they). Never raises; dropped once
        stdout is gone."""
        writer = self._writer
        if writer is not None:
            if self._batch:
                if len(data) < _JOIN_BELOW:  # the last answer of a turn, say: joined to the others
                    self._batch.append(data)
                    self._flush()
                    return
                self._flush()
            if not writer.is_closing():
                bulk = self._bulk
                if bulk is not None and bulk.wanted(data):  # large, or behind a large one
                    bulk.write(data)
                    bulk.write(NEWLINE)
                elif len(data) < _JOIN_BELOW:
                    writer.write(data + NEWLINE)
                else:  # no joined copy of a long answer
                    writer.write(data)
                    writer.write(NEWLINE)
        elif self._out_file is not None:
            try:
                self._out_file.write(data + NEWLINE)
            except OSError:
                out, self._out_file = self._out_file, None
                with contextlib.suppress(OSError):
                    out.close()
                self._finish("stdout closed")

    def send_in_turn(self, data: bytes) -> None:
        """:meth:`send` at the end of this turn of the event loop, together with the
        other short messages given here in the turn: one write (one system call, one
        wake-up of the reader) for all of them. A long message is sent at once. Never
        raises; dropped once stdout is gone."""
        if self._writer is None or len(data) >= _JOIN_BELOW:
            self.send(data)
            return
        batch = self._batch
        batch.append(data)
        if len(batch) == 1:
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        """Write the messages batched in this turn, with their newlines, in one write (to
        the bulk writer if it has something left, behind it)."""
        batch = self._batch
        if not batch:
            return
        data = batch[0] + NEWLINE if len(batch) == 1 else NEWLINE.join(batch) + NEWLINE
        batch.clear()
        writer = self._writer
        if writer is None or writer.is_closing():
            return
        bulk = self._bulk
        if bulk is not None and bulk.busy:
            bulk.write(data)
        else:
            writer.write(data)

    def _bulk_busy(self, busy: bool) -> None:
        """The bulk writer has something left to write (hold senders and reading back,
        as when the transport's buffer is full), or is done."""
        if busy:
            self._flow.pause_writing()
        else:
            self._flow.resume_writing()
        self._hold_for_writing(busy)

    def drain(self) -> Coroutine[Any, Any, None]:
        """Wait while stdout is backed up (returns at once if it is not). Not a coroutine
        itself: awaiting it adds no frame to every answer's path."""
        return self._flow.drain()

    async def close(self) -> None:
        """Stop reading, flush what is buffered for stdout (up to 5 s), close. Never
        raises; cancellation while flushing leaves the write pipe to close on its own."""
        self._stopped = True
        self._inbox.clear()
        self._more.set()
        self._flush()  # what this turn sent goes before the close
        if self._hangup is not None:
            self._hangup.close()
        if self._reader is not None:
            self._reader.close()
        writer = self._writer
        if self._bulk is not None and writer is not None and not writer.is_closing():
            try:  # what the bulk writer has left goes first
                await asyncio.wait_for(self._bulk.flushed(), 5.0)
            except TimeoutError:
                self._bulk.drop()
        if writer is not None and not writer.is_closing():
            writer.close()  # flushes the buffer, then reports connection_lost
            if self._lost_writer is not None:
                try:
                    await asyncio.wait_for(asyncio.shield(self._lost_writer), 5.0)
                except TimeoutError:
                    writer.abort()
        if self._out_file is not None:  # a regular file as stdout: written to directly, closed here
            out, self._out_file = self._out_file, None
            with contextlib.suppress(OSError):
                out.close()
        self._finish("closed")
