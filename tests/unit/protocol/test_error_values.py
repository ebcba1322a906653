"""The error values users raise, catch and print (src/mcpkit/protocol/errors.py, docs/errors.md).

What a user of the SDK sees of an error: which codes are accepted, the HTTP status a
modern-era response gets, how it prints, what goes on the wire, the local errors a client
raises, and how client input is echoed back in an error (``echo``, ``quoted``).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from mcpkit import ConnectionClosed, HttpError, McpError, RequestTimeout, ToolError, flatten_text
from mcpkit.protocol.errors import MAX_ECHO, echo, quoted

# --- McpError ---------------------------------------------------------------------------------


@pytest.mark.parametrize("code", [True, False, 1.0, "-32000", None], ids=["true", "false", "float", "string", "none"])
def test_a_code_that_is_not_an_integer_is_refused(code: Any) -> None:
    # true is an int to Python, but JSON has no integer booleans: a client would see `true`.
    with pytest.raises(TypeError, match=f"McpError code must be an int, not {type(code).__name__}$"):
        McpError(code, "m")


def test_an_error_keeps_what_it_was_given() -> None:
    err = McpError(-32000, "failed", {"k": [1]}, status=503)
    assert (err.code, err.message, err.data, err.status) == (-32000, "failed", {"k": [1]}, 503)
    assert err.local is False
    assert err.args == (-32000, "failed")
    plain = McpError(-32000, "failed")
    assert (plain.data, plain.status) == (None, None)


@pytest.mark.parametrize(
    ("code", "status", "http"),
    [(-32601, None, 404), (-32603, None, 500), (-32602, None, 400), (-32020, None, 400), (-32000, None, 400), (-32603, 400, 400)],
)
def test_the_http_status_of_an_error(code: int, status: int | None, http: int) -> None:
    assert McpError(code, "m", status=status).http_status == http


def test_an_error_prints_its_code_and_message() -> None:
    assert str(McpError(-32602, "Unknown tool: x")) == "[-32602] Unknown tool: x"
    assert repr(McpError(-32602, "bad")) == "McpError(-32602, 'bad')"
    assert repr(McpError(-32602, "bad", {"a": 1})) == "McpError(-32602, 'bad', data={'a': 1})"
    assert repr(McpError(-32602, "bad", 0)) == "McpError(-32602, 'bad', data=0)"  # falsy data is still data
    assert repr(RequestTimeout(3)) == "RequestTimeout(-32001, 'Request timed out', data={'id': 3})"


def test_the_wire_form_has_data_only_when_there_is_some() -> None:
    assert McpError(-32000, "m").to_wire() == {"code": -32000, "message": "m"}
    assert McpError(-32000, "m", {"a": 1}).to_wire() == {"code": -32000, "message": "m", "data": {"a": 1}}
    assert McpError(-32000, "m", False).to_wire() == {"code": -32000, "message": "m", "data": False}
    assert json.dumps(McpError(-32000, "m", "").to_wire()) == '{"code": -32000, "message": "m", "data": ""}'


# --- the local errors a client raises ------------------------------------------------------------


@pytest.mark.parametrize("rid", [7, "r-1", None])
def test_request_timeout(rid: Any) -> None:
    err = RequestTimeout(rid)
    assert isinstance(err, McpError)
    assert (err.code, err.message, err.data) == (-32001, "Request timed out", {"id": rid})
    assert err.local is True
    assert str(err) == "[-32001] Request timed out"
    assert RequestTimeout().data == {"id": None}


def test_connection_closed() -> None:
    err = ConnectionClosed()
    assert isinstance(err, McpError)
    assert (err.code, err.message, err.data) == (-32000, "Connection closed", None)
    assert err.local is True
    custom = ConnectionClosed("server exited with status 1")
    assert (custom.code, custom.message) == (-32000, "server exited with status 1")
    assert str(custom) == "[-32000] server exited with status 1"


def test_an_error_from_the_peer_is_not_local() -> None:
    assert McpError(-32001, "Request timed out").local is False


def test_local_marks_an_error_raised_here() -> None:
    err = McpError(-32603, "Invalid result from server: no", {"k": 1}, local=True)
    assert err.local is True
    assert (err.code, err.message, err.data) == (-32603, "Invalid result from server: no", {"k": 1})
    assert McpError.local is False  # the class is not changed by one instance
    # the errors that are always local stay so, whatever their constructor passes on
    assert RequestTimeout().local is True
    assert ConnectionClosed().local is True


# --- exceptions handler code raises ---------------------------------------------------------------


def test_tool_error_keeps_its_text() -> None:
    err = ToolError("disk full")
    assert err.message == "disk full"
    assert str(err) == "disk full"
    assert err.args == ("disk full",)


def test_http_error() -> None:
    err = HttpError(404, "no such item")
    assert (err.status_code, err.message, str(err)) == (404, "no such item", "no such item")
    assert err.args == (404, "no such item")
    bare = HttpError(503)
    assert (bare.status_code, bare.message, str(bare)) == (503, "", "HTTP 503")


# --- echoing client input in an error -------------------------------------------------------------


def test_echo_keeps_json_scalars_as_they_are() -> None:
    for value in [None, True, False, 0, -1, 1.5, -(2**63), 2**64 - 1, "plain"]:
        out = echo(value)
        assert out == value
        assert type(out) is type(value)


@pytest.mark.parametrize("value", [2**64, -(2**63) - 1, 10**100])
def test_echo_shows_an_integer_beyond_64_bits_as_text(value: int) -> None:
    assert echo(value) == flatten_text(repr(value), MAX_ECHO)


def test_echo_shows_a_container_as_its_repr() -> None:
    assert echo([1, "a"]) == "[1, 'a']"
    assert echo({"k": "v\n"}) == "{'k': 'v\\n'}"
    assert echo(list(range(100)), 16) == "[0, 1, 2, 3, …"
    assert echo(2**64, 8) == "18446…"


def test_echo_flattens_and_bounds_a_string() -> None:
    assert MAX_ECHO == 256
    assert echo("a\nb\x00c") == "a b c"
    long = echo("x" * 10_000)
    assert long == "x" * 253 + "…"
    assert echo("x" * 256) == "x" * 256  # exactly the limit: not cut
    assert echo("é" * 10, 8) == "éé…"  # 2-byte characters, cut on a character boundary
    assert echo("é" * 10, 7) == "éé…"
    assert echo("x" * 100, 16) == "x" * 13 + "…"


def test_echo_cuts_a_string_as_flattening_all_of_it_would() -> None:
    # echo cuts a long string to limit + 1 characters before flattening it, only to save
    # work: the characters flattening makes shorter (C1 controls, U+2028) or longer (a lone
    # surrogate) change nothing of what is kept.
    for limit in (4, 5, 8, 16):
        for piece in ("x", "é", "\U0001f600", "\x85", "\u2028", "\ud800", "\n"):
            for n in range(limit - 3, limit + 6):
                for tail in ("", "y" * 20, piece * 20):
                    text = piece * n + tail
                    assert echo(text, limit) == flatten_text(text, limit), (text, limit)


def test_quoted_is_a_flat_bounded_repr() -> None:
    assert quoted("it's") == '"it\'s"'
    assert quoted("a\nb") == "'a\\nb'"  # the repr escapes the newline
    assert quoted(["\u2028", "\ud800"]) == "['\\u2028', '\\ud800']"  # escaped, never raw
    assert quoted("x" * 1000) == "'" + "x" * 252 + "…"
    assert quoted("x" * 1000, 16) == "'" + "x" * 12 + "…"
    assert quoted(b"\x00") == "b'\\x00'"


def test_quoted_picks_its_quotes_from_what_it_shows() -> None:
    # A long string is cut before it is quoted, just past the limit: a quote character
    # further on does not change how the part that is shown is quoted.
    assert quoted("a" * 15 + "'", 16) == '"' + "a" * 12 + "…"
    assert quoted("a" * 16 + "'", 16) == '"' + "a" * 12 + "…"
    assert quoted("a" * 17 + "'", 16) == "'" + "a" * 12 + "…"


def test_quoted_never_raises_on_a_value_it_cannot_show() -> None:
    nested: Any = []
    for _ in range(sys.getrecursionlimit() * 2):
        nested = [nested]
    assert quoted(nested) == "<list>"
    huge = 10 ** (sys.get_int_max_str_digits() + 1)
    assert quoted(huge) == "<int>"
    assert echo(huge) == "<int>"


def test_the_smallest_limits() -> None:
    assert echo("abcdef", 4) == "a…"
    assert quoted("abcdef", 4) == "'…"
    with pytest.raises(ValueError, match="limit must be at least 4 bytes"):
        echo("abcdef", 3)
