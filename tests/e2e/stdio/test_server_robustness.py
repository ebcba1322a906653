"""A real mcpkit server process over stdio, spoken to in raw JSON-RPC lines.

Malformed input gets the right error (or is ignored, as the spec says) and the server
keeps serving: after each case the next valid request is answered. Cancellation, slow
handlers and shutdown on end of input are checked on the same real pipes.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from support.eras import LEGACY, MODERN
from support.paths import SERVERS

SERVER = str(SERVERS / "basic.py")
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
READ_TIMEOUT = 10.0


class RawServer:
    """The test's end of the pipes to a spawned ``tests/support/servers/basic.py``."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self._ids = itertools.count(1000)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def next_id(self) -> int:
        return next(self._ids)

    async def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def send(self, obj: Any) -> None:
        await self.write(json.dumps(obj).encode() + b"\n")

    async def read(self, timeout: float = READ_TIMEOUT) -> dict[str, Any]:
        """The next message the server writes; fails if none comes in ``timeout`` s."""
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        assert line, "the server closed its stdout"
        assert line.endswith(b"\n")
        out = json.loads(line)
        assert isinstance(out, dict), out
        assert out.get("jsonrpc") == "2.0", out
        return out

    async def read_all(self, timeout: float = READ_TIMEOUT) -> list[dict[str, Any]]:
        """Everything the server writes until it closes stdout."""
        assert self.proc.stdout is not None
        data = await asyncio.wait_for(self.proc.stdout.read(), timeout)
        return [json.loads(line) for line in data.splitlines() if line.strip()]

    async def request(self, method: str, params: dict[str, Any] | None = None, *, rid: Any = None, modern: bool = True) -> Any:
        rid = self.next_id() if rid is None else rid
        params = dict(params or {})
        if modern:
            params["_meta"] = {**META, **params.get("_meta", {})}
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params:
            message["params"] = params
        await self.send(message)
        return rid

    async def call(self, method: str, params: dict[str, Any] | None = None, *, modern: bool = True) -> dict[str, Any]:
        """Send a request; the very next message must be its response."""
        rid = await self.request(method, params, modern=modern)
        out = await self.read()
        assert out.get("id") == rid, f"expected the response to {rid}, got {out}"
        return out

    async def tool(self, name: str, arguments: dict[str, Any], *, modern: bool = True) -> dict[str, Any]:
        out = await self.call("tools/call", {"name": name, "arguments": arguments}, modern=modern)
        assert "result" in out, out
        return out["result"]  # type: ignore[no-any-return]

    async def wait_for(self, tag: str, state: str) -> None:
        """Wait until the server's ``sleep`` call tagged ``tag`` reached ``state``."""
        res = await self.tool("wait_for", {"tag": tag, "state": state})
        assert res["content"] == [{"type": "text", "text": state}], res

    async def assert_alive(self, *, modern: bool = True) -> None:
        """The next valid request is answered, and is the next thing the server says."""
        text = f"still here {self.next_id()}"
        res = await self.tool("echo", {"text": text}, modern=modern)
        assert res.get("isError", False) is False, res
        assert res["content"] == [{"type": "text", "text": text}]
        if modern:
            assert res["resultType"] == "complete"

    async def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        await self.proc.stdin.wait_closed()


def error_of(out: dict[str, Any]) -> tuple[Any, int, str]:
    assert "error" in out, out
    assert "result" not in out
    assert "id" in out, "an error response always carries an id (null when unknown)"
    err = out["error"]
    assert isinstance(err["code"], int)
    assert isinstance(err["message"], str)
    assert err["message"]
    return out["id"], err["code"], err["message"]


@pytest.fixture
async def server() -> AsyncIterator[RawServer]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        SERVER,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=1 << 20,
    )
    try:
        yield RawServer(proc)
    finally:
        if proc.returncode is None:
            try:
                assert proc.stdin is not None
                proc.stdin.close()
            except (BrokenPipeError, ConnectionResetError):
                pass
            try:
                await asyncio.wait_for(proc.wait(), 5.0)
            except TimeoutError:
                proc.kill()
                await proc.wait()


# --- a valid session, both eras -----------------------------------------------------------


