"""A legacy connection's state (``mcpkit.server.session``): a message to its client outside
any request goes only once it is initialized and connected, at the level its client set."""

from __future__ import annotations

from typing import Any

from mcpkit.runtime.outbound import Notifier
from mcpkit.server.session import Session


def _connected(sent: list[tuple[str, Any]]) -> Session:
    session = Session()
    session.outbound = Notifier(lambda method, params: sent.append((method, params)))
    return session


def test_a_log_goes_once_initialized_and_only_at_the_clients_level() -> None:
    sent: list[tuple[str, Any]] = []
    session = _connected(sent)
    session.log("info", "too early")
    assert sent == []
    session.initialized = True
    session.log("debug", "everything until a level is set", "up")
    session.log_level = "warning"
    session.log("info", "below the level")
    session.log("error", "above it")
    session.log("loud", "not a level")
    assert sent == [
        ("notifications/message", {"level": "debug", "data": "everything until a level is set", "logger": "up"}),
        ("notifications/message", {"level": "error", "data": "above it"}),
    ]


def test_a_log_without_a_connection_is_dropped() -> None:
    session = Session()
    session.initialized = True
    session.log("error", "nowhere to go")  # no outbound: nothing raised
    assert session.outbound is None
