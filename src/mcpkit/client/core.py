"""The call core, as the client's parts see it: a narrow :class:`CallCore` protocol.

The :class:`~mcpkit.Client` is a facade over one
:class:`~mcpkit.client.session.Session` — the client's state for its connection and its
one path to the wire. The parts built on it (the feature requests, tasks, subscriptions,
negotiation, the typed call itself) are handed that session but know it only through the
protocols they name: :class:`CallCore` here for what every part needs, extended where a
part needs more (``calls.Calling``, ``negotiation.Negotiating``, ``link.Linked``,
``subscriptions.Listening``, ``features.FeatureCore``). So no part imports the session or
the facade, and none reaches into another's private state.

:class:`CallCore` in short:

* ``request(method, params, timeout, ...)`` sends one request as it is (the modern
  ``_meta`` added) and returns the raw result; it is the session's traced wire path;
* ``call(method, params, tp, timeout, ...)`` is one typed call: a deadline, retries when
  idempotent, and a modern result's kind followed (input rounds, a task) — ``calls.py``;
* ``policy`` is the era agreed on, ``meta`` the ``_meta`` every modern request carries,
  ``inbound`` what answers the server's questions, ``options`` the client's settings,
  ``connected`` whether the connection is open now.

:class:`Negotiated` is the other direction: where negotiation reports what it learned
about the server (the public attributes of ``Client``).

A task that negotiates marks itself (:func:`handshaking`): its requests go to the new
connection at once, even while the client is reconnecting, and are never retried.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from ..protocol.eras import EraPolicy
    from ..protocol.types import Implementation
    from ..protocol.versions import Era
    from ..runtime.peer import ProgressCallback
    from ..runtime.tracing import ClientRequest
    from .handlers import ServerMessages
    from .options import ClientOptions
    from .retry import RetryPolicy

__all__ = ["CallCore", "Negotiated", "in_handshake", "handshaking"]

T = TypeVar("T")

#: Set while this task (re)negotiates: its requests go to the new peer at once, never retried.
_HANDSHAKE: contextvars.ContextVar[bool] = contextvars.ContextVar("mcpkit_client_handshake", default=False)


def in_handshake() -> bool:
    """Whether the current task is negotiating (its requests are part of the handshake)."""
    return _HANDSHAKE.get()


@contextlib.contextmanager
def handshaking() -> Iterator[None]:
    """Mark the current task as negotiating for the duration of the block."""
    token = _HANDSHAKE.set(True)
    try:
        yield
    finally:
        _HANDSHAKE.reset(token)


class CallCore(Protocol):
    """What the client's parts need of its session to make requests."""

    @property
    def options(self) -> ClientOptions:
        """The client's settings."""
        ...

    @property
    def policy(self) -> EraPolicy:
        """The era agreed on (the legacy policy until negotiation chose)."""
        ...

    @property
    def meta(self) -> Mapping[str, Any]:
        """The ``_meta`` every request carries in the modern era (empty in the legacy era)."""
        ...

    @property
    def inbound(self) -> ServerMessages:
        """What answers the server's questions (elicitation, sampling, roots)."""
        ...

    @property
    def connected(self) -> bool:
        """Whether the connection is open now."""
        ...

    @property
    def request(self) -> ClientRequest:
        """Send one request as it is, with the modern ``_meta`` added, and return its raw
        result: ``request(method, params, timeout, on_progress=None, on_start=None, *,
        reset=False, max_total=None)``. Waits (within ``timeout``) for a reconnection
        under way. Raises ``McpError`` for an error response, ``RequestTimeout``,
        ``ConnectionClosed``, ``RuntimeError`` before the client is connected; cancelling
        the caller cancels the request on the wire."""
        ...

    async def call(
        self,
        method: str,
        params: dict[str, Any] | None,
        tp: type[T],
        timeout: float | None,
        on_progress: ProgressCallback | None = None,
        *,
        retry: RetryPolicy | None = None,
        idempotent: bool | None = None,
        reset: bool | None = None,
        max_total: float | None = None,
        rounds: bool = True,
    ) -> T:
        """One typed call (:func:`~mcpkit.client.calls.typed_call`): ``method``'s result
        decoded as ``tp``, with the client's deadline, progress and retry settings where
        the call gives none; ``rounds`` lets a modern result's input rounds and task run.
        Raises what ``request`` raises, ``RetriesExhausted``, ``ValueError`` for a bad
        timeout."""
        ...


class Negotiated(Protocol):
    """Where negotiation reports what was agreed and what the server said about itself:
    the public attributes of ``Client`` that users read."""

    era: Era | None
    protocol_version: str | None
    server_info: Implementation | None
    server_capabilities: dict[str, Any]
    instructions: str | None
