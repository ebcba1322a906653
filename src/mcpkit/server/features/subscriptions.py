"""Subscribing to changes (docs/subscriptions.md): ``resources/subscribe`` and
``resources/unsubscribe`` in the legacy era, ``subscriptions/listen`` in the modern one.

A legacy connection hears every list change once initialized, and the updates of the
resources it subscribed to; the delivery is set up by the transport that owns the
connection (:meth:`mcpkit.Server.connect`). A modern ``subscriptions/listen`` request is
itself the stream: it is acknowledged first, then carries the notifications its filter
asks for (``taskIds``: the status of those tasks, ``notifications/tasks``, for a client
of the tasks extension), each tagged with its subscription id, until the client cancels it or the
server shuts down (then it is answered, the graceful end).

What a listen may hold is bounded (docs/limits.md): its params (``max_listen_bytes``),
its resources (:data:`MAX_URIS`, each at most ``max_uri_length`` characters) and task
ids, and how many listens are open at once, in all and per principal (``max_listens``,
``max_listens_per_principal``): past them the request is refused before it is
acknowledged, with an error that says which bound it met. An open listen holds its
filter and little else: a few kilobytes for a few resources.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

import msgspec

from ...auth.identity import CURRENT
from ...protocol.errors import INVALID_PARAMS, McpError, echo, flatten_text
from ...protocol.tasks import declares_tasks, missing_tasks_extension
from ...protocol.types import EmptyResult, Params, ReadResourceParams
from ..changes import Subscriber
from ..context import Call, Context
from ..definitions.resources import check_length
from ..registry import Registry
from ..session import Session
from ..settings import Settings

__all__ = [
    "subscribe",
    "unsubscribe",
    "listen",
    "check_size",
    "ListenParams",
    "SUBSCRIPTION_ID",
    "RESOURCE_NOT_FOUND",
    "MAX_WATCHED_TASKS",
]

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
#: How many task ids one subscription may watch.
MAX_WATCHED_TASKS: Final = 1000


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
    -32602 for a URI over ``max_uri_length`` characters or past :data:`MAX_URIS` on one
    connection."""
    check_length(params.uri, reg.settings.max_uri_length)
    _known(reg, params.uri)
    session = call.session
    if isinstance(session, Session):
        if len(session.resource_uris) >= MAX_URIS and params.uri not in session.resource_uris:
            raise McpError(INVALID_PARAMS, f"Invalid params: at most {MAX_URIS} subscribed resources per session")
        session.resource_uris.add(params.uri)
    await reg.watch(params.uri)
    return EmptyResult()


async def unsubscribe(reg: Registry, ctx: Context, call: Call, params: ReadResourceParams) -> EmptyResult:
    """Legacy: stop watching ``uri`` (not an error if it was not watched). Raises -32602
    for a URI over ``max_uri_length`` characters."""
    check_length(params.uri, reg.settings.max_uri_length)
    session = call.session
    if isinstance(session, Session):
        session.resource_uris.discard(params.uri)
    return EmptyResult()


def check_size(raw_params: msgspec.Raw, settings: Settings) -> None:
    """Raises ``McpError(-32602)`` for ``subscriptions/listen`` params over
    ``max_listen_bytes`` (the dispatcher asks before decoding them)."""
    limit = settings.max_listen_bytes
    if len(raw_params) > limit:
        raise McpError(INVALID_PARAMS, f"Invalid params: a subscription's params may be at most {limit} bytes")


async def listen(reg: Registry, ctx: Context, call: Call, params: ListenParams) -> Any:
    """Modern: acknowledge, then deliver what the filter names until cancelled (no
    response) or until the server shuts down (a result, the graceful end). Raises
    ``McpError(-32602)`` (params over ``max_listen_bytes`` are the dispatcher's:
    :func:`check_size`) for more than :data:`MAX_URIS`
    resources, a URI over ``max_uri_length`` characters or more than
    :data:`MAX_WATCHED_TASKS` tasks; -32021 for ``taskIds`` from a client that did not
    declare the tasks extension; -32603 with HTTP status 429 at ``max_listens`` open
    listens, or ``max_listens_per_principal`` for the caller's principal. Of the tasks,
    it agrees to those the client may see."""
    settings = reg.settings
    wanted = params.notifications
    uris = list(dict.fromkeys(wanted.resource_subscriptions))
    if len(uris) > MAX_URIS:
        raise McpError(INVALID_PARAMS, f"Invalid params: at most {MAX_URIS} resourceSubscriptions per subscription")
    for uri in uris:
        check_length(uri, settings.max_uri_length)
    for uri in uris:
        await reg.watch(uri)
    task_ids: list[str] = []
    if wanted.task_ids:
        if not declares_tasks(ctx.client_capabilities):
            raise missing_tasks_extension("notifications/tasks")
        if len(wanted.task_ids) > MAX_WATCHED_TASKS:
            raise McpError(INVALID_PARAMS, f"Invalid params: at most {MAX_WATCHED_TASKS} taskIds per subscription")
    hub = reg.hub
    identity = CURRENT.get()
    release = hub.admit(
        identity.principal if identity is not None else None,
        limit=settings.max_listens,
        per_principal=settings.max_listens_per_principal,
    )
    try:
        if wanted.task_ids:
            task_ids = await reg.tasks.visible(wanted.task_ids)
        await _deliver(reg, ctx, call, wanted, uris, task_ids)
    finally:
        release()
    return EmptyResult(meta={SUBSCRIPTION_ID: ctx.request_id})


async def _deliver(
    reg: Registry, ctx: Context, call: Call, wanted: NotificationFilter, uris: list[str], task_ids: list[str]
) -> None:
    """Acknowledge the listen, then deliver what it asks for until it ends."""
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
    del honored  # what the acknowledgement said is not kept for the listen's life
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
