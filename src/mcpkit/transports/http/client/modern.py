"""The modern era (2026-07-28) on the client side: stateless POSTs with mirrored headers.

A message is modern when its ``params._meta`` names a protocol version; nothing else
about it is remembered between messages but the ``x-mcp-header`` rules of the tools
listed so far. Each POST carries ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``
and the ``Mcp-Param-*`` headers its tool's rules ask for. A ``tools/call`` refused with
HeaderMismatch (-32020) makes the transport list the tools again and, if the tool's
rules changed, retry once. Cancelling a request closes its response stream; nothing is
POSTed (docs/http.md).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Final

import msgspec

from ....protocol import meta as meta_keys
from ....protocol.engine import encode
from ....protocol.errors import HEADER_MISMATCH, flatten_text
from ....protocol.events import RequestId
from ....protocol.headers import HeaderRules, request_headers, x_mcp_header_map
from ....protocol.sse import SSEParser
from .connection import Connection
from .failures import Failures
from .inbound import PrivateRequests
from .notifier import Notifier
from .runner import Route
from .settings import Settings
from .wire import ACCEPT_BOTH, decode_dict, decode_out

if TYPE_CHECKING:
    import httpx

__all__ = ["ModernEra", "ModernMessage", "ModernRequest"]

logger = logging.getLogger("mcpkit.http")

_MISMATCH: Final = b"%d" % HEADER_MISMATCH
_MAX_PAGES: Final = 20  # of tools/list, when relearning


class ModernEra:
    """The modern era's part of the transport: claims modern messages, computes their
    headers, and learns the tools' header rules."""

    def __init__(
        self, settings: Settings, conn: Connection, notifier: Notifier, private: PrivateRequests, failures: Failures
    ) -> None:
        self._settings = settings
        self._conn = conn
        self._notifier = notifier
        self._private = private
        self.failures = failures
        self._rules: dict[str, HeaderRules] = {}  # tool name -> its x-mcp-header rules
        #: Tools left out of the listings for invalid ``x-mcp-header`` annotations: name -> why.
        self.rejected: dict[str, str] = {}

    def claim(self, params: dict[str, Any] | None, built: bytes | None = None) -> ModernMessage | None:
        """The era part of a message with ``params`` if it is modern (its ``_meta``
        names a protocol version), else None: this is the transport's one era decision.
        ``built`` is the message's bytes when ``params`` are the caller's own rather than
        decoded from them."""
        meta = params.get("_meta") if params is not None else None
        version = meta.get(meta_keys.PROTOCOL_VERSION) if isinstance(meta, dict) else None
        if params is None or not isinstance(version, str):
            return None
        return ModernMessage(self, params, version, built)

    def headers(self, method: str, params: dict[str, Any], version: str, built: bytes | None = None) -> dict[str, str]:
        """The headers of a modern POST of ``method``, mirroring ``params``; a tool's
        ``x-mcp-header`` rules read its arguments from ``built`` (the message's bytes,
        when ``params`` are the caller's own), as the server will."""
        name = params.get("name") if method == "tools/call" else None
        rules = self._rules.get(name) if isinstance(name, str) else None
        if rules and built is not None:
            sent = decode_out(built).params
            params = sent if isinstance(sent, dict) else {}
        return {
            **self._settings.headers,
            "Content-Type": "application/json",
            "Accept": ACCEPT_BOTH,
            **request_headers(method, params, version, rules),
        }

    def notify(self, method: str, params: dict[str, Any], version: str, body: bytes, built: bytes | None) -> None:
        """POST a notification with its mirrored headers (computed now), in a task;
        ``built`` as for :meth:`headers`."""
        headers = self.headers(method, params, version, built)
        self._conn.spawn(self._notifier.post(method, body, lambda: headers))

    def learn_listing(self, result: msgspec.Raw, data: bytes) -> bytes:
        """A ``tools/list`` result arrived (``data`` is the whole message): learn the
        tools' rules, and return the message to deliver — without the tools whose
        annotations are invalid, if any were."""
        if not (self._rules or b"x-mcp-header" in data):
            return data
        try:
            listing = decode_dict(result)
        except (msgspec.DecodeError, RecursionError):  # ValidationError included
            listing = {}
        kept = self._learn_tools(listing)
        if kept is None:
            return data
        message = decode_dict(data)
        message["result"] = {**listing, "tools": kept}
        return encode(message)

    def _learn_tools(self, listing: dict[str, Any]) -> list[Any] | None:
        """Remember the ``x-mcp-header`` annotations of listed tools. Tools whose
        annotations are invalid are left out, as the spec requires, and kept in
        :attr:`rejected` with the reason; a warning on the ``mcpkit.http`` logger names
        each such tool and why, once (again only if its reason changes). Returns the tools
        to keep if any were left out, else None."""
        tools = listing.get("tools")
        if not isinstance(tools, list):
            return None
        kept: list[Any] = []
        for tool in tools:
            name = tool.get("name") if isinstance(tool, dict) else None
            if not isinstance(name, str):
                kept.append(tool)
                continue
            self._rules.pop(name, None)
            try:
                mapping = x_mcp_header_map(tool.get("inputSchema"))
            except ValueError as exc:
                reason = flatten_text(str(exc), 512)
                if self.rejected.get(name) != reason:
                    logger.warning(
                        "leaving out tool %r of the server's tools/list: its x-mcp-header annotations are invalid (%s)",
                        flatten_text(name, 256),
                        reason,
                    )
                self.rejected[name] = reason
                continue
            self.rejected.pop(name, None)
            if mapping:
                self._rules[name] = mapping
            kept.append(tool)
        return kept if len(kept) < len(tools) else None

    async def relearn(
        self, params: dict[str, Any], version: str, used: dict[str, str], built: bytes | None
    ) -> dict[str, str] | None:
        """A ``tools/call`` with ``params`` was refused with HeaderMismatch: list the
        tools again (as the spec advises) and return new headers for the call if the
        tool's annotations changed, else None. Raises :class:`~.exchange.Lost`, and
        ``ValueError`` for an SSE event over the size limit. ``built`` as for :meth:`headers`."""
        meta = params["_meta"]
        list_params: dict[str, Any] = {"_meta": {k: v for k, v in meta.items() if k != meta_keys.PROGRESS_TOKEN}}
        for _ in range(_MAX_PAGES):
            headers = self.headers("tools/list", list_params, version)
            reply, _ = await self._private.post("tools", "tools/list", list_params, headers)
            try:
                listing = decode_dict(reply.result) if reply is not None and reply.result else None
            except (msgspec.DecodeError, RecursionError):  # ValidationError included
                listing = None
            if listing is None:
                return None
            self._learn_tools(listing)
            cursor = listing.get("nextCursor")
            if not isinstance(cursor, str):
                break
            list_params = {**list_params, "cursor": cursor}
        fresh = self.headers("tools/call", params, version, built)
        return fresh if fresh != used else None


