"""Retries (docs/timeouts-and-retries.md): only idempotent calls, only after transient
failures, each attempt with its own deadline, the total bounded, and an error that lists
every attempt. In memory, against mcpkit servers whose handlers fail on purpose; the
fault-injection tests over real transports are in test_http_faults.py and
test_supervision.py."""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import time
from typing import Any

import pytest

from mcpkit import (
    REQUEST_TIMEOUT,
    Client,
    ClientEvent,
    ClientOptions,
    Context,
    McpError,
    RequestOptions,
    RequestTimeout,
    RetriesExhausted,
    RetryPolicy,
    Server,
    ToolAnnotations,
)
from mcpkit.client.retry import retry_after, transient
from mcpkit.protocol.errors import ConnectionClosed
from support.clock import on_virtual_time

pytestmark = pytest.mark.timeout(30)

FAST = RetryPolicy(3, initial_delay=0.0, jitter=0.0)


class Flaky:
    """A server whose handlers hang (until cancelled) for their first ``hangs`` calls."""

    def __init__(self, hangs: int = 2) -> None:
        self.hangs = hangs
        self.calls: dict[str, int] = {}
        self.server = server = Server("flaky")

        @server.tool(annotations=ToolAnnotations(read_only_hint=True))
        async def price(symbol: str) -> str:
            return await self._maybe_hang("price", f"{symbol}: 42")

        @server.tool(annotations=ToolAnnotations(idempotent_hint=True))
        async def set_flag(on: bool) -> str:
            return await self._maybe_hang("set_flag", f"flag {on}")

        @server.tool
        async def buy(symbol: str) -> str:
            return await self._maybe_hang("buy", f"bought {symbol}")

        @server.resource("data://quote")
        async def quote() -> str:
            return await self._maybe_hang("quote", "quote")

        @server.resource("data://busy")
        def busy() -> str:
            self.calls["busy"] = self.calls.get("busy", 0) + 1
            if self.calls["busy"] <= self.hangs:
                raise McpError(-32603, "HTTP 503 Service Unavailable", {"status": 503, "retryAfter": self.retry_after})
            return "finally"

        self.retry_after = "0.05"

    async def _maybe_hang(self, name: str, answer: str) -> str:
        self.calls[name] = self.calls.get(name, 0) + 1
        if self.calls[name] <= self.hangs:
            await asyncio.Event().wait()
        return answer


def text(result: Any) -> str:
    return str(result.content[0].text)


# --- the policy itself -------------------------------------------------------------------------


