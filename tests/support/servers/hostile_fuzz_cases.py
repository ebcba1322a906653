"""Hostile inputs for tests/hostile/test_fuzz.py and benchmarks/soak/soak.py, and the oracle that
judges the answers. Pure functions: no I/O, no clock.

A :class:`Case` is made from one seeded ``random.Random`` (``case_rng(seed, label, n)``),
so case ``n`` of a run can be rebuilt alone. It starts from a valid request or
notification of one era for ``tests/support/servers/hostile_fuzz_server.py``, then mutates it:
bytes flipped, inserted, deleted or truncated; the id, method or params given another
type; huge numbers; nesting up to 2,000 levels; invalid UTF-8; a wrong ``jsonrpc``;
arrays (batches); duplicate ids; unknown methods; long strings (within the size limits);
or random bytes. For HTTP it also spoils headers: ``MCP-Protocol-Version``, ``Mcp-Method``,
``Mcp-Name``, ``Mcp-Param-*``, ``Accept``, ``Content-Type``, ``Mcp-Session-Id`` and
``Last-Event-ID``, on POST, GET and DELETE.

:func:`expected` says, for one message as the server will parse it, how many responses
must come back and with which ids (the JSON-RPC 2.0 rules the engine follows).
"""

from __future__ import annotations

import base64
import json
import random
import re
from collections.abc import Callable
from typing import Any

