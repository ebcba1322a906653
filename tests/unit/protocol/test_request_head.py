"""The request head (``protocol/head.py``): what every layer reads of a request's params,
decoded once, and, for params that one decode cannot read, exactly what each layer read
on its own before the head existed.

The oracle below is those layers' own decoders, as they were (the HTTP app's version
lookup, the header check's members, the scope check's names, the dispatcher's ``_meta``
and retry answers, the tracing span's names): for any params, valid or hostile, the head
must say what each of them said, error messages included.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings, strategies as st

from mcpkit.protocol import meta as meta_keys
from mcpkit.protocol.errors import INVALID_PARAMS, McpError, flatten_text
from mcpkit.protocol.events import RequestReceived
from mcpkit.protocol.head import RequestHead, read_head
from mcpkit.protocol.params import CallToolParams, ReadResourceParams
from mcpkit.protocol.wire import Implementation
from mcpkit.server import dispatch
from support.eras import MODERN

PV = meta_keys.PROTOCOL_VERSION
CAPS = meta_keys.CLIENT_CAPABILITIES
INFO = meta_keys.CLIENT_INFO
LEVEL = meta_keys.LOG_LEVEL
META = {PV: MODERN, CAPS: {"elicitation": {}}, INFO: {"name": "c", "version": "1"}, LEVEL: "info"}


def head_of(params: bytes | str) -> RequestHead:
    raw = params.encode() if isinstance(params, str) else params
    return read_head(msgspec.Raw(raw))


def error_of(call: Any) -> McpError | None:
    """The McpError ``call()`` raises (None if it returns)."""
    try:
        call()
    except McpError as exc:
        return exc
    return None


# --- the oracle: each layer's own decode, as it was before the head -------------------------------


class _MetaVersion(msgspec.Struct):
    version: Any = msgspec.field(default=None, name=PV)


class _ParamsVersion(msgspec.Struct):
    meta: _MetaVersion | None = msgspec.field(default=None, name="_meta")


class _Params(msgspec.Struct):
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class _Checked(msgspec.Struct):
    name: Any = None
    uri: Any = None
    arguments: Any = None
    taskId: Any = None


class _Named(msgspec.Struct):
    name: Any = None
    uri: Any = None


class _MrtrParams(msgspec.Struct, kw_only=True, rename="camel"):
    input_responses: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET
    request_state: str | msgspec.UnsetType = msgspec.UNSET


class _Described(msgspec.Struct):
    name: Any = None
    uri: Any = None
    meta: Any = msgspec.field(default=None, name="_meta")


class _OldCallTool(msgspec.Struct, kw_only=True, rename="camel"):
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")
    name: str
    arguments: dict[str, Any] | None = None


class _OldReadResource(msgspec.Struct, kw_only=True, rename="camel"):
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")
    uri: str


def old_version(raw: bytes) -> Any:
    """transports/http/server/modern.py's meta_protocol_version."""
    try:
        meta = msgspec.json.decode(raw, type=_ParamsVersion).meta if raw else None
    except (msgspec.MsgspecError, RecursionError, ValueError):
        return None
    return meta.version if meta is not None else None


def old_meta(raw: bytes) -> dict[str, Any] | McpError:
    """server/dispatch.py's _meta_of."""
    if not raw:
        return {}
    try:
        meta = msgspec.json.decode(raw, type=_Params).meta
    except msgspec.DecodeError as exc:
        text = str(exc)
        if text.startswith("Expected") and text.endswith("- at `$._meta`"):
            return McpError(INVALID_PARAMS, "Invalid params: _meta must be an object")
        return McpError(INVALID_PARAMS, f"Invalid params: {flatten_text(text, 512)}")
    except RecursionError:
        return McpError(INVALID_PARAMS, "Invalid params: nested too deeply")
    return meta if isinstance(meta, dict) else {}


