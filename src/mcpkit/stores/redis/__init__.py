"""What the nodes of a deployment share, in Redis (docs/deploy.md): :class:`RedisStore`.

One :class:`RedisStore` per process gives the parts a node needs, on one
connection pool and one pub/sub connection: ``sessions`` (legacy session records and
the messages between nodes), ``events`` (resumable SSE streams), ``bus`` (change
notifications), ``tasks`` (the tasks extension's records), ``buckets`` (the token
buckets of :class:`~mcpkit.middleware.RateLimit`), ``replay`` (the DPoP proofs the resource
server accepted, :class:`~mcpkit.auth.DPoPChecker`) — and its node id and heartbeat. Needs the ``redis`` extra
(``pip install 'mcpkit[redis]'``)::

    store = RedisStore("redis://redis:6379/0")
    server = Server("app", state_key=os.environ["MCP_STATE_KEY"], bus=store.bus, task_store=store.tasks)
    app = server.asgi_app(session_store=store.sessions, event_store=store.events)
"""

from __future__ import annotations

import asyncio
import secrets
from typing import Final

try:
    from redis.asyncio import Redis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError
except ModuleNotFoundError as exc:  # the "redis" extra is not installed
    raise ModuleNotFoundError(
        f"sharing state through Redis needs the redis client ({exc}); install it with: pip install 'mcpkit[redis]'",
        name=exc.name,
    ) from None

from .buckets import RedisBuckets
from .bus import RedisBus
from .channels import Channels, cancel_all
from .events import RedisEventStore
from .replay import RedisReplayCache
from .sessions import RedisSessionStore
from .tasks import RedisTaskStore

__all__ = ["RedisStore", "RedisSessionStore", "RedisEventStore", "RedisBus", "RedisTaskStore", "RedisReplayCache"]

DEFAULT_URL: Final = "redis://127.0.0.1:6379/0"


class RedisStore:
    """The state a deployment of several nodes shares, in the Redis at ``url``.

    ``prefix`` starts every key and channel (several deployments can share one Redis);
    ``node_id`` names this process among the nodes (default: random). Streams keep at
    most ``max_events_per_stream`` events and expire ``event_ttl`` seconds after their
    last write. At most ``max_tasks`` tasks are live, holding at most ``max_task_bytes``
    (1 GiB), and for one principal at most ``max_tasks_per_principal`` and
    ``max_task_bytes_per_principal`` (default: a tenth of each; see
    :class:`~mcpkit.InMemoryTaskStore`). The node beats every ``heartbeat`` seconds;
    three missed beats and the others consider it gone. A Redis command that takes
    longer than ``timeout`` seconds fails (:class:`~mcpkit.StoreUnavailable` from the
    parts), as does one while Redis is unreachable or refuses it: nothing waits for
    Redis to come back, and only a dropped connection is retried (once, at once: Redis
    restarted), so no operation waits much longer than ``timeout``. ``client`` replaces
    the connection made from ``url`` (a ``redis.asyncio.Redis`` with
    ``decode_responses`` off).

    Background work (the heartbeat, the pub/sub listener) starts with :meth:`start`,
    which the HTTP app calls at startup, or on first use; :meth:`aclose` ends it.
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        prefix: str = "mcpkit",
        node_id: str | None = None,
        max_events_per_stream: int = 1000,
        event_ttl: float = 3600.0,
        max_tasks: int = 100_000,
        max_task_bytes: int = 1024 * 1024 * 1024,
        max_tasks_per_principal: int | None = None,
        max_task_bytes_per_principal: int | None = None,
        heartbeat: float = 1.0,
        timeout: float = 2.0,
        client: Redis | None = None,
    ) -> None:
        if not timeout > 0 or not heartbeat > 0:
            raise ValueError("timeout and heartbeat must be positive")
        if node_id is not None and not (node_id.isascii() and node_id.isalnum()):
            raise ValueError("node_id must be ASCII letters and digits")
        self.prefix = prefix
        self.timeout = timeout
        self.node_id = node_id or secrets.token_hex(6)
        self.redis: Redis = client or Redis.from_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            # one retry, of a pooled connection Redis closed (it restarted); never of a timeout
            retry=Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
        )
        self._tasks: set[asyncio.Task[None]] = set()
        self.channels = Channels(self.redis, alive_key=f"{prefix}:alive:{self.node_id}", heartbeat=heartbeat)
        self.sessions = RedisSessionStore(self)
        self.events = RedisEventStore(self, max_events=max_events_per_stream, ttl=event_ttl)
        self.bus = RedisBus(self)
        self.buckets = RedisBuckets(self)
        self.replay = RedisReplayCache(self)
        self.tasks = RedisTaskStore(
            self,
            max_tasks=max_tasks,
            max_bytes=max_task_bytes,
            max_tasks_per_principal=max_tasks_per_principal,
            max_bytes_per_principal=max_task_bytes_per_principal,
        )

    async def start(self) -> None:
        """Start beating and listening on the running loop (idempotent)."""
        self.channels.start()

    def background(self, task: asyncio.Task[None]) -> None:
        """Keep ``task`` referenced until it ends; :meth:`aclose` cancels it."""
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def aclose(self) -> None:
        """Leave: stop the heartbeat (the key is removed, so the others see this node
        gone at once), the listener and the bus, and close the connections."""
        await self.channels.close()
        await cancel_all(list(self._tasks))
        await self.redis.aclose()
