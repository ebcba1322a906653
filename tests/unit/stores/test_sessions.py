"""The in-memory session store (src/mcpkit/stores/sessions.py) on a clock of the test's own:
each load restarts a session's time to live, and a session left alone past it is gone."""

from __future__ import annotations

from mcpkit import (
    InMemorySessionStore,
    SessionRecord,
)
from support.eras import LEGACY


async def test_the_in_memory_session_store() -> None:
    now = [1000.0]
    store = InMemorySessionStore(clock=lambda: now[0])
    record = SessionRecord(session_id="s", protocol_version=LEGACY)
    await store.create(record, 10)
    assert not store.shared
    now[0] += 8
    assert await store.load("s", 10) is not None  # restarts its time to live
    now[0] += 8
    assert await store.load("s", 10) is not None
    now[0] += 11
    assert await store.load("s", 10) is None
    await store.create(SessionRecord(session_id="t", protocol_version=LEGACY), 10)
    assert len(store) == 1