import msgspec

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ACCEPT = "application/json, text/event-stream"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META: dict[str, Any] = {META_VERSION: MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
#: The largest string a case carries: well inside stdio's 16 MiB and HTTP's 4 MiB limits.
BIG = 1024 * 1024
#: A placeholder :func:`_encode` writes as a 5,000-digit number (past Python's int-from-text limit).
HUGE_LITERAL = "@@huge-literal@@"
Json = dict[str, Any]


class Case:
    """One hostile exchange. ``bodies`` are sent in order (stdio: one line each; HTTP:
    one request each, all with ``headers``); ``http_method`` is POST, GET or DELETE.
    (A plain class: this module is also loaded by path, outside ``sys.modules``.)"""

    def __init__(self, number: int, era: str, bodies: list[bytes], what: list[str]) -> None:
        self.number = number
        self.era = era
        self.bodies = bodies
        self.what = what
        self.headers: list[tuple[bytes, bytes]] = []
        self.http_method = "POST"

    def describe(self, limit: int = 300) -> str:
        """The case, readable: long runs of one token shown as ``token*count``, long bodies cut."""
        shown = [_abridge(body, limit) for body in self.bodies]
        return (
            f"case {self.number} [{self.era}] {'+'.join(self.what)}: {self.http_method} bodies={shown!r} headers={self.headers!r}"
        )


def _abridge(data: bytes, limit: int) -> bytes:
    data = re.sub(rb'(\[|\{"a":|\]|\}|9|x|p)\1{15,}', lambda m: m.group(1) + b"*%d" % (len(m.group(0)) // len(m.group(1))), data)
    return data if len(data) <= limit else data[:limit] + b"...(%d bytes)" % len(data)


def case_rng(seed: int, label: str, number: int) -> random.Random:
    """The generator of case ``number`` of run ``label`` (deterministic across runs)."""
    return random.Random(f"{seed}:{label}:{number}")


# --- valid starting points ------------------------------------------------------------------


def _templates(era: str, rid: int | str) -> list[Json]:
    calls: list[tuple[str, Json]] = [
        ("tools/list", {}),
        ("tools/call", {"name": "echo", "arguments": {"text": "héllo wörld"}}),
        ("tools/call", {"name": "add", "arguments": {"a": 2, "b": 40}}),
        ("tools/call", {"name": "region", "arguments": {"region": "eu-west", "query": "q"}}),
        ("tools/call", {"name": "pause", "arguments": {"ms": 1}, "_meta": {"progressToken": f"p{rid}"}}),
        ("resources/list", {}),
        ("resources/templates/list", {}),
        ("resources/read", {"uri": "data://hello"}),
        ("resources/read", {"uri": "item://thing"}),
        ("prompts/list", {}),
        ("prompts/get", {"name": "greet", "arguments": {"name": "Ada"}}),
        ("completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "name", "value": "A"}}),
    ]
    if era == "modern":
        calls.append(("server/discover", {}))
    else:
        calls += [("ping", {}), ("logging/setLevel", {"level": "debug"}), ("initialize", initialize_params())]
    out: list[Json] = []
    for method, params in calls:
        params = json.loads(json.dumps(params))
        if era == "modern":
            params["_meta"] = {**META, **params.get("_meta", {})}
        out.append({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    return out


def _notifications(era: str) -> list[Json]:
    notes: list[Json] = [
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "nothing-in-flight", "reason": "x"}},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "t", "progress": 1}},
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
    ]
    if era == "legacy":
        notes.append({"jsonrpc": "2.0", "method": "notifications/initialized"})
    else:
        for note in notes:
            note.setdefault("params", {})["_meta"] = dict(META)
    return notes


def initialize_params(version: str = LEGACY) -> Json:
    return {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "0"}}


def valid_request(era: str, rid: int | str, method: str, params: Json) -> Json:
    """A well-formed request of ``era`` (modern: ``_meta`` added)."""
    params = dict(params)
    if era == "modern":
        params["_meta"] = dict(META)
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def encode_header_value(value: str) -> str:
    """A mirrored header's value: plain visible ASCII, else the ``=?base64?…?=`` form."""
    plain = value == value.strip() and all(0x20 <= ord(c) <= 0x7E for c in value) and not value.startswith("=?base64?")
    return value if plain else "=?base64?" + base64.b64encode(value.encode("utf-8", "surrogatepass")).decode() + "?="


def headers_for(message: Any, era: str, session_id: str | None) -> list[tuple[bytes, bytes]]:
    """The headers a correct client sends with ``message`` (mirrored from its body)."""
    headers = [(b"accept", ACCEPT.encode()), (b"content-type", b"application/json")]
    if era == "legacy":
        headers.append((b"mcp-protocol-version", LEGACY.encode()))
        if session_id is not None:
            headers.append((b"mcp-session-id", session_id.encode()))
        return headers
    headers.append((b"mcp-protocol-version", MODERN.encode()))
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return headers
    method = message["method"]
    headers.append((b"mcp-method", encode_header_value(method).encode()))
    params = message.get("params")
    if method in NAMED and isinstance(params, dict) and isinstance(params.get(NAMED[method]), str):
        headers.append((b"mcp-name", encode_header_value(params[NAMED[method]]).encode()))
    args = params.get("arguments") if isinstance(params, dict) else None
    if method == "tools/call" and isinstance(args, dict) and isinstance(args.get("region"), str):
        headers.append((b"mcp-param-region", encode_header_value(args["region"]).encode()))
    return headers


# --- values and structural mutations ------------------------------------------------------


def _nested(rng: random.Random) -> str:
    """A placeholder :func:`_encode` writes as arrays or objects nested up to 2,000 deep."""
    return f"@@nest-{rng.choice([64, 500, 1000, 1500, 2000])}-{rng.choice(['list', 'object', 'mixed'])}@@"


def _nesting(match: re.Match[bytes]) -> bytes:
    depth, kind = int(match.group(1)), match.group(2)
    opens = [b"[" if kind == b"list" or (kind == b"mixed" and i % 2) else b'{"a":' for i in range(depth)]
    closes = [b"]" if o == b"[" else b"}" for o in reversed(opens)]
    return b"".join(opens) + b'"leaf"' + b"".join(closes)


def _huge_number(rng: random.Random) -> Any:
    return rng.choice(
        [
            10**400,
            -(10**400),
            2**63,
            -(2**63) - 1,
            2**64,
            10**30,
            1.5e308,
            1e-320,
            float("inf"),
            -float("inf"),
            int("9" * 4000),
            HUGE_LITERAL,
        ]
    )


def _weird_value(rng: random.Random) -> Any:
    kinds: list[Callable[[], Any]] = [
        lambda: None,
        lambda: True,
        lambda: rng.randint(-(2**31), 2**31),
        lambda: 1.5,
        lambda: _huge_number(rng),
        lambda: _huge_number(rng),
        lambda: _huge_number(rng),
        lambda: "",
        lambda: "x" * rng.choice([1, 300, 8 * 1024]),
        lambda: "\u0000\ud800\uffff" if rng.random() < 0.5 else "é" * 100,
        lambda: [],
        lambda: [1, "a", None],
        lambda: {},
        lambda: {"k": {"k": [1]}},
        lambda: _nested(rng),
    ]
    return rng.choice(kinds)()


def _mutate_structure(msg: Json, rng: random.Random) -> str:
    """Change ``msg`` in place one way; return the name of the change."""
    params = msg.get("params") if isinstance(msg.get("params"), dict) else None
    choice = rng.randrange(12)
    if choice in (0, 9):
        msg["id"] = _weird_value(rng)
        return "id-type"
    if choice == 1:
        msg["method"] = rng.choice([_weird_value(rng), "no/such/method", "tools/" + "x" * 8192, "", "notifications/x", "rpc.x"])
        return "method"
    if choice == 2:
        msg["params"] = _weird_value(rng)
        return "params-type"
    if choice == 3:
        msg["jsonrpc"] = rng.choice(["1.0", "2.00", 2.0, 2, None, "", "2.0 "])
        return "jsonrpc"
    if choice == 4:
        msg.pop(rng.choice(["jsonrpc", "id", "method", "params"]), None)
        return "drop-field"
    if choice == 5 and params is not None:
        target = params.get("arguments") if isinstance(params.get("arguments"), dict) else params
        key = rng.choice([*target.keys(), "extra"]) if target else "extra"
        target[key] = _weird_value(rng)
        return f"param-{key}"
    if choice == 6 and params is not None and msg.get("method") == "tools/call":
        params["name"] = rng.choice(["no_such_tool", "t" * 8192, "é" * 4000, "echo\u0000", " echo"])
        return "tool-name"
    if choice == 7 and params is not None and isinstance(params.get("_meta"), dict):
        meta = params["_meta"]
        key = rng.choice([META_VERSION, "io.modelcontextprotocol/clientCapabilities", "progressToken", "x"])
        meta[key] = rng.choice([_weird_value(rng), "1999-01-01", LEGACY, "2099-01-01", MODERN + "x"])
        return f"meta-{key.rsplit('/', 1)[-1]}"
    if choice == 8 and params is not None:
        params["_meta"] = rng.choice([_weird_value(rng), {META_VERSION: LEGACY}, {}, dict(META)])
        return "meta-replaced"
    if choice == 10 and params is not None:
        params["text" if "text" not in params else "pad"] = "p" * rng.choice([1024, 8 * 1024, 64 * 1024, 64 * 1024, BIG])
        return "big-string"
    if choice == 11:
        msg["params"] = _nested(rng)
        return "nested-params"
    msg["extra"] = _weird_value(rng)
    return "extra-field"


# --- byte mutations -------------------------------------------------------------------------

_INVALID_UTF8 = [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"\xe2\x82", b"\x80"]


def _mutate_bytes(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    if not data:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 32))), "random-bytes"
    pos = rng.randrange(len(data))
    choice = rng.randrange(7)
    if choice == 0:
        return data[:pos] + bytes([data[pos] ^ (1 << rng.randrange(8))]) + data[pos + 1 :], "flip"
    if choice == 1:
        extra = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
        return data[:pos] + extra + data[pos:], "insert"
    if choice == 2:
        return data[:pos] + data[pos + rng.randrange(1, 16) :], "delete"
    if choice == 3:
        return data[:pos], "truncate"
    if choice == 4:
        return data[:pos] + rng.choice(_INVALID_UTF8) + data[pos:], "invalid-utf8"
    if choice == 5:
        end = min(len(data), pos + rng.randrange(1, 64))
        return data[:end] + data[pos:end] + data[end:], "duplicate-slice"
    key = rng.choice([b'"id"', b'"method"', b'"jsonrpc"', b'"params"'])
    at = data.find(b"{")
    return data[: at + 1] + key + b":0," + data[at + 1 :] if at >= 0 else data, "duplicate-key"