def old_target(raw: bytes) -> _Checked | McpError:
    """protocol/headers.py's _decode_params."""
    try:
        return msgspec.json.decode(raw, type=_Checked) if raw else _Checked()
    except msgspec.DecodeError as exc:
        return McpError(INVALID_PARAMS, f"Invalid params: {flatten_text(str(exc), 256)}", status=400)
    except RecursionError:
        return McpError(INVALID_PARAMS, "Invalid params: nested too deeply", status=400)


def old_named(raw: bytes) -> tuple[Any, Any] | None:
    """server/server.py's scopes_for (None: no scopes at all)."""
    try:
        named = msgspec.json.decode(raw, type=_Named) if raw else _Named()
    except (msgspec.DecodeError, RecursionError):
        return None
    return named.name, named.uri


def old_answers(raw: bytes) -> tuple[Any, Any] | McpError:
    """server/dispatch.py's _decode(raw, MrtrParams), as ReplayAsker read it."""
    try:
        mrtr = msgspec.json.decode(raw if raw else b"{}", type=_MrtrParams)
    except msgspec.DecodeError as exc:
        return McpError(INVALID_PARAMS, f"Invalid params: {flatten_text(str(exc), 512)}")
    except RecursionError:
        return McpError(INVALID_PARAMS, "Invalid params: nested too deeply")
    responses, state = mrtr.input_responses, mrtr.request_state
    return (None if responses is msgspec.UNSET else responses), (None if state is msgspec.UNSET else state)


def old_described(raw: bytes) -> tuple[Any, Any, dict[str, Any]]:
    """runtime/tracing.py's _server_span."""
    try:
        described = msgspec.json.decode(raw, type=_Described) if raw else _Described()
    except (msgspec.DecodeError, RecursionError):
        described = _Described()
    return described.name, described.uri, described.meta if isinstance(described.meta, dict) else {}


def old_typed(raw: bytes, tp: type[Any]) -> Any:
    """server/dispatch.py's _decode(raw, CallToolParams or ReadResourceParams), as they were."""
    try:
        return msgspec.json.decode(raw if raw else b"{}", type=tp)
    except msgspec.DecodeError as exc:
        return McpError(INVALID_PARAMS, f"Invalid params: {flatten_text(str(exc), 512)}")
    except RecursionError:
        return McpError(INVALID_PARAMS, "Invalid params: nested too deeply")


def old_client(meta: dict[str, Any]) -> tuple[Any, Any, Implementation | None, Any]:
    """server/dispatch.py's _resolve and _resolve_modern, from the decoded _meta."""
    info = meta.get(INFO)
    try:
        client = msgspec.convert(info, Implementation) if isinstance(info, dict) else None
    except (msgspec.ValidationError, RecursionError):
        client = None
    return meta.get(PV), meta.get(CAPS), client, meta.get(LEVEL)


def same_error(a: McpError | None, b: McpError | None) -> bool:
    if a is None or b is None:
        return a is b
    return (a.code, a.message, a.data, a.status) == (b.code, b.message, b.data, b.status)


