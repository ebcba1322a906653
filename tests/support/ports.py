"""Free TCP ports on 127.0.0.1 that parallel workers never hand out twice.

Asking the kernel for port 0 and closing the socket leaves a window in which another
worker's request for port 0 can get the same number. Here each pytest-xdist worker takes
its ports from a range of its own (``gw0`` from 20000, ``gw1`` from 20500, ...), below
Linux's ephemeral range (32768-60999), so that neither another worker nor a connection's
local port can be handed the same one; each port is checked free by binding it, and a
session starts at a random point of its range so that two test runs on one machine (two
checkouts) do not walk the same ports in step.

:func:`non_loopback_address` is an address of this machine that is not loopback, for the
tests that need a server which does not look local to its client.
"""

from __future__ import annotations

import itertools
import os
import random
import socket

_SPAN = 500
_FIRST = 20000
_WORKERS = (32768 - _FIRST) // _SPAN  # ranges that fit below the ephemeral range


def _worker_index() -> int:
    name = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1", ... under xdist
    return int(name[2:]) % _WORKERS if name.startswith("gw") and name[2:].isdigit() else _WORKERS - 1


_base = _FIRST + _worker_index() * _SPAN
_next = itertools.count(random.randrange(_SPAN))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, from this worker's range.
    Consecutive calls give different ports (until the range of 500 wraps around)."""
    for _ in range(_SPAN):
        port = _base + next(_next) % _SPAN
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue  # in use (or in TIME_WAIT): the next one
            return port
    raise AssertionError(f"no free port in 127.0.0.1:{_base}-{_base + _SPAN - 1}")


def non_loopback_address() -> str:
    """An IPv4 address of this machine that is not loopback (the one its default route
    leaves from), or the test fails: nothing is sent to find it."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("203.0.113.1", 9))  # a documentation address: a UDP "connect" only picks the route
        except OSError as exc:
            raise AssertionError(f"this machine has no route off loopback: {exc}") from None
        address = str(probe.getsockname()[0])
    assert not address.startswith("127."), f"no address off loopback (got {address})"
    return address