def _encode(value: Any, rng: random.Random) -> bytes:
    """JSON bytes of ``value`` (huge ints written out; non-finite floats as 1e999)."""
    try:
        text = json.dumps(value, ensure_ascii=rng.random() < 0.3, allow_nan=False)
    except ValueError:
        text = json.dumps(value, default=str).replace("Infinity", "1e999").replace("NaN", "1e999")
    raw = text.encode("utf-8", "surrogatepass").replace(b'"' + HUGE_LITERAL.encode() + b'"', b"9" * 5000)
    return re.sub(rb'"@@nest-(\d+)-(\w+)@@"', _nesting, raw)


def _deep_document(rng: random.Random) -> bytes:
    depth = rng.choice([1000, 1500, 2000, 5000])
    if rng.random() < 0.5:
        return b"[" * depth + b"]" * depth
    inner = b'{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"a":' + b"[" * depth + b"]" * depth + b"}}"
    return inner


# --- header mutations -----------------------------------------------------------------------

_BAD_VERSIONS = [
    b"1999-01-01",
    b"garbage",
    b"",
    b"2099-12-31",
    MODERN.encode() + b"x",
    LEGACY.encode(),
    b"\xe9t\xe9",
    b"9" * 5000,
]
_BAD_IDS = [b"", b"x", b"no-such-session", b"\xff\xfe", b"a" * 8192, b"=?base64?AAAA?=", b"../../etc/passwd"]
_BAD_EVENT_IDS = [b"", b"0", b"-1", b"x/1", b"\xb2", b"\xd9\xa3", b"1" * 5000, b"9" * 300, b"s/99999999999999999999", b"a/b/c"]