async def test_modern_requests_are_served(server: RawServer) -> None:
    await server.assert_alive()
    out = await server.call("tools/list")
    names = {t["name"] for t in out["result"]["tools"]}
    assert {"echo", "sleep"} <= names
    out = await server.call("server/discover")
    assert MODERN in out["result"]["supportedVersions"]


async def test_legacy_initialize_flow_and_request_before_it(server: RawServer) -> None:
    # before initialize, a legacy request is refused with -32600 (and the id)
    rid = await server.request("tools/list", modern=False)
    got_id, code, _ = error_of(await server.read())
    assert (got_id, code) == (rid, -32600)
    await server.assert_alive()  # a modern request is still served meanwhile

    init = await server.call(
        "initialize",
        {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "raw-test", "version": "0"}},
        modern=False,
    )
    result = init["result"]
    assert result["protocolVersion"] == LEGACY
    assert result["serverInfo"]["name"] == "basic"
    assert "tools" in result["capabilities"]
    await server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    await server.assert_alive(modern=False)
    out = await server.call("tools/list", modern=False)
    assert {"echo", "sleep"} <= {t["name"] for t in out["result"]["tools"]}
    # a second initialize is refused
    rid = await server.request(
        "initialize",
        {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "again", "version": "0"}},
        modern=False,
    )
    got_id, code, _ = error_of(await server.read())
    assert (got_id, code) == (rid, -32600)
    await server.assert_alive(modern=False)
    await server.assert_alive()


# --- malformed input -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [b"{not json", b'{"jsonrpc": "2.0", "id": 1, "method": "ping"', b"hello", b'{"jsonrpc":"2.0","id":1,"method":"ping"}}'],
    ids=["garbage-object", "truncated", "bare-word", "extra-brace"],
)
async def test_invalid_json_is_a_parse_error_with_id_null(server: RawServer, line: bytes) -> None:
    await server.write(line + b"\n")
    rid, code, _ = error_of(await server.read())
    assert (rid, code) == (None, -32700)
    await server.assert_alive()


@pytest.mark.parametrize(
    "line",
    [
        b"\xff\xfe\xfd\xfc",
        b'{"jsonrpc": "2.0", "id": 1, "method": "\xc3\x28"}',
        b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "\xff"}, "_meta": '
        + json.dumps(META).encode()
        + b"}}",
    ],
    ids=["raw-bytes", "in-method", "in-params"],
)
async def test_invalid_utf8_is_a_parse_error(server: RawServer, line: bytes) -> None:
    await server.write(line + b"\n")
    rid, code, _ = error_of(await server.read())
    assert code == -32700
    assert rid is None
    await server.assert_alive()


@pytest.mark.parametrize(
    "note",
    [
        b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "\xff"}}',
        b'{"jsonrpc": "2.0", "method": "notifications/progress", '
        b'"params": {"progressToken": 1, "progress": 1, "message": "\xff"}}',
        b'{"jsonrpc": "2.0", "method": "notifications/made-up", "params": {"text": "\xff"}}',
    ],
    ids=["cancelled", "progress", "other"],
)
async def test_invalid_utf8_in_a_notification_loses_nothing_after_it(server: RawServer, note: bytes) -> None:
    """The bad notification and a valid request arrive in one chunk: the request is
    still answered (the bad line may get a parse error, nothing else)."""
    rid = server.next_id()
    valid = {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "x"}, "_meta": META},
    }
    await server.write(note + b"\n" + json.dumps(valid).encode() + b"\n")
    while True:
        out = await server.read(timeout=3)
        if out.get("id") == rid:
            break
        assert error_of(out)[:2] == (None, -32700), out
    assert out["result"]["content"] == [{"type": "text", "text": "x"}]
    await server.assert_alive()


