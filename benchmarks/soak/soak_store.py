"""The soak's store part (issue 24): a real uvicorn server of
tests/support/servers/hostile_store.py (its task store bounded to 32 MB so that the bound
is reached during warm-up, ``max_listens=40``) driven with tasks whose inputs and results
are megabytes, URIs made to make a template matcher backtrack, and floods of
``subscriptions/listen`` — oversized filters, the biggest filters accepted, more listens
than allowed — hearing resource updates, then dropped.

What is expected past a bound (a 400 for a URI or filter too big, a 429 past the listens
allowed, a 503 with ``Retry-After`` for a required task when the store is full, a task
whose result could not be kept) is counted, not an error; any other 5xx, a missing
``Retry-After`` or a valid request failing is.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

import httpx
from soak_common import ROOT, Stats, free_port

SERVER = ROOT / "tests" / "support" / "servers" / "hostile_store.py"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
}
NAMED = {"tools/call": "name", "resources/read": "uri", "tasks/get": "taskId"}
_ids = iter(range(1, 10**12))


def request(method: str, params: dict[str, Any]) -> tuple[bytes, dict[str, str]]:
    """(body, headers) of a modern request from a client of the tasks extension."""
    body = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": {**params, "_meta": META}}
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
    }
    named = params.get(NAMED.get(method, ""))
    if isinstance(named, str) and len(named) < 4096 and named.isascii() and named.isprintable():
        headers["mcp-name"] = named
    return json.dumps(body).encode(), headers


async def post(http: httpx.AsyncClient, url: str, stats: Stats, kind: str, method: str, params: dict[str, Any]) -> Any:
    """POST one request; returns (status, the JSON-RPC reply or None). A 5xx other than
    a 503 with ``Retry-After`` is an error of ``kind``; so is no answer."""
    body, headers = request(method, params)
    try:
        resp = await http.post(url, content=body, headers=headers)
    except httpx.HTTPError as exc:
        stats.error(f"{kind}: no answer", f"{type(exc).__name__}: {exc}")
        return 0, None
    stats.count(kind)
    if resp.status_code >= 500 and not (resp.status_code == 503 and resp.headers.get("retry-after")):
        stats.error(f"{kind}: 5xx", f"HTTP {resp.status_code}: {resp.text[:200]}")
    if resp.status_code in (429, 503) and not resp.headers.get("retry-after"):
        stats.error(f"{kind}: no Retry-After", f"HTTP {resp.status_code}: {resp.text[:200]}")
    try:
        return resp.status_code, resp.json() if resp.headers.get("content-type", "").startswith("application/json") else None
    except ValueError:
        return resp.status_code, None


async def attack_tasks(http: httpx.AsyncClient, url: str, stats: Stats, until: float) -> None:
    """Tasks of 1 MB inputs (``keep``), 2 MB results from small inputs (``big``), and
    required tasks past the store's bound; every task made is polled to its end."""
    data = "x" * 1_000_000
    n = 0
    while time.monotonic() < until:
        n += 1
        for kind, tool, arguments in (
            ("store: task of a 1 MB input", "keep", {"data": data}),
            ("store: task of a 2 MB result", "big", {"size": 2_000_000}),
            ("store: required task", "keep_required", {"data": data[: 100_000]}),
        ):
            status, reply = await post(http, url, stats, kind, "tools/call", {"name": tool, "arguments": arguments})
            result = (reply or {}).get("result") or {}
            if status == 503:
                stats.count("store: required task refused (503, the store is full)")
            elif status == 200 and result.get("resultType") == "task":
                await _finish(http, url, stats, result["taskId"])
            elif status != 200:
                stats.error(f"{kind}: unexpected", f"HTTP {status}: {str(reply)[:200]}")


