"""List changes between the processes of a deployment (issue 24, finding 17): two nodes
on a real redis-server, and one node of two uvicorn workers.

Before: ``ChangeHub.list_changed`` returned at once while the hub knew no event loop —
which it learnt only when a GET stream or a listen was opened in that process — so a
node (or worker) that had never held one dropped the tools/prompts/resources list
changes it made instead of publishing them: a client listening on another node never
heard that a tool was added (resource updates were heard). After: the hub learns its
loop from every request and when serving starts, and publishes every change; one made
on a worker thread (a plain ``def`` handler) goes to that loop and is published alike.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.store_attacks import answer, call, listen, redis_server, spawn
from support.waiting import until, wait_until

pytestmark = pytest.mark.timeout(180)

TOOLS_CHANGED = "notifications/tools/list_changed"
_names = itertools.count()


def _ready(url: str) -> None:
    wait_until(lambda: httpx.get(url.replace("/mcp", "/healthz/ready")).status_code == 200, timeout=20, what="ready")


def _add(url: str, tool: str) -> dict[str, Any]:
    """Call ``tool`` (add_tool_sync or add_tool_async) on a connection of its own."""
    with httpx.Client(timeout=30, headers={"connection": "close"}) as http:
        reply = answer(call(http, url, tool, {"name": f"added_{next(_names)}"}))
    structured: dict[str, Any] = reply["result"]["structuredContent"]
    return structured


@pytest.mark.parametrize("tool", ["add_tool_async", "add_tool_sync"])
async def test_a_node_that_never_listened_publishes_its_list_changes(tmp_path: Path, tool: str) -> None:
    """A client listens on node B; node A (no listen, no GET stream ever) registers a
    tool, from an ``async def`` handler and from a plain ``def`` one: B's client hears
    ``notifications/tools/list_changed`` both times."""
    with redis_server(tmp_path) as server:
        args = ("--redis", server.url)
        with spawn(*args) as (_, node_a), spawn(*args) as (_, node_b):
            _ready(node_a)
            _ready(node_b)
            async with httpx.AsyncClient(timeout=60) as http:
                held = listen(http, node_b, {"toolsListChanged": True})
                await held.known.wait()
                assert held.open, held.first
                try:
                    for _ in range(2):
                        seen = held.notices[TOOLS_CHANGED]
                        await asyncio.to_thread(_add, node_a, tool)
                        await until(lambda seen=seen: held.notices[TOOLS_CHANGED] > seen, timeout=20, what="B heard A's change")
                finally:
                    await held.close()


def _listens_by_worker(url: str, attempts: int = 200) -> dict[int, int]:
    """{worker pid: its open listens}, asked on fresh connections until both answered."""
    found: dict[int, int] = {}
    for _ in range(attempts):
        with httpx.Client(timeout=30, headers={"connection": "close"}) as http:
            structured = json.loads(call(http, url, "listens", {}).text)["result"]["structuredContent"]
        found[structured["pid"]] = structured["listens"]
        if len(found) == 2:
            return found
    raise AssertionError(f"only one worker ever answered: {found}")


@pytest.mark.parametrize("tool", ["add_tool_async", "add_tool_sync"])
async def test_the_workers_of_one_node_publish_to_each_other(tmp_path: Path, tool: str) -> None:
    """Two uvicorn workers sharing Redis: a change made on the worker that holds no
    listen reaches the listen open on the other."""
    with redis_server(tmp_path) as server, spawn("--redis", server.url, "--workers", "2") as (_, url):
        _ready(url)
        async with httpx.AsyncClient(timeout=60) as http:
            held = listen(http, url, {"toolsListChanged": True})
            await held.known.wait()
            assert held.open, held.first
            try:
                workers = await asyncio.to_thread(_listens_by_worker, url)
                (listening,) = [pid for pid, listens in workers.items() if listens == 1]
                for _ in range(200):
                    seen = held.notices[TOOLS_CHANGED]
                    added = await asyncio.to_thread(_add, url, tool)
                    await until(
                        lambda seen=seen: held.notices[TOOLS_CHANGED] > seen,
                        timeout=20,
                        what=f"the listen on worker {listening} heard worker {added['pid']}'s change",
                    )
                    if added["pid"] != listening:
                        return
                raise AssertionError("every change was made on the listening worker")
            finally:
                await held.close()
