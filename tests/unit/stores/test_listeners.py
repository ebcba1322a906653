"""The stores' one listener registry (``mcpkit.stores.listeners``) and the four stores
that keep listeners with it: the in-memory bus and session store here; the Redis ones are
driven by tests/test_nodes.py."""

from __future__ import annotations

import logging

import pytest

from mcpkit import InMemorySessionStore, NodeMessage
from mcpkit.stores.bus import Change, InMemoryBus
from mcpkit.stores.listeners import Listeners


def test_listeners_are_called_in_order_and_stop_once() -> None:
    seen: list[tuple[str, int]] = []
    listeners: Listeners[int] = Listeners("a test listener")
    stop_a = listeners.add(lambda v: seen.append(("a", v)))
    listeners.add(lambda v: seen.append(("b", v)))
    listeners.notify(1)
    stop_a()
    stop_a()  # idempotent: it does not remove another listener
    listeners.notify(2)
    assert seen == [("a", 1), ("b", 1), ("b", 2)]
    assert len(listeners) == 1


def test_a_listener_added_meanwhile_gets_the_next_value() -> None:
    seen: list[str] = []
    listeners: Listeners[int] = Listeners("a test listener")

    def first(value: int) -> None:
        seen.append(f"first {value}")
        listeners.add(lambda v: seen.append(f"late {v}"))

    stop = listeners.add(first)
    listeners.notify(1)
    stop()
    listeners.notify(2)
    assert seen == ["first 1", "late 2"]


def test_a_failing_listener_is_logged_and_the_others_still_get_the_value(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[int] = []
    listeners: Listeners[int] = Listeners("a test listener")

    def broken(value: int) -> None:
        raise RuntimeError("boom")

    listeners.add(broken)
    listeners.add(seen.append)
    with caplog.at_level(logging.ERROR, logger="mcpkit.stores"):
        listeners.notify(7)
    assert seen == [7]
    assert "a test listener failed on 7" in caplog.text


def test_the_in_memory_bus_keeps_its_listeners_with_the_registry(caplog: pytest.LogCaptureFixture) -> None:
    bus = InMemoryBus()
    seen: list[Change] = []
    bus.subscribe(lambda change: 1 / 0)
    stop = bus.subscribe(seen.append)
    with caplog.at_level(logging.ERROR, logger="mcpkit.stores"):
        bus.publish(Change("tools"))
    stop()
    bus.publish(Change("prompts"))
    assert seen == [Change("tools")]
    assert "a subscription listener failed" in caplog.text


async def test_the_in_memory_session_store_keeps_its_listeners_with_the_registry(caplog: pytest.LogCaptureFixture) -> None:
    store = InMemorySessionStore(node_id="here")
    seen: list[NodeMessage] = []
    store.listen(lambda message: 1 / 0)  # a node listener that fails no longer fails the broadcast
    stop = store.listen(seen.append)
    message = NodeMessage(kind="cancel", session_id="s1", sender="here")
    with caplog.at_level(logging.ERROR, logger="mcpkit.stores"):
        await store.send("here", message)
        await store.send("elsewhere", message)
    stop()
    await store.broadcast(message)
    assert seen == [message]
    assert "a node listener failed" in caplog.text