def assert_as_before(raw: bytes, read_order: tuple[str, ...] = ("version", "meta", "target", "answers", "typed")) -> None:
    """Every part of the head is what its layer read before, whichever part is read
    first (the head of unreadable params decodes each part when it is first read)."""
    head = read_head(msgspec.Raw(raw))
    for part in read_order:
        if part == "version":
            assert head.version == old_version(raw)
        elif part == "meta":
            meta = old_meta(raw)
            if isinstance(meta, McpError):
                assert same_error(error_of(head.read_meta), meta), (error_of(head.read_meta), meta)
            else:
                got = head.read_meta()
                assert (got if got is not None else {}) == meta
                version, caps, info, level = old_client(meta)
                assert head.version == version
                assert head.client_capabilities == caps
                assert head.client_info == info
                assert head.log_level == level
        elif part == "target":
            target = old_target(raw)
            if isinstance(target, McpError):
                assert same_error(error_of(head.target), target), (error_of(head.target), target)
            else:
                assert head.target() == (target.name, target.uri, target.taskId, target.arguments)
        elif part == "answers":
            answers = old_answers(raw)
            if isinstance(answers, McpError):
                assert same_error(error_of(head.answers), answers), (error_of(head.answers), answers)
            else:
                assert head.answers() == answers
        elif part == "typed" and not isinstance(old_meta(raw), McpError):  # the dispatcher decodes them after _meta
            for tp, old_tp in ((CallToolParams, _OldCallTool), (ReadResourceParams, _OldReadResource)):
                before = old_typed(raw, old_tp)
                try:
                    now: Any = dispatch._typed(head, msgspec.Raw(raw), tp)
                except McpError as exc:
                    now = exc
                if isinstance(before, McpError):
                    assert same_error(now if isinstance(now, McpError) else None, before), (now, before)
                else:
                    assert not isinstance(now, McpError), (now, before)
                    fields = [f for f in tp.__struct_fields__]
                    assert [getattr(now, f) for f in fields] == [getattr(before, f) for f in fields]
    assert head.named() == old_named(raw)
    assert head.described() == old_described(raw)


# --- hostile params, generated ------------------------------------------------------------------------

