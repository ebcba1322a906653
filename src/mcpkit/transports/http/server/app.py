"""Streamable HTTP server: a plain ASGI application serving both protocol eras.

One endpoint. Requests whose ``params._meta`` carries a modern protocol version are
served statelessly (2026-07-28): validated against the mirrored headers, answered with
JSON or an SSE stream scoped to the request, cancelled when the client disconnects.
Everything else is the legacy era (2025-11-25 and earlier): ``initialize`` mints an
``Mcp-Session-Id``, later requests must carry it, ``GET`` opens the session's stream
for server-initiated messages, ``DELETE`` ends the session, and SSE streams resume
with ``Last-Event-ID``.

HTTP-level problems are refused before any JSON-RPC parsing with a plain status and a
short text body: 403 (Host/Origin), 405, 406, 413, 415, and 400/404 for sessions.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

import msgspec

from ....protocol import meta as meta_keys
from ....protocol.engine import CancelReceived, Engine, NotificationReceived, Reply, RequestReceived, ResponseReceived, encode
from ....protocol.errors import INVALID_PARAMS, McpError
from ....protocol.headers import check_request_headers
from ....protocol.sse import KEEPALIVE, encode_event
from ....protocol.types import Params
from ....protocol.versions import LEGACY_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS, supports
from ....runtime.outbound import DROP, Notifier
from ....runtime.outcome import deliver
from ...base import RequestHandler
from .sessions import EventStore, HttpSession, InMemoryEventStore, SessionManager, SseStream

__all__ = ["StreamableHTTPApp"]

log = logging.getLogger("mcpkit.http")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
]
_decode_meta = msgspec.json.Decoder(Params).decode


class _Reject(Exception):
    """An HTTP-level refusal: plain status and text (or a JSON-RPC body)."""

    def __init__(self, status: int, text: str, headers: Sequence[tuple[bytes, bytes]] = (), body: bytes | None = None) -> None:
        super().__init__(text)
        self.status = status
        self.text = text
        self.headers = list(headers)
        self.body = body


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


def _host_name(host_header: str) -> str:
    if host_header.startswith("["):
        return host_header[: host_header.find("]") + 1]
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header


def _json_error(rid: Any, error: McpError) -> bytes:
    return encode({"jsonrpc": "2.0", "id": rid, "error": error.to_wire()})


def _accepts(accept: str, kind: str) -> bool:
    major = kind.split("/")[0]
    for part in accept.split(","):
        media = part.split(";")[0].strip().lower()
        if media in (kind, f"{major}/*", "*/*"):
            return True
    return False


class StreamableHTTPApp:
    """The ASGI application returned by :meth:`Server.asgi_app`. See the module docs."""

    def __init__(
        self,
        server: RequestHandler,
        *,
        path: str | None = "/mcp",
        json_response: bool | None = None,
        allowed_hosts: Sequence[str] | None = None,
        allowed_origins: Sequence[str] | None = None,
        dns_rebinding_protection: bool | None = None,
        max_body_size: int = 4 * 1024 * 1024,
        event_store: EventStore | None = None,
        session_idle_timeout: float = 1800.0,
        max_sessions: int = 10_000,
        keepalive_interval: float = 20.0,
    ) -> None:
        self.server = server
        self.path = path.rstrip("/") or "/" if path is not None else None
        self.json_response = json_response
        self.allowed_hosts = [h.lower() for h in allowed_hosts] if allowed_hosts is not None else None
        self.allowed_origins = [o.lower().rstrip("/") for o in allowed_origins] if allowed_origins is not None else None
        self.dns_rebinding_protection = dns_rebinding_protection
        self.max_body_size = max_body_size
        self.event_store: EventStore = event_store if event_store is not None else InMemoryEventStore()
        self.sessions = SessionManager(idle_timeout=session_idle_timeout, max_sessions=max_sessions)
        self.keepalive_interval = keepalive_interval
        self._header_cache: dict[str, dict[tuple[str, ...], str]] = {}

    # --- entry -----------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if kind != "http":
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
        try:
            self._check_path(scope)
            self._check_security(scope, headers)
            method = scope["method"]
            if method == "POST":
                await self._post(scope, receive, send, headers)
            elif method == "GET":
                await self._get(receive, send, headers)
            elif method == "DELETE":
                await self._delete(send, headers)
            else:
                raise _Reject(405, "Method Not Allowed", [(b"allow", b"GET, POST, DELETE")])
        except _Reject as rej:
            await self._send_reject(send, rej)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.sessions.close_all()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def _check_path(self, scope: Scope) -> None:
        if self.path is None:
            return
        path: str = scope.get("path", "")
        root: str = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        if (path.rstrip("/") or "/") != self.path:
            raise _Reject(404, "Not Found")

    def _check_security(self, scope: Scope, headers: dict[str, str]) -> None:
        protect = self.dns_rebinding_protection
        if protect is None:
            bound = scope.get("server")
            protect = bool(bound) and _loopback(str(bound[0])) if bound else False
        host = headers.get("host", "").lower()
        origin = headers.get("origin", "").lower().rstrip("/")
        if self.allowed_hosts is not None:
            if host not in self.allowed_hosts and _host_name(host) not in self.allowed_hosts:
                raise _Reject(403, "Forbidden: Host not allowed")
        elif protect and host and not _loopback(_host_name(host)):
            raise _Reject(403, "Forbidden: Host not allowed")
        if origin:
            if self.allowed_origins is not None:
                if origin not in self.allowed_origins:
                    raise _Reject(403, "Forbidden: Origin not allowed")
            elif protect:
                origin_host = origin.split("://", 1)[-1]
                if not _loopback(_host_name(origin_host)):
                    raise _Reject(403, "Forbidden: Origin not allowed")
            elif origin.split("://", 1)[-1] != host:
                raise _Reject(403, "Forbidden: Origin not allowed")

    # --- responses -------------------------------------------------------------------------

    @staticmethod
    async def _send_reject(send: Send, rej: _Reject) -> None:
        if rej.body is not None:
            body, ctype = rej.body, b"application/json"
        else:
            body, ctype = rej.text.encode() + b"\n", b"text/plain; charset=utf-8"
        headers = [(b"content-type", ctype), (b"content-length", str(len(body)).encode()), *rej.headers]
        await _safe_send(send, {"type": "http.response.start", "status": rej.status, "headers": headers})
        await _safe_send(send, {"type": "http.response.body", "body": body})

    @staticmethod
    async def _send_json(send: Send, status: int, body: bytes, extra: Sequence[tuple[bytes, bytes]] = ()) -> None:
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *extra]
        await _safe_send(send, {"type": "http.response.start", "status": status, "headers": headers})
        await _safe_send(send, {"type": "http.response.body", "body": body})

    @staticmethod
    async def _send_empty(send: Send, status: int, extra: Sequence[tuple[bytes, bytes]] = ()) -> None:
        headers = [(b"content-length", b"0"), *extra]
        await _safe_send(send, {"type": "http.response.start", "status": status, "headers": headers})
        await _safe_send(send, {"type": "http.response.body", "body": b""})

    # --- POST ------------------------------------------------------------------------------

    async def _read_body(self, receive: Receive, headers: dict[str, str]) -> bytes:
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_size:
            raise _Reject(413, f"Payload Too Large: the limit is {self.max_body_size} bytes")
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Disconnected
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_size:
                raise _Reject(413, f"Payload Too Large: the limit is {self.max_body_size} bytes")
            parts.append(chunk)
            if not message.get("more_body", False):
                return b"".join(parts)

    async def _post(self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]) -> None:
        ctype = headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype != "application/json":
            raise _Reject(415, "Unsupported Media Type: use Content-Type: application/json")
        accept = headers.get("accept")
        if accept is not None and not (_accepts(accept, "application/json") and _accepts(accept, "text/event-stream")):
            raise _Reject(406, "Not Acceptable: Accept must allow application/json and text/event-stream")
        try:
            body = await self._read_body(receive, headers)
        except _Disconnected:
            return
        session_id = headers.get("mcp-session-id")
        session = self.sessions.get(session_id) if session_id else None
        engine = session.engine if session is not None else Engine(max_error_text=self.server.max_error_text)
        ev = engine.receive(body)
        if isinstance(ev, Reply):
            await self._send_json(send, 400, ev.data)
            return
        if isinstance(ev, RequestReceived):
            try:
                meta = _decode_meta(ev.params).meta if ev.params else None
            except msgspec.ValidationError:
                meta = None  # the dispatcher answers -32602 for a malformed _meta
            version = meta.get(meta_keys.PROTOCOL_VERSION) if isinstance(meta, dict) else None
            if version is not None and self.server.speaks("modern"):
                if session is not None:  # modern requests ignore Mcp-Session-Id
                    engine.abandon(ev.id)
                    engine = Engine(max_error_text=self.server.max_error_text)
                    engine.track(ev.id)
                await self._modern(receive, send, headers, engine, ev, version)
            elif ev.method == "initialize" and session is None:  # a live session answers -32600 below
                await self._initialize(receive, send, engine, ev)
            else:
                if session_id and session is None:
                    raise _Reject(404, "Not Found: unknown or ended session")
                await self._legacy_request(receive, send, headers, session, engine, ev)
            return
        # notifications and responses
        if session_id and session is None:
            raise _Reject(404, "Not Found: unknown or ended session")
        if session is None:
            if isinstance(ev, NotificationReceived) or ev is None:
                await self._send_empty(send, 202)  # stateless notifications: accepted, nothing to do
                return
            raise _Reject(400, "Bad Request: missing Mcp-Session-Id header")
        if ev is None:  # a response to an unknown id, an ignorable notification
            await self._send_empty(send, 202)
            return
        if isinstance(ev, CancelReceived):
            if isinstance(ev.handle, asyncio.Task):
                ev.handle.cancel()
        elif isinstance(ev, ResponseReceived):
            deliver(ev)
        await self._send_empty(send, 202)

    def _session(self, session_id: str) -> HttpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise _Reject(404, "Not Found: unknown or ended session")
        return session

    # --- modern era ------------------------------------------------------------------------

    async def _modern(
        self, receive: Receive, send: Send, headers: dict[str, str], engine: Engine, ev: RequestReceived, version: Any
    ) -> None:
        try:
            if version in MODERN_PROTOCOL_VERSIONS or headers.get("mcp-protocol-version") != version:
                check_request_headers(headers, ev.method, ev.params, version, self.server.header_rules)
        except McpError as err:
            await self._send_json(send, err.http_status, _json_error(ev.id, err))
            return
        await self._run(receive, send, engine, ev, self.server.new_session())

    # --- legacy era ------------------------------------------------------------------------

    async def _legacy_request(
        self,
        receive: Receive,
        send: Send,
        headers: dict[str, str],
        session: HttpSession | None,
        engine: Engine,
        ev: RequestReceived,
    ) -> None:
        version = headers.get("mcp-protocol-version")
        if version in MODERN_PROTOCOL_VERSIONS and ev.method != "initialize":
            err = McpError(
                INVALID_PARAMS, f"Invalid params: _meta is missing required field {meta_keys.PROTOCOL_VERSION}", status=400
            )
            await self._send_json(send, 400, _json_error(ev.id, err))
            return
        if session is None:
            raise _Reject(400, "Bad Request: missing Mcp-Session-Id header")
        if version is not None and version not in LEGACY_PROTOCOL_VERSIONS:
            raise _Reject(400, f"Bad Request: unsupported MCP-Protocol-Version {version[:64]!r}")
        session.busy += 1
        try:
            await self._run(receive, send, engine, ev, session.server_session, session=session)
        finally:
            session.busy -= 1
            session.touch()

    async def _initialize(self, receive: Receive, send: Send, engine: Engine, ev: RequestReceived) -> None:
        server_session = self.server.new_session()
        try:
            result = await self.server.handle(ev.id, ev.method, ev.params, session=server_session, outbound=DROP)
        except McpError as err:
            engine.abandon(ev.id)
            await self._send_json(send, 200, _json_error(ev.id, err))
            return
        session = HttpSession(SessionManager.new_id(), server_session, self.event_store, self.server.max_error_text)
        if not self.sessions.add(session):
            engine.abandon(ev.id)
            raise _Reject(503, "Service Unavailable: too many sessions", [(b"retry-after", b"5")])
        body = encode({"jsonrpc": "2.0", "id": ev.id, "result": result})
        engine.abandon(ev.id)
        await self._send_json(send, 200, body, [(b"mcp-session-id", session.id.encode())])

    # --- running one request ----------------------------------------------------------------

    async def _run(
        self,
        receive: Receive,
        send: Send,
        engine: Engine,
        ev: RequestReceived,
        server_session: Any,
        *,
        session: HttpSession | None = None,
    ) -> None:
        """Run one request; answer with JSON or SSE (see :attr:`json_response`).

        Until the first message is ready the choice is open: a result alone goes out
        as JSON, a notification first starts an SSE stream. Modern era (no
        ``session``): a client disconnect cancels the handler. Legacy era: the handler
        runs on after a disconnect, and every SSE event is stored on a stream of the
        session so that the client can resume with ``Last-Event-ID``.
        """
        loop = asyncio.get_running_loop()
        items: asyncio.Queue[tuple[str, bytes | None, int]] = asyncio.Queue()
        cancel_on_disconnect = session is None
        stream: SseStream | None = None
        routed_to_stream = False

        def emit(kind: str, data: bytes | None, status: int) -> None:
            if routed_to_stream and stream is not None:
                if data is not None:
                    stream.put(data)
                if kind != "note":
                    stream.put(None)
            else:
                items.put_nowait((kind, data, status))

        def notify(method: str, params: Any) -> None:
            if self.json_response is not True:
                emit("note", engine.notification(method, params), 0)

        async def handle() -> None:
            try:
                result = await self.server.handle(ev.id, ev.method, ev.params, session=server_session, outbound=Notifier(notify))
            except McpError as err:
                data = engine.respond_error(ev.id, err)
                status = err.http_status if cancel_on_disconnect else 200
            except asyncio.CancelledError:
                engine.abandon(ev.id)
                emit("cancelled", None, 0)
                raise
            else:
                data = engine.respond(ev.id, result)
                status = 200
            emit("result", data, status)

        task = loop.create_task(handle())
        engine.attach(ev.id, task)
        watcher = loop.create_task(_wait_disconnect(receive))
        watcher.add_done_callback(lambda _: items.put_nowait(("disconnect", None, 0)))
        try:
            kind, data, status = await items.get()
            if kind == "disconnect":
                return
            if kind == "cancelled":
                await self._send_empty(send, 204)
                return
            if kind == "result" and self.json_response is not False:
                await self._send_json(send, status, data or b"")
                return
            await _safe_send(send, {"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS})
            if session is None:
                await self._stream_direct(send, items, kind, data)
                return
            stream = session.new_stream()
            sink = stream.attach()
            if supports(session.server_session.protocol_version, "sse-priming"):
                await _safe_send(send, {"type": "http.response.body", "body": await stream.prime(), "more_body": True})
            # From here on every message goes to the stored stream, in order.
            emit_first = [(kind, data)]
            while not items.empty():
                queued = items.get_nowait()
                if queued[0] != "disconnect":
                    emit_first.append((queued[0], queued[1]))
            routed_to_stream = True
            for k, d in emit_first:
                emit(k, d, 0)
            try:
                await self._forward(sink, send, watcher)
            finally:
                stream.detach(sink)
        finally:
            watcher.cancel()
            if cancel_on_disconnect and not task.done():
                task.cancel()

    async def _stream_direct(
        self, send: Send, items: asyncio.Queue[tuple[str, bytes | None, int]], kind: str, data: bytes | None
    ) -> None:
        """Modern-era SSE: write each message as it comes; stop at the result."""
        while True:
            if kind == "disconnect":
                return
            if data:
                await _safe_send(send, {"type": "http.response.body", "body": encode_event(data), "more_body": True})
            if kind != "note":
                await _safe_send(send, {"type": "http.response.body", "body": b"", "more_body": False})
                return
            kind, data, _ = await items.get()

    async def _forward(self, sink: asyncio.Queue[bytes | None], send: Send, watcher: asyncio.Task[None]) -> None:
        """Write stored-stream frames to this connection until the stream ends or the
        client disconnects."""
        while True:
            getter = asyncio.ensure_future(sink.get())
            done, _ = await asyncio.wait({getter, watcher}, return_when=asyncio.FIRST_COMPLETED)
            if getter not in done:
                getter.cancel()
                return
            frame = getter.result()
            if frame is None:
                await _safe_send(send, {"type": "http.response.body", "body": b"", "more_body": False})
                return
            await _safe_send(send, {"type": "http.response.body", "body": frame, "more_body": True})

    # --- GET and DELETE ----------------------------------------------------------------------

    async def _get(self, receive: Receive, send: Send, headers: dict[str, str]) -> None:
        accept = headers.get("accept")
        if accept is not None and not _accepts(accept, "text/event-stream"):
            raise _Reject(406, "Not Acceptable: Accept must allow text/event-stream")
        session_id = headers.get("mcp-session-id")
        if not session_id:
            raise _Reject(405, "Method Not Allowed: GET needs a legacy session", [(b"allow", b"POST")])
        session = self._session(session_id)
        version = headers.get("mcp-protocol-version")
        if version is not None and version not in LEGACY_PROTOCOL_VERSIONS:
            raise _Reject(400, f"Bad Request: unsupported MCP-Protocol-Version {version[:64]!r}")
        last_event_id = headers.get("last-event-id")
        if last_event_id:
            await self._resume(receive, send, session, last_event_id)
            return
        stream = session.standalone_stream()
        if stream.attached:
            raise _Reject(409, "Conflict: this session already has a GET stream open")
        sink = stream.attach()
        # Flush the headers at once; from 2025-11-25 on, with an id to resume from.
        first = await stream.prime() if supports(session.server_session.protocol_version, "sse-priming") else b": stream open\n\n"
        await self._pipe(receive, send, stream, sink, first)

    async def _resume(self, receive: Receive, send: Send, session: HttpSession, last_event_id: str) -> None:
        frames: list[bytes] = []

        async def collect(frame: bytes) -> None:
            frames.append(frame)

        stream = session.stream_for_event(last_event_id)
        if stream is not None:
            sink = await stream.resume(last_event_id, collect)
            if sink is None:
                raise _Reject(404, "Not Found: unknown Last-Event-ID")
            await self._pipe(receive, send, stream, sink, b"".join(frames))
            return

        async def replay(event_id: str, message: bytes) -> None:
            if message:
                frames.append(encode_event(message, event_id=event_id))

        if await self.event_store.replay_events_after(last_event_id, replay) is None or not last_event_id.startswith(session.id):
            raise _Reject(404, "Not Found: unknown Last-Event-ID")
        await _safe_send(send, {"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS})
        await _safe_send(send, {"type": "http.response.body", "body": b"".join(frames), "more_body": False})

    async def _pipe(
        self, receive: Receive, send: Send, stream: SseStream, sink: asyncio.Queue[bytes | None], first: bytes
    ) -> None:
        """Write ``stream``'s frames to this connection until the stream ends or the
        client goes away; keep-alive comments while idle."""
        watcher = asyncio.get_running_loop().create_task(_wait_disconnect(receive))
        try:
            await _safe_send(send, {"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS})
            if first:
                await _safe_send(send, {"type": "http.response.body", "body": first, "more_body": True})
            while not watcher.done():
                getter = asyncio.ensure_future(sink.get())
                done, _ = await asyncio.wait(
                    {getter, watcher}, timeout=self.keepalive_interval, return_when=asyncio.FIRST_COMPLETED
                )
                if getter not in done:
                    getter.cancel()
                    if not watcher.done():
                        await _safe_send(send, {"type": "http.response.body", "body": KEEPALIVE, "more_body": True})
                    continue
                frame = getter.result()
                if frame is None:
                    break
                await _safe_send(send, {"type": "http.response.body", "body": frame, "more_body": True})
            await _safe_send(send, {"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            watcher.cancel()
            stream.detach(sink)

    async def _delete(self, send: Send, headers: dict[str, str]) -> None:
        session_id = headers.get("mcp-session-id")
        if not session_id:
            raise _Reject(405, "Method Not Allowed: DELETE ends a legacy session", [(b"allow", b"POST")])
        if self.sessions.remove(session_id) is None:
            raise _Reject(404, "Not Found: unknown or ended session")
        await self._send_empty(send, 200)


class _Disconnected(Exception):
    pass


async def _wait_disconnect(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


async def _safe_send(send: Send, message: Message) -> None:
    """ASGI send that tolerates a client that already went away."""
    try:
        await send(message)
    except (OSError, RuntimeError):
        pass