async def _finish(http: httpx.AsyncClient, url: str, stats: Stats, task_id: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status, reply = await post(http, url, stats, "store: tasks/get", "tasks/get", {"taskId": task_id})
        task = (reply or {}).get("result") or {}
        if status != 200:
            stats.error("store: tasks/get", f"HTTP {status}: {str(reply)[:200]}")
            return
        if task.get("status") == "completed":
            return
        if task.get("status") == "failed":
            stats.count("store: task failed: its result could not be kept")
            return
        await asyncio.sleep(0.05)
    stats.error("store: task did not end", task_id)


#: (what, URI, the status expected): ambiguous templates against URIs that make a
#: backtracking matcher try every split, past the URI bound and within it, and valid ones.
TEMPLATE_ATTACKS = [
    ("store: 100,000-character URI (refused)", "x://" + "/" * 100_000 + "?", 400),
    ("store: 16,000-character URI, 2 variables", "x://" + "/" * 16_000 + "?", 400),
    ("store: 16,000-character URI, 3 variables", "y://" + "/" * 16_000 + "?", 400),
    ("store: valid template read", "x://a/b/c", 200),
    ("store: valid template read", "y://a/b/c", 200),
]


async def attack_templates(http: httpx.AsyncClient, url: str, stats: Stats, until: float) -> None:
    while time.monotonic() < until:
        for kind, uri, expected in TEMPLATE_ATTACKS:
            started = time.monotonic()
            status, reply = await post(http, url, stats, kind, "resources/read", {"uri": uri})
            if status != expected:
                stats.error(kind, f"HTTP {status} (expected {expected}): {str(reply)[:200]}")
            if time.monotonic() - started > 5:
                stats.error(f"{kind}: slow", f"{time.monotonic() - started:.1f} s")


async def _listen(http: httpx.AsyncClient, url: str, uris: list[str], stop: asyncio.Event, stats: Stats) -> int:
    """One listen held until ``stop``; returns its HTTP status (its updates are counted)."""
    body, headers = request("subscriptions/listen", {"notifications": {"resourceSubscriptions": uris}})
    try:
        async with http.stream("POST", url, content=body, headers=headers) as resp:
            if resp.status_code != 200:
                await resp.aread()
                if resp.status_code in (429, 503) and not resp.headers.get("retry-after"):
                    stats.error("store: listen refused without Retry-After", str(resp.status_code))
                return resp.status_code

            async def read() -> None:
                async for line in resp.aiter_lines():
                    if "resources/updated" in line:
                        stats.count("store: update heard")

            reading = asyncio.ensure_future(read())
            await stop.wait()
            reading.cancel()
            return 200
    except httpx.HTTPError as exc:
        stats.error("store: listen: no answer", f"{type(exc).__name__}: {exc}")
        return 0


async def attack_listens(url: str, stats: Stats, until: float) -> None:
    """Rounds of 60 listens at once (10 past ``max_listens``): oversized filters (1 MB),
    the biggest filters accepted (1,000 URIs, 60 KB) and small ones, hearing 2,000
    updates, then all dropped."""
    huge = [f"item://u{i}-" + "z" * 1000 for i in range(1000)]
    biggest = ["item://a", *(f"item://{i:04}-" + "z" * 44 for i in range(999))]
    limits = httpx.Limits(max_connections=90, max_keepalive_connections=0)
    while time.monotonic() < until:
        async with httpx.AsyncClient(timeout=60, limits=limits) as http:
            stop = asyncio.Event()
            filters = [huge] * 10 + [biggest] * 20 + [["item://a"]] * 30
            listens = [asyncio.ensure_future(_listen(http, url, uris, stop, stats)) for uris in filters]
            await asyncio.sleep(2)
            touch = {"name": "touch", "arguments": {"uri": "item://a", "times": 1000}}
            for _ in range(2):
                await post(http, url, stats, "store: touch", "tools/call", touch)
            await asyncio.sleep(1)
            stop.set()
            statuses = await asyncio.gather(*listens)
        for status in statuses:
            stats.count(f"store: listen answered {status}")
            if status not in (200, 400, 429):
                stats.error("store: listen", f"HTTP {status}")


async def start_store_server() -> tuple[asyncio.subprocess.Process, str]:
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(SERVER), str(port),
        "--store-option", "max_bytes=32000000", "--server-option", "max_listens=40",
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 20
    while True:
        if proc.returncode is not None or time.monotonic() > deadline:
            raise RuntimeError("the store server did not start")
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            await asyncio.sleep(0.05)