_SPECIAL = ["1e999", "-1e999", "9" * 5000, "[" * 300 + "]" * 300, "null", "{}", "[]", '"x"', "7", "true"]
_scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False)
_json_values = st.recursive(
    _scalars | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
_value_text = st.one_of(_json_values.map(json.dumps), st.sampled_from(_SPECIAL))


@st.composite
def _meta_text(draw: st.DrawFn) -> str:
    """A ``_meta`` member's value: usually an object with some of the reserved keys."""
    if draw(st.integers(0, 4)) == 0:
        return draw(_value_text)
    keys = draw(st.lists(st.sampled_from([PV, CAPS, INFO, LEVEL, "progressToken", "traceparent", "x"]), max_size=5))
    members = []
    for key in keys:
        if key == PV:
            value = draw(st.sampled_from(['"2026-07-28"', '"2025-11-25"', "7", "null", "1e999"]))
        elif key == INFO:
            value = draw(st.sampled_from(['{"name":"c","version":"1"}', '{"name":7}', '"c"', '{"name":"c","icons":[1e999]}']))
        else:
            value = draw(_value_text)
        members.append(f"{json.dumps(key)}:{value}")
    return "{" + ",".join(members) + "}"


@st.composite
def params_texts(draw: st.DrawFn) -> bytes:
    """The text of a params object; members may repeat, with values of any type."""
    names = ["_meta", "name", "uri", "taskId", "arguments", "inputResponses", "requestState", "x"]
    keys = draw(st.lists(st.sampled_from(names), max_size=7))
    members = [f"{json.dumps(k)}:{draw(_meta_text()) if k == '_meta' else draw(_value_text)}" for k in keys]
    return ("{" + ",".join(members) + "}").encode()


@settings(max_examples=600, deadline=None)
@given(params_texts(), st.permutations(["version", "meta", "target", "answers", "typed"]))
def test_every_part_is_what_its_layer_read_before(raw: bytes, order: list[str]) -> None:
    assert_as_before(raw, tuple(order))


# --- each part, by hand ---------------------------------------------------------------------------------


def test_a_modern_request_read_once() -> None:
    params = {"name": "echo", "arguments": {"text": "t"}, "_meta": META, "inputResponses": {"k": {}}, "requestState": "s"}
    head = head_of(json.dumps(params))
    assert head.complete  # the one pass read everything
    assert head.version == MODERN
    assert head.read_meta() == META
    assert head.client_capabilities == {"elicitation": {}}
    assert head.client_info == Implementation(name="c", version="1")
    assert head.log_level == "info"
    assert head.target() == ("echo", None, None, {"text": "t"})
    assert head.answers() == ({"k": {}}, "s")
    assert head.named() == ("echo", None)
    assert head.described() == ("echo", None, META)
    typed = dispatch._typed(head, msgspec.Raw(b"{}"), CallToolParams)  # from the head: the raw bytes are not read
    assert (typed.name, typed.arguments) == ("echo", {"text": "t"})


def test_absent_params_and_a_legacy_request() -> None:
    for head in (head_of(b""), head_of('{"name":"echo","arguments":{}}')):
        assert head.version is None
        assert head.read_meta() is None
        assert head.client_capabilities is None
        assert head.client_info is None
        assert head.log_level is None
        assert head.answers() == (None, None)
        assert head.described()[2] == {}


def test_other_targets() -> None:
    head = head_of('{"uri":"mem://a","_meta":{}}')
    assert head.target() == (None, "mem://a", None, None)
    assert dispatch._typed(head, msgspec.Raw(b"{}"), ReadResourceParams).uri == "mem://a"
    assert head_of('{"taskId":"t-1"}').target() == (None, None, "t-1", None)
    head = head_of('{"name":7,"uri":[1],"taskId":{"a":1},"arguments":"x"}')
    assert not head.complete  # the typed members are not: each layer reads them as it did
    assert head.target() == (7, [1], {"a": 1}, "x")  # any JSON for the header check, which judges them
    assert head.named() == (7, [1])


@pytest.mark.parametrize("meta", ["7", '"x"', "[1]", "true", "[1e999]"])
def test_meta_that_is_not_an_object(meta: str) -> None:
    head = head_of(f'{{"name":"echo","_meta":{meta}}}')
    assert head.version is None  # not a modern request: routed as legacy
    assert same_error(error_of(head.read_meta), McpError(INVALID_PARAMS, "Invalid params: _meta must be an object"))
    assert head.target() == ("echo", None, None, None)


@pytest.mark.parametrize("number", ["1e999", "-1e999", "9" * 5000])
def test_a_number_out_of_range_in_meta_keeps_the_version(number: str) -> None:
    head = head_of(f'{{"name":"echo","_meta":{{"{PV}":"2026-07-28","x":{number}}}}}')
    assert head.version == MODERN  # still a modern request, refused by the dispatcher
    error = error_of(head.read_meta)
    assert error is not None
    assert error.code == INVALID_PARAMS
    assert "out of range" in error.message
    assert "- at `$._meta" in error.message
    assert error.status is None
    assert head.target() == ("echo", None, None, None)  # the header check does not read _meta


@pytest.mark.parametrize("number", ["1e999", "9" * 5000])
def test_a_number_out_of_range_in_arguments(number: str) -> None:
    head = head_of(f'{{"name":"echo","arguments":{{"n":{number}}},"_meta":{json.dumps(META)}}}')
    assert head.read_meta() == META  # the dispatcher reads _meta as usual, then refuses the arguments itself
    error = error_of(head.target)
    assert error is not None
    assert (error.code, error.status) == (INVALID_PARAMS, 400)
    assert error.message.startswith("Invalid params: ")
    assert "out of range" in error.message
    assert head.named() == ("echo", None)  # the scope check still finds the tool
    assert head.described() == ("echo", None, META)  # a span does not read the arguments
    typed = error_of(lambda: dispatch._typed(head, msgspec.Raw(b"{}"), CallToolParams))
    assert typed is not None  # decoded from the bytes: here, none
    head = head_of(f'{{"name":"echo","_meta":{{"x":{number}}}}}')
    assert head.described() == (None, None, {})  # nor names anything it cannot decode


def test_a_number_out_of_range_elsewhere_is_skipped() -> None:
    head = head_of(f'{{"name":"echo","x":[1e999],"_meta":{json.dumps(META)}}}')
    assert head.complete
    assert head.version == MODERN
    assert head.read_meta() == META
    assert head.target() == ("echo", None, None, None)


@pytest.mark.parametrize(
    ("member", "expected"),
    [
        ('"inputResponses":"x"', "Invalid params: Expected `object`, got `str` - at `$.inputResponses`"),
        ('"inputResponses":null', "Invalid params: Expected `object`, got `null` - at `$.inputResponses`"),
        ('"requestState":7', "Invalid params: Expected `str`, got `int` - at `$.requestState`"),
        ('"inputResponses":{"k":1e999}', "Invalid params: Number out of range - at `$.inputResponses[...]`"),
    ],
)
def test_answers_of_the_wrong_type(member: str, expected: str) -> None:
    head = head_of(f'{{"name":"echo",{member},"_meta":{json.dumps(META)}}}')
    error = error_of(head.answers)
    assert error is not None
    assert error.message == expected
    assert head.read_meta() == META
    assert head.version == MODERN


def test_a_repeated_member_is_read_as_each_layer_read_it() -> None:
    """A typed layer refused a bad first occurrence; an untyped one kept the last."""
    raw = f'{{"_meta":7,"_meta":{json.dumps(META)},"requestState":1,"requestState":"s","name":1,"name":"echo"}}'
    head = head_of(raw)
    assert head.version is None  # the HTTP app's lookup failed on the first: not routed as modern
    error = error_of(head.read_meta)
    assert error is not None
    assert error.message == "Invalid params: _meta must be an object"
    assert error_of(head.answers) is not None
    assert head.target()[0] == "echo"
    raw = f'{{"name":null,"name":"echo","_meta":{json.dumps(META)}}}'
    typed = error_of(lambda: dispatch._typed(read_head(msgspec.Raw(raw.encode())), msgspec.Raw(raw.encode()), CallToolParams))
    assert typed is not None
    assert typed.message == "Invalid params: Expected `str`, got `null` - at `$.name`"
    assert_as_before(raw.encode())


def test_client_info_that_is_not_an_implementation() -> None:
    for info in ('{"name":7}', '"c"', '{"version":"1"}'):
        head = head_of(f'{{"_meta":{{"{PV}":"2026-07-28","{INFO}":{info}}}}}')
        assert head.read_meta() is not None
        assert head.client_info is None


def test_nesting_too_deep_for_the_decoder() -> None:
    deep = "[" * 20000 + "]" * 20000
    raw = f'{{"name":"echo","arguments":{{"a":{deep}}},"_meta":{{"{PV}":"2026-07-28","x":{deep}}}}}'
    head = head_of(raw)
    assert head.version is None  # skipping recurses too: the HTTP app could not see the version either
    meta_error, target_error = error_of(head.read_meta), error_of(head.target)
    assert meta_error is not None
    assert meta_error.message == "Invalid params: nested too deeply"
    assert target_error is not None
    assert target_error.message == "Invalid params: nested too deeply"
    assert target_error.status == 400
    assert_as_before(raw.encode())


def test_unreadable_params_are_decoded_part_by_part_only_when_asked() -> None:
    raw = f'{{"name":"echo","arguments":{{"n":1e999}},"_meta":{json.dumps(META)}}}'
    head = head_of(raw)
    assert not head.complete
    assert head.parts == {}  # type: ignore[attr-defined]  # nothing decoded yet
    assert head.version == MODERN
    assert set(head.parts) == {"version"}  # type: ignore[attr-defined]
    assert head.read_meta() == META
    assert head.client_info == Implementation(name="c", version="1")
    assert set(head.parts) == {"version", "meta"}  # type: ignore[attr-defined]


def test_the_event_keeps_its_head() -> None:
    ev = RequestReceived(3, "tools/list", msgspec.Raw(f'{{"_meta":{json.dumps(META)}}}'.encode()))
    assert ev.head is ev.head
    assert ev.head.read_meta() == META


def test_bytes_no_engine_checked_never_raise() -> None:
    for raw in (b"\xff\xfe", b'{"name":"\xff"}', b"not json", b"[1]"):
        head = head_of(raw)
        assert head.version is None
        head.named()
        head.described()