@pytest.mark.parametrize(
    "line",
    [b"[1, 2, 3]", b"[]", b"42", b'"just a string"', b"null", b'[{"jsonrpc": "2.0", "id": 5, "method": "ping"}]'],
    ids=["array", "empty-array", "number", "string", "null", "batch"],
)
async def test_valid_json_that_is_not_an_object_is_an_invalid_request(server: RawServer, line: bytes) -> None:
    await server.write(line + b"\n")
    rid, code, _ = error_of(await server.read())
    assert (rid, code) == (None, -32600)
    await server.assert_alive()


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "1.0", "id": 41, "method": "ping", "params": {"_meta": META}},
        {"id": 42, "method": "ping", "params": {"_meta": META}},
        {"jsonrpc": 2, "id": "forty-three", "method": "ping", "params": {"_meta": META}},
    ],
    ids=["jsonrpc-1.0", "jsonrpc-missing", "jsonrpc-number"],
)
async def test_wrong_jsonrpc_version_is_an_invalid_request_with_the_id(server: RawServer, message: dict[str, Any]) -> None:
    await server.send(message)
    rid, code, _ = error_of(await server.read())
    assert (rid, code) == (message["id"], -32600)
    await server.assert_alive()


async def test_invalid_envelopes_get_32600(server: RawServer) -> None:
    cases: list[tuple[dict[str, Any], Any]] = [
        ({"jsonrpc": "2.0", "id": None, "method": "ping", "params": {"_meta": META}}, None),
        ({"jsonrpc": "2.0", "id": 7, "method": 12}, 7),
        ({"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": [1, 2]}, 8),
    ]
    for message, expected_id in cases:
        await server.send(message)
        rid, code, _ = error_of(await server.read())
        assert (rid, code) == (expected_id, -32600), message
        await server.assert_alive()


async def test_duplicate_id_of_a_request_in_progress_is_refused(server: RawServer) -> None:
    await server.request("tools/call", {"name": "sleep", "arguments": {"seconds": 30, "tag": "dup"}}, rid="dup")
    await server.wait_for("dup", "started")
    await server.request("tools/call", {"name": "echo", "arguments": {"text": "x"}}, rid="dup")
    rid, code, _ = error_of(await server.read())
    assert (rid, code) == ("dup", -32600)
    await server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "dup"}})
    await server.assert_alive()


async def test_a_100_mb_line_is_refused_without_buffering_it(server: RawServer) -> None:
    head = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "'
    chunk = b"a" * (1 << 20)
    total = 100 * (1 << 20)
    await server.assert_alive()  # fully started: the baseline is a running server
    hwm_before = vm_hwm_kib(server.pid)

    async def writer() -> None:
        await server.write(head)
        written = len(head)
        while written < total:
            await server.write(chunk)
            written += len(chunk)
        await server.write(b'"}}}\n')

    started = time.monotonic()
    write_task = asyncio.ensure_future(writer())
    try:
        out = await server.read(timeout=60)
    finally:
        await asyncio.wait_for(write_task, 60)
    rid, code, message = error_of(out)
    assert (rid, code) == (None, -32600)
    assert "exceeds the size limit" in message
    await server.assert_alive()  # the next line is served, and nothing else was said in between
    assert time.monotonic() - started < 30
    hwm = vm_hwm_kib(server.pid)
    # The server's default limit is 16 MB: it may hold that much before giving up on the
    # line, but never the whole 100 MB.
    assert hwm - hwm_before < 40 * 1024, f"peak RSS grew from {hwm_before} KiB to {hwm} KiB"
    assert hwm < 80 * 1024, f"peak RSS {hwm} KiB"


def vm_hwm_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc/<pid>/status")


async def test_a_flood_of_10000_notifications_gets_no_answer(server: RawServer) -> None:
    kinds = [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/made-up", "params": {"n": 1}},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "unknown", "progress": 1}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 123456}},
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed", "params": {"_meta": META}},
    ]
    lines = [json.dumps(kinds[i % len(kinds)]).encode() for i in range(10_000)]
    await server.write(b"\n".join(lines) + b"\n")
    started = time.monotonic()
    await server.assert_alive()  # the very next message is the echo's answer
    assert time.monotonic() - started < 10


async def test_responses_to_unknown_ids_are_ignored(server: RawServer) -> None:
    await server.send({"jsonrpc": "2.0", "id": 999, "result": {}})
    await server.send({"jsonrpc": "2.0", "id": "nobody-asked", "result": {"content": []}})
    await server.send({"jsonrpc": "2.0", "id": 998, "error": {"code": -32603, "message": "whatever"}})
    await server.send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
    await server.assert_alive()


