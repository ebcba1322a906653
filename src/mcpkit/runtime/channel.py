"""The channel a :class:`~mcpkit.runtime.peer.Peer` drives: the transport interface.

It is defined here, below the transports that implement it, so that the driver needs
nothing from them. A transport moves whole JSON-RPC messages and knows nothing of
their content: it is started with ``on_message(bytes)`` for each complete message and
``on_close(reason)`` (once, when the channel ends), and offers ``send`` (queue one
message, never blocks), ``drain`` (wait while the peer is slow to read) and
``close``. Messages cross this boundary unframed: a transport that needs delimiters
(stdio's newlines) adds and strips them itself.

Flow control of the inbound side is optional (:class:`Pausable`): a transport that
offers ``pause_reading()`` and ``resume_reading()`` lets the driver bound the requests
it works on at once — after ``pause_reading()`` no ``on_message`` call comes until
``resume_reading()`` (messages already read are held, in order), and the transport
reads no more than it holds. Both are idempotent and never raise; after the channel
closed they do nothing. A transport without them (the HTTP client transport, where
every response arrives on a request of our own) is simply never paused. A transport
may still report ``on_close`` while paused (stdio does when the other side hangs up),
so that a connection whose peer has gone does not wait for its handlers to finish.

Two more optional abilities serve the client's resilience (docs/timeouts-and-retries.md).
A transport that can say whether a message handed to it now would wait behind bytes the
other side has not read yet (:class:`WriteBlocking`) lets the driver hold requests back
until then, so that a request whose deadline passes meanwhile is never sent. A transport
that can be started again after it ended (:class:`Restartable`: a supervised server
process) says how long to wait first, and when to give up; one that also supervises its
first start (:class:`SupervisesStart`) asks for the same when it fails before the first
handshake is done.

One more is mcpkit's own (:class:`TakesMessages`, private by name, not part of the
interface above): a transport that reads what it carries (the HTTP client transport
picks each message's era and headers from it) is handed each message the driver builds
together with its method, id and params as built, so that it does not decode the bytes
that were just encoded. Every other transport gets the bytes alone, through ``send``.
Another is the same kind (:class:`SendsInTurns`): a transport that can join the messages
of one turn of the event loop into one write is handed an answer that way while other
requests are in flight (more answers are then likely in the same turn), and through
``send`` otherwise (one request at a time: the answer goes out at once, with nothing
scheduled).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from ..protocol.events import RequestId

__all__ = [
    "Transport",
    "Pausable",
    "WriteBlocking",
    "Restartable",
    "SupervisesStart",
    "TakesMessages",
    "SendsInTurns",
    "OnMessage",
    "OnClose",
]

OnMessage = Callable[[bytes], None]
OnClose = Callable[[str | None], None]


class Transport(Protocol):
    """What the engine's driver needs from a channel: the transport interface.

    A transport moves whole JSON-RPC messages (bytes, unframed) and knows nothing of
    their content. ``Client`` and ``Server.serve`` accept any object with these four
    methods, so a transport of your own plugs in the same way as the built-in ones.
    """

    async def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        """Open the channel: call ``on_message(bytes)`` for each whole message received and
        ``on_close(reason)`` once when it ends. Raises ``OSError`` if it cannot be opened."""
        ...

    def send(self, data: bytes) -> None:
        """Queue one message (without framing). Never blocks; never raises for a closed
        channel (the message is dropped and ``on_close`` reports the end)."""
        ...

    async def drain(self) -> None:
        """Wait while the other side is slow to read what was sent."""
        ...

    async def close(self) -> None:
        """Close the channel. Idempotent."""
        ...


@runtime_checkable
class Pausable(Protocol):
    """A transport whose inbound messages the driver can hold back (optional)."""

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...


@runtime_checkable
class WriteBlocking(Protocol):
    """A transport that knows when its writes are stalled (optional).

    ``write_blocked`` is true while a message handed to :meth:`Transport.send` would not
    reach the other side at once: earlier bytes are still waiting to be written. Then a
    ``drain()`` waits until they all are.
    """

    @property
    def write_blocked(self) -> bool: ...


@runtime_checkable
class Restartable(Protocol):
    """A transport that may be started again after it ended on its own (optional)."""

    def restart_delay(self, reason: str) -> float | None:
        """The channel ended unexpectedly (``on_close(reason)`` was reported): the seconds
        to wait before ``start`` may be called again, or None if it does not restart.
        Raises :class:`~mcpkit.protocol.errors.ConnectionClosed`, with a message that
        says why, when it gives up (too many restarts in too short a time)."""
        ...


@runtime_checkable
class SupervisesStart(Protocol):
    """A :class:`Restartable` transport that may also be started again when it fails
    before the first handshake is done (optional)."""

    @property
    def supervises_start(self) -> bool:
        """Whether a failed first start counts as a crash (``restart_delay`` decides)."""
        ...


@runtime_checkable
class TakesMessages(Protocol):
    """A transport that takes a message together with what it says (optional; mcpkit's
    HTTP client transport does), so that it need not decode the bytes the driver has just
    encoded. A transport of your own need not implement it: the driver then calls
    :meth:`Transport.send`."""

    def send_envelope(self, data: bytes, method: str, rid: RequestId | None, params: Any) -> None:
        """``send(data)`` for a message the driver built: the request ``rid`` (None: a
        notification) of ``method`` with ``params`` as the caller built them (not to be
        changed), encoded as ``data``. Never blocks; never raises for a closed channel."""
        ...


@runtime_checkable
class SendsInTurns(Protocol):
    """A transport that can write the messages of one turn of the event loop together
    (optional; mcpkit's server stdio does): one write, and one wake-up of the reader,
    instead of one each."""

    def send_in_turn(self, data: bytes) -> None:
        """``send(data)`` at the end of this turn of the event loop, together with the
        others sent so, in order; a message given to ``send`` meanwhile goes after them.
        Never blocks; never raises for a closed channel."""
        ...
