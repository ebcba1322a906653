"""The GET stream of the deprecated HTTP+SSE transport (2024-11-05): the endpoint, then
the server's messages.

The client opens ``GET <url>`` with ``Accept: text/event-stream``. The first event must
be ``endpoint``; its data is the URI to POST messages to, resolved against the stream's
URL, and it must be on the stream's origin (scheme, host and port): an endpoint
elsewhere is refused, since every message, and the headers that authorise it, would
go there. Each later ``message`` event is one JSON-RPC message from the server, handed
on whole; events of other types are ignored. The connection lives as long as this
stream: whatever ends it (the server, a broken connection, no ``endpoint`` within
``connect_timeout``) ends the connection, with a reason that says so.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Final
from urllib.parse import urljoin, urlsplit

from ....protocol.errors import flatten_text
from ....protocol.sse import SSEEvent, SSEParser
from ..client.connection import Connection
from ..client.exchange import HttpExchange, Lost, content_type
from ..client.settings import Settings
from ..client.wire import ERROR_BODY_LIMIT, EXCERPT, SSE

if TYPE_CHECKING:
    import httpx

__all__ = ["EventStream", "resolve_endpoint"]

logger = logging.getLogger("mcpkit.http")

_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, str, int | None]:
    """The origin of ``url``: scheme, host and port (the scheme's default if none).
    Raises ``ValueError`` for an invalid port."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or _DEFAULT_PORTS.get(scheme)


def resolve_endpoint(base: str, data: str) -> str:
    """The absolute URL that an ``endpoint`` event's ``data`` names, resolved against the
    stream's URL ``base``. Raises ``ValueError`` (with a message that says why) if it is
    empty, contains control characters or names another origin than ``base``."""
    uri = data.strip()
    if not uri:
        raise ValueError("the endpoint event is empty")
    if not uri.isprintable() or " " in uri:
        raise ValueError(f"the endpoint {flatten_text(uri, 200)!r} is not a URI")
    url = urljoin(base, uri)
    try:
        same = _origin(url) == _origin(base)
    except ValueError as exc:
        raise ValueError(f"the endpoint {flatten_text(uri, 200)!r} is not a URI: {exc}") from None
    if not same:
        raise ValueError(f"the endpoint {flatten_text(url, 200)!r} is not on the origin of {base} (refused)")
    return url


class _Ended(Exception):
    """The stream cannot be used: ``str(exc)`` says why."""


class EventStream:
    """Reads the GET stream: the ``endpoint`` event (handed to ``on_endpoint``), then the
    server's messages (handed to the connection's ``emit``), until it ends."""

    def __init__(self, settings: Settings, http: HttpExchange, conn: Connection, on_endpoint: Callable[[str], None]) -> None:
        self._settings = settings
        self._http = http
        self._conn = conn
        self._on_endpoint = on_endpoint

    async def run(self) -> None:
        """Open the stream, wait for the endpoint (``connect_timeout`` in all), then hand
        on the server's messages until the stream ends; then the connection is lost, with
        the reason. Never raises but ``CancelledError`` (which closes the stream)."""
        import httpx

        timeout = self._settings.connect_timeout
        resp: httpx.Response | None = None
        try:
            parser = SSEParser(self._settings.max_message_size)
            try:
                async with asyncio.timeout(timeout):
                    headers = {**self._settings.headers, "Accept": SSE, "Cache-Control": "no-cache"}
                    resp = await self._http.send("GET", headers)
                    await self._check(resp)
                    chunks = resp.aiter_bytes()
                    first, rest = await self._first_event(chunks, parser)
                self._on_endpoint(self._endpoint(first))
                for event in rest:
                    self._dispatch(event)
                async for chunk in chunks:
                    for event in parser.feed(chunk):
                        self._dispatch(event)
                reason = f"The server ended the SSE stream of {self._settings.url}"
            except TimeoutError:
                reason = f"No endpoint event from {self._settings.url} within {timeout:g} s"
            except (Lost, _Ended) as exc:
                reason = str(exc)
            except ValueError as exc:  # an event over max_message_size
                reason = f"Invalid SSE stream from {self._settings.url}: {exc}"
            except httpx.HTTPError as exc:
                reason = f"The SSE stream of {self._settings.url} broke: {type(exc).__name__}: {exc}".rstrip(": ")
        finally:
            if resp is not None:
                await resp.aclose()
        self._conn.lost(reason)

    async def _check(self, resp: httpx.Response) -> None:
        """Raise :class:`_Ended` unless ``resp`` is a 200 event stream."""
        if resp.status_code == 200 and content_type(resp) == SSE:
            return
        raw, _ = await self._http.read(resp, ERROR_BODY_LIMIT)
        excerpt = flatten_text(raw[: EXCERPT * 4], EXCERPT)
        what = f"GET {self._settings.url}: HTTP {resp.status_code} {resp.reason_phrase}".rstrip()
        if resp.status_code == 200:
            what += f", {content_type(resp) or 'no content type'} rather than an SSE stream"
        raise _Ended(f"{what}: {excerpt}" if excerpt.strip() else what)

    async def _first_event(self, chunks: AsyncIterator[bytes], parser: SSEParser) -> tuple[SSEEvent, list[SSEEvent]]:
        """The stream's first event and any that came in the same chunk after it. Raises
        :class:`_Ended` if the stream ends before one."""
        async for chunk in chunks:
            events = parser.feed(chunk)
            if events:
                return events[0], events[1:]
        raise _Ended(f"The SSE stream of {self._settings.url} ended before the endpoint event")

    def _endpoint(self, event: SSEEvent) -> str:
        """The endpoint URL that ``event`` names. Raises :class:`_Ended` if it is not an
        ``endpoint`` event or its URI is refused."""
        if event.event != "endpoint":
            raise _Ended(
                f"The first event of {self._settings.url} is {flatten_text(event.event, 60)!r}, not 'endpoint':"
                " not an HTTP+SSE server"
            )
        try:
            return resolve_endpoint(self._settings.url, event.data)
        except ValueError as exc:
            raise _Ended(f"Refused the endpoint of {self._settings.url}: {exc}") from None

    def _dispatch(self, event: SSEEvent) -> None:
        """Hand on a ``message`` event's data; ignore other events."""
        if event.event == "message" and event.data:
            self._conn.emit(event.data.encode())
        else:
            logger.debug("ignoring an SSE event of type %r", event.event)
