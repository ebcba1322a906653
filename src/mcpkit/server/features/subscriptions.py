"""Subscribing to changes (docs/subscriptions.md): ``resources/subscribe`` and
``resources/unsubscribe`` in the legacy era, ``subscriptions/listen`` in the modern one.

A legacy connection hears every list change once initialized, and the updates of the
resources it subscribed to; the delivery is set up by the transport that owns the
connection (:meth:`mcpkit.Server.connect`). A modern ``subscriptions/listen`` request is
itself the stream: it is acknowledged first, then carries the notifications its filter
asks for (``taskIds``: the status of those tasks, ``notifications/tasks``, for a client
of the tasks extension), each tagged with its subscription id, until the client cancels it or the
server shuts down (then it is answered, the graceful end).
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

import msgspec

from ...protocol.errors import INVALID_PARAMS, McpError, echo, flatten_text
from ...protocol.tasks import declares_tasks, missing_tasks_extension
from ...protocol.types import EmptyResult, Params, ReadResourceParams
from ..changes import Subscriber
from ..context import Call, Context
from ..registry import Registry
from ..session import Session
from ..tasks import MAX_WATCHED_TASKS

__all__ = ["subscribe", "unsubscribe", "listen", "ListenParams", "SUBSCRIPTION_ID", "RESOURCE_NOT_FOUND"]

#: The ``_meta`` key that tags every message of a modern subscription.
SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"
RESOURCE_NOT_FOUND: Final = -32002
#: The list-changed filter fields of ``subscriptions/listen``: wire name -> (list, attribute).
_LIST_FIELDS: Final = {
    "toolsListChanged": ("tools", "tools_list_changed"),
    "promptsListChanged": ("prompts", "prompts_list_changed"),
    "resourcesListChanged": ("resources", "resources_list_changed"),
}
#: How many resources one subscription may watch.
MAX_URIS: Final = 1000


class NotificationFilter(msgspec.Struct, kw_only=True, rename="camel"):
    tools_list_changed: bool = False
    prompts_list_changed: bool = False
    resources_list_changed: bool = False
    resource_subscriptions: list[str] = []
    task_ids: list[str] = []


class ListenParams(Params, kw_only=True):
    notifications: NotificationFilter = msgspec.field(default_factory=NotificationFilter)


def _known(reg: Registry, uri: str) -> None:
    if not reg.knows_resource(uri):
        raise McpError(RESOURCE_NOT_FOUND, f"Resource not found: {flatten_text(uri, 256)}", {"uri": echo(uri)})


async def subscribe(reg: Registry, ctx: Context, call: Call, params: ReadResourceParams) -> EmptyResult:
    """Legacy: watch ``uri`` on this connection. Raises -32002 for an unknown resource,
    -32602 past :data:`MAX_URIS` on one connection."""
    _known(reg, params.uri)
    session = call.session
    if isinstance(session, Session):
        if len(session.resource_uris) >= MAX_URIS and params.uri not in session.resource_uris:
            raise McpError(INVALID_PARAMS, f"Invalid params: at most {MAX_URIS} subscribed resources per session")
        session.resource_uris.add(params.uri)
    return EmptyResult()


async def unsubscribe(reg: Registry, ctx: Context, call: Call, params: ReadResourceParams) -> EmptyResult:
    """Legacy: stop watching ``uri`` (not an error if it was not watched)."""
    session = call.session
    if isinstance(session, Session):
        session.resource_uris.discard(params.uri)
    return EmptyResult()


async def listen(reg: Registry, ctx: Context, call: Call, params: ListenParams) -> Any:
    """Modern: acknowledge, then deliver what the filter names until cancelled (no
    response) or until the server shuts down (a result, the graceful end). Raises
    ``McpError(-32602)`` for more than :data:`MAX_URIS` resources or
    :data:`MAX_WATCHED_TASKS` tasks, -32021 for ``taskIds`` from a client that did not
    declare the tasks extension. Of the tasks, it agrees to those the client may see."""
    wanted = params.notifications
    uris = list(dict.fromkeys(wanted.resource_subscriptions))
    if len(uris) > MAX_URIS:
        raise McpError(INVALID_PARAMS, f"Invalid params: at most {MAX_URIS} resourceSubscriptions per subscription")
    task_ids: list[str] = []
    if wanted.task_ids:
        if not declares_tasks(ctx.client_capabilities):
            raise missing_tasks_extension("notifications/tasks")
        if len(wanted.task_ids) > MAX_WATCHED_TASKS:
            raise McpError(INVALID_PARAMS, f"Invalid params: at most {MAX_WATCHED_TASKS} taskIds per subscription")
        task_ids = await reg.tasks.visible(wanted.task_ids)
    meta = {SUBSCRIPTION_ID: ctx.request_id}
    honored: dict[str, Any] = {field: True for field, (_, attr) in _LIST_FIELDS.items() if getattr(wanted, attr)}
    if uris:
        honored["resourceSubscriptions"] = uris
    if wanted.task_ids:
        honored["taskIds"] = task_ids
    outbound = call.outbound

    def emit(method: str, body: dict[str, Any]) -> None:
        outbound.notify(method, {**body, "_meta": meta})

    emit("notifications/subscriptions/acknowledged", {"notifications": honored})
    lists = [kind for field, (kind, _) in _LIST_FIELDS.items() if honored.get(field)]
    subscriber = Subscriber(emit, lists=lists, uris=set(uris), drain=getattr(outbound, "drain", None), tasks=task_ids)
    hub = reg.hub
    hub.add(subscriber)
    closing = asyncio.ensure_future(hub.wait_closing())
    ends: set[asyncio.Future[None]] = {closing}
    if isinstance(call.session, Session):
        ends.add(call.session.ended())  # the connection (stdio, memory) has gone
    try:
        await asyncio.wait(ends, return_when=asyncio.FIRST_COMPLETED)
    finally:
        closing.cancel()
        await hub.remove(subscriber)
    return EmptyResult(meta=meta)
