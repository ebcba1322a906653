"""How :meth:`Server.run <mcpkit.Server.run>` stops on SIGINT and SIGTERM over stdio, as
``run("http")`` does (docs/lifespan.md, "Stopping"): the first signal asks for a graceful
stop — reading stops, requests in progress get the server's ``shutdown_grace``, the ones
still running then are cancelled and answered, and the process exits 0 — and a second
one forces it: everything still running is cancelled at once, and the exit status is
128 + the signal's number (130 for SIGINT, 143 for SIGTERM).

:class:`StopSignals` catches the two signals on the running event loop for the duration
of a ``with`` block. Where the loop cannot take signal handlers (a thread other than the
main one; Windows) it catches nothing, and the signals act as they would without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable
from types import TracebackType
from typing import Final

__all__ = ["StopSignals", "SHUTDOWN_MESSAGE"]

#: The -32603 message of a request cut short by the shutdown (the same words as over HTTP).
SHUTDOWN_MESSAGE: Final = "Server shutting down: the request was cancelled"

_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)

log = logging.getLogger("mcpkit.server")


class StopSignals:
    """SIGINT and SIGTERM on ``loop`` while entered: the first completes :attr:`requested`
    (with the signal's number), a second calls ``force``. Entering never raises; leaving
    puts the previous handling back."""

    def __init__(self, loop: asyncio.AbstractEventLoop, force: Callable[[], object]) -> None:
        self._loop = loop
        self._force = force
        self._installed: list[int] = []
        #: Completed by the first signal, with its number.
        self.requested: asyncio.Future[int] = loop.create_future()
        #: A second signal came: the stop was forced.
        self.forced = False
        #: The last signal received (None: none).
        self.signal: int | None = None

    def __enter__(self) -> StopSignals:
        for sig in _SIGNALS:
            try:
                self._loop.add_signal_handler(sig, self._received, sig)
            except (NotImplementedError, RuntimeError, ValueError):  # Windows; not the main thread
                continue
            self._installed.append(sig)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        for sig in self._installed:
            with contextlib.suppress(Exception):
                self._loop.remove_signal_handler(sig)
        self._installed.clear()

    @property
    def exit_status(self) -> int:
        """What the process should exit with: 0, or 128 + the signal's number if forced."""
        return 128 + self.signal if self.forced and self.signal is not None else 0

    def _received(self, sig: int) -> None:
        self.signal = sig
        name = signal.Signals(sig).name
        if not self.requested.done():
            log.info("%s: stopping once the requests in progress are answered (a second signal stops at once)", name)
            self.requested.set_result(sig)
            return
        log.info("%s again: stopping at once", name)
        self.forced = True
        self._force()
