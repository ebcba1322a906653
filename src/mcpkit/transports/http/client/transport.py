"""The Streamable HTTP client transport, for both protocol eras.

Every outbound JSON-RPC message becomes its own HTTP POST; each response (one JSON
object, or an SSE stream of messages ending with the response) is handed back as whole
messages, exactly as a pipe transport would. What differs per era is decided from the
messages themselves:

* **modern** (2026-07-28): a message whose ``params._meta`` names a protocol version is
  stateless. Its POST carries ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``
  and the ``Mcp-Param-*`` headers that the tool's ``x-mcp-header`` annotations ask for
  (learned from the ``tools/list`` results that pass through). Cancelling a request
  closes its response stream; ``notifications/cancelled`` is never POSTed.
* **legacy** (2025-11-25 and earlier): after an ``initialize``, the session id and the
  negotiated version ride on every request; a GET stream brings server-initiated
  messages; dropped SSE streams resume with ``Last-Event-ID``; a 404 for the session
  re-initialises once, transparently; :meth:`HttpTransport.close` DELETEs the session.

httpx is imported only when the transport starts, so ``import mcpkit`` stays light.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Final

import msgspec
from msgspec import UNSET

from ....protocol import meta as meta_keys
from ....protocol.engine import RequestId, encode, is_request_id
from ....protocol.errors import INTERNAL_ERROR, flatten_text
from ....protocol.headers import request_headers, x_mcp_header_map
from ....protocol.sse import SSEParser

if TYPE_CHECKING:
    import httpx

__all__ = ["HttpTransport"]

logger = logging.getLogger("mcpkit.http")

OnMessage = Callable[[bytes], None]
OnClose = Callable[[str | None], None]

_ACCEPT_BOTH: Final = "application/json, text/event-stream"
_SSE: Final = "text/event-stream"
_PRIVATE: Final = "mcpkit-"  # ids of the transport's own requests
_ERROR_BODY_LIMIT: Final = 64 * 1024  # read at most this much of an error body
_EXCERPT: Final = 512  # bytes of an error body quoted in a message


class _Out(msgspec.Struct):
    id: Any = UNSET
    method: Any = UNSET
    params: Any = None


class _In(msgspec.Struct):
    id: Any = UNSET
    method: Any = UNSET
    result: msgspec.Raw = msgspec.Raw()
    error: Any = UNSET


class _Version(msgspec.Struct, rename="camel"):
    protocol_version: Any = None


_decode_out: Final = msgspec.json.Decoder(_Out).decode
_decode_in: Final = msgspec.json.Decoder(_In).decode
_decode_version: Final = msgspec.json.Decoder(_Version).decode
_decode_dict: Final = msgspec.json.Decoder(dict[str, Any]).decode


class _Lost(Exception):
    """The server could not be reached: the connection as a whole is over."""


class _ReinitFailed(Exception):
    """A legacy session expired and a new one could not be opened."""


def _content_type(resp: httpx.Response) -> str:
    return str(resp.headers.get("content-type", "")).partition(";")[0].strip().lower()


class HttpTransport:
    """A :class:`~mcpkit.Transport` over Streamable HTTP, for both protocol eras.

    ``HttpTransport(url, headers=None, http_client=None, ...)``: ``headers`` are sent on
    every request (authorisation, say); ``http_client`` is an ``httpx.AsyncClient`` to
    use (not closed by us), else one is created at :meth:`start` and closed by
    :meth:`close`. ``connect_timeout`` bounds connecting; responses have no read
    timeout (each request's deadline is the client's business). ``max_message_size``
    bounds one inbound message. A dropped legacy SSE stream is resumed with
    ``Last-Event-ID`` up to ``max_reconnects`` times in a row without progress, waiting
    the server's ``retry`` or else ``reconnect_delay`` seconds, doubling. ``listen``
    opens the legacy GET stream for server-initiated messages.

    Nothing here raises to the caller of :meth:`send`. Failures become messages:
    an HTTP error with a JSON-RPC error body is delivered as the response to that
    request; any other failed exchange (an error status, a non-JSON body, a stream that
    ends before the response) is delivered as a JSON-RPC error response (code -32603)
    whose message names the status and quotes at most 512 bytes of the body, with
    ``data={"status": ..., "body": ...}`` (and ``"retryAfter"`` when the server sent
    ``Retry-After``), so the awaiting caller gets an ``McpError``.
    A connection that cannot be made or is reset reports ``on_close`` (every pending
    request then fails with ``ConnectionClosed``). Failed notifications are logged.

    Cancellation: when the engine sends ``notifications/cancelled`` for a modern
    request, the request's response stream is closed (that is the cancellation on this
    transport) and nothing is POSTed; for a legacy request the notification is POSTed,
    then its stream is closed.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        connect_timeout: float = 10.0,
        max_message_size: int = 64 * 1024 * 1024,
        max_reconnects: int = 5,
        reconnect_delay: float = 0.25,
        notification_timeout: float = 30.0,
        delete_timeout: float = 2.0,
        listen: bool = True,
    ) -> None:
        self.url = url
        self.headers = dict(headers or {})
        self.connect_timeout = connect_timeout
        self.max_message_size = max_message_size
        self.max_reconnects = max_reconnects
        self.reconnect_delay = reconnect_delay
        self.notification_timeout = notification_timeout
        self.delete_timeout = delete_timeout
        self.listen = listen
        self._client = http_client
        self._owns_client = http_client is None
        self._timeout: Any = None
        self._on_message: OnMessage | None = None
        self._on_close: OnClose | None = None
        self._closed = False  # close() was called
        self._dead = False  # the server is unreachable
        self._reported = False  # on_close was called
        self._tasks: set[asyncio.Task[None]] = set()
        self._inflight: dict[RequestId, tuple[asyncio.Task[None], bool]] = {}  # id -> (task, modern)
        self._methods: dict[RequestId, tuple[str, bool]] = {}  # id -> (method, modern)
        self._tool_headers: dict[str, dict[tuple[str, ...], str]] = {}
        # legacy era
        self._init_params: Any = None
        self._session_id: str | None = None
        self._version: str | None = None
        self._barrier: asyncio.Task[None] | None = None  # the POST of notifications/initialized
        self._listener: asyncio.Task[None] | None = None
        self._reinit_lock = asyncio.Lock()
        self._private_ids = 0
        self._replies: dict[str, _In | None] = {}  # our own requests' replies, by id

    @property
    def session_id(self) -> str | None:
        """The legacy session id the server gave us, if any."""
        return self._session_id

    @property
    def protocol_version(self) -> str | None:
        """The legacy protocol version negotiated by ``initialize``, if any."""
        return self._version

    # --- Transport protocol ----------------------------------------------------------------

    async def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        """Prepare the HTTP client. Connects lazily: an unreachable server shows up as
        ``on_close`` when the first message is sent."""
        import httpx

        self._timeout = httpx.Timeout(self.connect_timeout, read=None, write=None, pool=None)
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self._timeout, follow_redirects=False)
        self._on_message = on_message
        self._on_close = on_close

    def send(self, data: bytes) -> None:
        """POST one message (in a task; never blocks, never raises). Dropped after
        :meth:`close` or once the connection is lost."""
        if self._on_message is None or self._closed or self._dead:
            return
        body = data
        try:
            msg = _decode_out(body)
        except (msgspec.DecodeError, msgspec.ValidationError):
            logger.warning("dropping an outbound message that is not a JSON object")
            return
        method, rid = msg.method, msg.id
        params = msg.params if isinstance(msg.params, dict) else None
        if not isinstance(method, str):  # a response to a request the server sent us
            self._spawn(self._notify("response", body, None))
            return
        modern = self._modern_headers(method, params)
        if rid is UNSET:
            if method == "notifications/cancelled":
                self._cancel(params, body)
            elif method == "notifications/initialized" and modern is None:
                self._barrier = self._spawn(self._notify(method, body, None))
            else:
                self._spawn(self._notify(method, body, modern))
            return
        if not is_request_id(rid):
            logger.warning("dropping a request whose id is not a string or an integer")
            return
        if method == "initialize" and modern is None:
            self._init_params = params
        self._methods[rid] = (method, modern is not None)
        task = self._spawn(self._request(rid, method, body, modern))
        self._inflight[rid] = (task, modern is not None)

    async def drain(self) -> None:
        """Nothing to wait for: each message is its own HTTP request."""
        return None

    async def close(self) -> None:
        """Cancel every exchange in flight, end the legacy session (DELETE, errors
        ignored, ``delete_timeout``), close the HTTP client if we created it, and report
        ``on_close``. Idempotent; never raises (except ``CancelledError``)."""
        if self._closed:
            return
        self._closed = True
        current = asyncio.current_task()
        tasks = [t for t in self._tasks if t is not current]
        for task in tasks:
            task.cancel()
        try:
            if tasks:
                await asyncio.wait(tasks, timeout=self.delete_timeout)
            if self._session_id is not None and self._client is not None and not self._dead:
                try:
                    request = self._client.delete(self.url, headers=self._legacy_headers(None), timeout=self.delete_timeout)
                    await asyncio.wait_for(request, self.delete_timeout)
                except Exception as exc:
                    logger.debug("DELETE of the session failed: %r", exc)
        finally:
            if self._owns_client and self._client is not None:
                try:
                    await self._client.aclose()
                except Exception:
                    logger.debug("closing the HTTP client failed", exc_info=True)
            self._report("closed")

    # --- bookkeeping -----------------------------------------------------------------------

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _report(self, reason: str) -> None:
        if not self._reported:
            self._reported = True
            if self._on_close is not None:
                self._on_close(reason)

    def _lost(self, reason: str) -> None:
        """The server is unreachable: stop everything and report the connection closed."""
        if self._dead or self._closed:
            return
        self._dead = True
        logger.info("HTTP connection lost: %s", reason)
        current = asyncio.current_task()
        for task in list(self._tasks):
            if task is not current:
                task.cancel()
        self._report(reason)

    def _emit(self, data: bytes) -> None:
        if self._on_message is not None and not self._closed:
            self._on_message(data)

    def _fail(self, rid: RequestId, message: str, data: Any = None) -> None:
        """Deliver a synthesized error response for our request ``rid``."""
        error: dict[str, Any] = {"code": INTERNAL_ERROR, "message": message}
        if data is not None:
            error["data"] = data
        self._emit(encode({"jsonrpc": "2.0", "id": rid, "error": error}))

    def _fail_http(self, rid: RequestId, resp: httpx.Response, raw: bytes, what: str = "") -> None:
        excerpt = flatten_text(raw[: _EXCERPT * 4], _EXCERPT)
        head = f"{what + ': ' if what else ''}HTTP {resp.status_code} {resp.reason_phrase}".rstrip()
        data: dict[str, Any] = {"status": resp.status_code, "body": excerpt}
        if "retry-after" in resp.headers:
            data["retryAfter"] = flatten_text(resp.headers["retry-after"], 64)
        self._fail(rid, f"{head}: {excerpt}" if excerpt.strip() else head, data)

    # --- headers ---------------------------------------------------------------------------

    def _modern_headers(self, method: str, params: dict[str, Any] | None) -> dict[str, str] | None:
        """The headers of a modern-era POST, or None for a message of the legacy era."""
        meta = params.get("_meta") if params is not None else None
        version = meta.get(meta_keys.PROTOCOL_VERSION) if isinstance(meta, dict) else None
        if not isinstance(version, str):
            return None
        assert params is not None
        name = params.get("name") if method == "tools/call" else None
        rules = self._tool_headers.get(name) if isinstance(name, str) else None
        return {
            **self.headers,
            "Content-Type": "application/json",
            "Accept": _ACCEPT_BOTH,
            **request_headers(method, params, version, rules),
        }

    def _legacy_headers(self, accept: str | None = _ACCEPT_BOTH) -> dict[str, str]:
        headers = {**self.headers}
        if accept is not None:
            headers["Accept"] = accept
        if self._session_id is not None:
            headers["Mcp-Session-Id"] = self._session_id
        if self._version is not None:
            headers["MCP-Protocol-Version"] = self._version
        return headers

    # --- HTTP ------------------------------------------------------------------------------

    async def _send(self, verb: str, headers: dict[str, str], body: bytes | None = None, timeout: Any = None) -> httpx.Response:
        """Start an exchange and return the response with its body unread. Raises
        :class:`_Lost` if the server cannot be reached or drops the connection before
        answering, ``httpx.TimeoutException`` if it is too slow to answer."""
        import httpx

        assert self._client is not None
        if body is not None:
            headers["Content-Type"] = "application/json"
        request = self._client.build_request(verb, self.url, content=body, headers=headers, timeout=timeout or self._timeout)
        try:
            return await self._client.send(request, stream=True)
        except httpx.TransportError as exc:
            if isinstance(exc, httpx.TimeoutException) and not isinstance(exc, httpx.ConnectTimeout):
                raise  # slow, not gone: this exchange fails, the connection does not
            raise _Lost(f"{verb} {self.url} failed: {type(exc).__name__}: {exc}".rstrip(": ")) from None

    async def _read(self, resp: httpx.Response, limit: int) -> tuple[bytes, bool]:
        """Up to ``limit`` bytes of the body, and whether that is all of it."""
        import httpx

        parts: list[bytes] = []
        size = 0
        try:
            async for chunk in resp.aiter_bytes():
                parts.append(chunk)
                size += len(chunk)
                if size > limit:
                    return b"".join(parts)[:limit], False
        except httpx.HTTPError:
            return b"".join(parts), False
        return b"".join(parts), True

    # --- outbound --------------------------------------------------------------------------

    def _cancel(self, params: dict[str, Any] | None, body: bytes) -> None:
        rid = params.get("requestId") if params is not None else None
        entry = self._inflight.get(rid) if isinstance(rid, (int, str)) else None
        if entry is not None and entry[1]:
            entry[0].cancel()  # modern: closing the response stream is the cancellation
        elif entry is not None or self._init_params is not None:
            self._spawn(self._notify("notifications/cancelled", body, None, entry[0] if entry else None))

    async def _notify(
        self, what: str, body: bytes, headers: dict[str, str] | None, then_cancel: asyncio.Task[None] | None = None
    ) -> None:
        """POST a notification or a response; the server should answer 202."""
        try:
            resp = await self._send("POST", headers or self._legacy_headers(), body, self.notification_timeout)
            try:
                if not 200 <= resp.status_code < 300:
                    raw, _ = await self._read(resp, _ERROR_BODY_LIMIT)
                    excerpt = flatten_text(raw[: _EXCERPT * 4], _EXCERPT)
                    logger.warning("the server refused %s: HTTP %d %s", what, resp.status_code, excerpt)
                    return
            finally:
                await resp.aclose()
            if what == "notifications/initialized" and self._session_id is not None:
                self._start_listener()
        except _Lost as exc:
            self._lost(str(exc))
        except Exception:
            logger.warning("could not send %s", what, exc_info=True)
        finally:
            if then_cancel is not None:
                then_cancel.cancel()

    async def _request(self, rid: RequestId, method: str, body: bytes, modern: dict[str, str] | None) -> None:
        try:
            await self._exchange(rid, method, body, modern)
        except _Lost as exc:
            self._lost(str(exc))
        except _ReinitFailed as exc:
            self._fail(rid, f"The session expired and a new one could not be opened: {exc}", {"status": 404})
        except Exception as exc:
            logger.exception("HTTP exchange for %s failed", method)
            self._fail(rid, flatten_text(f"HTTP transport error: {type(exc).__name__}: {exc}", _EXCERPT))
        finally:
            entry = self._inflight.get(rid)
            if entry is not None and entry[0] is asyncio.current_task():
                del self._inflight[rid]
            self._methods.pop(rid, None)

    async def _exchange(self, rid: RequestId, method: str, body: bytes, modern: dict[str, str] | None) -> None:
        barrier = self._barrier
        if modern is None and barrier is not None and not barrier.done():
            await asyncio.wait([barrier])  # notifications/initialized goes first
        for attempt in (1, 2):
            session = None if modern is not None else self._session_id
            resp = await self._send("POST", dict(modern) if modern is not None else self._legacy_headers(), body)
            try:
                status = resp.status_code
                if 200 <= status < 300:
                    if method == "initialize" and modern is None:
                        self._session_id = resp.headers.get("mcp-session-id") or None
                    await self._consume(resp, rid, modern is not None)
                    return
                raw, _ = await self._read(resp, _ERROR_BODY_LIMIT)
                if attempt == 1 and status == 400 and modern is not None and method == "tools/call" and b"-32020" in raw:
                    fresh = await self._relearn(body, modern)  # HeaderMismatch: the tool's schema may have changed
                    if fresh is None:
                        self._deliver_error(rid, resp, raw)
                        return
                    modern = fresh
                    continue
                if not (attempt == 1 and status == 404 and session is not None and method != "initialize"):
                    self._deliver_error(rid, resp, raw)
                    return
            finally:
                await resp.aclose()
            await self._reinitialize(session)  # the session is gone: open a new one, then retry once

    def _deliver_error(self, rid: RequestId, resp: httpx.Response, raw: bytes) -> None:
        """An error status: its JSON-RPC error body is the response, else one is made up."""
        try:
            env = _decode_in(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            env = None
        if env is not None and env.method is UNSET and isinstance(env.error, dict) and env.id in (None, UNSET, rid):
            self._deliver(raw, rid)
        else:
            self._fail_http(rid, resp, raw)

    async def _consume(self, resp: httpx.Response, rid: RequestId, modern: bool) -> None:
        """Deliver the response to request ``rid`` from a 2xx (or an error standing in)."""
        status = resp.status_code
        if _content_type(resp) == _SSE:
            await self._read_stream(resp, rid, modern)
            return
        if status in (202, 204):
            self._fail(rid, f"HTTP {status}: the server sent no response to the request", {"status": status, "body": ""})
            return
        raw, complete = await self._read(resp, self.max_message_size)
        if not complete:
            if len(raw) >= self.max_message_size:
                self._fail(rid, f"The response exceeds the size limit of {self.max_message_size} bytes", {"status": status})
            else:
                self._fail_http(rid, resp, raw, "Connection lost while reading the response")
            return
        answered = self._deliver(raw, rid)
        if answered is None:
            self._fail_http(rid, resp, raw, "Invalid JSON-RPC response")
        elif not answered:
            self._fail_http(rid, resp, raw, "The response body is not the response to the request")

    async def _private(self, kind: str, method: str, params: Any, headers: dict[str, str]) -> tuple[_In | None, httpx.Response]:
        """POST a request of the transport's own; its reply is kept here, not delivered.
        Returns the reply (None if none came) and the (closed) HTTP response."""
        self._private_ids += 1
        rid = f"{_PRIVATE}{kind}-{self._private_ids}"
        self._replies[rid] = None
        try:
            body = encode({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
            resp = await self._send("POST", headers, body)
            try:
                if resp.status_code == 200 and _content_type(resp) == _SSE:
                    await self._pump(resp, SSEParser(self.max_message_size), rid)
                elif resp.status_code == 200:
                    self._deliver((await self._read(resp, self.max_message_size))[0], rid)
            finally:
                await resp.aclose()
            return self._replies[rid], resp
        finally:
            del self._replies[rid]

    async def _relearn(self, body: bytes, used: dict[str, str]) -> dict[str, str] | None:
        """A modern ``tools/call`` was refused with HeaderMismatch: list the tools again
        (as the spec advises) and return new headers if the tool's annotations changed."""
        params = _decode_out(body).params
        meta = params.get("_meta") if isinstance(params, dict) else None
        if not isinstance(meta, dict):
            return None
        list_params: dict[str, Any] = {"_meta": {k: v for k, v in meta.items() if k != "progressToken"}}
        for _ in range(20):  # pages
            headers = self._modern_headers("tools/list", list_params)
            reply, _ = await self._private("tools", "tools/list", list_params, headers or {})
            try:
                result = _decode_dict(reply.result) if reply is not None and reply.result else None
            except msgspec.ValidationError:
                result = None
            if result is None:
                return None
            self._learn_tools(result)
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str):
                break
            list_params = {**list_params, "cursor": cursor}
        fresh = self._modern_headers("tools/call", params)
        return fresh if fresh is not None and fresh != used else None

    # --- inbound ---------------------------------------------------------------------------

    def _deliver(self, data: bytes, rid: RequestId | None) -> bool | None:
        """Hand one inbound message on. Returns whether it was the response to ``rid``,
        or None if it is not a JSON-RPC message at all (then it is not delivered)."""
        try:
            env = _decode_in(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        mid = env.id
        if env.method is not UNSET:
            self._emit(data)
            return False
        if env.error is not UNSET and (mid is None or mid is UNSET) and rid is not None:
            mid = rid
            data = encode({"jsonrpc": "2.0", "id": rid, "error": env.error})
        if isinstance(mid, str) and mid in self._replies:
            self._replies[mid] = env  # the reply to one of our own requests
            return mid == rid
        info = self._methods.get(mid) if is_request_id(mid) else None
        if info is not None and env.result:
            if info[0] == "initialize":
                self._learn_version(env.result)
            elif info[0] == "tools/list" and info[1] and (self._tool_headers or b"x-mcp-header" in data):
                try:
                    result = _decode_dict(env.result)
                except (msgspec.DecodeError, msgspec.ValidationError):
                    result = {}
                kept = self._learn_tools(result)
                if kept is not None:
                    message = _decode_dict(data)
                    message["result"] = {**result, "tools": kept}
                    data = encode(message)
        self._emit(data)
        return rid is not None and is_request_id(mid) and type(mid) is type(rid) and mid == rid

    def _learn_version(self, raw: msgspec.Raw) -> None:
        try:
            version = _decode_version(raw).protocol_version
        except (msgspec.DecodeError, msgspec.ValidationError):
            return
        if isinstance(version, str) and version.isascii() and version.isprintable():
            self._version = version

    def _learn_tools(self, result: dict[str, Any]) -> list[Any] | None:
        """Remember the ``x-mcp-header`` annotations of listed tools. Tools whose
        annotations are invalid are left out, with a warning, as the spec requires:
        returns the tools to keep if any were left out, else None."""
        tools = result.get("tools")
        if not isinstance(tools, list):
            return None
        kept: list[Any] = []
        for tool in tools:
            name = tool.get("name") if isinstance(tool, dict) else None
            if not isinstance(name, str):
                kept.append(tool)
                continue
            self._tool_headers.pop(name, None)
            try:
                mapping = x_mcp_header_map(tool.get("inputSchema"))
            except ValueError as exc:
                logger.warning("leaving out tool %r: %s", flatten_text(name, 256), exc)
                continue
            if mapping:
                self._tool_headers[name] = mapping
            kept.append(tool)
        return kept if len(kept) < len(tools) else None

    async def _pump(self, resp: httpx.Response, parser: SSEParser, rid: RequestId | None) -> tuple[bool, int]:
        """Deliver the events of an SSE stream until it ends or carries the response to
        ``rid``. Returns (response seen, messages delivered). Raises ``ValueError`` for
        an event over the size limit."""
        import httpx

        count = 0
        try:
            async for chunk in resp.aiter_bytes():
                for event in parser.feed(chunk):
                    if not event.data:
                        continue  # a priming event: it only carries an id (and retry)
                    answered = self._deliver(event.data.encode(), rid)
                    if answered is None:
                        logger.warning("ignoring an SSE event that is not a JSON-RPC message")
                        continue
                    count += 1
                    if answered:
                        return True, count
        except httpx.HTTPError as exc:
            logger.debug("SSE stream ended: %r", exc)
        return False, count

    async def _read_stream(self, resp: httpx.Response, rid: RequestId, modern: bool) -> None:
        parser = SSEParser(self.max_message_size)
        try:
            answered, _ = await self._pump(resp, parser, rid)
        except ValueError as exc:
            self._fail(rid, f"Invalid response stream: {exc}")
            return
        if answered:
            return
        if modern:
            self._fail(rid, "The server closed the response stream before sending the response", {"status": resp.status_code})
            return
        await resp.aclose()
        await self._follow(parser, rid)

    def _delay(self, parser: SSEParser, attempt: int) -> float:
        if parser.retry is not None:
            return parser.retry / 1000
        return float(min(self.reconnect_delay * 2 ** (attempt - 1), 30.0))

    def _start_listener(self) -> None:
        if self.listen and not self._closed and not self._dead and self._listener is None:
            self._listener = self._spawn(self._listen())

    async def _listen(self) -> None:
        try:
            await self._follow(SSEParser(self.max_message_size), None)
        except _Lost as exc:
            self._lost(str(exc))

    async def _follow(self, parser: SSEParser, rid: RequestId | None) -> None:
        """Legacy: GET an SSE stream and follow it across reconnections — the session's
        stream of server-initiated messages (``rid`` None), or the rest of request
        ``rid``'s dropped response stream (with ``Last-Event-ID``, after waiting the
        server's ``retry``). Gives up after ``max_reconnects`` reconnections in a row that
        bring nothing. Raises :class:`_Lost`."""
        failures, wait = 0, rid is not None
        while True:
            last = parser.last_event_id
            if wait:
                if failures >= self.max_reconnects or (rid is not None and not last):
                    break
                failures += 1
                await asyncio.sleep(self._delay(parser, failures))
            wait = True
            headers = self._legacy_headers(_SSE)
            if last:
                headers["Last-Event-ID"] = last
            resp = await self._send("GET", headers)
            try:
                if not 200 <= resp.status_code < 300 or _content_type(resp) != _SSE:
                    raw, _ = await self._read(resp, _ERROR_BODY_LIMIT)
                    if rid is not None:
                        self._fail_http(rid, resp, raw, "Could not resume the response stream")
                    else:  # 405: the server offers no GET stream
                        level = logging.DEBUG if resp.status_code == 405 else logging.INFO
                        logger.log(level, "no GET stream: HTTP %d", resp.status_code)
                    return
                fresh = SSEParser(self.max_message_size)
                fresh.last_event_id, fresh.retry, parser = last, parser.retry, fresh
                try:
                    answered, count = await self._pump(resp, parser, rid)
                except ValueError as exc:
                    if rid is not None:
                        self._fail(rid, f"Invalid response stream: {exc}")
                    logger.warning("SSE stream: %s", exc)
                    return
                if answered:
                    return
                if count or parser.last_event_id != last:
                    failures = 0  # progress: the server polls, it is not failing
            finally:
                await resp.aclose()
        if rid is not None:
            what = "could not be resumed" if failures else "carried no event id to resume from"
            self._fail(rid, f"The response stream ended before the response and {what}")
        else:
            logger.info("GET stream: giving up after %d reconnections without progress", self.max_reconnects)

    # --- legacy session --------------------------------------------------------------------

    async def _reinitialize(self, stale: str | None) -> None:
        """Legacy: the server forgot our session. Open a new one with the remembered
        ``initialize`` params (once, however many requests noticed). Raises
        :class:`_ReinitFailed` or :class:`_Lost`."""
        async with self._reinit_lock:
            if self._session_id != stale:
                return  # another request already opened a new session
            if self._init_params is None:
                raise _ReinitFailed("no initialize to repeat")
            if self._listener is not None:
                self._listener.cancel()
                self._listener = None
            reply, resp = await self._private("reinit", "initialize", self._init_params, {**self.headers, "Accept": _ACCEPT_BOTH})
            if reply is None or not reply.result:
                error = reply.error if reply is not None else None
                message = error.get("message") if isinstance(error, dict) else f"HTTP {resp.status_code}"
                raise _ReinitFailed(flatten_text(str(message), _EXCERPT))
            self._learn_version(reply.result)
            self._session_id = resp.headers.get("mcp-session-id") or None
            logger.info("legacy session expired; opened a new one")
            note = encode({"jsonrpc": "2.0", "method": "notifications/initialized"})
            await self._notify("notifications/initialized", note, None)  # starts the GET stream
