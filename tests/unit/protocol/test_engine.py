"""The sans-IO JSON-RPC engine and the newline framer, without any I/O (docs/design.md).

Every test drives :class:`mcpkit.protocol.engine.Engine` or :class:`mcpkit.protocol.framing.LineFramer`
directly with bytes and plain numbers for time: no event loop, no pipes, no clock.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from mcpkit import McpError
from mcpkit.protocol.engine import (
    CancelReceived,
    Engine,
    NotificationReceived,
    ProgressReceived,
    Reply,
    RequestReceived,
    ResponseReceived,
)
from mcpkit.protocol.framing import OVERSIZED, LineFramer

# --- helpers -------------------------------------------------------------------------------


def msg(obj: Any) -> bytes:
    """One message as the peer would frame it (the engine gets it without the newline)."""
    return json.dumps(obj).encode()


def decode(data: bytes) -> dict[str, Any]:
    """Decode one complete outbound message, checking it has no line break: the engine
    does not frame, so a newline-framed transport can carry it as exactly one line."""
    assert b"\n" not in data
    out = json.loads(data)
    assert isinstance(out, dict)
    assert out["jsonrpc"] == "2.0"
    return out


def reply_error(ev: object) -> tuple[Any, int, str]:
    """(id, code, message) of a Reply event."""
    assert isinstance(ev, Reply), f"expected a Reply, got {ev!r}"
    out = decode(ev.data)
    assert set(out) == {"jsonrpc", "id", "error"}
    return out["id"], out["error"]["code"], out["error"]["message"]


def sent_request(engine: Engine, method: str = "tools/call", params: Any = None, deadline: float = 10.0, **kw: Any):
    out = engine.start_request(method, params if params is not None else {"name": "x"}, deadline=deadline, **kw)
    engine.mark_sent(out)
    return out


def result(rid: Any, value: Any = None) -> bytes:
    return msg({"jsonrpc": "2.0", "id": rid, "result": value if value is not None else {"ok": True}})


def request(rid: Any, method: str = "ping", params: Any = None) -> bytes:
    m: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        m["params"] = params
    return msg(m)


def cancelled(rid: Any, reason: str | None = None) -> bytes:
    params: dict[str, Any] = {"requestId": rid}
    if reason is not None:
        params["reason"] = reason
    return msg({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params})


# --- our requests: ids and the pending table -----------------------------------------------


def test_request_ids_are_unique_and_bytes_are_one_request_line() -> None:
    engine = Engine()
    outs = [engine.start_request("tools/list", None, deadline=1.0) for _ in range(100)]
    ids = [o.id for o in outs]
    assert len(set(ids)) == 100
    assert all(type(i) is int for i in ids)
    for o in outs:
        wire = decode(o.data)
        assert wire == {"jsonrpc": "2.0", "id": o.id, "method": "tools/list"}
        assert engine.outgoing[o.id] is o
        assert o.sent is False
        assert o.method == "tools/list"


def test_request_params_are_carried_and_id_factory_is_used() -> None:
    engine = Engine()
    out = engine.start_request(
        "tools/call", {"name": "echo", "arguments": {"text": "hi"}}, deadline=5.0, id_factory=lambda n: f"r-{n}"
    )
    assert out.id == "r-1"
    assert decode(out.data) == {
        "jsonrpc": "2.0",
        "id": "r-1",
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hi"}},
    }
    ev = engine.receive(result("r-1", {"content": []}))
    assert isinstance(ev, ResponseReceived)
    assert ev.request is out


def test_response_resolves_and_forgets_the_request() -> None:
    engine = Engine()
    out = sent_request(engine)
    ev = engine.receive(result(out.id, {"x": 1}))
    assert isinstance(ev, ResponseReceived)
    assert ev.request is out
    assert ev.error is None
    assert ev.result is not None
    assert json.loads(bytes(ev.result)) == {"x": 1}
    assert out.id not in engine.outgoing
    # the same response again: the id is no longer pending, so it is ignored
    assert engine.receive(result(out.id, {"x": 1})) is None


def test_error_response_becomes_mcp_error_verbatim() -> None:
    engine = Engine()
    out = sent_request(engine)
    ev = engine.receive(
        msg({"jsonrpc": "2.0", "id": out.id, "error": {"code": -32602, "message": "Unknown tool: x", "data": {"k": [1]}}})
    )
    assert isinstance(ev, ResponseReceived)
    assert ev.request is out
    assert ev.result is None
    assert isinstance(ev.error, McpError)
    assert (ev.error.code, ev.error.message, ev.error.data) == (-32602, "Unknown tool: x", {"k": [1]})
    assert ev.error.local is False
    assert out.id not in engine.outgoing


def test_error_message_from_peer_is_flattened() -> None:
    engine = Engine(max_error_text=64)
    out = sent_request(engine)
    ev = engine.receive(msg({"jsonrpc": "2.0", "id": out.id, "error": {"code": 1, "message": "a\nb\u2028c" + "x" * 500}}))
    assert isinstance(ev, ResponseReceived)
    assert ev.error is not None
    text = ev.error.message
    assert "\n" not in text
    assert "\u2028" not in text
    assert len(text.encode()) <= 64
    assert text.endswith("…")


def test_responses_to_unknown_ids_are_ignored() -> None:
    engine = Engine()
    out = sent_request(engine)
    assert engine.receive(result(12345)) is None
    assert engine.receive(result("never-sent")) is None
    assert engine.receive(msg({"jsonrpc": "2.0", "id": 999, "error": {"code": -32603, "message": "x"}})) is None
    # an error answer with id null (the peer could not read a message) matches nothing
    assert engine.receive(msg({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})) is None
    # the real request is untouched
    assert engine.outgoing == {out.id: out}


# --- cancel, expire, fail_all --------------------------------------------------------------


def test_cancel_of_a_sent_request_returns_notifications_cancelled() -> None:
    engine = Engine()
    out = sent_request(engine)
    pending, data = engine.cancel(out.id, "Request timed out")
    assert pending is out
    assert data is not None
    note = decode(data)
    assert note == {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": out.id, "reason": "Request timed out"},
    }
    assert "id" not in note  # a notification
    assert out.id not in engine.outgoing


def test_cancel_without_reason_omits_it() -> None:
    engine = Engine()
    out = sent_request(engine)
    _, data = engine.cancel(out.id)
    assert data is not None
    assert decode(data)["params"] == {"requestId": out.id}


def test_cancel_of_an_unsent_request_drops_it_silently() -> None:
    engine = Engine()
    out = engine.start_request("tools/call", {"name": "x"}, deadline=1.0)  # never marked sent
    pending, data = engine.cancel(out.id, "Request timed out")
    assert pending is out
    assert data is None
    assert out.id not in engine.outgoing


def test_cancel_of_unknown_or_finished_request_is_a_no_op() -> None:
    engine = Engine()
    assert engine.cancel(42) == (None, None)
    out = sent_request(engine)
    assert isinstance(engine.receive(result(out.id)), ResponseReceived)
    assert engine.cancel(out.id) == (None, None)  # already answered: nothing to announce
    out2 = sent_request(engine)
    assert engine.cancel(out2.id)[1] is not None
    assert engine.cancel(out2.id) == (None, None)  # second cancel: nothing more


def test_late_response_to_a_cancelled_request_is_ignored() -> None:
    engine = Engine()
    out = sent_request(engine)
    engine.cancel(out.id)
    assert engine.receive(result(out.id)) is None
    assert (
        engine.receive(msg({"jsonrpc": "2.0", "id": out.id, "error": {"code": -32800, "message": "Request cancelled"}})) is None
    )


def test_timed_out_requests_end_with_cancel() -> None:
    # The driver keeps the clock (one timer per request, at out.deadline); a request
    # whose deadline passed ends with cancel, which announces only written requests.
    engine = Engine()
    a = sent_request(engine, deadline=1.0)
    b = sent_request(engine, deadline=2.0)
    c = engine.start_request("ping", None, deadline=2.0)  # not yet written
    d = sent_request(engine, deadline=3.0)
    assert [o.deadline for o in (a, b, c, d)] == [1.0, 2.0, 2.0, 3.0]
    announced = {}
    for out in (a, b, c):
        pending, data = engine.cancel(out.id, "Request timed out")
        assert pending is out
        announced[out.id] = data
    assert announced[a.id] is not None
    assert announced[b.id] is not None
    assert announced[c.id] is None
    assert engine.outgoing == {d.id: d}
    assert engine.cancel(a.id) == (None, None)
    # late responses to the expired ones are ignored
    assert engine.receive(result(a.id)) is None
    assert engine.receive(result(c.id)) is None


def test_fail_all_forgets_every_pending_request() -> None:
    engine = Engine()
    outs = [sent_request(engine, progress=True) for _ in range(5)] + [engine.start_request("ping", None, deadline=1.0)]
    failed = engine.fail_all()
    assert {o.id for o in failed} == {o.id for o in outs}
    assert engine.outgoing == {}
    for o in outs:
        assert engine.receive(result(o.id)) is None
        note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": o.id, "progress": 1}}
        assert engine.receive(msg(note)) is None
    assert engine.fail_all() == []


# --- progress ------------------------------------------------------------------------------


def test_progress_token_is_added_and_progress_maps_to_the_request() -> None:
    engine = Engine()
    plain = sent_request(engine)
    a = sent_request(engine, params={"name": "a", "_meta": {"other": 1}}, progress=True)
    b = sent_request(engine, params={"name": "b"}, progress=True)
    wire = decode(a.data)
    assert wire["params"]["_meta"] == {"other": 1, "progressToken": a.progress_token}
    assert a.progress_token is not None
    assert a.progress_token != b.progress_token
    assert "_meta" not in decode(plain.data)["params"]

    def progress(token: Any, value: Any, **extra: Any) -> bytes:
        return msg(
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": value, **extra}}
        )

    ev = engine.receive(progress(b.progress_token, 5, total=10, message="half\nway"))
    assert isinstance(ev, ProgressReceived)
    assert ev.request is b
    assert (ev.progress, ev.total) == (5, 10)
    assert ev.message == "half way"
    ev = engine.receive(progress(a.progress_token, 0.5))
    assert isinstance(ev, ProgressReceived)
    assert ev.request is a
    assert ev.total is None
    assert ev.message is None
    # unknown token, a request that asked for no progress, a non-numeric progress: ignored
    assert engine.receive(progress("nope", 1)) is None
    assert engine.receive(progress(plain.id, 1)) is None
    assert engine.receive(progress(a.progress_token, "lots")) is None
    # once answered, progress for that token is ignored
    assert isinstance(engine.receive(result(a.id)), ResponseReceived)
    assert engine.receive(progress(a.progress_token, 0.9)) is None
    # once cancelled too
    engine.cancel(b.id)
    assert engine.receive(progress(b.progress_token, 9)) is None


# --- requests the peer sends us -----------------------------------------------------------


def test_inbound_request_and_response_bytes() -> None:
    engine = Engine()
    ev = engine.receive(request(7, "tools/call", {"name": "echo"}))
    assert isinstance(ev, RequestReceived)
    assert (ev.id, ev.method) == (7, "tools/call")
    assert json.loads(bytes(ev.params)) == {"name": "echo"}
    assert 7 in engine.incoming
    data = engine.respond(7, {"content": []})
    assert data is not None
    assert decode(data) == {"jsonrpc": "2.0", "id": 7, "result": {"content": []}}
    assert 7 not in engine.incoming
    assert engine.respond(7, {}) is None  # answered once only


def test_inbound_request_string_id_and_error_response() -> None:
    engine = Engine()
    ev = engine.receive(request("abc", "tools/list"))
    assert isinstance(ev, RequestReceived)
    assert ev.id == "abc"
    assert not ev.params  # absent params: empty raw
    data = engine.respond_error("abc", McpError(-32601, "Method not found: x", {"m": "x"}))
    assert data is not None
    assert decode(data) == {
        "jsonrpc": "2.0",
        "id": "abc",
        "error": {"code": -32601, "message": "Method not found: x", "data": {"m": "x"}},
    }
    assert engine.respond_error("abc", McpError(-32603, "again")) is None
    assert engine.respond("unknown", {}) is None
    assert engine.respond_error("unknown", McpError(-32603, "x")) is None


def test_unencodable_result_raises_and_leaves_the_request_answerable() -> None:
    engine = Engine()
    assert isinstance(engine.receive(request(4, "tools/call")), RequestReceived)
    with pytest.raises(TypeError):
        engine.respond(4, {"value": object()})
    data = engine.respond_error(4, McpError(-32603, "Internal error"))
    assert data is not None
    assert decode(data)["error"] == {"code": -32603, "message": "Internal error"}


def test_inbound_cancel_of_request_in_progress_means_no_response() -> None:
    engine = Engine()
    assert isinstance(engine.receive(request(3, "tools/call", {"name": "sleep"})), RequestReceived)
    ev = engine.receive(cancelled(3, "user\nstopped"))
    assert isinstance(ev, CancelReceived)
    assert ev.id == 3
    assert ev.reason == "user stopped"
    # a cancelled request gets no response, whether the handler finishes or fails
    assert engine.respond(3, {"content": []}) is None
    assert engine.respond_error(3, McpError(-32603, "Internal error")) is None


def test_inbound_cancel_of_unknown_request_is_ignored() -> None:
    engine = Engine()
    assert engine.receive(cancelled(77)) is None
    assert engine.receive(cancelled("x")) is None
    # answered already: the late cancel is ignored and nothing breaks
    assert isinstance(engine.receive(request(1)), RequestReceived)
    assert engine.respond(1, {}) is not None
    assert engine.receive(cancelled(1)) is None


def test_malformed_cancel_notifications_are_ignored() -> None:
    engine = Engine()
    assert isinstance(engine.receive(request(1)), RequestReceived)
    for params in ({}, {"requestId": None}, {"requestId": [1]}, {"requestId": 1.5}):
        assert engine.receive(msg({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params})) is None
    assert engine.receive(msg({"jsonrpc": "2.0", "method": "notifications/cancelled"})) is None
    assert engine.respond(1, {}) is not None  # still in progress, still answerable


def test_peer_cancelling_our_request_fails_it_with_32800() -> None:
    engine = Engine()
    out = sent_request(engine)
    other = sent_request(engine)
    ev = engine.receive(cancelled(out.id, "server shutting down"))
    assert isinstance(ev, ResponseReceived)
    assert ev.request is out
    assert ev.result is None
    assert isinstance(ev.error, McpError)
    assert ev.error.code == -32800
    assert ev.error.message == "Request cancelled"
    assert out.id not in engine.outgoing
    assert other.id in engine.outgoing
    assert engine.receive(result(out.id)) is None  # a late answer after it is ignored


def test_inbound_cancel_targets_the_inbound_request_when_ids_collide() -> None:
    """Ids are per sender: the peer's request 1 and our request 1 are different requests.
    A cancel from the peer refers to a request *it* sent."""
    engine = Engine()
    ours = sent_request(engine)
    assert isinstance(engine.receive(request(ours.id, "ping")), RequestReceived)
    ev = engine.receive(cancelled(ours.id))
    assert isinstance(ev, CancelReceived)
    assert ours.id in engine.outgoing  # our own request is still pending


def test_duplicate_id_of_request_in_progress_is_rejected() -> None:
    engine = Engine()
    assert isinstance(engine.receive(request(5, "tools/call", {"name": "a"})), RequestReceived)
    rid, code, message = reply_error(engine.receive(request(5, "tools/call", {"name": "b"})))
    assert (rid, code) == (5, -32600)
    assert message
    # the first request is still in progress and gets its own answer
    assert engine.respond(5, {"first": True}) is not None
    # once answered, the id may be reused
    assert isinstance(engine.receive(request(5)), RequestReceived)


def test_notifications_are_passed_on() -> None:
    engine = Engine()
    ev = engine.receive(msg({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    assert isinstance(ev, NotificationReceived)
    assert ev.method == "notifications/initialized"
    assert not ev.params
    ev = engine.receive(msg({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info"}}))
    assert isinstance(ev, NotificationReceived)
    assert json.loads(bytes(ev.params)) == {"level": "info"}


# --- malformed input ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        b"{bad",
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping"',
        b"not json at all",
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping"} trailing',
        b"\xff\xfe\xfd",
        b'{"jsonrpc": "2.0", "id": 1, "method": "\xff"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "\xc3\x28"}}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "\xed\xa0\x80"}}',
        b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "\xff"}}',
        b'{"jsonrpc": "2.0", "method": "notifications/progress", '
        b'"params": {"progressToken": 1, "progress": 1, "message": "\xff"}}',
        b'{"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "\xff"}}',
    ],
    ids=[
        "truncated",
        "unclosed",
        "text",
        "trailing",
        "not-utf8",
        "bad-utf8-method",
        "bad-utf8-params",
        "surrogate-utf8",
        "bad-utf8-cancel",
        "bad-utf8-progress",
        "bad-utf8-note",
    ],
)
def test_unparseable_input_is_a_parse_error_with_id_null(line: bytes) -> None:
    engine = Engine()
    assert isinstance(engine.receive(request(1, "tools/call")), RequestReceived)  # cancel/progress have a target
    engine.start_request("tools/call", {}, deadline=1.0, progress=True)
    engine.abandon_all()
    rid, code, message = reply_error(engine.receive(line))
    assert rid is None
    assert code == -32700
    assert message
    assert engine.incoming == {}


@pytest.mark.parametrize(
    "line",
    [b"[]", b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', b"42", b'"a string"', b"null", b"true"],
    ids=["empty-array", "batch", "number", "string", "null", "bool"],
)
def test_valid_json_that_is_not_an_object_is_an_invalid_request(line: bytes) -> None:
    engine = Engine()
    rid, code, message = reply_error(engine.receive(line))
    assert (rid, code) == (None, -32600)
    assert message
    assert engine.incoming == {}


@pytest.mark.parametrize(
    ("obj", "expected_id"),
    [
        ({"jsonrpc": "1.0", "id": 7, "method": "ping"}, 7),
        ({"id": "s", "method": "ping"}, "s"),
        ({"jsonrpc": 2.0, "id": 8, "method": "ping"}, 8),
        ({"jsonrpc": "2.0", "id": 9, "method": 5}, 9),
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": 10, "method": "tools/list", "params": [1, 2]}, 10),
        ({"jsonrpc": "2.0", "id": 11, "method": "tools/list", "params": "x"}, 11),
        ({"jsonrpc": "2.0", "id": 12, "method": "tools/list", "params": 3}, 12),
    ],
    ids=[
        "jsonrpc-1.0",
        "jsonrpc-missing",
        "jsonrpc-number",
        "method-not-string",
        "id-null",
        "id-float",
        "id-bool",
        "id-object",
        "params-array",
        "params-string",
        "params-number",
    ],
)
def test_invalid_envelope_is_an_invalid_request(obj: dict[str, Any], expected_id: Any) -> None:
    engine = Engine()
    rid, code, message = reply_error(engine.receive(msg(obj)))
    assert rid == expected_id
    assert code == -32600
    assert message.startswith("Invalid Request")
    assert engine.incoming == {}


def test_notification_with_params_not_an_object_is_not_delivered() -> None:
    engine = Engine()
    ev = engine.receive(msg({"jsonrpc": "2.0", "method": "notifications/message", "params": [1]}))
    assert not isinstance(ev, NotificationReceived)
    assert not isinstance(ev, Reply) or json.loads(ev.data)["error"]["code"] == -32600


def test_a_message_with_neither_method_nor_result_is_invalid() -> None:
    engine = Engine()
    out = sent_request(engine)
    ev = engine.receive(msg({"jsonrpc": "2.0", "id": out.id}))
    assert not isinstance(ev, ResponseReceived)
    rid, code, _ = reply_error(ev)
    assert code == -32600
    assert rid is None or rid == out.id


def test_malformed_error_object_from_peer_still_resolves_the_request() -> None:
    engine = Engine()
    out = sent_request(engine)
    ev = engine.receive(msg({"jsonrpc": "2.0", "id": out.id, "error": "oops"}))
    assert isinstance(ev, ResponseReceived)
    assert ev.request is out
    assert isinstance(ev.error, McpError)
    assert isinstance(ev.error.code, int)
    assert out.id not in engine.outgoing


def test_engine_never_raises_on_garbage() -> None:
    engine = Engine()
    samples = [
        b"",
        b" ",
        b"{}",
        b'{"jsonrpc":"2.0"}',
        b'{"jsonrpc":"2.0","method":null}',
        b'{"result":1}',
        b"\x00" * 10,
        b"{" * 10_000,
    ]
    for line in samples:
        engine.receive(line)  # must not raise


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_engine_never_raises_on_arbitrary_bytes(line: bytes) -> None:
    engine = Engine()
    ev = engine.receive(line)
    if isinstance(ev, Reply):
        out = decode(ev.data)
        assert out["error"]["code"] in (-32700, -32600)


# --- the framer ----------------------------------------------------------------------------


def test_framer_splits_lines_and_buffers_partial_ones() -> None:
    framer = LineFramer(1024)
    assert framer.feed(b'{"a":1}\n{"b":2}\n{"c"') == [b'{"a":1}', b'{"b":2}']
    assert framer.feed(b":3") == []
    assert framer.feed(b"}\n") == [b'{"c":3}']
    assert framer.feed(b"\n\n   \n") == []  # blank lines are skipped
    assert framer.feed(b"x") == []
    assert framer.eof() == [b"x"]  # a final unterminated line still counts
    assert framer.eof() == []


def test_framer_byte_by_byte() -> None:
    framer = LineFramer(1024)
    got: list[bytes] = []
    for b in b"one\ntwo\n\nthree\n":
        got += framer.feed(bytes([b]))
    assert got == [b"one", b"two", b"three"]
    assert framer.eof() == []


def test_framer_line_at_the_limit_is_kept_and_one_byte_over_is_not() -> None:
    framer = LineFramer(10)
    assert framer.feed(b"a" * 10 + b"\n") == [b"a" * 10]
    assert framer.feed(b"b" * 11 + b"\n") == [OVERSIZED]
    assert framer.feed(b"c" * 5) == []
    assert framer.feed(b"c" * 5 + b"\n") == [b"c" * 10]
    assert framer.feed(b"d" * 6) == []
    assert framer.feed(b"d" * 5 + b"\nok\n") == [OVERSIZED, b"ok"]


def test_framer_discards_an_oversized_line_as_it_streams_and_reports_it_once() -> None:
    framer = LineFramer(100)
    assert framer.feed(b"x" * 60) == []
    assert framer.feed(b"x" * 60) == [OVERSIZED]
    # the rest of that line is thrown away without buffering or more reports
    for _ in range(100):
        assert framer.feed(b"y" * 1000) == []
    assert framer._size <= 100
    assert sum(len(p) for p in framer._parts) <= 100
    assert framer.feed(b"zzz\n" + b'{"next":1}\n') == [b'{"next":1}']
    assert framer.eof() == []


def test_framer_oversized_then_eof_yields_nothing_more() -> None:
    framer = LineFramer(8)
    assert framer.feed(b"123456789") == [OVERSIZED]
    assert framer.feed(b"more") == []
    assert framer.eof() == []


def test_framer_several_oversized_lines_in_one_chunk() -> None:
    framer = LineFramer(4)
    assert framer.feed(b"abcdef\nok\nghijkl\nfine\n") == [OVERSIZED, b"ok", OVERSIZED, b"fine"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.binary(min_size=1, max_size=40).filter(lambda b: b"\n" not in b and b.strip() != b""), max_size=20),
    st.lists(st.integers(min_value=1, max_value=50), min_size=1, max_size=40),
)
def test_framer_reassembles_messages_however_the_stream_is_split(messages: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(m + b"\n" for m in messages)
    framer = LineFramer(64)
    got: list[bytes] = []
    pos = 0
    i = 0
    while pos < len(stream):
        step = cuts[i % len(cuts)]
        got += framer.feed(stream[pos : pos + step])
        pos += step
        i += 1
    got += framer.eof()
    assert got == messages


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.binary(min_size=1, max_size=30).filter(lambda b: b"\n" not in b and b.strip() != b""), max_size=15),
    st.lists(st.integers(min_value=1, max_value=50), min_size=1, max_size=40),
)
def test_framer_reports_each_oversized_line_once_however_split(messages: list[bytes], cuts: list[int]) -> None:
    limit = 10
    stream = b"".join(m + b"\n" for m in messages)
    framer = LineFramer(limit)
    got: list[bytes] = []
    pos = 0
    i = 0
    while pos < len(stream):
        step = cuts[i % len(cuts)]
        got += framer.feed(stream[pos : pos + step])
        pos += step
        i += 1
    got += framer.eof()
    assert got == [m if len(m) <= limit else OVERSIZED for m in messages]
