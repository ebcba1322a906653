"""When to restart a supervised server process (or reconnect to an HTTP server), and
when to stop trying.

A :class:`RestartPolicy` allows ``max_restarts`` restarts within any ``window`` seconds,
each after a delay that grows with the crashes in that window (``initial_delay``, then
times ``multiplier``, at most ``max_delay``). One crash more than that within the
window, and the server is given up on. Crashes older than the window are forgotten, so a
server that fails now and then is restarted every time; one that fails at once on every
start is not restarted for ever.

The same policy bounds HTTP reconnection (``HttpTransport(..., reconnect=...)``): there
every failed attempt to reach the server counts as a crash, so ``max_restarts`` is how
many attempts are made within ``window`` before giving up. :data:`RECONNECT` is its
default, more patient than a process's: a server that restarts (a deploy) is often
gone for seconds, not a fraction of one.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque

__all__ = ["RestartPolicy", "CrashLog", "RECONNECT"]


@dataclasses.dataclass(frozen=True)
class RestartPolicy:
    """How a supervised server process is restarted after it exits unexpectedly
    (``StdioTransport(..., restart=RestartPolicy(...))``; ``restart=True`` uses the
    defaults), or how an HTTP client reconnects to a server it cannot reach
    (``HttpTransport(..., reconnect=RestartPolicy(...))``, each failed attempt a crash;
    ``reconnect=True`` uses :data:`RECONNECT`).

    At most ``max_restarts`` restarts within ``window`` seconds; the k-th crash within
    the window waits ``initial_delay * multiplier ** (k - 1)`` seconds (at most
    ``max_delay``) before the restart. A crash beyond ``max_restarts`` within the window
    gives up: the client's calls then fail with ``ConnectionClosed`` saying so.

    ``supervise_start`` decides whether the first start is supervised too: by default a
    server that fails while the client first connects (the process exits or closes its
    stdout before the handshake is done; an HTTP server that cannot be reached) fails
    ``connect()`` at once. With ``supervise_start=True`` that counts as a crash: the
    server is started again (or reached again) under the same bounds, and ``connect()``
    fails only once the policy gives up. A server that answers too slowly is never
    restarted for it, and one that cannot be started at all (``OSError``: no such
    program) fails at once either way.

    Raises ``TypeError`` for a value that is not a number (``max_restarts``: an integer;
    ``supervise_start``: a bool), and ``ValueError`` for values out of range.
    """

    max_restarts: int = 3
    window: float = 60.0
    initial_delay: float = 0.1
    multiplier: float = 2.0
    max_delay: float = 5.0
    supervise_start: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.supervise_start, bool):
            raise TypeError(f"supervise_start must be a bool, not {type(self.supervise_start).__name__}")
        for name in ("window", "initial_delay", "multiplier", "max_delay"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{name} must be a number, not {type(value).__name__}")
        if isinstance(self.max_restarts, bool) or not isinstance(self.max_restarts, int) or self.max_restarts < 1:
            raise ValueError("max_restarts must be an integer of at least 1")
        for name in ("window", "max_delay"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be positive and finite, not {value!r}")
        if not (math.isfinite(self.initial_delay) and 0 <= self.initial_delay <= self.max_delay):
            raise ValueError("initial_delay must be between 0 and max_delay")
        if not (math.isfinite(self.multiplier) and self.multiplier >= 1):
            raise ValueError("multiplier must be at least 1")


#: HTTP reconnection's default: 8 attempts within a minute, waiting 0.1 s doubling to at
#: most 5 s (about 16 s of back-off in all) before the client gives up.
RECONNECT = RestartPolicy(max_restarts=8, window=60.0, initial_delay=0.1, multiplier=2.0, max_delay=5.0)


class CrashLog:
    """The recent crashes of one supervised process, judged by a :class:`RestartPolicy`."""

    def __init__(self, policy: RestartPolicy) -> None:
        self.policy = policy
        self._crashes: deque[float] = deque()
        self.restarts = 0  # in all

    def crashed(self, now: float) -> float | None:
        """Record a crash at ``now`` (a monotonic clock): the delay before restarting, or
        None to give up."""
        policy = self.policy
        crashes = self._crashes
        crashes.append(now)
        while crashes and crashes[0] <= now - policy.window:
            crashes.popleft()
        if len(crashes) > policy.max_restarts:
            return None
        self.restarts += 1
        return float(min(policy.initial_delay * policy.multiplier ** (len(crashes) - 1), policy.max_delay))

    @property
    def recent(self) -> int:
        """Crashes within the window, as of the last one."""
        return len(self._crashes)
