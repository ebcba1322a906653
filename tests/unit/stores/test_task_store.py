"""InMemoryTaskStore's bounds: tasks and bytes, in all and per principal, counted as a
record grows and given back as tasks expire (the attacks over HTTP are
tests/hostile/test_task_store_bounds.py)."""

from __future__ import annotations

import msgspec
import pytest

from mcpkit import InMemoryTaskStore, TaskRecord, TaskStoreFull
from mcpkit.stores.tasks import MIN_TASK_BYTES


def _record(task_id: str, owner: str | None = None, *, version: int = 0, text: str = "", held: int = 0) -> TaskRecord:
    result = {"content": [{"type": "text", "text": text}]} if text else None
    return TaskRecord(
        task_id=task_id, status="working", created_at=0.0, updated_at=0.0, ttl=10.0, poll_interval=1.0,
        owner=owner, version=version, result=result, held_bytes=held,
    )  # fmt: skip


async def test_bytes_are_counted_with_what_a_task_holds_and_at_least_the_minimum() -> None:
    store = InMemoryTaskStore(max_bytes=100_000, clock=lambda: 1.0)
    await store.create(_record("a"))
    assert store.bytes == MIN_TASK_BYTES
    await store.create(_record("b", held=50_000))
    assert store.bytes == MIN_TASK_BYTES + len(msgspec.json.encode(_record("b", held=50_000))) + 50_000
    with pytest.raises(TaskStoreFull, match=r"full \(100000 bytes\)") as refused:
        await store.create(_record("c", held=50_000))
    assert not refused.value.per_principal
    assert len(store) == 2


async def test_a_record_that_grows_past_the_bound_is_refused_and_the_stored_one_kept() -> None:
    store = InMemoryTaskStore(max_bytes=50_000, clock=lambda: 1.0)
    await store.create(_record("a"))
    with pytest.raises(TaskStoreFull):
        await store.save(_record("a", version=1, text="x" * 60_000))
    kept = await store.get("a")
    assert kept is not None
    assert kept.version == 0
    await store.save(_record("a", version=2, text="small"))  # within the minimum: always fits
    kept = await store.get("a")
    assert kept is not None
    assert kept.version == 2
    assert store.bytes == MIN_TASK_BYTES


async def test_per_principal_bounds_default_to_a_tenth_and_spare_the_others() -> None:
    store = InMemoryTaskStore(max_tasks=100, max_bytes=1_000_000, clock=lambda: 1.0)
    assert (store.max_tasks_per_principal, store.max_bytes_per_principal) == (10, 100_000)
    for i in range(10):
        await store.create(_record(f"a{i}", "alice"))
    with pytest.raises(TaskStoreFull, match="this principal has 10 tasks") as refused:
        await store.create(_record("a10", "alice"))
    assert refused.value.per_principal
    await store.create(_record("b0", "bob"))
    for i in range(20):  # no owner (no authorization): only the overall bounds
        await store.create(_record(f"n{i}"))
    with pytest.raises(TaskStoreFull, match="more than 100000 bytes") as refused:
        await store.create(_record("b1", "bob", held=100_000))
    assert refused.value.per_principal


async def test_expired_tasks_give_their_bounds_back() -> None:
    now = [1.0]
    store = InMemoryTaskStore(
        max_tasks=10, max_bytes=20_000, max_tasks_per_principal=2, max_bytes_per_principal=20_000, clock=lambda: now[0]
    )
    await store.create(_record("a", "alice", held=10_000))
    await store.create(_record("b", "alice"))
    with pytest.raises(TaskStoreFull):
        await store.create(_record("c", "alice"))
    now[0] = 20.0
    await store.create(_record("c", "alice", held=15_000))
    assert len(store) == 1
    assert await store.get("a") is None


def test_bounds_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        InMemoryTaskStore(max_bytes=0)
    with pytest.raises(ValueError, match="positive"):
        InMemoryTaskStore(max_tasks_per_principal=0)