class ModernMessage:
    """One modern message: its params and the protocol version it names; ``built`` is
    the message's bytes when the params are the caller's own (not decoded from them)."""

    def __init__(self, era: ModernEra, params: dict[str, Any], version: str, built: bytes | None) -> None:
        self._era = era
        self._params = params
        self._version = version
        self._built = built

    def notify(self, method: str, body: bytes) -> None:
        """POST the notification with its mirrored headers, in a task."""
        self._era.notify(method, self._params, self._version, body, self._built)

    def route(self, method: str) -> ModernRequest:
        """The route of the request, its headers computed now."""
        return ModernRequest(self._era, method, self._params, self._version, self._built)


class ModernRequest(Route):
    """A modern request: stateless, its headers fixed unless a HeaderMismatch makes the
    transport relearn them."""

    def __init__(self, era: ModernEra, method: str, params: dict[str, Any], version: str, built: bytes | None) -> None:
        super().__init__(method)
        self._era = era
        self._params = params
        self._version = version
        self._built = built
        self._headers = era.headers(method, params, version, built)

    def headers(self) -> dict[str, str]:
        return dict(self._headers)

    async def should_retry(self, status: int, raw: bytes) -> bool:
        """Retry a ``tools/call`` refused with HeaderMismatch once the tool's rules,
        listed again, give other headers."""
        if status != 400 or self.method != "tools/call" or _MISMATCH not in raw:
            return False
        fresh = await self._era.relearn(self._params, self._version, self._headers, self._built)  # the schema may have changed
        if fresh is None:
            return False
        self._headers = fresh
        return True

    async def stream_ended(self, resp: httpx.Response, parser: SSEParser, rid: RequestId) -> None:
        """A modern stream is not resumable: the request fails."""
        message = "The server closed the response stream before sending the response"
        self._era.failures.fail(rid, message, {"status": resp.status_code})

    def learn(self, result: msgspec.Raw, data: bytes) -> bytes:
        if self.method == "tools/list":
            return self._era.learn_listing(result, data)
        return data

    def cancel(self, task: asyncio.Task[None], body: bytes) -> None:
        """Closing the response stream is the cancellation: the task is cancelled and
        nothing is POSTed."""
        task.cancel()