async def test_unknown_method_is_method_not_found(server: RawServer) -> None:
    rid = await server.request("no/such/method")
    got_id, code, message = error_of(await server.read())
    assert (got_id, code) == (rid, -32601)
    assert "no/such/method" in message
    await server.assert_alive()


# --- concurrency, cancellation, shutdown ---------------------------------------------------


async def test_a_cancelled_request_gets_no_response(server: RawServer) -> None:
    slow_id = await server.request("tools/call", {"name": "sleep", "arguments": {"seconds": 30, "tag": "c1"}})
    await server.wait_for("c1", "started")
    await server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": slow_id, "reason": "test"}})
    # the server stopped the handler ...
    await server.wait_for("c1", "cancelled")
    # ... later requests are answered (and each is the next message: nothing for slow_id)
    await server.assert_alive()
    await server.assert_alive()
    # ... and until the server exits it never answers the cancelled request
    await server.close_stdin()
    rest = await server.read_all()
    assert [m for m in rest if m.get("id") == slow_id] == []
    assert rest == []
    assert await asyncio.wait_for(server.proc.wait(), 5) == 0


async def test_a_cancel_racing_the_request_still_gets_no_response(server: RawServer) -> None:
    """Request and cancellation written together: whether or not the handler started,
    the request must not be answered."""
    rid = server.next_id()
    request = {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": "sleep", "arguments": {"seconds": 30}, "_meta": META},
    }
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}}
    await server.write(json.dumps(request).encode() + b"\n" + json.dumps(cancel).encode() + b"\n")
    await server.assert_alive()
    await server.close_stdin()
    assert await server.read_all() == []
    assert await asyncio.wait_for(server.proc.wait(), 5) == 0


async def test_a_slow_handler_does_not_block_other_requests(server: RawServer) -> None:
    slow_id = await server.request("tools/call", {"name": "sleep", "arguments": {"seconds": 30, "tag": "slow"}})
    await server.wait_for("slow", "started")
    started = time.monotonic()
    for _ in range(20):
        await server.assert_alive()
    out = await server.call("server/discover")
    assert "result" in out
    assert time.monotonic() - started < 5
    await server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": slow_id}})
    await server.assert_alive()


async def test_concurrent_slow_handlers_overlap(server: RawServer) -> None:
    # Each call answers only once all ten are in progress together: run one after
    # another, the first would wait for the others until it gives up ("timeout").
    ids = [await server.request("tools/call", {"name": "meet", "arguments": {"tag": "overlap", "n": 10}}) for _ in range(10)]
    answers = [await server.read(timeout=20) for _ in ids]
    assert sorted(a["id"] for a in answers) == sorted(ids)
    assert [a["result"]["content"][0]["text"] for a in answers] == ["met"] * 10, "the ten calls never ran at the same time"


async def test_closing_stdin_makes_the_server_exit_promptly(server: RawServer) -> None:
    await server.assert_alive()
    started = time.monotonic()
    await server.close_stdin()
    code = await asyncio.wait_for(server.proc.wait(), 30)
    assert time.monotonic() - started < 10
    assert code == 0


async def test_closing_stdin_with_a_handler_in_flight_still_exits_promptly(server: RawServer) -> None:
    await server.request("tools/call", {"name": "sleep", "arguments": {"seconds": 60, "tag": "inflight"}})
    await server.wait_for("inflight", "started")
    started = time.monotonic()
    await server.close_stdin()
    code = await asyncio.wait_for(server.proc.wait(), 30)
    assert time.monotonic() - started < 10  # not when the handler's 60 s are over
    assert code == 0


async def test_a_modern_only_method_without_meta_is_invalid_params(server: RawServer) -> None:
    # server/discover exists only in the modern era, so a call without its required
    # _meta field is a malformed modern request (-32602), not a legacy one (-32600)
    rid = await server.request("server/discover", modern=False)
    got_id, code, message = error_of(await server.read())
    assert (got_id, code) == (rid, -32602)
    assert "io.modelcontextprotocol/protocolVersion" in message
    await server.assert_alive()
