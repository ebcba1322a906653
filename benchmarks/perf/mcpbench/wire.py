"""What the load generator sends, and how it judges each answer.

Every request carries a fresh id, and an echo carries a text made from that id, so an
answer that belongs to another request is caught as wrong. A judge returns ``None`` for
a correct answer and the reason otherwise; an answer that does not even have the
expected shape is wrong too, never a crash of the harness.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
CLIENT_INFO = {"name": "mcpbench", "version": "1.0"}

#: What a modern request adds to its params: the version, capabilities and client.
MODERN_META = (
    b',"_meta":'
    + json.dumps(
        {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
        },
        separators=(",", ":"),
    ).encode()
)

INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'

#: The ``_meta`` of a modern request whose tool asks the client (it declares elicitation).
ASK_META = (
    b',"_meta":'
    + json.dumps(
        {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
            "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
        },
        separators=(",", ":"),
    ).encode()
)


def initialize(rid: int, capabilities: dict[str, Any] | None = None) -> bytes:
    params = {"protocolVersion": LEGACY, "capabilities": capabilities or {}, "clientInfo": CLIENT_INFO}
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": params}, separators=(",", ":")).encode()


def answer_server_request(msg: dict[str, Any]) -> bytes:
    """Our reply to a request from the server: ``ping`` gets ``{}``; ``elicitation/create``
    (legacy era, see :class:`Elicit`) is accepted with the name ``n<N>`` for a message that
    ends in ``t<N>`` (``n?`` otherwise, which the judge then finds wrong); anything else -32601."""
    method = msg.get("method")
    if method == "ping":
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg["id"], "result": {}}
    elif method == "elicitation/create":
        params = msg.get("params")
        message = params.get("message") if isinstance(params, dict) else None
        tail = message.rsplit(" ", 1)[-1] if isinstance(message, str) else ""
        name = "n" + tail[1:] if tail.startswith("t") and tail[1:].isdigit() else "n?"
        reply = {"jsonrpc": "2.0", "id": msg["id"], "result": {"action": "accept", "content": {"name": name}}}
    else:
        reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "not offered by mcpbench"}}
    return json.dumps(reply).encode()


def _why_not(msg: dict[str, Any]) -> str:
    error = msg.get("error")
    if isinstance(error, dict):
        return f"JSON-RPC error {error.get('code')}: {str(error.get('message'))[:120]}"
    return f"no result: {str(msg)[:160]}"


def _text(msg: dict[str, Any]) -> str | None:
    """The text of a successful tool result's first content block, else None."""
    result = msg.get("result")
    if not isinstance(result, dict) or result.get("isError"):
        return None
    content = result.get("content")
    if not isinstance(content, list) or not content or not isinstance(content[0], dict):
        return None
    text = content[0].get("text")
    return text if isinstance(text, str) else None


@dataclass
class Op:
    """One operation in progress: a listing may take several pages, a question two requests."""

    cursor: str | None = None  # set by the judge when another request must be sent (a page, a retry)
    seen: int = 0  # tools listed so far
    first: int = 0  # the id of the operation's first request (a question's)


class Request:
    """One kind of operation: its JSON-RPC method, the tool it names (for the mirrored
    ``Mcp-Name`` header of modern HTTP requests), its body, and its judge."""

    method = "tools/call"
    tool: str | None = None
    #: what the legacy ``initialize`` declares (the elicitation workload declares elicitation)
    capabilities: dict[str, Any] = {}  # noqa: RUF012 - read only
    #: payload bytes one operation moves, for MB/s (0: not a throughput-of-bytes workload)
    payload = 0

    def body(self, rid: int, meta: bytes, cursor: str | None = None) -> bytes:
        raise NotImplementedError

    def judge(self, rid: int, msg: dict[str, Any], op: Op) -> str | None:
        raise NotImplementedError


class Echo(Request):
    """``tools/call echo {"text": "t<id>"}``: the answer must carry that text."""

    tool = "echo"

    def body(self, rid: int, meta: bytes, cursor: str | None = None) -> bytes:
        return b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"t%d"}%s}}' % (
            rid,
            rid,
            meta,
        )

    def judge(self, rid: int, msg: dict[str, Any], op: Op) -> str | None:
        text = _text(msg)
        if text is None:
            return _why_not(msg) if "result" not in msg else f"not a text result: {str(msg)[:160]}"
        return None if text == f"t{rid}" else f"echoed {text[:40]!r}, sent 't{rid}'"


class Fail(Request):
    """``tools/call fail``: the tool raises; the answer must say so (``isError: true``,
    or a JSON-RPC error for a library that answers that way)."""

    tool = "fail"

    def body(self, rid: int, meta: bytes, cursor: str | None = None) -> bytes:
        return b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fail","arguments":{}%s}}' % (rid, meta)

    def judge(self, rid: int, msg: dict[str, Any], op: Op) -> str | None:
        result = msg.get("result")
        if "error" in msg or (isinstance(result, dict) and result.get("isError") is True):
            return None
        return f"the failure was not reported: {str(msg)[:160]}"