def test_policy_rejects_values_out_of_range() -> None:
    for bad in (
        {"max_attempts": 0},
        {"max_attempts": True},
        {"max_attempts": 2.5},
        {"max_attempts": 2, "initial_delay": -1},
        {"max_attempts": 2, "max_delay": float("inf")},
        {"max_attempts": 2, "multiplier": 0.5},
        {"max_attempts": 2, "jitter": 1.5},
        {"max_attempts": 2, "total_timeout": 0},
        {"max_attempts": 2, "max_retry_after": float("nan")},
    ):
        with pytest.raises(ValueError):  # noqa: PT011
            RetryPolicy(**bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ClientOptions(retry=3)  # type: ignore[arg-type]


def test_backoff_doubles_up_to_max_delay_and_jitter_only_shortens() -> None:
    exact = RetryPolicy(6, initial_delay=0.1, multiplier=2.0, max_delay=0.5, jitter=0.0)
    assert [exact.backoff(k) for k in range(1, 6)] == pytest.approx([0.1, 0.2, 0.4, 0.5, 0.5])
    jittered = RetryPolicy(6, initial_delay=1.0, jitter=0.5)
    assert jittered.backoff(1, rand=lambda: 0.0) == 1.0
    assert jittered.backoff(1, rand=lambda: 0.999999) == pytest.approx(0.5, abs=1e-5)
    full = RetryPolicy(6, initial_delay=1.0, jitter=1.0)
    assert all(0.0 <= full.backoff(1) <= 1.0 for _ in range(200))


def test_what_counts_as_transient() -> None:
    assert transient(RequestTimeout(1)) == ("timed out", None)
    assert transient(ConnectionClosed()) == ("connection closed", None)
    for status in (429, 502, 503, 504):
        assert transient(McpError(-32603, "HTTP", {"status": status, "retryAfter": "2"})) == (f"HTTP {status}", 2.0)
    assert transient(McpError(-32029, "Too many requests")) == ("rate limited", None)
    for answer in (
        McpError(-32603, "HTTP 500", {"status": 500}),
        McpError(-32602, "Unknown tool: x"),
        McpError(-32603, "Internal error"),
        McpError(-32800, "Request cancelled"),
        McpError(-32603, "HTTP 503", {"status": "503"}),
    ):
        assert transient(answer) is None, answer
    local = McpError(-32603, "Invalid result from server", {"status": 503})
    local.local = True
    assert transient(local) is None  # only the peer (or the HTTP transport) speaks of statuses


def test_retry_after_is_seconds_or_an_http_date() -> None:
    assert retry_after("1") == 1.0
    assert retry_after(" 2.5 ") == 2.5
    assert retry_after(3) == 3.0
    for bad in ("-1", "soon", None, "nan", float("inf"), True):
        assert retry_after(bad) is None, bad
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < (retry_after(later) or 0) <= 30
    assert retry_after(email.utils.formatdate(time.time() - 30, usegmt=True)) == 0.0


# --- which calls are retried ---------------------------------------------------------------------


@on_virtual_time  # deadlines of 0.1 s race answers: virtual time keeps their order
async def test_a_read_only_tool_is_retried_once_its_annotations_are_known() -> None:
    """Issue 25: the client learns the annotations when it first needs them — at the first
    transient failure of a tool it has not listed — and not before (a call that succeeds
    costs no listing)."""
    flaky = Flaky(hangs=2)
    events: list[ClientEvent] = []
    async with Client(flaky.server, ClientOptions(retry=FAST, on_event=events.append)) as client:
        result = await client.call_tool("price", {"symbol": "ACME"}, timeout=0.1)  # not listed: learned at its timeout
        assert text(result) == "ACME: 42"
        assert flaky.calls["price"] == 3
        events.clear()
        flaky.calls.clear()
        with pytest.raises(RequestTimeout):  # learned with the rest: not read-only, never retried
            await client.call_tool("buy", {"symbol": "ACME"}, timeout=0.1)
    assert flaky.calls == {"buy": 1}
    assert [e.kind for e in events] == ["timeout"]


@on_virtual_time  # deadlines of 0.1 s race answers: virtual time keeps their order
async def test_idempotent_hint_and_the_callers_word_are_enough_and_a_no_is_final() -> None:
    flaky = Flaky(hangs=1)
    async with Client(flaky.server, ClientOptions(retry=FAST)) as client:
        await client.list_tools()
        assert text(await client.call_tool("set_flag", {"on": True}, timeout=0.1)) == "flag True"
        assert text(await client.call_tool("buy", {"symbol": "X"}, timeout=0.1, idempotent=True)) == "bought X"
        flaky.calls.clear()
        with pytest.raises(RequestTimeout):
            await client.call_tool("price", {"symbol": "X"}, timeout=0.1, idempotent=False)
        assert flaky.calls == {"price": 1}


@on_virtual_time  # deadlines of 0.1 s race answers: virtual time keeps their order
async def test_a_call_that_changes_things_is_never_retried() -> None:
    flaky = Flaky(hangs=5)
    async with Client(flaky.server, ClientOptions(retry=RetryPolicy(5, initial_delay=0))) as client:
        await client.list_tools()
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(RequestTimeout) as caught:
            await client.call_tool("buy", {"symbol": "X"}, timeout=0.2)
        assert type(caught.value) is RequestTimeout  # the timeout itself, not RetriesExhausted
        assert loop.time() - started == pytest.approx(0.2)  # one attempt's deadline, no more
    assert flaky.calls == {"buy": 1}


@on_virtual_time  # deadlines of 0.1 s race answers: virtual time keeps their order
async def test_reads_and_lists_are_idempotent_per_call_override_and_send_request() -> None:
    flaky = Flaky(hangs=1)
    async with Client(flaky.server) as client:  # no client-wide policy
        with pytest.raises(RequestTimeout):
            await client.read_resource("data://quote", timeout=0.1)
        flaky.calls.clear()
        result = await client.read_resource("data://quote", timeout=0.1, retry=FAST)
        assert result.contents[0].text == "quote"
        assert flaky.calls == {"quote": 2}
        flaky.calls.clear()
        raw = await client.send_request(
            "tools/call", {"name": "buy", "arguments": {"symbol": "Z"}}, RequestOptions(timeout=0.1, retry=FAST, idempotent=True)
        )
        assert raw["content"][0]["text"] == "bought Z"
        assert flaky.calls == {"buy": 2}
    flaky = Flaky(hangs=1)
    async with Client(flaky.server, ClientOptions(retry=FAST)) as client:
        with pytest.raises(RequestTimeout):  # a per-call policy of one attempt turns retries off
            await client.read_resource("data://quote", timeout=0.1, retry=RetryPolicy(1))


@on_virtual_time  # deadlines of 0.1 s race answers: virtual time keeps their order
async def test_the_handshake_is_never_retried() -> None:
    """The discover probe timing out is how a legacy server is recognised: retrying it
    would only slow the fallback down."""
    seen: list[str] = []

    class LegacyOnly:
        async def start(self, on_message: Any, on_close: Any) -> None:
            self.deliver = on_message

        def send(self, data: bytes) -> None:
            msg = json.loads(data)
            if "id" not in msg:
                return
            seen.append(msg["method"])
            if msg["method"] == "initialize":
                info = {"name": "legacy", "version": "0"}
                result = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": info}
                reply = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
                asyncio.get_running_loop().call_soon(self.deliver, json.dumps(reply).encode())

        async def drain(self) -> None:
            pass

        async def close(self) -> None:
            pass

    options = ClientOptions(retry=RetryPolicy(5, initial_delay=0.0), discover_timeout=0.2)
    async with Client(LegacyOnly(), options) as client:
        assert client.era == "legacy"
    assert seen == ["server/discover", "initialize"]


# --- when retrying stops ---------------------------------------------------------------------------


@on_virtual_time  # deadlines of 0.1 s race answers: virtual time keeps their order
async def test_exhausted_retries_list_every_attempt() -> None:
    flaky = Flaky(hangs=10)
    async with Client(flaky.server, ClientOptions(retry=FAST)) as client:
        with pytest.raises(RetriesExhausted) as caught:
            await client.read_resource("data://quote", timeout=0.1)
    err = caught.value
    assert isinstance(err, McpError)
    assert err.local
    assert err.code == REQUEST_TIMEOUT
    assert err.method == "resources/read"
    assert [type(a) for a in err.attempts] == [RequestTimeout] * 3
    assert isinstance(err.__cause__, RequestTimeout)
    assert err.message == (
        "resources/read failed after 3 attempts (3 attempts allowed): attempt 1: [-32001] Request timed out; "
        "attempt 2: [-32001] Request timed out; attempt 3: [-32001] Request timed out"
    )
    assert err.data == {"attempts": [{"code": -32001, "message": "Request timed out"}] * 3}
    assert flaky.calls == {"quote": 3}


@on_virtual_time  # deadlines of 0.1 s race answers: virtual time keeps their order
async def test_an_answer_after_a_retry_is_raised_as_it_came_with_the_earlier_attempts_noted() -> None:
    server = Server("answers")
    calls = 0

    @server.resource("data://x")
    async def x() -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            await asyncio.Event().wait()
        raise McpError(-32602, "No such thing")

    async with Client(server, ClientOptions(retry=FAST)) as client:
        with pytest.raises(McpError) as caught:
            await client.read_resource("data://x", timeout=0.1)
    assert type(caught.value) is McpError
    assert caught.value.code == -32602
    assert caught.value.__notes__ == ["attempt 1: [-32001] Request timed out"]


@on_virtual_time  # deadlines of 0.1 s race answers: virtual time keeps their order
async def test_total_timeout_bounds_all_attempts_and_waits() -> None:
    flaky = Flaky(hangs=100)
    policy = RetryPolicy(100, initial_delay=0.05, jitter=0.0, total_timeout=0.6)
    async with Client(flaky.server, ClientOptions(retry=policy)) as client:
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(RetriesExhausted) as caught:
            await client.read_resource("data://quote", timeout=0.25)
        elapsed = loop.time() - started
    assert 0.5 <= elapsed <= 0.6
    assert "total_timeout=0.6 s would pass" in caught.value.reason
    assert 2 <= len(caught.value.attempts) <= 3


async def test_retry_after_is_honoured_and_capped() -> None:
    flaky = Flaky(hangs=2)
    events: list[ClientEvent] = []
    async with Client(flaky.server, ClientOptions(retry=RetryPolicy(3), on_event=events.append)) as client:
        assert (await client.read_resource("data://busy")).contents[0].text == "finally"
        assert [getattr(e, "delay", None) for e in events if e.kind == "retry"] == [0.05, 0.05]
        flaky.calls.clear()
        flaky.retry_after = "120"
        started = time.monotonic()
        with pytest.raises(RetriesExhausted) as caught:
            await client.read_resource("data://busy")
        assert time.monotonic() - started < 10  # refused at once, not after 120 s
    assert caught.value.reason == "the server asked to wait 120 s, more than max_retry_after=30"
    assert caught.value.attempts[0].data["status"] == 503
    assert flaky.calls == {"busy": 1}


# --- the modern era's input rounds -------------------------------------------------------------------


async def test_a_retry_starts_over_and_never_replays_earlier_answers() -> None:
    server = Server("asks")
    runs: list[str] = []

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def search(ctx: Context) -> str:
        answer = await ctx.elicit("Which index?", {"type": "object", "properties": {"index": {"type": "string"}}})
        index = (answer.content or {}).get("index")
        runs.append(str(index))
        if len(runs) == 1:
            await asyncio.Event().wait()  # the first attempt's final round hangs
        return f"searched {index}"

    asked: list[str] = []

    def on_elicit(request: Any) -> dict[str, Any]:
        asked.append(request.message)
        return {"action": "accept", "content": {"index": f"answer {len(asked)}"}}

    options = ClientOptions(protocol_version="2026-07-28", on_elicit=on_elicit, retry=FAST)
    async with Client(server, options) as client:
        await client.list_tools()
        # 2 s an attempt: the first hangs for all of it, the second must finish within it
        # (its on_elicit, a plain def, runs on a thread: no virtual time here)
        result = await client.call_tool("search", timeout=2.0)
    assert text(result) == "searched answer 2"  # asked afresh: the first attempt's answer was not replayed
    assert asked == ["Which index?", "Which index?"]
    assert runs == ["answer 1", "answer 2"]


# --- events and logs -----------------------------------------------------------------------------------


@on_virtual_time  # the retry must answer within the 0.1 s the log lines name
async def test_events_are_logged_and_a_failing_handler_does_not_break_the_call(caplog: pytest.LogCaptureFixture) -> None:
    flaky = Flaky(hangs=1)

    def broken(event: ClientEvent) -> None:
        raise RuntimeError("counting failed")

    caplog.set_level(logging.DEBUG, logger="mcpkit.client")
    async with Client(flaky.server, ClientOptions(retry=FAST, on_event=broken)) as client:
        assert (await client.read_resource("data://quote", timeout=0.1)).contents[0].text == "quote"
    records = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "mcpkit.client"]
    assert ("DEBUG", "resources/read: attempt 1 (0.1 s)") in records
    assert ("INFO", "resources/read: attempt 1 timed out after 0.1 s") in records
    assert ("INFO", "resources/read: attempt 1 failed ([-32001] Request timed out); retrying in 0.00 s") in records
    assert ("ERROR", "on_event handler failed for retry") in records


@on_virtual_time  # deadlines of 0.1 s race answers: virtual time keeps their order
async def test_a_timeout_without_retry_is_reported_too() -> None:
    flaky = Flaky(hangs=1)
    events: list[ClientEvent] = []
    async with Client(flaky.server, ClientOptions(on_event=events.append)) as client:
        with pytest.raises(RequestTimeout):
            await client.call_tool("buy", {"symbol": "X"}, timeout=0.1)
    assert [(e.kind, getattr(e, "method", None)) for e in events] == [("timeout", "tools/call")]
