"""The head of a received request: what the layers that serve it read of its params,
decoded once (:func:`read_head`; :attr:`.events.RequestReceived.head` keeps it).

A request's params stay raw JSON until someone needs them, and several layers need a
part: the HTTP app reads the protocol version in ``_meta`` (to route the request to its
era), the target ``name``, ``uri`` or ``taskId`` and the ``arguments`` (to check the
mirrored headers) and the names again (to check scopes); the dispatcher reads ``_meta``
(the version, the client's capabilities, info and log level; ``ctx.meta``) and a modern
retry's answers (``inputResponses``, ``requestState``); tracing reads the names and the
trace context in ``_meta``. :class:`RequestHead` is all of that from one pass over the
bytes; members nobody reads are skipped, not decoded. The method's own params
(``CallToolParams`` and the others) are decoded once more, by the dispatcher, as their
type says: a typed decode checks each occurrence of a member, which the head's untyped
members cannot stand in for.

Malformed params never raise here, and what each layer answers for them is part of the
contract (docs/errors.md): a number out of range inside ``_meta`` is the dispatcher's
-32602 naming it, while the HTTP app still routes the request by the version beside it;
one in ``arguments`` is the header check's 400; a member nobody reads is skipped. So when
the one pass fails (rare: valid JSON that cannot be represented, a ``_meta`` that is not
an object, answers of the wrong type), the head falls back, part by part and only when a
layer asks for that part, to decoding what that layer itself decoded before the head
existed, and each layer gives the answer it always gave. Each part's error is an
:class:`~.errors.McpError` the head holds (``meta_error``, ``target_error``,
``answers_error``) for the one layer that raises it.

Pure data and functions: no I/O, nothing else of mcpkit but the protocol.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec
from msgspec import UNSET, UnsetType, field

from .errors import INVALID_PARAMS, McpError, flatten_text
from .meta import CLIENT_CAPABILITIES, CLIENT_INFO, LOG_LEVEL, PROTOCOL_VERSION
from .wire import Implementation

__all__ = ["RequestHead", "read_head"]


class _Members(msgspec.Struct):
    """The members of params the head reads, in one pass. Typed where a layer's own
    decode was typed (``_meta`` an object; the answers an object and a string), so that
    any occurrence of the wrong type sends the request to the part-by-part decodes."""

    meta: dict[str, Any] | None = field(default=None, name="_meta")
    name: Any = None
    uri: Any = None
    task_id: Any = field(default=None, name="taskId")
    arguments: Any = None
    input_responses: dict[str, Any] | UnsetType = field(default=UNSET, name="inputResponses")
    request_state: str | UnsetType = field(default=UNSET, name="requestState")


_decode_members: Final = msgspec.json.Decoder(_Members).decode
_NOTHING: Final = _Members()
#: What a hostile but well-formed message's params can make a decoder raise: JSON that
#: cannot be represented (``ValidationError``, a ``DecodeError``) or nests deeper than the
#: decoder recurses; ``ValueError`` (invalid UTF-8) only for params not checked by an engine.
_UNREADABLE: Final = (msgspec.MsgspecError, RecursionError, ValueError)


class RequestHead:
    """One request's id, method and raw ``params``, and what its params say, decoded once.

    - ``version``: the protocol version ``_meta`` names (any JSON value; None when it
      names none, or ``_meta`` is not an object: then the request is not modern);
    - ``meta``: the ``_meta`` object (None when absent), with ``client_capabilities``,
      ``client_info`` (an :class:`~.wire.Implementation`, None unless it is one) and
      ``log_level`` read from it; ``meta_error``: the -32602 the dispatcher answers when
      ``_meta`` is not an object or holds what cannot be decoded (then ``meta`` is None);
    - ``name``, ``uri``, ``task_id``, ``arguments``: the target and arguments, any JSON
      value, as the mirrored-header check reads them; ``target_error``: the -32602 (HTTP
      400) it answers when they cannot be decoded;
    - ``input_responses`` (an object, or None when absent) and ``request_state`` (a
      string, or None): a modern retry's answers; ``answers_error``: the -32602 when
      they have the wrong type or cannot be decoded.

    Reading an attribute never raises. Built by :func:`read_head`; never by hand.
    """

    __slots__ = (
        "answers_error",
        "arguments",
        "client_capabilities",
        "client_info",
        "id",
        "input_responses",
        "log_level",
        "meta",
        "meta_error",
        "method",
        "name",
        "params",
        "request_state",
        "target_error",
        "task_id",
        "uri",
        "version",
    )

    id: int | str
    method: str
    params: msgspec.Raw
    version: Any
    meta: dict[str, Any] | None
    meta_error: McpError | None
    client_capabilities: Any
    client_info: Implementation | None
    log_level: Any
    name: Any
    uri: Any
    task_id: Any
    arguments: Any
    target_error: McpError | None
    input_responses: dict[str, Any] | None
    request_state: str | None
    answers_error: McpError | None

    def __init__(self, rid: int | str, method: str, params: msgspec.Raw, members: _Members) -> None:
        self.id = rid
        self.method = method
        self.params = params
        meta = members.meta
        self.meta = meta
        self.meta_error = None
        if meta is None:
            self.version = self.client_capabilities = self.client_info = self.log_level = None
        else:
            _read_meta(self, meta)
        self.name = members.name
        self.uri = members.uri
        self.task_id = members.task_id
        self.arguments = members.arguments
        self.target_error = None
        responses, state = members.input_responses, members.request_state
        self.input_responses = responses if type(responses) is dict else None  # else absent (UNSET)
        self.request_state = state if type(state) is str else None
        self.answers_error = None

    def named(self) -> tuple[Any, Any] | None:
        """The ``name`` and ``uri`` a scope check reads (any JSON values), or None when
        they cannot be decoded (then the request needs no scopes of its own: the
        dispatcher answers its params)."""
        return self.name, self.uri

    def described(self) -> tuple[Any, Any, dict[str, Any]]:
        """What a span names (``name``, ``uri``, any JSON values) and the ``_meta`` the
        trace context is read from (empty when absent or unreadable); None names when
        the params cannot be decoded."""
        return self.name, self.uri, self.meta if self.meta is not None else {}

    def __repr__(self) -> str:
        return f"<RequestHead {self.method!r} id={self.id!r}>"


def _read_meta(head: RequestHead, meta: dict[str, Any]) -> None:
    """Set what ``head`` reads of its ``_meta`` object."""
    head.version = meta.get(PROTOCOL_VERSION)
    head.client_capabilities = meta.get(CLIENT_CAPABILITIES)
    head.log_level = meta.get(LOG_LEVEL)
    info = meta.get(CLIENT_INFO)
    try:
        head.client_info = msgspec.convert(info, Implementation) if isinstance(info, dict) else None
    except (msgspec.ValidationError, RecursionError):
        head.client_info = None


def read_head(rid: int | str, method: str, params: msgspec.Raw) -> RequestHead:
    """The head of request ``rid`` (``method``, raw ``params``: empty when absent), from
    one decode of ``params``. Never raises: params it cannot decode give a head that
    decodes each part when it is first read, as the layer reading it always did."""
    if not params:
        return RequestHead(rid, method, params, _NOTHING)
    try:
        members = _decode_members(params)
    except _UNREADABLE:
        return _Salvaged(rid, method, params)
    return RequestHead(rid, method, params, members)


# --- params the one pass could not decode ---------------------------------------------------------
#
# Each part is decoded as the layer that reads it decoded it before the head existed, and
# only when it is first read: a layer that refuses the request stops the others from
# decoding anything more of it.


class _MetaVersion(msgspec.Struct):
    version: Any = field(default=None, name=PROTOCOL_VERSION)


class _ParamsVersion(msgspec.Struct):
    """Only ``params._meta``'s protocol version: the other members are skipped, so a
    number out of range elsewhere in ``_meta`` does not hide the version (the dispatcher
    then answers that number with -32602)."""

    meta: _MetaVersion | None = field(default=None, name="_meta")


class _MetaOnly(msgspec.Struct):
    meta: dict[str, Any] | None = field(default=None, name="_meta")


class _Target(msgspec.Struct):
    """The params the header check reads; any other member is skipped, not decoded."""

    name: Any = None
    uri: Any = None
    arguments: Any = None
    taskId: Any = None  # the wire's name


class _Named(msgspec.Struct):
    name: Any = None
    uri: Any = None


class _Answers(msgspec.Struct, rename="camel"):
    input_responses: dict[str, Any] | UnsetType = UNSET
    request_state: str | UnsetType = UNSET


class _Described(msgspec.Struct):
    name: Any = None
    uri: Any = None
    meta: Any = field(default=None, name="_meta")


_decode_version: Final = msgspec.json.Decoder(_ParamsVersion).decode
_decode_meta: Final = msgspec.json.Decoder(_MetaOnly).decode
_decode_target: Final = msgspec.json.Decoder(_Target).decode
_decode_named: Final = msgspec.json.Decoder(_Named).decode
_decode_answers: Final = msgspec.json.Decoder(_Answers).decode
_decode_described: Final = msgspec.json.Decoder(_Described).decode


def _invalid(exc: BaseException, limit: int, status: int | None = None) -> McpError:
    """The -32602 for params a decoder refused with ``exc`` (its reason flattened, at
    most ``limit`` bytes)."""
    if isinstance(exc, RecursionError):
        return McpError(INVALID_PARAMS, "Invalid params: nested too deeply", status=status)
    return McpError(INVALID_PARAMS, f"Invalid params: {flatten_text(str(exc), limit)}", status=status)


class _Salvaged(RequestHead):
    """The head of params the one pass could not decode: each group of attributes is
    decoded on first use (``__getattr__`` runs only for a slot not set yet)."""

    __slots__ = ()

    def __init__(self, rid: int | str, method: str, params: msgspec.Raw) -> None:
        self.id = rid
        self.method = method
        self.params = params

    def __getattr__(self, name: str) -> Any:
        fill = _GROUPS.get(name)
        if fill is None:
            raise AttributeError(name)
        fill(self)
        return object.__getattribute__(self, name)

    def _fill_version(self) -> None:
        """As the HTTP app routed: the version alone; never an error."""
        try:
            found = _decode_version(self.params).meta
        except _UNREADABLE:
            found = None
        self.version = found.version if found is not None else None

    def _fill_meta(self) -> None:
        """As the dispatcher read ``_meta``: an object, or the error saying why not. May
        raise what the decoder raises for bytes no engine checked (as the dispatcher did)."""
        self.client_capabilities = self.client_info = self.log_level = None
        self.meta = None
        try:
            meta = _decode_meta(self.params).meta
        except msgspec.DecodeError as exc:  # ValidationError included
            text = str(exc)
            if text.startswith("Expected") and text.endswith("- at `$._meta`"):
                self.meta_error = McpError(INVALID_PARAMS, "Invalid params: _meta must be an object")
            else:
                self.meta_error = _invalid(exc, 512)
            return
        except RecursionError as exc:
            self.meta_error = _invalid(exc, 512)
            return
        self.meta_error = None
        self.meta = meta
        if meta is None:
            self.version = None
        else:
            _read_meta(self, meta)  # the version too: what the version alone would have been

    def _fill_target(self) -> None:
        """As the header check read its members: their values, or the error (HTTP 400).
        May raise what the decoder raises for bytes no engine checked."""
        try:
            target = _decode_target(self.params)
        except (msgspec.DecodeError, RecursionError) as exc:
            self.name = self.uri = self.task_id = self.arguments = None
            self.target_error = _invalid(exc, 256, status=400)
            return
        self.name, self.uri, self.task_id, self.arguments = target.name, target.uri, target.taskId, target.arguments
        self.target_error = None

    def _fill_answers(self) -> None:
        """As the dispatcher read a modern retry's answers: their values, or the error."""
        self.input_responses = self.request_state = None
        try:
            answers = _decode_answers(self.params)
        except (msgspec.DecodeError, RecursionError) as exc:
            self.answers_error = _invalid(exc, 512)
            return
        responses, state = answers.input_responses, answers.request_state
        self.input_responses = None if isinstance(responses, UnsetType) else responses
        self.request_state = None if isinstance(state, UnsetType) else state
        self.answers_error = None

    def named(self) -> tuple[Any, Any] | None:
        if self.target_error is None:
            return self.name, self.uri
        try:
            named = _decode_named(self.params)
        except (msgspec.DecodeError, RecursionError):
            return None
        return named.name, named.uri

    def described(self) -> tuple[Any, Any, dict[str, Any]]:
        try:
            described = _decode_described(self.params)
        except (msgspec.DecodeError, RecursionError):
            return None, None, {}
        return described.name, described.uri, described.meta if isinstance(described.meta, dict) else {}


_GROUPS: Final = {
    "version": _Salvaged._fill_version,
    **dict.fromkeys(("meta", "meta_error", "client_capabilities", "client_info", "log_level"), _Salvaged._fill_meta),
    **dict.fromkeys(("name", "uri", "task_id", "arguments", "target_error"), _Salvaged._fill_target),
    **dict.fromkeys(("input_responses", "request_state", "answers_error"), _Salvaged._fill_answers),
}
