"""The head of a received request: what the layers that serve it read of its params,
decoded once (:func:`read_head`; :attr:`.events.RequestReceived.head` keeps it).

A request's params stay raw JSON until someone needs them, and several layers need a
part: the HTTP app reads the protocol version in ``_meta`` (to route the request to its
era), the target ``name``, ``uri`` or ``taskId`` and the ``arguments`` (to check the
mirrored headers) and the names again (to check scopes); the dispatcher reads ``_meta``
(the version, the client's capabilities, info and log level; ``ctx.meta``), a modern
retry's answers (``inputResponses``, ``requestState``) and the method's own params;
tracing reads the names and the trace context in ``_meta``. :class:`RequestHead` is all
of that from one pass over the bytes (members nobody reads are skipped, not decoded),
typed as strictly as the strictest layer reads each member, so that ``tools/call`` and
``resources/read`` need no other decode: their typed params are the head's ``name`` and
``arguments``, or its ``uri``. Other methods' params are decoded once more, by the
dispatcher.

Malformed params never raise here, and what each layer answers for them is part of the
contract (docs/errors.md): a number out of range inside ``_meta`` is the dispatcher's
-32602 naming it, while the HTTP app still routes the request by the version beside it;
one in ``arguments`` is the header check's 400; a ``name`` that is not a string is the
header check's mismatch, or the dispatcher's -32602; a member nobody reads is skipped.
So when the one pass fails (rare: a member of another type than its layer reads, or
valid JSON that cannot be represented), the head falls back, part by part and only when
a layer asks for that part, to decoding what that layer itself decoded before the head
existed, and each layer gives the answer it always gave.

Pure data and functions: no I/O, nothing else of mcpkit but the protocol.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

import msgspec
from msgspec import UNSET, UnsetType, field

from .errors import INVALID_PARAMS, McpError, flatten_text
from .meta import CLIENT_CAPABILITIES, CLIENT_INFO, LOG_LEVEL, PROTOCOL_VERSION
from .wire import Implementation

__all__ = ["RequestHead", "read_head"]

#: What a hostile but well-formed message's params can make a decoder raise: JSON that
#: cannot be represented or has the wrong type (``DecodeError``, ``ValidationError``),
#: nesting deeper than the decoder recurses; ``ValueError`` (invalid UTF-8) only for
#: params no engine has checked.
_UNREADABLE: Final = (msgspec.MsgspecError, RecursionError, ValueError)


class RequestHead(msgspec.Struct, gc=False):
    """What one request's params say, for every layer that serves it (see the module).

    Fields, as decoded: ``meta`` (the ``_meta`` object, None when absent), ``name``,
    ``uri`` and ``task_id`` (strings, UNSET when absent), ``arguments`` (an object, or
    None), ``input_responses`` and ``request_state`` (a modern retry's answers: an object
    and a string, UNSET when absent). What a layer reads is asked of the methods and
    properties, which give what that layer read before the head existed, also for params
    the one pass could not decode: then ``complete`` is False and the fields are not to
    be read. Nothing here raises but what a method's docstring says.

    Not tracked by the garbage collector (``gc=False``): a head holds decoded JSON only,
    which cannot refer back to it, and a request makes one.
    """

    meta: dict[str, Any] | None = field(default=None, name="_meta")
    name: str | UnsetType = UNSET
    uri: str | UnsetType = UNSET
    task_id: str | UnsetType = field(default=UNSET, name="taskId")
    arguments: dict[str, Any] | None = None
    input_responses: dict[str, Any] | UnsetType = field(default=UNSET, name="inputResponses")
    request_state: str | UnsetType = field(default=UNSET, name="requestState")

    #: The one pass read everything: the fields hold the params (False: see :meth:`read_meta` and the others).
    complete: ClassVar[bool] = True

    @property
    def version(self) -> Any:
        """The protocol version ``_meta`` names (any JSON value), or None when it names
        none or ``_meta`` is not an object: then the request is not modern."""
        meta = self.meta
        return meta.get(PROTOCOL_VERSION) if meta is not None else None

    def read_meta(self) -> dict[str, Any] | None:
        """The ``_meta`` object (None when absent). Raises ``McpError(-32602)`` saying
        what is wrong when it is not an object or holds what cannot be decoded."""
        return self.meta

    @property
    def client_capabilities(self) -> Any:
        """``_meta``'s client capabilities (any JSON value; None when absent). Read
        after :meth:`read_meta`."""
        meta = self.meta
        return meta.get(CLIENT_CAPABILITIES) if meta is not None else None

    @property
    def client_info(self) -> Implementation | None:
        """``_meta``'s client info, if it is an :class:`~.wire.Implementation`. Read
        after :meth:`read_meta`."""
        info = self.meta.get(CLIENT_INFO) if self.meta is not None else None
        if not isinstance(info, dict):
            return None
        try:
            return msgspec.convert(info, Implementation)
        except (msgspec.ValidationError, RecursionError):
            return None

    @property
    def log_level(self) -> Any:
        """``_meta``'s log level (any JSON value; None when absent). Read after :meth:`read_meta`."""
        meta = self.meta
        return meta.get(LOG_LEVEL) if meta is not None else None

    def target(self) -> tuple[Any, Any, Any, Any]:
        """``name``, ``uri``, ``taskId`` and ``arguments`` as the mirrored-header check
        reads them (any JSON values; None when absent). Raises ``McpError(-32602)``
        (HTTP 400) when they cannot be decoded."""
        return (
            None if self.name is UNSET else self.name,
            None if self.uri is UNSET else self.uri,
            None if self.task_id is UNSET else self.task_id,
            self.arguments,
        )

    def named(self) -> tuple[Any, Any] | None:
        """The ``name`` and ``uri`` a scope check reads (any JSON values; None when
        absent), or None when they cannot be decoded (then the request needs no scopes
        of its own: the dispatcher answers its params)."""
        return None if self.name is UNSET else self.name, None if self.uri is UNSET else self.uri

    def described(self) -> tuple[Any, Any, dict[str, Any]]:
        """What a span names (``name``, ``uri``: any JSON values, None when absent or
        unreadable) and the ``_meta`` the trace context is read from (empty when absent
        or unreadable)."""
        name, uri = self.name, self.uri
        return None if name is UNSET else name, None if uri is UNSET else uri, self.meta if self.meta is not None else {}

    def answers(self) -> tuple[dict[str, Any] | None, str | None]:
        """A modern retry's ``inputResponses`` and ``requestState`` (None when absent).
        Raises ``McpError(-32602)`` when they have the wrong type or cannot be decoded."""
        responses, state = self.input_responses, self.request_state
        return (None if responses is UNSET else responses), (None if state is UNSET else state)


