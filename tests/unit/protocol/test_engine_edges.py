"""The JSON-RPC engine at the edges of its contract: raw bytes in, the exact reply (or
silence) out, as the peer sees it (docs/errors.md; src/mcpkit/protocol/engine.py).

tests/unit/protocol/test_engine.py covers the lifecycle; this file pins what mutation testing showed
untested: which malformed messages are answered and which are ignored, the exact code,
message and data of every error the engine builds or relays, the byte caps, and which
values count as numbers and ids.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

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


def msg(obj: Any) -> bytes:
    """One message as the peer would frame it (the engine gets it without the newline)."""
    return json.dumps(obj).encode()


def wire(ev: object) -> dict[str, Any]:
    """The error reply an event carries, as the peer decodes it."""
    assert isinstance(ev, Reply), f"expected a reply, got {ev!r}"
    out = json.loads(ev.data)
    assert isinstance(out, dict)
    return out


def sent(engine: Engine, *, progress: bool = False) -> Any:
    out = engine.start_request("tools/call", {"name": "x"}, deadline=10.0, progress=progress)
    engine.mark_sent(out)
    return out


# --- which malformed messages are answered, and how ---------------------------------------


@pytest.mark.parametrize(
    "obj",
    [
        {"jsonrpc": "1.0", "method": "notifications/message"},
        {"method": "notifications/message"},
        {"jsonrpc": 2, "method": "ping", "params": {}},
    ],
    ids=["jsonrpc-1.0", "jsonrpc-missing", "jsonrpc-number"],
)
def test_a_notification_with_a_wrong_jsonrpc_is_answered_with_id_null(obj: dict[str, Any]) -> None:
    # It names a method, so it is an invalid request; with no id to answer, the id is null.
    engine = Engine()
    assert wire(engine.receive(msg(obj))) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": 'Invalid Request: "jsonrpc" must be "2.0"'},
    }


@pytest.mark.parametrize(
    "obj",
    [{}, {"jsonrpc": "1.0"}, {"result": {}}, {"error": {"code": 1, "message": "x"}}, {"jsonrpc": None, "params": {}}],
    ids=["empty", "jsonrpc-1.0", "result-only", "error-only", "jsonrpc-null"],
)
def test_a_message_with_no_method_no_id_and_a_wrong_jsonrpc_is_ignored(obj: dict[str, Any]) -> None:
    # Nothing in it says JSON-RPC 2.0 and there is nothing to answer: a reply could only
    # start an error ping-pong with a peer that speaks something else.
    engine = Engine()
    assert engine.receive(msg(obj)) is None


def test_a_request_with_a_wrong_jsonrpc_is_answered_with_its_id() -> None:
    engine = Engine()
    out = wire(engine.receive(msg({"jsonrpc": "1.0", "id": 7})))
    assert out == {"jsonrpc": "2.0", "id": 7, "error": {"code": -32600, "message": 'Invalid Request: "jsonrpc" must be "2.0"'}}
    assert engine.incoming == {}


@pytest.mark.parametrize("obj", [{"jsonrpc": "2.0"}, {"jsonrpc": "2.0", "result": {}}, {"jsonrpc": "2.0", "params": {}}])
def test_a_message_with_neither_method_nor_id_gets_32600(obj: dict[str, Any]) -> None:
    engine = Engine()
    assert wire(engine.receive(msg(obj))) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": 'Invalid Request: missing "method"'},
    }


def test_a_response_with_neither_result_nor_error_gets_32600_with_id_null() -> None:
    # Not with its id: the peer would take an error response with that id for the answer
    # to a request of its own.
    engine = Engine()
    out = sent(engine)
    assert wire(engine.receive(msg({"jsonrpc": "2.0", "id": out.id}))) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": 'Invalid Request: a response needs "result" or "error"'},
    }


def test_a_duplicate_request_id_gets_its_own_message() -> None:
    engine = Engine()
    assert isinstance(engine.receive(msg({"jsonrpc": "2.0", "id": "a", "method": "ping"})), RequestReceived)
    assert wire(engine.receive(msg({"jsonrpc": "2.0", "id": "a", "method": "ping"}))) == {
        "jsonrpc": "2.0",
        "id": "a",
        "error": {"code": -32600, "message": "Invalid Request: id is already in use by a request in progress"},
    }


@pytest.mark.parametrize("has_id", [True, False])
def test_params_null_is_the_same_as_no_params(has_id: bool) -> None:
    engine = Engine()
    obj: dict[str, Any] = {"jsonrpc": "2.0", "method": "tools/list", "params": None}
    if has_id:
        obj["id"] = 1
    ev = engine.receive(msg(obj))
    assert isinstance(ev, RequestReceived if has_id else NotificationReceived)
    assert ev.method == "tools/list"
    assert bytes(ev.params) == b""  # raw JSON, empty when absent


def test_every_error_the_engine_builds_has_no_data_member() -> None:
    # A stray "data": null is a member the peer must then handle; the engine never sets one.
    engine = Engine()
    out = sent(engine)
    engine.receive(msg({"jsonrpc": "2.0", "id": 5, "method": "ping"}))
    lines = [
        b"not json",
        b"\xff",
        b"[]",
        b'{"jsonrpc": "2.0", "id": ' + b"[" * 5000 + b"]" * 5000 + b', "method": "ping"}',
        msg({"jsonrpc": "1.0", "id": 1, "method": "ping"}),
        msg({"jsonrpc": "2.0", "id": 1, "method": 5}),
        msg({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]}),
        msg({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}),
        msg({"jsonrpc": "2.0", "id": 5, "method": "ping"}),
        msg({"jsonrpc": "2.0"}),
        msg({"jsonrpc": "2.0", "id": out.id}),
    ]
    for line in lines:
        error = wire(engine.receive(line))["error"]
        assert set(error) == {"code", "message"}, (line[:40], error)
    answered = engine.respond_error(5, McpError(-32000, "failed"))
    assert answered is not None
    assert json.loads(answered)["error"] == {"code": -32000, "message": "failed"}


# --- parse errors ---------------------------------------------------------------------------


def test_a_parse_error_says_why_and_is_bounded_by_max_error_text() -> None:
    engine = Engine()
    out = wire(engine.receive(b"not json"))
    assert out["id"] is None
    assert out["error"]["code"] == -32700
    assert out["error"]["message"].startswith("Parse error: JSON is malformed")

    engine = Engine(max_error_text=16)
    message = wire(engine.receive(b"\xff not utf-8"))["error"]["message"]
    reason = message.removeprefix("Parse error: ")
    assert reason != message
    assert reason.endswith("…")
    assert len(reason.encode()) == 16
    assert reason.startswith("'utf-8' codec")


def test_json_nested_deeper_than_the_decoder_goes_is_a_parse_error() -> None:
    engine = Engine()
    nested = b"[" * 100_000 + b"]" * 100_000
    for line in [
        b'{"jsonrpc": "2.0", "method": "ping", "id": ' + nested + b"}",
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"a": ' + nested + b"}}",
    ]:
        assert wire(engine.receive(line)) == {
            "jsonrpc": "2.0",
            "id": None,  # the id cannot be read without decoding what holds it
            "error": {"code": -32700, "message": "Parse error: JSON nested too deeply"},
        }
    assert engine.incoming == {}


# --- errors from the peer -------------------------------------------------------------------


def test_an_error_message_from_the_peer_is_bounded_to_1024_bytes_by_default() -> None:
    engine = Engine()
    out = sent(engine)
    ev = engine.receive(msg({"jsonrpc": "2.0", "id": out.id, "error": {"code": -32000, "message": "m" * 5000}}))
    assert isinstance(ev, ResponseReceived)
    assert ev.error is not None
    assert len(ev.error.message.encode()) == 1024
    assert ev.error.message == "m" * 1021 + "…"


@pytest.mark.parametrize(
    "error",
    [
        "oops",
        {"code": "1", "message": "m"},
        {"code": 1.5, "message": "m"},
        {"code": True, "message": "m"},  # a boolean is no integer in JSON
        {"code": 1, "message": 2},
        {"message": "m"},
        {"code": 1},
        None,
    ],
    ids=["string", "code-string", "code-float", "code-bool", "message-number", "no-code", "no-message", "null"],
)
def test_a_malformed_error_object_becomes_32603_with_what_was_sent(error: Any) -> None:
    engine = Engine()
    out = sent(engine)
    ev = engine.receive(msg({"jsonrpc": "2.0", "id": out.id, "error": error}))
    assert isinstance(ev, ResponseReceived)
    assert ev.request is out
    assert ev.result is None
    err = ev.error
    assert isinstance(err, McpError)
    assert (err.code, err.message) == (-32603, "Malformed error response from peer")
    assert err.data == {"error": repr(error)}
    assert not err.local  # a peer's error, not one of ours
    assert engine.outgoing == {}


def test_a_malformed_error_object_is_shown_flattened_and_capped_at_256_bytes() -> None:
    engine = Engine(max_error_text=4096)
    out = sent(engine)
    error = {"code": "x", "message": "line\nbreak\x1b" + "z" * 1000}
    ev = engine.receive(msg({"jsonrpc": "2.0", "id": out.id, "error": error}))
    assert isinstance(ev, ResponseReceived)
    assert ev.error is not None
    text = ev.error.data["error"]
    assert len(text.encode()) == 256
    assert text.endswith("…")
    assert text.startswith("{'code': 'x', 'message': 'line\\nbreak\\x1b")  # repr escapes; nothing raw reaches the text
    assert "\n" not in text
    assert "\x1b" not in text


def test_a_malformed_error_object_too_deep_to_show_still_fails_the_request() -> None:
    # An error value nested just under the decoder's limit decodes, but showing it needs a
    # few more stack frames than decoding did: the engine says so instead of raising.
    shown: set[str] = set()
    engine = Engine()
    for depth in range(1, 100_000):
        out = sent(engine)
        ev = engine.receive(b'{"jsonrpc": "2.0", "id": %d, "error": ' % out.id + b"[" * depth + b"]" * depth + b"}")
        if isinstance(ev, Reply):  # too deep to decode at all: a parse error, the request waits on
            assert wire(ev)["error"]["code"] == -32700
            break
        assert isinstance(ev, ResponseReceived)
        assert ev.error is not None
        assert ev.error.code == -32603
        shown.add(ev.error.data["error"])
    assert "(nested too deeply to show)" in shown


# --- cancellation and progress from the peer ---------------------------------------------


def test_the_peer_cancelling_our_request_carries_its_reason_in_data() -> None:
    engine = Engine()
    out = sent(engine)
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": out.id, "reason": "user\nquit"}}
    ev = engine.receive(msg(note))
    assert isinstance(ev, ResponseReceived)
    assert ev.error is not None
    assert (ev.error.code, ev.error.message, ev.error.data) == (-32800, "Request cancelled", {"reason": "user quit"})


@pytest.mark.parametrize("reason", [None, "", 5])
def test_the_peer_cancelling_our_request_without_a_usable_reason_has_no_data(reason: Any) -> None:
    engine = Engine()
    out = sent(engine)
    params: dict[str, Any] = {"requestId": out.id}
    if reason is not None:
        params["reason"] = reason
    ev = engine.receive(msg({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}))
    assert isinstance(ev, ResponseReceived)
    assert ev.error is not None
    assert (ev.error.code, ev.error.data) == (-32800, None)


def test_a_cancellation_reason_is_bounded_by_max_error_text() -> None:
    engine = Engine(max_error_text=32)
    out = sent(engine)
    engine.receive(msg({"jsonrpc": "2.0", "id": 9, "method": "ping"}))
    for rid in (out.id, 9):
        note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid, "reason": "r" * 100}}
        ev = engine.receive(msg(note))
        reason = ev.error.data["reason"] if isinstance(ev, ResponseReceived) and ev.error else getattr(ev, "reason", None)
        assert reason == "r" * 29 + "…", ev


def test_progress_with_a_boolean_total_has_no_total() -> None:
    # JSON has no integer booleans: true is not a number of steps.
    engine = Engine()
    out = sent(engine, progress=True)
    for total, expected in [(True, None), (False, None), ("10", None), (10, 10), (2.5, 2.5), (0, 0)]:
        note = {"progressToken": out.id, "progress": 1, "total": total}
        ev = engine.receive(msg({"jsonrpc": "2.0", "method": "notifications/progress", "params": note}))
        assert isinstance(ev, ProgressReceived)
        assert ev.total == expected
        assert type(ev.total) is type(expected)


@pytest.mark.parametrize("progress", [True, False, "1", None])
def test_progress_that_is_not_a_number_is_ignored(progress: Any) -> None:
    engine = Engine()
    out = sent(engine, progress=True)
    note = {"progressToken": out.id, "progress": progress}
    assert engine.receive(msg({"jsonrpc": "2.0", "method": "notifications/progress", "params": note})) is None


@pytest.mark.parametrize("token", [True, 1.0], ids=["bool", "float"])
def test_a_progress_token_must_be_a_string_or_an_integer(token: Any) -> None:
    # true == 1 == 1.0 in Python: neither may reach request 1's progress.
    engine = Engine()
    out = sent(engine, progress=True)
    assert out.id == 1
    note = {"progressToken": token, "progress": 1}
    assert engine.receive(msg({"jsonrpc": "2.0", "method": "notifications/progress", "params": note})) is None
    note = {"progressToken": 1, "progress": 1}
    assert isinstance(
        engine.receive(msg({"jsonrpc": "2.0", "method": "notifications/progress", "params": note})), ProgressReceived
    )


def test_a_progress_message_is_flattened_and_bounded_by_max_error_text() -> None:
    engine = Engine(max_error_text=8)
    out = sent(engine, progress=True)
    note = {"progressToken": out.id, "progress": 1, "message": "a\u2028bcdefghij"}
    ev = engine.receive(msg({"jsonrpc": "2.0", "method": "notifications/progress", "params": note}))
    assert isinstance(ev, ProgressReceived)
    assert ev.message == "a bcd…"


# --- the inbound table: handles, ids carried by other means, abandoning ----------------------


def test_a_cancelled_inbound_request_hands_back_the_attached_handle() -> None:
    engine = Engine()
    engine.receive(msg({"jsonrpc": "2.0", "id": 1, "method": "tools/call"}))
    engine.receive(msg({"jsonrpc": "2.0", "id": 2, "method": "tools/call"}))
    engine.attach(1, "task-1")
    engine.attach(3, "task-3")  # not a request in progress: nothing is recorded
    assert 3 not in engine.incoming
    cancels = [
        engine.receive(msg({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}}))
        for rid in (1, 2)
    ]
    assert [(c.id, c.handle) for c in cancels if isinstance(c, CancelReceived)] == [(1, "task-1"), (2, None)]


def test_abandon_all_returns_every_handle_and_forgets_the_requests() -> None:
    engine = Engine()
    for rid in (1, 2):
        engine.receive(msg({"jsonrpc": "2.0", "id": rid, "method": "tools/call"}))
    engine.attach(2, "task-2")
    assert engine.abandon_all() == [None, "task-2"]
    assert engine.incoming == {}
    assert engine.respond(1, {}) is None


def test_track_registers_an_id_received_elsewhere_once() -> None:
    engine = Engine()
    assert engine.track("carried") is True
    assert engine.track("carried") is False
    assert engine.incoming == {"carried": None}
    assert wire(engine.receive(msg({"jsonrpc": "2.0", "id": "carried", "method": "ping"})))["error"]["code"] == -32600
    answer = engine.respond("carried", {})
    assert answer is not None
    assert json.loads(answer) == {"jsonrpc": "2.0", "id": "carried", "result": {}}


def test_abandon_forgets_one_inbound_request_without_an_answer() -> None:
    engine = Engine()
    for rid in (1, 2):
        engine.receive(msg({"jsonrpc": "2.0", "id": rid, "method": "tools/call"}))
    engine.abandon(1)
    engine.abandon(99)  # unknown: nothing happens
    assert list(engine.incoming) == [2]
    assert engine.respond(1, {}) is None
    assert engine.respond_error(1, McpError(-32000, "x")) is None


def test_an_error_whose_data_is_not_json_becomes_an_internal_error_for_the_same_id() -> None:
    engine = Engine()
    engine.receive(msg({"jsonrpc": "2.0", "id": "r", "method": "tools/call"}))
    data = engine.respond_error("r", McpError(-32000, "failed", data={"when": object()}))
    assert data is not None
    assert msgspec.json.decode(data) == {"jsonrpc": "2.0", "id": "r", "error": {"code": -32603, "message": "Internal error"}}
    assert engine.incoming == {}


# --- a request carried from one engine to another (the HTTP endpoint's sessions) -----------------


def test_an_adopted_request_is_in_progress_in_the_engine_that_adopts_it() -> None:
    parsed = Engine().receive(msg({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}))
    assert isinstance(parsed, RequestReceived)
    session = Engine()
    assert session.adopt(parsed) is parsed
    assert json.loads(session.respond(7, {"tools": []}) or b"null") == {"jsonrpc": "2.0", "id": 7, "result": {"tools": []}}


def test_adopting_an_id_in_progress_answers_what_receiving_it_answers() -> None:
    session = Engine()
    first = session.receive(msg({"jsonrpc": "2.0", "id": "a", "method": "tools/list"}))
    assert isinstance(first, RequestReceived)
    again = Engine().receive(msg({"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": {"name": "x"}}))
    assert isinstance(again, RequestReceived)
    refused = session.adopt(again)
    assert isinstance(refused, Reply)
    received = session.receive(msg({"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": {"name": "x"}}))
    assert isinstance(received, Reply)
    assert json.loads(refused.data) == json.loads(received.data)
    assert json.loads(refused.data)["error"]["code"] == -32600
    assert json.loads(session.respond("a", {}) or b"null")["id"] == "a"  # the first one is still the one in progress


# --- what an outgoing request keeps ---------------------------------------------------------------


def test_an_outgoing_request_keeps_the_params_it_was_built_from() -> None:
    engine = Engine()
    plain = engine.start_request("tools/call", {"name": "echo"}, deadline=1.0)
    assert plain.params == {"name": "echo"}
    assert plain.method == "tools/call"
    bare = engine.start_request("tools/list", None, deadline=1.0)
    assert bare.params is None
    assert "params" not in json.loads(bare.data)
    tracked = engine.start_request("tools/call", {"name": "slow"}, deadline=1.0, progress=True)
    assert tracked.params == {"name": "slow", "_meta": {"progressToken": tracked.id}}
    assert json.loads(tracked.data)["params"] == tracked.params
