"""Adversarial checks of the HTTP client transports (issues 12 and 16), over real loopback
HTTP against the scripted HTTP+SSE server (tests/support/servers/sse_fake.py): bad constructor
values, cancelling over ``SseTransport`` (no stream per request: the cancellation is
POSTed, ahead of a POST the server does not answer), endpoints named twice or elsewhere
on the origin, and closing with a POST in flight."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mcpkit import Client, ClientOptions, ConnectionClosed, HttpTransport, RequestTimeout, RestartPolicy, SseTransport
from support.processes import load_server
from support.serving import serve_in_thread
from support.waiting import until

pytestmark = pytest.mark.timeout(60)

LIMIT = 40.0  # seconds for a whole test body
OPTIONS = ClientOptions(request_timeout=30)  # a deadline well past the bounds of "at once" below
fake_module = load_server("sse_fake")


@pytest.fixture
def fake() -> Iterator[tuple[str, Any]]:
    app = fake_module.SseFake()
    with serve_in_thread(app) as port:
        yield f"http://127.0.0.1:{port}", app


def methods(app: Any) -> list[str]:
    return [m.get("method", "(response)") for m in app.posted]


# --- constructor values ------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["yes", 1, 0, None, 2.5, {"max_restarts": 3}])
def test_reconnect_must_be_a_bool_or_a_policy(value: object) -> None:
    with pytest.raises(TypeError, match=r"reconnect must be True, False or a RestartPolicy, not "):
        HttpTransport("http://127.0.0.1:1/mcp", reconnect=value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "bad", [{"initial_delay": "1"}, {"initial_delay": True}, {"multiplier": None}, {"window": "60"}, {"max_delay": [5]}]
)
def test_a_policy_of_the_wrong_type_says_which_value(bad: dict[str, object]) -> None:
    name = next(iter(bad))
    with pytest.raises(TypeError, match=f"^{name} must be a number, not "):
        RestartPolicy(**bad)  # type: ignore[arg-type]


def test_reconnect_values_that_are_accepted() -> None:
    policy = RestartPolicy(max_restarts=2)
    assert HttpTransport("http://127.0.0.1:1/mcp", reconnect=policy).reconnect_policy is policy
    assert HttpTransport("http://127.0.0.1:1/mcp", reconnect=False).reconnect_policy is None
    assert HttpTransport("http://127.0.0.1:1/mcp").reconnect_policy == RestartPolicy(max_restarts=8)


@pytest.mark.parametrize(
    ("name", "value", "error", "message"),
    [
        ("connect_timeout", 0, ValueError, "connect_timeout must be positive and finite, not 0"),
        ("connect_timeout", float("inf"), ValueError, "connect_timeout must be positive and finite"),
        ("connect_timeout", "10", TypeError, "connect_timeout must be a number of seconds, not str"),
        ("reconnect_delay", -0.1, ValueError, "reconnect_delay must be at least 0 and finite"),
        ("notification_timeout", float("nan"), ValueError, "notification_timeout must be positive"),
        ("delete_timeout", True, TypeError, "delete_timeout must be a number of seconds, not bool"),
        ("max_reconnects", -1, ValueError, "max_reconnects must be at least 0, not -1"),
        ("max_reconnects", 2.0, TypeError, "max_reconnects must be an integer, not float"),
        ("max_message_size", 0, ValueError, "max_message_size must be at least 1, not 0"),
    ],
)
def test_http_transport_checks_its_numbers(name: str, value: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        HttpTransport("http://127.0.0.1:1/mcp", **{name: value})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "value", "error"),
    [("connect_timeout", -1, ValueError), ("post_timeout", 0, ValueError), ("max_message_size", "big", TypeError)],
)
def test_sse_transport_checks_its_numbers(name: str, value: object, error: type[Exception]) -> None:
    with pytest.raises(error, match=name):
        SseTransport("http://127.0.0.1:1/sse", **{name: value})  # type: ignore[arg-type]


def test_zero_reconnect_delay_is_allowed() -> None:
    assert HttpTransport("http://127.0.0.1:1/mcp", reconnect_delay=0, max_reconnects=0).reconnect_delay == 0.0


# --- cancelling over SseTransport ----------------------------------------------------------------


@pytest.mark.parametrize("how", ["cancel", "timeout"])
async def test_cancelling_a_call_posts_the_cancellation_at_once(fake: tuple[str, Any], how: str) -> None:
    """The call's POST is never answered (``hang``), so it heads the queue of POSTs for
    ``post_timeout``: cancelling the call, or its deadline, fails it at once and POSTs
    ``notifications/cancelled`` at once all the same, ahead of that queue."""
    base, app = fake
    async with asyncio.timeout(LIMIT), Client(SseTransport(f"{base}/sse", post_timeout=30), OPTIONS) as client:
        call = asyncio.create_task(client.call_tool("hang", timeout=0.5 if how == "timeout" else 10))
        await until(lambda: "tools/call" in methods(app))
        started = time.monotonic()
        if how == "cancel":
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            assert time.monotonic() - started < 10  # at once: not after the 30 s the POST may wait
        else:
            with pytest.raises(RequestTimeout):
                await call
        await until(lambda: "notifications/cancelled" in methods(app))
        assert time.monotonic() - started < 10  # ahead of the unanswered POST (30 s)
        cancelled = app.posted[-1]
        assert cancelled["params"]["requestId"] == next(m["id"] for m in app.posted if m.get("method") == "tools/call")


class Watched(SseTransport):
    """An :class:`SseTransport` that keeps every message the client hands it (to POST, or
    to queue behind a POST in progress)."""

    def __init__(self, url: str, **options: Any) -> None:
        super().__init__(url, **options)
        self.handed: list[bytes] = []

    def send(self, data: bytes) -> None:
        self.handed.append(data)
        super().send(data)


async def test_a_cancelled_request_still_queued_is_never_sent(fake: tuple[str, Any]) -> None:
    """A request queued behind an unanswered POST and then cancelled is dropped: neither
    it nor its cancellation reaches the server; the requests after it do."""
    base, app = fake
    transport = Watched(f"{base}/sse", post_timeout=1.0)
    async with asyncio.timeout(LIMIT), Client(transport, OPTIONS) as client:
        hung = asyncio.create_task(client.call_tool("hang"))
        await until(lambda: "tools/call" in methods(app))
        queued = asyncio.create_task(client.call_tool("echo", {"text": "never"}))
        await until(lambda: any(b'"never"' in m for m in transport.handed), what="the call queued")
        queued.cancel()
        with pytest.raises(asyncio.CancelledError):
            await queued
        with pytest.raises(Exception, match=r"No answer to the POST within 1 s"):
            await hung
        echoed = await client.call_tool("echo", {"text": "next"})
        assert echoed.content[0].text == "next"  # type: ignore[union-attr]
    texts = [m["params"]["arguments"].get("text") for m in app.posted if m.get("method") == "tools/call"]
    assert texts == [None, "next"]
    assert methods(app).count("notifications/cancelled") == 0


# --- endpoints ------------------------------------------------------------------------------------


async def test_a_second_endpoint_event_is_ignored(fake: tuple[str, Any]) -> None:
    """Only the first ``endpoint`` counts: one naming another session later changes
    nothing (every message still goes to the first)."""
    base, _ = fake
    async with asyncio.timeout(LIMIT):
        transport = SseTransport(f"{base}/sse?mode=twice")
        async with Client(transport, OPTIONS) as client:
            echoed = await client.call_tool("echo", {"text": "first"})
            assert echoed.content[0].text == "first"  # type: ignore[union-attr]
            assert transport.endpoint == f"{base}/messages?sid=1"


async def test_an_endpoint_on_another_path_of_the_origin_is_used(fake: tuple[str, Any]) -> None:
    base, app = fake
    async with asyncio.timeout(LIMIT):
        transport = SseTransport(f"{base}/sse?mode=path")
        async with Client(transport, OPTIONS) as client:
            assert (await client.call_tool("echo", {"text": "there"})).content[0].text == "there"  # type: ignore[union-attr]
        assert transport.endpoint == f"{base}/other/messages?sid=1"
    assert ("POST", "/other/messages") in app.requests


async def test_an_endpoint_on_another_port_is_refused(fake: tuple[str, Any]) -> None:
    base, app = fake
    async with asyncio.timeout(LIMIT):
        with pytest.raises(ConnectionClosed, match=r"127\.0\.0\.1:1/messages\?sid=1' is not on the origin of"):
            async with Client(SseTransport(f"{base}/sse?mode=port"), OPTIONS):
                pass
    assert app.requests == [("GET", "/sse")]


async def test_a_dropped_stream_fails_the_waiting_calls_within_a_second(fake: tuple[str, Any]) -> None:
    """The server ends the stream while calls wait for their answers: each fails with
    ConnectionClosed within a second, and so does any call made after."""
    base, _ = fake
    async with asyncio.timeout(LIMIT), Client(SseTransport(f"{base}/sse"), OPTIONS) as client:
        waiting = [asyncio.create_task(client.call_tool("echo", {"text": str(i)})) for i in range(3)]
        await asyncio.gather(*waiting)  # answered: the stream works
        started = time.monotonic()
        ended = asyncio.create_task(client.call_tool("end"))
        outcomes = await asyncio.gather(ended, return_exceptions=True)
        assert time.monotonic() - started < 10  # when the stream ends, not at the call's deadline
        assert isinstance(outcomes[0], ConnectionClosed)
        assert "The server ended the SSE stream" in outcomes[0].message
        with pytest.raises(ConnectionClosed):
            await client.call_tool("echo", {"text": "late"})


# --- closing ---------------------------------------------------------------------------------------


async def test_close_with_a_post_in_flight(fake: tuple[str, Any]) -> None:
    """``close()`` while a POST is unanswered: it returns at once, the call fails with
    ConnectionClosed, and the stream is closed."""
    base, app = fake
    transport = SseTransport(f"{base}/sse")
    async with asyncio.timeout(LIMIT):
        client = await Client(transport, OPTIONS).__aenter__()
        call = asyncio.create_task(client.call_tool("hang"))
        await until(lambda: "tools/call" in methods(app))
        started = time.monotonic()
        await client.close()
        assert time.monotonic() - started < 10  # at once: not when the POST would time out
        with pytest.raises(ConnectionClosed):
            await call
        assert await asyncio.to_thread(app.disconnected.wait, 5)
