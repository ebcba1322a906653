"""A sans-IO JSON-RPC 2.0 engine shared by the client and the server (its events are
in :mod:`.events`).

:class:`Engine` holds the state of one connection — the table of requests we sent and
await, the table of requests we received and are working on — and turns bytes into
events and intentions into bytes. It performs no I/O and knows no clock: callers pass
``now`` where time matters. Like h11's ``Connection``, it can be driven by any event
loop and tested without a socket.

Rules it enforces:

* a request we cancelled, or whose deadline passed, is forgotten: its late response is
  ignored, and a cancellation is announced only if the request was actually written;
* a request the peer cancelled gets no response (:meth:`Engine.respond` returns None);
* malformed input yields an error reply (-32700 / -32600) or is ignored, never raises:
  JSON nested deeper than the decoder's recursion limit is a parse error with id null
  (the id cannot be read without decoding what holds it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final

import msgspec
from msgspec import UNSET

from .errors import INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR, REQUEST_CANCELLED, McpError, flatten_text
from .events import (
    CancelReceived,
    Event,
    NotificationReceived,
    Outgoing,
    ProgressReceived,
    Reply,
    RequestId,
    RequestReceived,
    ResponseReceived,
)
from .head import read_head

__all__ = ["Engine", "encode", "is_request_id"]

encode: Final = msgspec.json.Encoder().encode


class _Envelope(msgspec.Struct):
    jsonrpc: Any = UNSET
    id: Any = UNSET
    method: Any = UNSET
    params: msgspec.Raw = msgspec.Raw()
    result: msgspec.Raw = msgspec.Raw()
    error: Any = UNSET


_decode_envelope: Final = msgspec.json.Decoder(_Envelope).decode


class _ErrorObject(msgspec.Struct):
    code: int
    message: str
    data: Any = None


_to_error_object: Final = msgspec.json.Decoder(_ErrorObject).decode


class _ProgressNote(msgspec.Struct, rename="camel"):
    progress_token: Any = None
    progress: Any = None
    total: Any = None
    message: Any = None


class _CancelNote(msgspec.Struct, rename="camel"):
    request_id: Any = None
    reason: Any = None


_decode_progress: Final = msgspec.json.Decoder(_ProgressNote).decode
_decode_cancel: Final = msgspec.json.Decoder(_CancelNote).decode

#: What decoding hostile bytes can raise: not JSON (``DecodeError``, which includes
#: ``ValidationError``), not UTF-8, or nested deeper than the decoder recurses.
_UNREADABLE: Final = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)
_ID_IN_USE: Final = "Invalid Request: id is already in use by a request in progress"
_OPEN_BRACE: Final = ord("{")  # what params that are an object start with (msgspec.Raw holds no whitespace before it)


def is_request_id(rid: Any) -> bool:
    """Whether ``rid`` can be a JSON-RPC request id here: a string or an integer (not a
    bool, not null, not a float)."""
    t = type(rid)
    return t is int or t is str


def _error_bytes(rid: RequestId | None, code: int, message: str, data: Any = None) -> bytes:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return encode({"jsonrpc": "2.0", "id": rid, "error": err})


class Engine:
    """JSON-RPC state for one connection; one instance per side.

    Every method returning ``bytes`` returns one complete JSON message (no framing:
    the transport delimits messages), ready to be written; the caller writes it.
    Only the engine changes its tables; :attr:`outgoing` and :attr:`incoming` are
    read-only views.
    """

    def __init__(self, *, max_error_text: int = 1024) -> None:
        self._next_id = 0
        self.max_error_text = max_error_text
        #: Requests we sent and await, by id.
        self._outgoing: dict[RequestId, Outgoing] = {}
        #: Progress tokens of our requests -> the request.
        self._progress: dict[RequestId, Outgoing] = {}
        #: Requests the peer sent that we have not answered yet -> a driver handle (a task).
        self._incoming: dict[RequestId, Any] = {}

    @property
    def outgoing(self) -> Mapping[RequestId, Outgoing]:
        """Our requests awaiting a response, by id (read-only)."""
        return MappingProxyType(self._outgoing)

    @property
    def incoming(self) -> Mapping[RequestId, Any]:
        """The peer's requests we have not answered, id -> driver handle (read-only)."""
        return MappingProxyType(self._incoming)

    def attach(self, rid: RequestId, handle: Any) -> None:
        """Record the driver's handle (its task, say) for inbound request ``rid``; a
        cancellation from the peer hands it back in :class:`CancelReceived`."""
        if rid in self._incoming:
            self._incoming[rid] = handle

    # --- our requests ------------------------------------------------------------------

    def start_request(
        self,
        method: str,
        params: Any,
        *,
        deadline: float,
        progress: bool = False,
        id_factory: Callable[[int], RequestId] | None = None,
    ) -> Outgoing:
        """Register a new request and build its bytes. ``progress=True`` adds a progress
        token (the request id) to ``params._meta``; ``params`` must then be a dict."""
        self._next_id += 1
        rid: RequestId = id_factory(self._next_id) if id_factory else self._next_id
        if progress:
            params = dict(params or {})
            meta = dict(params.get("_meta") or {})
            meta["progressToken"] = rid
            params["_meta"] = meta
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        out = Outgoing(rid, method, encode(message), deadline, params)
        self._outgoing[rid] = out
        if progress:
            out.progress_token = rid
            self._progress[rid] = out
        return out

    def mark_sent(self, out: Outgoing) -> None:
        """Record that ``out``'s bytes were handed to the transport."""
        out.sent = True

    def _forget(self, rid: RequestId) -> Outgoing | None:
        out = self._outgoing.pop(rid, None)
        if out is not None and out.progress_token is not None:
            self._progress.pop(out.progress_token, None)
        return out

    def cancel(self, rid: RequestId, reason: str | None = None) -> tuple[Outgoing | None, bytes | None]:
        """Stop waiting for ``rid``. Returns the request (None if it was no longer
        pending) and the ``notifications/cancelled`` bytes to send if it was written;
        an unsent request is just dropped."""
        out = self._forget(rid)
        if out is None or not out.sent:
            return out, None
        params: dict[str, Any] = {"requestId": rid}
        if reason:
            params["reason"] = reason
        return out, self.notification("notifications/cancelled", params)

    def fail_all(self) -> list[Outgoing]:
        """Forget and return every pending request (the connection is gone)."""
        pending = list(self._outgoing.values())
        self._outgoing.clear()
        self._progress.clear()
        return pending

    def abandon_all(self) -> list[Any]:
        """Forget every inbound request without answering; returns their driver
        handles (to cancel them)."""
        handles = list(self._incoming.values())
        self._incoming.clear()
        return handles

    def track(self, rid: RequestId) -> bool:
        """Register inbound request ``rid`` received by other means than
        :meth:`receive` (a request carried to a fresh engine). False if the id is in use."""
        if rid in self._incoming:
            return False
        self._incoming[rid] = None
        return True

    def adopt(self, request: RequestReceived) -> RequestReceived | Reply:
        """Take over ``request``, which another engine parsed and no longer holds: the
        request, now in progress here, or the error :meth:`receive` answers when its id
        is in use by a request in progress here. Never raises."""
        if not self.track(request.id):
            return Reply(_error_bytes(request.id, INVALID_REQUEST, _ID_IN_USE))
        return request

    # --- building messages -------------------------------------------------------------

    @staticmethod
    def notification(method: str, params: Any = None) -> bytes:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        return encode(message)

    def respond(self, rid: RequestId, result: Any) -> bytes | None:
        """Bytes of the result for an inbound request, or None if the peer cancelled
        it or it is unknown. Raises ``TypeError`` if ``result`` cannot be encoded (the
        request stays open so that the caller can answer with an error instead)."""
        if rid not in self._incoming:
            return None
        data = encode({"jsonrpc": "2.0", "id": rid, "result": result})
        del self._incoming[rid]
        return data

    def respond_error(self, rid: RequestId, error: McpError) -> bytes | None:
        """Bytes of an error response for an inbound request, or None if the peer
        cancelled it or it is unknown."""
        if self._incoming.pop(rid, _MISSING) is _MISSING:
            return None
        try:
            return encode({"jsonrpc": "2.0", "id": rid, "error": error.to_wire()})
        except (TypeError, ValueError, msgspec.EncodeError):  # data that is not JSON
            return _error_bytes(rid, INTERNAL_ERROR, "Internal error")

    def abandon(self, rid: RequestId) -> None:
        """Forget an inbound request without answering it."""
        self._incoming.pop(rid, None)

    # --- receiving ---------------------------------------------------------------------

    def receive(self, line: bytes) -> Event | None:
        """Interpret one complete message. Returns the event, or None for input that is
        to be ignored (a response to an unknown id, an invalid notification)."""
        try:
            if not line.isascii():
                line.decode("utf-8")  # raw params are decoded later: check all of it now
            env = _decode_envelope(line)
        except msgspec.ValidationError as exc:  # valid JSON, not an object
            return Reply(_error_bytes(None, INVALID_REQUEST, f"Invalid Request: {exc}"))
        except (msgspec.DecodeError, UnicodeDecodeError) as exc:  # not JSON, or not UTF-8
            text = flatten_text(str(exc), self.max_error_text)
            return Reply(_error_bytes(None, PARSE_ERROR, f"Parse error: {text}"))
        except RecursionError:  # nested deeper than the decoder goes
            return Reply(_error_bytes(None, PARSE_ERROR, "Parse error: JSON nested too deeply"))
        rid = env.id
        has_id = rid is not UNSET
        reply_id = rid if is_request_id(rid) else None  # the id to answer an invalid message with
        if env.jsonrpc != "2.0":
            if env.method is UNSET and not has_id:
                return None
            return Reply(_error_bytes(reply_id, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"'))
        method = env.method
        if method is not UNSET:
            if type(method) is not str:
                return Reply(_error_bytes(reply_id, INVALID_REQUEST, 'Invalid Request: "method" must be a string'))
            params = env.params
            # a request's head is read by every layer that serves it: decoded here, it also
            # says whether the params are an object (a successful decode is one), which
            # otherwise takes a look at their first byte (a memoryview: dearer than the decode)
            head = read_head(params) if has_id and params else None
            if params and not (head is not None and head.complete) and memoryview(params)[0] != _OPEN_BRACE:
                head = None
                if bytes(memoryview(params)[:4]) == b"null":
                    params = msgspec.Raw()
                elif not has_id:
                    return None
                else:
                    return Reply(_error_bytes(reply_id, INVALID_REQUEST, 'Invalid Request: "params" must be an object'))
            if not has_id:
                return self._notification(method, params)
            if reply_id is None:
                return Reply(_error_bytes(None, INVALID_REQUEST, 'Invalid Request: "id" must be a string or an integer'))
            if rid in self._incoming:
                return Reply(_error_bytes(rid, INVALID_REQUEST, _ID_IN_USE))
            self._incoming[rid] = None
            return RequestReceived(rid, method, params, head)
        return self._response(env, rid, has_id, reply_id)

    def _response(self, env: _Envelope, rid: Any, has_id: bool, reply_id: RequestId | None) -> Event | None:
        """A message without ``method``: the response to one of our requests."""
        if not has_id:
            return Reply(_error_bytes(None, INVALID_REQUEST, 'Invalid Request: missing "method"'))
        if reply_id is None:
            return None  # a response we cannot match (id null: the peer could not read our message)
        if env.error is not UNSET:
            if rid not in self._outgoing:
                return None
            error = self._peer_error(env.error)
            out = self._forget(rid)
            assert out is not None
            return ResponseReceived(out, None, error)
        if not env.result:
            return Reply(_error_bytes(None, INVALID_REQUEST, 'Invalid Request: a response needs "result" or "error"'))
        out = self._forget(rid)
        if out is None:
            return None
        return ResponseReceived(out, env.result, None)

    def _peer_error(self, error: Any) -> McpError:
        try:
            obj = msgspec.convert(error, _ErrorObject)
        except msgspec.ValidationError:
            try:
                text = flatten_text(repr(error), 256)
            except RecursionError:  # nested nearly as deep as the decoder goes, and the stack is deeper now
                text = "(nested too deeply to show)"
            return McpError(-32603, "Malformed error response from peer", {"error": text})
        message = flatten_text(obj.message, self.max_error_text)
        return McpError(obj.code, message, obj.data)

    def _notification(self, method: str, params: msgspec.Raw) -> Event | None:
        if method == "notifications/progress":
            if not params:
                return None
            try:
                note = _decode_progress(params)
            except _UNREADABLE:
                return None
            token = note.progress_token
            out = self._progress.get(token) if is_request_id(token) else None
            if out is None or not isinstance(note.progress, (int, float)) or isinstance(note.progress, bool):
                return None
            total = note.total if isinstance(note.total, (int, float)) and not isinstance(note.total, bool) else None
            message = flatten_text(note.message, self.max_error_text) if isinstance(note.message, str) else None
            return ProgressReceived(out, note.progress, total, message)
        if method == "notifications/cancelled":
            if not params:
                return None
            try:
                cn = _decode_cancel(params)
            except _UNREADABLE:
                return None
            rid = cn.request_id
            if not is_request_id(rid):
                return None
            reason = flatten_text(cn.reason, self.max_error_text) if isinstance(cn.reason, str) else None
            if rid in self._incoming:  # the peer withdraws a request it sent us
                return CancelReceived(rid, reason, self._incoming.pop(rid))
            out = self._forget(rid)
            if out is not None:  # the peer gave up on a request we sent it
                return ResponseReceived(
                    out, None, McpError(REQUEST_CANCELLED, "Request cancelled", {"reason": reason} if reason else None)
                )
            return None
        return NotificationReceived(method, params)


_MISSING: Final = object()
