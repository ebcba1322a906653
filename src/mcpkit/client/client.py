"""The :class:`Client`: typed requests with deadlines and cancellation, over any
transport — a facade. Its state and its path to the wire are a
:class:`~.session.Session` (the call core); the feature requests (tools, resources,
prompts, completions) are the base of :mod:`.features`, built on that session; tasks are
:mod:`.tasks`, subscriptions :mod:`.subscriptions`, skills :mod:`.skills`. Nothing else in the package imports
this module (only the blocking facade over it, :mod:`.sync`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection
from types import TracebackType
from typing import Any, Literal

from ..protocol.skills import DirectoryReadResult, ListSkillsResult, Skill
from ..protocol.tasks import Task
from ..protocol.types import DiscoverResult, Implementation, Root, Tool
from ..runtime.peer import ProgressCallback
from ..transports.base import Servable, Transport
from .apps import ToolUi, read_tool_ui
from .features import FeatureRequests
from .options import ClientOptions, RequestOptions
from .retry import RetryPolicy
from .session import Session
from .skills import LoadedSkill, SkillFile, Skills
from .subscriptions import Subscription
from .tasks import TaskHandle, cancel_task, get_task, start_task, update_task

__all__ = ["Client"]


class Client(FeatureRequests):
    """An MCP client over one transport (or straight to a :class:`~mcpkit.Server` in
    memory).

    Use as ``async with Client(transport) as client: ...``. Every request has a
    deadline; errors are raised as :class:`~mcpkit.McpError` (``RequestTimeout`` and
    ``ConnectionClosed`` are local); a tool result with ``is_error`` is returned.

    Resilience (docs/timeouts-and-retries.md): with a :class:`~mcpkit.RetryPolicy`
    (client-wide, or ``retry=`` per call) idempotent calls are retried after transient
    failures; ``call_tool`` counts as idempotent when the tool's annotations, from a
    ``list_tools`` this client has seen, say ``readOnlyHint`` or ``idempotentHint``,
    or when the caller passes ``idempotent=True``. Over a transport that restarts
    (``StdioTransport(..., restart=True)``) the client reconnects by itself.
    """

    def __init__(self, transport: Transport | Servable, options: ClientOptions | None = None) -> None:
        """Raises ``TypeError`` for anything but a transport or a server (a URL or a
        command is wrapped in its transport first, the message says how)."""
        if isinstance(transport, str | bytes | list | tuple):
            raise TypeError(
                f"Client takes a transport or a Server, not {type(transport).__name__}: "
                "Client(HttpTransport(url)) for a URL, Client(StdioTransport([program, *args])) for a command"
            )
        self.options = options or ClientOptions()
        if isinstance(transport, Servable):
            from ..transports.memory import ServerInMemory

            self.transport: Transport = ServerInMemory(transport)
        else:
            self.transport = transport
        # What negotiation agreed and what the server said about itself (the session reports them here).
        self.era: Literal["modern", "legacy"] | None = None
        self.protocol_version: str | None = None
        self.server_info: Implementation | None = None
        self.server_capabilities: dict[str, Any] = {}
        self.instructions: str | None = None
        self._session = Session(self.transport, self.options, self)
        self._skills = Skills(self._session)
        super().__init__(self._session)

    # --- lifecycle -----------------------------------------------------------------------

    async def __aenter__(self) -> Client:
        await self.connect()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    async def connect(self) -> None:
        """Open the transport and agree on a protocol era and version.

        Raises ``OSError`` if the transport cannot start, :class:`McpError` if the
        server refuses every version we speak, :class:`ConnectionClosed` if it goes
        away, :class:`RequestTimeout` if it does not answer the handshake in time.
        On failure or cancellation the transport is closed before the exception
        propagates.
        """
        if self._session.link.peer is not None:
            raise RuntimeError("the client is already connected")
        try:
            await self._session.open()
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """Close the transport (for a spawned server: close stdin, wait, SIGTERM,
        SIGKILL) and stop any reconnection. Pending requests fail with
        :class:`ConnectionClosed`. Idempotent."""
        await self._session.close()

    # --- requests ------------------------------------------------------------------------

    async def send_request(
        self, method: str, params: dict[str, Any] | None = None, options: RequestOptions | None = None
    ) -> dict[str, Any]:
        """Send any request and return its result as a dict.

        Raises :class:`McpError` for an error response, :class:`RequestTimeout` and
        :class:`ConnectionClosed` (local) as described in the class docs. Cancelling
        the calling task sends ``notifications/cancelled`` and re-raises. With a retry
        policy (``options.retry``, else the client's) it is retried as the typed calls
        are, when ``method`` is idempotent or ``options.idempotent`` says so.
        """
        options = options or RequestOptions()
        return await self._session.call(
            method,
            params,
            dict[str, Any],
            options.timeout,
            options.on_progress,
            retry=options.retry,
            idempotent=options.idempotent,
            reset=options.reset_timeout_on_progress,
            max_total=options.max_total_timeout,
            rounds=False,
        )

    async def send_notification(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification (with the modern ``_meta`` unless ``params`` has one).
        Raises :class:`ConnectionClosed` if the connection is gone."""
        self._session.send_notification(method, params)

    async def set_roots(self, roots: list[Root]) -> None:
        """Change the roots this client offers; a legacy-era server is told with
        ``notifications/roots/list_changed`` (a modern one asks again when it needs
        them). Raises ``RuntimeError`` unless the client was created with ``roots``."""
        session = self._session
        if session.inbound.roots is None:
            raise RuntimeError("set_roots needs a client created with ClientOptions(roots=...)")
        session.inbound.roots = list(roots)
        if not session.policy.stateless:
            session.notify("notifications/roots/list_changed")

    async def ping(self, *, timeout: float | None = None, retry: RetryPolicy | None = None) -> None:
        """Check that the server answers: ``ping`` in the legacy era; in the modern era,
        which removed ``ping``, a ``server/discover`` round trip."""
        await self._session.call(self._session.policy.ping_method, None, dict[str, Any], timeout, retry=retry)

    async def discover(self, *, timeout: float | None = None, retry: RetryPolicy | None = None) -> DiscoverResult:
        """``server/discover``: the server's versions, capabilities and identity, which
        also fill in :attr:`server_info`, :attr:`server_capabilities` and
        :attr:`instructions` (in either era). Raises as every typed call does."""
        return await self._session.discover(timeout, retry)

    # --- MCP Apps (docs/apps.md) ------------------------------------------------------------------

    async def tool_ui(self, tool: Tool | str, *, timeout: float | None = None) -> ToolUi | None:
        """The view a host renders for ``tool`` (a listed ``Tool`` or a tool's name): its
        HTML, read with ``resources/read``, and its ``_meta.ui`` (CSP origins,
        permissions, domain, border), as a :class:`~mcpkit.ToolUi`; None for a tool
        without one. Hand it to an :class:`~mcpkit.AppBridge` to answer the view. Raises
        ``KeyError`` for a name the server does not list, ``ValueError`` for a view that
        is not a ``text/html;profile=mcp-app`` page, and as every typed call does."""
        return await read_tool_ui(self, tool, timeout=timeout)

    # --- tasks (docs/tasks.md) ------------------------------------------------------------------

    async def start_task(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        meta: dict[str, Any] | None = None,
        ttl: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> TaskHandle:
        """Call a tool as a task and return its :class:`TaskHandle` as soon as the server
        has created it (``await handle.wait()`` for the result). 2026-07-28: the call
        declares the tasks extension and the server decides — a call it answers at once
        gives a handle without a ``task_id`` whose ``wait()`` returns that result.
        2025-11-25: the call asks for a task (``ttl``: how long the server should keep it,
        in seconds). ``on_progress`` receives the progress the server reports before it
        answers. Raises as :meth:`call_tool` does (-32021 from a server that cannot)."""
        return await start_task(self._session, name, arguments, timeout=timeout, meta=meta, ttl=ttl, on_progress=on_progress)

    def task(self, task_id: str) -> TaskHandle:
        """A handle for the task ``task_id``, started earlier, maybe on another connection
        (nothing is sent until it is used)."""
        return TaskHandle(self._session, task_id)

    async def get_task(self, task_id: str, *, timeout: float | None = None) -> Task:
        """``tasks/get``: the task's state (its result or error once it has ended). Raises
        ``McpError(-32602)`` for a task the server does not know (or no longer: expired)."""
        return await get_task(self._session, task_id, timeout=timeout)

    async def update_task(self, task_id: str, input_responses: dict[str, Any], *, timeout: float | None = None) -> None:
        """``tasks/update``: answers to the task's ``input_requests``, by key (2026-07-28)."""
        await update_task(self._session, task_id, input_responses, timeout=timeout)

    async def cancel_task(self, task_id: str, *, timeout: float | None = None) -> None:
        """``tasks/cancel``: ask the server to stop the task (cooperative; ``get_task``
        tells how it ended)."""
        await cancel_task(self._session, task_id, timeout=timeout)

    # --- skills (docs/skills-client.md) ----------------------------------------------------------

    async def list_skills(
        self, cursor: str | None = None, *, timeout: float | None = None, retry: RetryPolicy | None = None
    ) -> ListSkillsResult:
        """``skills/list``: one page of the server's skill entries (pass ``next_cursor``
        back as ``cursor`` for the next). Nothing of a skill is read: an entry is what
        :meth:`load_skill` checks the skill against later.

        Raises a local :class:`McpError` (-32601), sending nothing, when the server did
        not declare the skills extension; else as every typed call does."""
        return await self._skills.page(cursor, timeout=timeout, retry=retry)

    async def list_all_skills(self, *, max_pages: int = 100) -> list[Skill]:
        """Every skill entry, following ``nextCursor`` (at most ``max_pages`` pages)."""
        return await self._skills.list_all(max_pages)

    def iter_skills(self, *, max_pages: int = 100) -> AsyncIterator[Skill]:
        """``async for skill in client.iter_skills()``: every skill entry, a page fetched
        when the one before is used up (at most ``max_pages`` pages)."""
        return self._skills.iterate(max_pages)

    async def get_skill(self, uri: str, *, timeout: float | None = None, retry: RetryPolicy | None = None) -> Skill:
        """``skills/get``: the entry of the skill whose ``SKILL.md`` is at ``uri`` (a
        skill the listing leaves out too). Raises ``ValueError`` for a URI that does not
        end in ``/SKILL.md``, :class:`McpError` (-32602) for one the server does not
        serve, the local -32601 without the extension, as :meth:`list_skills` says."""
        return await self._skills.get(uri, timeout=timeout, retry=retry)

    async def load_skill(self, skill: Skill | str, *, allow_dynamic: bool = False, timeout: float | None = None) -> LoadedSkill:
        """Load a skill: its entry (given, or a URI whose entry ``skills/get`` fetches)
        is checked first (within 512 files and 16 MiB, ``SKILL.md`` listed), then
        ``SKILL.md`` is read and checked against it (its length, its SHA-256, its YAML
        frontmatter field by field). A ``"dynamic"`` skill, which has no digests, loads
        only with ``allow_dynamic=True``, its reads bounded by 16 MiB in all.

        Raises :class:`SkillVerificationError` for anything that fails (the content is
        never returned), ``ImportError`` without PyYAML (``mcpkit[skills]``), and as
        :meth:`get_skill` and ``read_resource`` do."""
        return await self._skills.load(skill, allow_dynamic=allow_dynamic, timeout=timeout)

    async def read_skill_file(self, skill: LoadedSkill, path: str, *, timeout: float | None = None) -> SkillFile:
        """Read one file of a loaded skill: ``path`` relative to its root
        (``"references/FORMS.md"``) or the file's URI. Only a file the held entry lists
        is read, and it is checked against the entry's size and digest; a file read
        before is not read again.

        Raises :class:`SkillVerificationError` (``"unlisted"`` without sending anything,
        ``"size"``, ``"digest"``), ``ValueError`` for a path out of the root or a skill
        loaded by another client, and as ``read_resource`` does."""
        return await self._skills.read_file(skill, path, timeout=timeout)

    async def read_directory(
        self, uri: str, cursor: str | None = None, *, timeout: float | None = None, retry: RetryPolicy | None = None
    ) -> DirectoryReadResult:
        """``resources/directory/read``: one page of the direct children of the
        directory resource at ``uri`` (subdirectories have ``mime_type`` ``"inode/directory"``).
        A live view, which grants nothing: only the files a held entry lists are read.
        Raises the local -32601, sending nothing, unless the server declared the skills
        extension with ``directoryRead: true``."""
        return await self._skills.read_directory(uri, cursor, timeout=timeout, retry=retry)

    # --- changes and pagination (docs/subscriptions.md) -------------------------------------

    @property
    def is_connected(self) -> bool:
        """Whether the connection is open."""
        return self._session.connected

    @property
    def is_reconnecting(self) -> bool:
        """Whether a lost connection is being got back (a supervised server restarting, an
        HTTP server being reached again): calls made meanwhile wait for it, within their
        deadline (docs/timeouts-and-retries.md)."""
        return self._session.reconnecting

    def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Collection[str] = (),
    ) -> Subscription:
        """Subscribe to changes, in either era: ``async with client.listen(tools=True)
        as changes: async for change in changes: ...`` yields a
        :class:`SubscriptionEvent` per change — re-list (``kind`` ``"tools"``,
        ``"prompts"``, ``"resources"``) or re-read (``"resource"``, ``uri``). Modern era:
        one ``subscriptions/listen`` request, acknowledged before ``async with`` returns,
        cancelled on exit, reopened if the connection drops it. Legacy era:
        ``resources/subscribe`` for each URI (undone on exit) and the session's list
        notifications. Entering raises :class:`McpError` if the server refuses."""
        lists = [kind for kind, wanted in (("tools", tools), ("prompts", prompts), ("resources", resources)) if wanted]
        return Subscription(self._session, lists=lists, uris=resource_uris)

    async def subscribe_resource(self, uri: str, *, timeout: float | None = None) -> None:
        """Legacy era: ``resources/subscribe`` (the modern era has :meth:`listen` only).
        Raises :class:`McpError` (-32002 for an unknown resource)."""
        await self._session.call("resources/subscribe", {"uri": uri}, dict[str, Any], timeout)

    async def unsubscribe_resource(self, uri: str, *, timeout: float | None = None) -> None:
        """Legacy era: ``resources/unsubscribe``."""
        await self._session.call("resources/unsubscribe", {"uri": uri}, dict[str, Any], timeout)

    async def set_logging_level(self, level: str, *, timeout: float | None = None) -> None:
        """Legacy era: ``logging/setLevel``. Modern era: sets the per-request
        ``logLevel`` sent from now on."""
        await self._session.set_log_level(level, timeout)