def _mutate_headers(headers: list[tuple[bytes, bytes]], rng: random.Random) -> str:
    name, values = rng.choice(
        [
            (b"mcp-protocol-version", _BAD_VERSIONS),
            (b"mcp-method", [b"tools/list", b"tools/call", b"", b"no/such", b"\xe9", b"x" * 8192]),
            (b"mcp-name", [b"echo", b"other", b"", b"=?base64?!!!?=", b"=?base64?" + b"QQ" * 4000 + b"?=", b"\xff"]),
            (b"mcp-param-region", [b"us-east", b"", b"=?base64?ZXUtd2VzdA==?=", b"=?base64?=?=", b"\x80"]),
            (b"accept", [b"text/html", b"application/json", b"text/event-stream", b"", b"*/*", b"application/*;q=0"]),
            (b"content-type", [b"text/plain", b"application/json; charset=utf-16", b"", b"application/jsonx", b"multipart/x"]),
            (b"mcp-session-id", _BAD_IDS),
            (b"last-event-id", _BAD_EVENT_IDS),
        ]
    )
    headers[:] = [(k, v) for k, v in headers if k != name]
    if rng.random() < 0.85:
        headers.append((name, rng.choice(values)))
    return f"header-{name.decode()}"


# --- the case generator ---------------------------------------------------------------------


