"""What both sides of stdio share: pipes tuned for JSON-RPC (their buffer, how much is
read at a time, large messages written straight from their bytes) and the flow control
of a pipe transport.

- :func:`widen_pipe`: a 1 MiB pipe buffer (Linux), so a large message goes out in a few
  writes, each waking the reader once, instead of one per 64 KiB;
- :func:`small_reads`: asyncio reads a pipe 256 KiB at a time, a buffer that comes from
  ``mmap``: every read of a short message then cost an ``mmap``, an ``mremap`` (the
  shrink to what was read) and a ``munmap``. 64 KiB is below the allocator's threshold;
- :class:`BulkWriter`: asyncio's write transport copies what the pipe does not take at
  once into a ``bytearray`` and trims it from the front as the pipe drains, which copies
  what is left again whenever it falls below half the allocation: for a 10 MB answer,
  two or three copies of it and the page faults of each. The bulk writer writes a large
  message from a ``memoryview`` of it as the pipe becomes writable, beside the transport
  and on the same pipe (through a duplicate of its descriptor, which the event loop lets
  us watch). While it has something left to write, every message goes through it, in
  order; the transport is used again once it is done;
- :class:`Flow` and :class:`Inbox`: the write side and the read side of a pipe
  transport's flow control. A sender waits (``drain``) while the pipe's writer is paused
  by asyncio; messages read while the reader is paused are held, in order, and handed on
  when it resumes — at most what one read returned, since the reader stops reading once
  anything is held. The server's stdin/stdout (:mod:`.server`) and a spawned server's
  pipes (:mod:`.process`) both work this way.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections import deque
from collections.abc import Callable

from ..base import OnMessage

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["BulkWriter", "BULK_MIN", "widen_pipe", "small_reads", "Flow", "Inbox"]

#: The pipe buffer :func:`widen_pipe` asks for (Linux lets anyone go up to 1 MiB, the
#: default ``/proc/sys/fs/pipe-max-size``).
PIPE_BUFFER = 1 << 20
#: Bytes asked for per read by :func:`small_reads`. A long message takes a few more reads.
READ_SIZE = 1 << 16

#: Messages from this size on are written by :class:`BulkWriter` (when the transport has
#: nothing buffered).
BULK_MIN = 1 << 20


def widen_pipe(fd: int) -> None:
    """Ask for a :data:`PIPE_BUFFER`-byte buffer on the pipe ``fd`` (Linux only; any
    refusal — another OS, not a pipe, over the user's pipe quota — leaves it as it was).
    Never raises."""
    setsize = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
    if setsize is None:
        return
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            fcntl.fcntl(fd, setsize, PIPE_BUFFER)
    except OSError:
        pass


def small_reads(transport: asyncio.ReadTransport) -> None:
    """Make asyncio's pipe transport read :data:`READ_SIZE` bytes at a time (its
    ``max_size``; a transport without one, uvloop's, is left as it is). For any pipe
    read by asyncio: the server's stdin, a spawned server's stdout on the client's side.
    Never raises."""
    if isinstance(getattr(transport, "max_size", None), int):
        try:
            transport.max_size = READ_SIZE  # type: ignore[attr-defined]
        except AttributeError:
            pass


class BulkWriter:
    """Writes to the pipe of ``transport`` (an asyncio write-pipe transport) straight
    from the bytes given. ``on_busy(True)`` is called when something is left to write,
    ``on_busy(False)`` when it is all written (or dropped): the owner holds its senders
    back in between. A write error aborts the transport, whose protocol then reports the
    loss as usual."""

    def __init__(self, transport: asyncio.WriteTransport, on_busy: Callable[[bool], None]) -> None:
        self._transport = transport
        self._loop = asyncio.get_running_loop()
        self._fd = os.dup(transport.get_extra_info("pipe").fileno())
        self._queue: deque[memoryview] = deque()
        self._on_busy = on_busy
        self._idle: asyncio.Future[None] | None = None

    @property
    def busy(self) -> bool:
        """Whether something is left to write (then every message must come here)."""
        return bool(self._queue)

    def wanted(self, data: bytes) -> bool:
        """Whether ``data`` should be written here: something is left to write already,
        or it is large and the transport has nothing buffered."""
        return bool(self._queue) or (len(data) >= BULK_MIN and self._transport.get_write_buffer_size() == 0)

    def write(self, data: bytes) -> None:
        """Write ``data`` after what is left: at once as far as the pipe takes it, the
        rest as the pipe drains. Never raises (a write error aborts the transport)."""
        view = memoryview(data)
        if self._queue:
            self._queue.append(view)
            return
        try:
            n = os.write(self._fd, view)
        except BlockingIOError:
            n = 0
        except OSError:
            self._fail()
            return
        if n == len(view):
            return
        self._queue.append(view[n:])
        self._loop.add_writer(self._fd, self._writable)
        self._on_busy(True)

    def _writable(self) -> None:
        queue = self._queue
        while queue:
            head = queue[0]
            try:
                n = os.write(self._fd, head)
            except BlockingIOError:
                return
            except OSError:
                self._fail()
                return
            if n < len(head):
                queue[0] = head[n:]
                return
            queue.popleft()
        self._done()

    def _done(self) -> None:
        self._loop.remove_writer(self._fd)
        if self._idle is not None and not self._idle.done():
            self._idle.set_result(None)
        self._idle = None
        self._on_busy(False)

    def _fail(self) -> None:
        self.drop()
        self._transport.abort()

    async def flushed(self) -> None:
        """Return once nothing is left to write (or it was dropped). Cancellation
        leaves the writing going on."""
        if not self._queue:
            return
        if self._idle is None:
            self._idle = self._loop.create_future()
        await asyncio.shield(self._idle)

    def drop(self) -> None:
        """Give up what is left to write (the pipe is closing). Never raises."""
        if self._queue:
            self._queue.clear()
            self._done()

    def close(self) -> None:
        """Drop what is left and release the duplicate descriptor. Never raises."""
        self.drop()
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            try:
                os.close(fd)
            except OSError:
                pass


class Flow:
    """The write side of a pipe transport's flow control: asyncio's ``pause_writing`` and
    ``resume_writing`` (or a :class:`BulkWriter` that is busy) open and close it, and
    senders :meth:`drain` in between. After :meth:`release` (the pipe is gone) nothing
    waits any more."""

    def __init__(self) -> None:
        self._resume: asyncio.Future[None] | None = None
        self.closed = False

    def pause_writing(self) -> None:
        """The pipe is backed up: :meth:`drain` waits from now on. Never raises."""
        if self._resume is None:
            self._resume = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        """The pipe takes writes again: those waiting in :meth:`drain` go on. Never raises."""
        if self._resume is not None and not self._resume.done():
            self._resume.set_result(None)
        self._resume = None

    async def drain(self) -> None:
        """Wait while the pipe is backed up (returns at once if it is not, or is gone).
        Cancellation ends the wait alone: the others waiting are not disturbed."""
        if self._resume is not None and not self.closed:
            await asyncio.shield(self._resume)

    def release(self) -> None:
        """The pipe is gone: whoever waits goes on, and nobody waits again. Never raises."""
        self.closed = True
        self.resume_writing()


class Inbox:
    """The read side of a pipe transport's flow control: hands framed messages to
    ``on_message`` in order, and holds those that arrive while :attr:`paused` (at most
    what one read returned: the reader stops reading once anything is held)."""

    def __init__(self, on_message: OnMessage) -> None:
        self.on_message = on_message
        self.paused = False
        self._held: deque[bytes] = deque()

    @property
    def hungry(self) -> bool:
        """Whether the reader should read more: not paused, nothing held."""
        return not self.paused and not self._held

    def put(self, messages: list[bytes]) -> None:
        """Hand ``messages`` on, holding the rest as soon as delivering one pauses. Raises
        only what ``on_message`` raises."""
        if self._held or self.paused:
            self._held.extend(messages)
            self.release()
            return
        for i, msg in enumerate(messages):
            self.on_message(msg)
            if self.paused:
                self._held.extend(messages[i + 1 :])
                return

    def release(self) -> None:
        """Hand on what is held, until paused again. Raises only what ``on_message`` raises."""
        held = self._held
        while held and not self.paused:
            self.on_message(held.popleft())

    def clear(self) -> None:
        """Drop what is held (the transport is closing). Never raises."""
        self._held.clear()