class ListTools(Request):
    """``tools/list``, following ``nextCursor``: one listing is one operation, and it must
    list at least ``expect`` tools, ``echo`` among them."""

    method = "tools/list"

    def __init__(self, expect: int) -> None:
        self.expect = expect

    def body(self, rid: int, meta: bytes, cursor: str | None = None) -> bytes:
        params = b'"cursor":%s' % json.dumps(cursor).encode() if cursor else b""
        if meta:
            params = params + meta if params else meta[1:]
        return b'{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{%s}}' % (rid, params)

    def judge(self, rid: int, msg: dict[str, Any], op: Op) -> str | None:
        result = msg.get("result")
        tools = result.get("tools") if isinstance(result, dict) else None
        if not isinstance(tools, list):
            return _why_not(msg)
        if op.seen == 0 and not any(isinstance(t, dict) and t.get("name") == "echo" for t in tools):
            return "echo is not on the first page"
        op.seen += len(tools)
        cursor = result.get("nextCursor") if isinstance(result, dict) else None
        if isinstance(cursor, str) and cursor:
            op.cursor = cursor
            return None
        return None if op.seen >= self.expect else f"listed {op.seen} tools, expected {self.expect}"


class Blob(Request):
    """``tools/call blob {"size": N}``: the answer's text must be exactly N times ``x``."""

    tool = "blob"

    def __init__(self, size: int) -> None:
        self.payload = size
        self._expected = "x" * size

    def body(self, rid: int, meta: bytes, cursor: str | None = None) -> bytes:
        return b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"blob","arguments":{"size":%d}%s}}' % (
            rid,
            self.payload,
            meta,
        )

    def judge(self, rid: int, msg: dict[str, Any], op: Op) -> str | None:
        text = _text(msg)
        if text is None:
            return _why_not(msg) if "result" not in msg else f"not a text result: {str(msg)[:160]}"
        return None if text == self._expected else f"a text of {len(text)} characters, expected {self.payload} x's"


class Ask(Request):
    """``tools/call ask {"text": "t<id>"}`` in the modern era, with one input round: the
    tool asks one question, so the first answer must be ``input_required`` with the
    question ``who`` and a ``requestState``; the retry carries the answer ``n<id>`` and the
    state, and its answer must be ``"t<id> n<id>"``. Two requests make one operation."""

    tool = "ask"

    def body(self, rid: int, meta: bytes, cursor: str | None = None) -> bytes:
        if cursor is None:
            return b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"ask","arguments":{"text":"t%d"}%s}}' % (
                rid,
                rid,
                ASK_META,
            )
        first, state = json.loads(cursor)
        answers = b',"inputResponses":{"who":{"action":"accept","content":{"name":"n%d"}}},"requestState":%s' % (
            first,
            json.dumps(state).encode(),
        )
        return b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"ask","arguments":{"text":"t%d"}%s%s}}' % (
            rid,
            first,
            ASK_META,
            answers,
        )

    def judge(self, rid: int, msg: dict[str, Any], op: Op) -> str | None:
        if not op.first:  # the question
            result = msg.get("result")
            if not isinstance(result, dict) or result.get("resultType") != "input_required":
                return _why_not(msg) if not isinstance(result, dict) else f"not input_required: {str(msg)[:160]}"
            state, questions = result.get("requestState"), result.get("inputRequests")
            if not isinstance(questions, dict) or "who" not in questions or not isinstance(state, str):
                return f"no question 'who' with a requestState: {str(msg)[:160]}"
            op.first = rid
            op.cursor = json.dumps([rid, state])
            return None
        text = _text(msg)
        if text is None:
            return _why_not(msg) if "result" not in msg else f"not a text result: {str(msg)[:160]}"
        expected = f"t{op.first} n{op.first}"
        return None if text == expected else f"answered {text[:40]!r}, expected {expected!r}"


class Elicit(Request):
    """``tools/call ask {"text": "t<id>"}`` in the legacy era (2025-11-25), one elicitation
    round inside the call: the tool asks ``"Who? t<id>"`` with ``elicitation/create`` on
    the same connection, the load generator (:func:`answer_server_request`) accepts with
    ``{"name": "n<id>"}``, and the call's answer must be ``"t<id> n<id>"``: a reply routed
    to the wrong call, or lost, shows. One operation is the call with its round trip."""

    tool = "ask"
    capabilities = {"elicitation": {}}  # noqa: RUF012 - read only

    def body(self, rid: int, meta: bytes, cursor: str | None = None) -> bytes:
        return b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"ask","arguments":{"text":"t%d"}%s}}' % (
            rid,
            rid,
            meta,
        )

    def judge(self, rid: int, msg: dict[str, Any], op: Op) -> str | None:
        text = _text(msg)
        if text is None:
            return _why_not(msg) if "result" not in msg else f"not a text result: {str(msg)[:160]}"
        return None if text == f"t{rid} n{rid}" else f"answered {text[:40]!r}, expected 't{rid} n{rid}'"
