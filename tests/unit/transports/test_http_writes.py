"""What the HTTP server writes and when: a response's head goes out with what follows it
(the guard's transport, ``_Corked``), and an exchange starts watching for its client's
disconnect only once its handler has run a while (``LateWatches``)."""

from __future__ import annotations

import asyncio
from typing import Any

from mcpkit.transports.http.server.exchange import LateWatches
from mcpkit.transports.http.server.guard import _Corked

HEAD = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n"


class _Transport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closing = False

    def write(self, data: bytes) -> None:
        assert not self.closing, "written after close"
        self.writes.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def get_write_buffer_size(self) -> int:
        return 0


def _corked(loop: asyncio.AbstractEventLoop) -> tuple[_Corked, _Transport]:
    raw = _Transport()
    return _Corked(raw, loop), raw  # type: ignore[arg-type]


async def test_a_response_head_goes_out_with_its_body_in_one_write() -> None:
    corked, raw = _corked(asyncio.get_running_loop())
    corked.write(HEAD)
    assert raw.writes == []
    assert corked.get_write_buffer_size() == len(HEAD)
    corked.write(b"{}")
    assert raw.writes == [HEAD + b"{}"]
    corked.write(b"more")  # not a head: as it comes
    assert raw.writes == [HEAD + b"{}", b"more"]
    corked.write(HEAD)
    corked.write(memoryview(b"[]"))  # any bytes-like body
    assert raw.writes[-1] == HEAD + b"[]"


async def test_a_large_body_follows_its_head_without_being_joined() -> None:
    corked, raw = _corked(asyncio.get_running_loop())
    body = b"x" * (1 << 20)
    corked.write(HEAD)
    corked.write(body)
    assert raw.writes == [HEAD, body]


async def test_a_head_alone_goes_out_at_the_end_of_the_loop_iteration() -> None:
    """An SSE stream's head, say, whose first event comes later."""
    corked, raw = _corked(asyncio.get_running_loop())
    corked.write(HEAD)
    await asyncio.sleep(0)
    assert raw.writes == [HEAD]


async def test_close_writes_the_held_head_first_and_a_gone_connection_gets_nothing() -> None:
    corked, raw = _corked(asyncio.get_running_loop())
    corked.write(b"HTTP/1.1 503 Service Unavailable\r\n\r\n")
    corked.close()
    assert raw.writes == [b"HTTP/1.1 503 Service Unavailable\r\n\r\n"]
    assert raw.closing
    other, gone = _corked(asyncio.get_running_loop())
    other.write(HEAD)
    gone.closing = True  # the client went away before the end of the iteration
    await asyncio.sleep(0)
    assert gone.writes == []


class _Exchange:
    def __init__(self) -> None:
        self.watched = 0
        self.event = asyncio.Event()

    def watch(self) -> Any:
        self.watched += 1
        self.event.set()


async def test_an_exchange_is_watched_only_if_it_still_runs_when_due(monkeypatch: Any) -> None:
    from mcpkit.transports.http.server import exchange as module

    monkeypatch.setattr(module, "_WATCH_AFTER", 0.01)
    late = LateWatches()
    loop = asyncio.get_running_loop()
    done, running = _Exchange(), _Exchange()
    forget = late.add(done, loop)  # type: ignore[arg-type]
    late.add(running, loop)  # type: ignore[arg-type]
    forget()  # answered in time
    await asyncio.wait_for(running.event.wait(), 10)
    assert (done.watched, running.watched) == (0, 1)
    again = _Exchange()
    late.add(again, loop)  # type: ignore[arg-type]  # the one timer is armed again
    await asyncio.wait_for(again.event.wait(), 10)
    assert again.watched == 1
