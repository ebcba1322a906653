"""The listener registry every store with listeners keeps: :class:`Listeners`.

A store hands what it receives — a change on the subscription bus, a message between
nodes — to the callbacks registered with it, in this process. The rules are the same
for all of them, so they are written once, here:

* listeners are called in the order they were added, each once per value, on the
  caller's thread (the event loop, for every store here); they must not block;
* ``add`` returns the function that removes that listener again; calling it twice, or
  after the listener was removed, does nothing; a listener added twice is called twice;
* a listener added or removed while a value is handed out takes effect from the next
  value: each value goes to the listeners registered when it arrived;
* a listener that raises is logged (``mcpkit.stores``) and the others are still called:
  one subscriber's bug does not cost the others their value, nor reach the store's
  caller (a publisher, the pub/sub connection).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Listeners"]

log = logging.getLogger("mcpkit.stores")

T = TypeVar("T")


class Listeners(Generic[T]):
    """Callbacks of one kind, each called with every value :meth:`notify` hands out.
    ``what`` names them in the log line of a listener that fails ("a subscription
    listener", say)."""

    def __init__(self, what: str) -> None:
        self._what = what
        self._listeners: list[Callable[[T], None]] = []

    def __len__(self) -> int:
        return len(self._listeners)

    def add(self, listener: Callable[[T], None]) -> Callable[[], None]:
        """Call ``listener`` with every value from now on; returns the function that
        stops it (idempotent). Never raises."""
        self._listeners.append(listener)
        stopped = False

        def stop() -> None:
            nonlocal stopped
            if not stopped:
                stopped = True
                self._listeners.remove(listener)

        return stop

    def notify(self, value: T) -> None:
        """Call every listener with ``value``, in order. A listener that raises is logged
        and the others are still called; never raises (``BaseException`` aside, which
        propagates: a listener is not expected to raise it)."""
        for listener in tuple(self._listeners):
            try:
                listener(value)
            except Exception:
                log.exception("%s failed on %r", self._what, value)
