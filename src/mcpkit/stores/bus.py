"""The subscription bus: how a change made in one process reaches the subscribers
connected to every process of a deployment (docs/subscriptions.md).

A server publishes :class:`Change` events — a list changed, a resource was updated, a
task's status changed — and every process's hub receives them and fans them out to its
own subscribers. The default, :class:`InMemoryBus`, serves one process; a shared store
(Redis, in the multi-node work) implements the same two methods.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, Protocol

import msgspec

from .listeners import Listeners

__all__ = ["Change", "ChangeKind", "Listener", "SubscriptionBus", "InMemoryBus"]

#: ``tools``, ``prompts`` and ``resources``: that list changed; ``resource``: the resource
#: ``uri`` was updated; ``task``: the task ``uri`` (its id) changed status.
ChangeKind = Literal["tools", "prompts", "resources", "resource", "task"]


class Change(msgspec.Struct, frozen=True):
    """One change: a list (``kind`` names it), one resource (``kind="resource"``, ``uri``)
    or one task (``kind="task"``, ``uri`` its id, ``payload`` its state as JSON). Changes
    compare without their payload: two of the same task are the same change, the later
    one newer. (A Struct, made in C at import, rather than a dataclass, whose methods are
    compiled at import.)"""

    kind: ChangeKind
    uri: str | None = None
    payload: bytes | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Change) or other.__class__ is not self.__class__:
            return NotImplemented
        return self.kind == other.kind and self.uri == other.uri

    def __hash__(self) -> int:
        return hash((self.kind, self.uri))


Listener = Callable[[Change], None]


class SubscriptionBus(Protocol):
    """Carries changes between the processes of a deployment.

    ``publish`` must not block (a shared store sends in the background); every
    listener, in every process, is called with each change once, in publication order
    per publisher. Listeners must not block either: they queue the change and return.
    """

    def publish(self, change: Change) -> None: ...

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` with every change from now on; returns the function that
        stops it."""
        ...


class InMemoryBus:
    """The bus of a single process: ``publish`` calls every listener at once, in order.
    A listener that raises is logged and does not stop the others."""

    def __init__(self) -> None:
        self._listeners: Listeners[Change] = Listeners("a subscription listener")

    def publish(self, change: Change) -> None:
        self._listeners.notify(change)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        return self._listeners.add(listener)