def make_case(rng: random.Random, number: int, era: str, session_id: str | None = None, *, http: bool = False) -> Case:
    """Case ``number`` of ``era``, drawn from ``rng``; ``session_id`` is the legacy
    session an HTTP case starts from (None over stdio)."""
    roll = rng.random()
    rid: int | str = number if roll < 0.6 else f"r-{number}" if roll < 0.9 else rng.choice([1, 2, 3])  # some ids recur
    pool = _templates(era, rid) if rng.random() < 0.85 else _notifications(era)
    message: Json = rng.choice(pool)
    what: list[str] = [str(message.get("method"))]
    value: Any = message
    raw: bytes | None = None
    roll = rng.random()
    if roll < 0.04:
        raw, what = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 200))), ["random-bytes"]
    elif roll < 0.07:
        raw, what = _deep_document(rng), ["deep-document"]
    elif roll < 0.12:
        value = [message] * rng.choice([0, 1, 2, 3]) + ([rng.choice(pool)] if rng.random() < 0.5 else [])
        what.append("batch")
    elif roll < 0.15:
        what.append("valid")
    else:
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            what.append(_mutate_structure(message, rng))
    if raw is None:
        raw = _encode(value, rng)
        if rng.random() < 0.3:
            for _ in range(rng.choice([1, 1, 2])):
                raw, how = _mutate_bytes(raw, rng)
                what.append(how)
    bodies = [raw, raw] if rng.random() < 0.05 else [raw]
    if len(bodies) == 2:
        what.append("duplicate-id")
    case = Case(number, era, bodies, what)
    if http:
        case.headers = headers_for(message, era, session_id)
        if rng.random() < 0.3:
            case.what.append(_mutate_headers(case.headers, rng))
        roll = rng.random()
        if roll < 0.06:
            case.http_method = "GET"
            case.headers.append((b"last-event-id", rng.choice(_BAD_EVENT_IDS)))
        elif roll < 0.09:
            case.http_method = "DELETE"
            case.headers = [(k, v) for k, v in case.headers if k != b"mcp-session-id"]
            case.headers.append((b"mcp-session-id", rng.choice(_BAD_IDS)))
    return case


# --- the oracle ------------------------------------------------------------------------------


class Expectation:
    """What one message must get: ``exact`` responses (a request with a valid id: one with
    that id; unparseable input: one with id null, JSON-RPC 2.0), each with an id in
    ``rids``; or, when ``exact`` is 0, at most one response with an id in ``allowed``
    (invalid messages the server may answer or drop)."""

    def __init__(self, exact: int, rids: tuple[Any, ...] = (None,), allowed: tuple[Any, ...] = ()) -> None:
        self.exact = exact
        self.rids = rids
        self.allowed = allowed

    @property
    def rid(self) -> Any:
        """The request's own id (None for input whose id cannot be read)."""
        return self.rids[-1]


#: A message as JSON-RPC sees it: ``params`` stays raw (its contents are the method's
#: business; a number too large for Python inside it does not hide the id). Built with
#: ``defstruct`` because this module is loaded by path, where string annotations cannot resolve.
_Envelope = msgspec.defstruct(
    "_Envelope",
    [
        ("jsonrpc", Any, msgspec.UNSET),
        ("id", Any, msgspec.UNSET),
        ("method", Any, msgspec.UNSET),
        ("params", msgspec.Raw, msgspec.Raw()),
    ],
)
_decode_envelope = msgspec.json.Decoder(_Envelope).decode
_ID = re.compile(rb'"id"\s*:\s*(-?[0-9]{1,18}|"[^"\\]{0,256}")')


def is_request_id(rid: Any) -> bool:
    return type(rid) is int or type(rid) is str


def expected(line: bytes, *, http: bool = False) -> Expectation:
    """What the server must answer to one message (MCP has no batches: an array is an
    invalid request). Nesting too deep to decode is a parse error, answered with id null
    or, if the server could recover it, the request's id. A blank line is skipped over
    stdio; a blank HTTP body is a parse error."""
    if not line.strip():
        return Expectation(1 if http else 0)
    try:
        line.decode("utf-8")
        env: Any = _decode_envelope(line)
    except RecursionError:
        found = _ID.search(line)
        return Expectation(1, (None, msgspec.json.decode(found.group(1))) if found else (None,))
    except (msgspec.DecodeError, UnicodeDecodeError):  # ValidationError included: not an object, an id out of range
        return Expectation(1)
    rid = env.id
    params = bytes(env.params)
    if env.jsonrpc == "2.0" and isinstance(env.method, str) and is_request_id(rid) and params[:1] in (b"", b"{", b"n"):
        return Expectation(1, (rid,))
    return Expectation(0, allowed=(rid, None) if is_request_id(rid) else (None,))