_decode_head: Final = msgspec.json.Decoder(RequestHead).decode


def read_head(params: msgspec.Raw) -> RequestHead:
    """The head of a request's raw ``params`` (empty when absent), from one decode.
    Never raises: params it cannot decode give a head whose methods decode, when first
    asked, what their layer always decoded."""
    if not params:
        return RequestHead()
    try:
        return _decode_head(params)
    except _UNREADABLE:
        return _Salvaged(params=params)


# --- params the one pass could not decode ---------------------------------------------------------
#
# Each part is decoded as the layer that reads it decoded it before the head existed, and
# only when it is first asked for: a layer that refuses the request stops the others from
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


def _copy(error: McpError) -> McpError:
    return McpError(error.code, error.message, error.data, status=error.status)


def _invalid(exc: BaseException, limit: int, status: int | None = None) -> McpError:
    """The -32602 for params a decoder refused with ``exc`` (its reason flattened, at
    most ``limit`` bytes)."""
    if isinstance(exc, RecursionError):
        return McpError(INVALID_PARAMS, "Invalid params: nested too deeply", status=status)
    return McpError(INVALID_PARAMS, f"Invalid params: {flatten_text(str(exc), limit)}", status=status)


class _Salvaged(RequestHead):
    """The head of params the one pass could not decode: each part is decoded on first
    use, as its layer decoded it, and kept in ``parts`` (its value, or its error: raised
    as a copy, so that no traceback held here can refer back to the head)."""

    params: msgspec.Raw = msgspec.Raw()
    parts: dict[str, Any] = {}

    complete: ClassVar[bool] = False

    def _part(self, key: str) -> Any:
        try:
            return self.parts[key]
        except KeyError:
            value = self.parts[key] = getattr(self, f"_read_{key}")()
            return value

    @property
    def version(self) -> Any:
        return self._part("version")

    def _read_version(self) -> Any:
        """As the HTTP app routed: the version alone; never an error."""
        try:
            found = _decode_version(self.params).meta
        except _UNREADABLE:
            return None
        return found.version if found is not None else None

    def read_meta(self) -> dict[str, Any] | None:
        meta = self._part("meta")
        if isinstance(meta, McpError):
            raise _copy(meta)
        self.meta = meta  # what the properties of the client read
        return meta  # type: ignore[no-any-return]

    def _read_meta(self) -> dict[str, Any] | McpError | None:
        """As the dispatcher read ``_meta``. Other exceptions propagate, as they did."""
        try:
            return _decode_meta(self.params).meta
        except msgspec.DecodeError as exc:  # ValidationError included
            text = str(exc)
            if text.startswith("Expected") and text.endswith("- at `$._meta`"):
                return McpError(INVALID_PARAMS, "Invalid params: _meta must be an object")
            return _invalid(exc, 512)
        except RecursionError as exc:
            return _invalid(exc, 512)

    def target(self) -> tuple[Any, Any, Any, Any]:
        target = self._part("target")
        if isinstance(target, McpError):
            raise _copy(target)
        return target  # type: ignore[no-any-return]

    def _read_target(self) -> tuple[Any, Any, Any, Any] | McpError:
        """As the header check read its members (HTTP 400 when it could not)."""
        try:
            t = _decode_target(self.params)
        except (msgspec.DecodeError, RecursionError) as exc:
            return _invalid(exc, 256, status=400)
        return t.name, t.uri, t.taskId, t.arguments

    def named(self) -> tuple[Any, Any] | None:
        target = self._part("target")
        if not isinstance(target, McpError):
            return target[0], target[1]
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

    def answers(self) -> tuple[dict[str, Any] | None, str | None]:
        answers = self._part("answers")
        if isinstance(answers, McpError):
            raise _copy(answers)
        return answers  # type: ignore[no-any-return]

    def _read_answers(self) -> tuple[dict[str, Any] | None, str | None] | McpError:
        """As the dispatcher read a modern retry's answers."""
        try:
            a = _decode_answers(self.params)
        except (msgspec.DecodeError, RecursionError) as exc:
            return _invalid(exc, 512)
        responses = None if isinstance(a.input_responses, UnsetType) else a.input_responses
        return responses, None if isinstance(a.request_state, UnsetType) else a.request_state
