"""Listening for changes, one API for both eras (docs/subscriptions.md).

``async with client.listen(tools=True, resource_uris=[...]) as changes: async for change
in changes: ...`` — in the modern era a ``subscriptions/listen`` request that stays open
(acknowledged first; its notifications tagged with its id); in the legacy era the
session's own list-changed notifications plus ``resources/subscribe`` for each URI
(unsubscribed on exit). A modern stream that drops is reopened (a bounded number of
times, with back-off); since changes may have been missed meanwhile, the reopening
yields one change per list and resource watched, so a consumer that re-lists on each
change is never left stale. The same holds when the client reconnects (a restarted
server, a renewed legacy session): the modern stream is reopened once the client is
connected again, a legacy subscription sends ``resources/subscribe`` again
(:meth:`Subscription._restore`, which it hands the client to run after a reconnection),
and either yields the catch-up changes.

A subscription works on the client's call core through :class:`Listening`: the
:class:`~.core.CallCore` and the two hooks of reconnection. Which mechanism it uses is
the era's: where requests are stateless (2026-07-28) there is no session to carry the
changes, so they come on a stream of their own.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Collection
from types import TracebackType
from typing import Any, Final, Literal, Protocol, TypeAlias

from ..protocol.errors import ConnectionClosed, McpError, RequestTimeout
from ..protocol.events import RequestId
from .core import CallCore

__all__ = ["Listening", "Subscription", "SubscriptionEvent"]

SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"
_KINDS: Final = {
    "notifications/tools/list_changed": "tools",
    "notifications/prompts/list_changed": "prompts",
    "notifications/resources/list_changed": "resources",
    "notifications/resources/updated": "resource",
}
#: A listen request has no deadline of its own: it lasts until cancelled.
_FOREVER: Final = 10 * 365 * 86400.0
_REOPEN_DELAYS: Final = (0.1, 0.5, 1.0, 2.0, 5.0)
_FILTER_FIELDS: Final = (("tools", "toolsListChanged"), ("prompts", "promptsListChanged"), ("resources", "resourcesListChanged"))


class Listening(CallCore, Protocol):
    """What a subscription needs of the client's call core beyond requests: to be
    restored after a reconnection, and to know whether one is under way."""

    def on_reconnected(self, restore: Callable[[], Awaitable[None]]) -> Callable[[], None]:
        """Await ``restore()`` after each reconnection or renewed session, once the
        connection is usable again; returns the function that stops it."""
        ...

    async def reconnected(self) -> bool:
        """If a reconnection is under way, wait for it and return whether the client is
        connected after it; False at once otherwise."""
        ...


#: What a subscription works through: the client's call core, which ``Client.listen``
#: hands over. Named so because it is what the public signature ``Subscription(client,
#: ...)`` has always said.
Client: TypeAlias = Listening


@dataclasses.dataclass(frozen=True, slots=True)
class SubscriptionEvent:
    """One change: ``kind`` is ``"tools"``, ``"prompts"`` or ``"resources"`` (that list
    changed: list it again) or ``"resource"`` (``uri`` was updated: read it again)."""

    kind: Literal["tools", "prompts", "resources", "resource"]
    uri: str | None = None


class Subscription:
    """An open subscription: an async context manager and an async iterator of
    :class:`SubscriptionEvent`. Iteration ends when the server ends the subscription
    gracefully; it raises :class:`~mcpkit.ConnectionClosed` when the connection is gone
    for good (after the reopening attempts, in the modern era)."""

    def __init__(self, client: Client, *, lists: Collection[str], uris: Collection[str], max_pending: int = 10_000) -> None:
        self._core = client
        self.lists = frozenset(lists)
        self.uris = list(dict.fromkeys(uris))
        self._queue: asyncio.Queue[SubscriptionEvent | BaseException | None] = asyncio.Queue(max_pending)
        self._request_id: RequestId | None = None
        self._acknowledged: asyncio.Future[dict[str, Any]] | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop_listening: Callable[[], None] | None = None
        self._stop_restoring: Callable[[], None] | None = None
        #: What the server agreed to deliver (modern: its acknowledgement; legacy: what was asked).
        self.acknowledged: dict[str, Any] = {}
        self.reopened = 0
        self._live = False  # the current listen request was acknowledged

    @property
    def _streamed(self) -> bool:
        """Whether changes come on a ``subscriptions/listen`` stream (no session carries them)."""
        return self._core.policy.stateless

    # --- lifecycle ------------------------------------------------------------------------------

    async def __aenter__(self) -> Subscription:
        """Open the subscription. Raises :class:`McpError` if the server refuses it,
        ``RequestTimeout`` if it is not acknowledged within the client's request timeout."""
        self._stop_listening = self._core.inbound.listen(self._on_notification)
        self._stop_restoring = self._core.on_reconnected(self._restore)
        try:
            if self._streamed:
                await self._open()
            else:
                for uri in self.uris:
                    await self._subscribe(uri)
                self.acknowledged = {"lists": sorted(self.lists), "resourceSubscriptions": self.uris}
        except BaseException:
            await self._close()
            raise
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        await self._close()

    async def _close(self) -> None:
        if self._stop_restoring is not None:
            self._stop_restoring()
            self._stop_restoring = None
        if self._stop_listening is not None:
            self._stop_listening()
            self._stop_listening = None
        task, self._task = self._task, None
        if task is not None:
            task.cancel()  # cancels the listen request on the wire
            await asyncio.gather(task, return_exceptions=True)
        elif not self._streamed and self._core.connected:
            for uri in self.uris:
                try:
                    await self._core.call("resources/unsubscribe", {"uri": uri}, dict[str, Any], None)
                except McpError:
                    break  # the connection is going: nothing to undo

    async def _subscribe(self, uri: str) -> None:
        """Legacy era: ``resources/subscribe`` for ``uri``. Raises ``McpError``."""
        await self._core.call("resources/subscribe", {"uri": uri}, dict[str, Any], None)

    async def _open(self) -> None:
        loop = asyncio.get_running_loop()
        self._acknowledged = loop.create_future()
        params: dict[str, Any] = {"notifications": self._filter()}
        self._task = loop.create_task(self._run(params))
        timeout = self._core.options.request_timeout
        waits: set[asyncio.Future[Any]] = {self._acknowledged, self._task}
        done, _ = await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if self._acknowledged in done:
            self.acknowledged = self._acknowledged.result()
            return
        if self._task in done:
            self._task.result()  # raises the server's refusal
            raise ConnectionClosed("The subscription ended before it was acknowledged")
        raise RequestTimeout(self._request_id)

    def _filter(self) -> dict[str, Any]:
        wanted: dict[str, Any] = {}
        for kind, field in (
            ("tools", "toolsListChanged"),
            ("prompts", "promptsListChanged"),
            ("resources", "resourcesListChanged"),
        ):
            if kind in self.lists:
                wanted[field] = True
        if self.uris:
            wanted["resourceSubscriptions"] = self.uris
        return wanted

    async def _run(self, params: dict[str, Any]) -> None:
        """The listen request; reopened when it fails after its acknowledgement (the
        stream was cut, the connection failed: transports report that as an error too),
        up to len(_REOPEN_DELAYS) times in a row. Ends the iteration when the server
        answers; an error before the acknowledgement (a refusal) ends it with that error."""
        failures = 0
        while True:
            try:
                await self._core.request("subscriptions/listen", params, _FOREVER, None, on_start=self._started)
            except McpError as exc:
                if not exc.local and not self._live:  # refused before it was acknowledged: over
                    self._queue.put_nowait(exc)
                    return
                # dropped once live (the stream was cut, the connection failed): reopen
                if self._live:
                    failures = 0  # it had been working: count the attempts afresh
                if isinstance(exc, ConnectionClosed) and await self._core.reconnected():
                    self.reopened += 1  # the client reconnected: a new connection, no wait
                    self._resync()
                    continue
                if failures >= len(_REOPEN_DELAYS) or not self._core.connected:
                    self._queue.put_nowait(exc)
                    return
                await asyncio.sleep(_REOPEN_DELAYS[failures])
                failures += 1
                self.reopened += 1
                self._resync()
                continue
            self._queue.put_nowait(None)  # answered: the server ended it gracefully
            return

    async def _restore(self) -> None:
        """The client reconnected (a new server process, a new legacy session): a
        legacy subscription asks again for each resource, and either era yields one
        change per list and resource watched (changes may have been missed). A modern
        one reopens its stream by itself. Raises ``McpError`` if the server refuses."""
        if not self._streamed:
            for uri in self.uris:
                await self._subscribe(uri)
            self._resync()

    def _started(self, request_id: RequestId) -> None:
        self._request_id = request_id
        self._live = False  # until this attempt is acknowledged

    def _resync(self) -> None:
        """After a gap: one change per list and resource watched."""
        for kind in ("tools", "prompts", "resources"):
            if kind in self.lists:
                self._put(SubscriptionEvent(kind))
        for uri in self.uris:
            self._put(SubscriptionEvent("resource", uri))

    # --- delivery -------------------------------------------------------------------------------

    def _on_notification(self, method: str, params: dict[str, Any]) -> None:
        if self._streamed:
            meta = params.get("_meta")
            if not isinstance(meta, dict) or meta.get(SUBSCRIPTION_ID) != self._request_id or self._request_id is None:
                return
            if method == "notifications/subscriptions/acknowledged":
                self._live = True
                ack = self._acknowledged
                if ack is not None and not ack.done():
                    honored = params.get("notifications")
                    ack.set_result(honored if isinstance(honored, dict) else {})
                return
        kind = _KINDS.get(method)
        if kind is None:
            return
        if kind == "resource":
            uri = params.get("uri")
            if isinstance(uri, str) and uri in self.uris:
                self._put(SubscriptionEvent("resource", uri))
        elif kind in self.lists:
            self._put(SubscriptionEvent(kind))  # type: ignore[arg-type]

    def _put(self, event: SubscriptionEvent) -> None:
        try:
            self._queue.put_nowait(event)
        except asyncio.QueueFull:  # the consumer fell behind: one change per list and resource
            items: list[SubscriptionEvent | BaseException | None] = []
            while not self._queue.empty():
                items.append(self._queue.get_nowait())
            items.append(event)
            last = {item: i for i, item in enumerate(items) if isinstance(item, SubscriptionEvent)}
            for i, item in enumerate(items):
                if not isinstance(item, SubscriptionEvent) or last[item] == i:
                    self._queue.put_nowait(item)

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> SubscriptionEvent:
        item = await self._queue.get()
        if item is None:
            raise StopAsyncIteration
        if isinstance(item, BaseException):
            raise item
        return item
