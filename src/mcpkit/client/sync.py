"""The blocking :class:`SyncClient`: a :class:`~mcpkit.Client` driven on an event loop
of its own, on a thread of its own, for scripts, notebooks and threaded programs."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import weakref
from collections.abc import Coroutine
from types import TracebackType
from typing import Any, Literal, TypeVar

from ..protocol.skills import DirectoryReadResult, ListSkillsResult, Skill
from ..protocol.tasks import Task
from ..protocol.types import (
    CallToolResult,
    CompleteResult,
    DiscoverResult,
    GetPromptResult,
    Implementation,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    Root,
    Tool,
)
from ..runtime.peer import ProgressCallback
from ..transports.base import Servable, Transport
from .apps import ToolUi
from .client import Client
from .options import ClientOptions, RequestOptions
from .retry import RetryPolicy
from .skills import LoadedSkill, SkillFile

__all__ = ["SyncClient"]

T = TypeVar("T")

#: How long closing waits for the client to close (the server process to exit).
_CLOSE_TIMEOUT = 10.0


class _Loop:
    """An event loop running on a daemon thread, and the client that lives on it. Holds
    no reference to the :class:`SyncClient`, so that the client can be collected and
    closed by its finalizer."""

    def __init__(self) -> None:
        self.client: Client | None = None
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="mcpkit-sync-client", daemon=True)
        self._lock = threading.Lock()
        self.closed = False
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and wait for its result. Raises what it raises;
        ``RuntimeError`` if the client is closed or when called from the loop's own
        thread (a callback of this client), which would wait for itself. An interrupt
        (``KeyboardInterrupt``) while waiting cancels the coroutine — and so the request
        on the wire — before it propagates."""
        if threading.current_thread() is self.thread:
            coro.close()
            raise RuntimeError("a SyncClient cannot be called from its own callbacks; use the async Client there")
        with self._lock:
            if self.closed:
                coro.close()
                raise RuntimeError("the SyncClient is closed")
            future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result()
        except BaseException:
            if not future.done():
                future.cancel()
                try:
                    future.result(_CLOSE_TIMEOUT)
                except (concurrent.futures.CancelledError, concurrent.futures.TimeoutError, Exception):
                    pass
            raise

    def close(self) -> None:
        """Close the client (and its server process), stop the loop and join the thread.
        Idempotent; safe from any thread but the loop's, and at interpreter exit."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
        if self.loop.is_closed() or not self.thread.is_alive():
            return
        client, loop = self.client, self.loop
        if threading.current_thread() is self.thread:  # collected by one of its own callbacks
            if client is None:
                loop.stop()
            else:
                loop.create_task(client.close()).add_done_callback(lambda _: loop.stop())
            return
        if client is not None:
            future = asyncio.run_coroutine_threadsafe(client.close(), loop)
            try:
                future.result(_CLOSE_TIMEOUT)
            except Exception:
                future.cancel()
        loop.call_soon_threadsafe(loop.stop)
        self.thread.join(_CLOSE_TIMEOUT)
        if not self.thread.is_alive():
            loop.close()


async def _connected(transport: Transport | Servable, options: ClientOptions | None) -> Client:
    """A client made and connected on the loop (raises what ``connect`` raises)."""
    client = Client(transport, options)
    await client.connect()
    return client


class SyncClient:
    """A blocking MCP client: the calls of :class:`~mcpkit.Client`, each waiting for
    its result.

    ``SyncClient(transport_or_server, options=None)`` connects at once (raising what
    :meth:`Client.connect` raises). It runs an asyncio :class:`~mcpkit.Client` on an
    event loop of its own, on a daemon thread, so it works where a loop is already
    running (a Jupyter notebook) and from several threads at once: their calls are in
    flight together over the one connection. Use it as ``with SyncClient(...) as
    client:``, or call :meth:`close`; a client that is neither closed nor used any more
    is closed when it is garbage collected or, at the latest, when the interpreter
    exits — a spawned server process is never left behind.

    Errors, deadlines and results are the async client's (:class:`~mcpkit.McpError`,
    :class:`~mcpkit.RequestTimeout`, ``is_error`` results). ``on_elicit``, ``on_sample``
    and ``on_roots`` written as plain ``def`` run on worker threads and may call the
    ``SyncClient`` back; ``on_log``, progress callbacks and ``async def`` callbacks run
    on the client's thread and must not (``RuntimeError``). Interrupting a waiting call
    (Ctrl-C) cancels its request on the wire.
    """

    def __init__(self, transport: Transport | Servable, options: ClientOptions | None = None) -> None:
        self._runner = _Loop()
        self._finalizer = weakref.finalize(self, self._runner.close)  # also runs at interpreter exit
        try:
            self._client = self._runner.client = self._runner.run(_connected(transport, options))
        except BaseException:
            self._finalizer()
            raise

    # --- lifecycle -----------------------------------------------------------------------

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (a spawned server: close its stdin, wait, then signal it),
        stop the client's thread. Pending calls fail with
        :class:`~mcpkit.ConnectionClosed`. Idempotent."""
        self._finalizer()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (or the client was finalized)."""
        return not self._finalizer.alive

    @property
    def client(self) -> Client:
        """The async :class:`~mcpkit.Client` underneath (use it only on its loop)."""
        return self._client

    @property
    def era(self) -> Literal["modern", "legacy"] | None:
        """The protocol era agreed on."""
        return self._client.era

    @property
    def protocol_version(self) -> str | None:
        """The protocol revision agreed on."""
        return self._client.protocol_version

    @property
    def server_info(self) -> Implementation | None:
        """The server's name and version."""
        return self._client.server_info

    @property
    def server_capabilities(self) -> dict[str, Any]:
        """The capabilities the server announced."""
        return self._client.server_capabilities

    @property
    def instructions(self) -> str | None:
        """The server's instructions, if any."""
        return self._client.instructions

    # --- requests ------------------------------------------------------------------------

    def ping(self, *, timeout: float | None = None, retry: RetryPolicy | None = None) -> None:
        """:meth:`Client.ping`, blocking."""
        self._runner.run(self._client.ping(timeout=timeout, retry=retry))

    def discover(self, *, timeout: float | None = None, retry: RetryPolicy | None = None) -> DiscoverResult:
        """:meth:`Client.discover`, blocking."""
        return self._runner.run(self._client.discover(timeout=timeout, retry=retry))

    def list_tools(
        self, cursor: str | None = None, *, timeout: float | None = None, retry: RetryPolicy | None = None
    ) -> ListToolsResult:
        """:meth:`Client.list_tools`, blocking."""
        return self._runner.run(self._client.list_tools(cursor, timeout=timeout, retry=retry))

    def list_all_tools(self, *, max_pages: int = 100) -> list[Tool]:
        """:meth:`Client.list_all_tools`, blocking."""
        return self._runner.run(self._client.list_all_tools(max_pages=max_pages))

    def tool_ui(self, tool: Tool | str, *, timeout: float | None = None) -> ToolUi | None:
        """:meth:`Client.tool_ui`, blocking: the tool's view (docs/apps.md)."""
        return self._runner.run(self._client.tool_ui(tool, timeout=timeout))

    def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        meta: dict[str, Any] | None = None,
        retry: RetryPolicy | None = None,
        idempotent: bool | None = None,
        reset_timeout_on_progress: bool | None = None,
        max_total_timeout: float | None = None,
    ) -> CallToolResult:
        """:meth:`Client.call_tool`, blocking: a failed tool is a result with
        ``is_error``; protocol errors raise :class:`~mcpkit.McpError`. ``on_progress``
        runs on the client's thread; ``retry``, ``idempotent`` and the progress-aware
        deadline options are :meth:`Client.call_tool`'s."""
        return self._runner.run(
            self._client.call_tool(
                name,
                arguments,
                timeout=timeout,
                on_progress=on_progress,
                meta=meta,
                retry=retry,
                idempotent=idempotent,
                reset_timeout_on_progress=reset_timeout_on_progress,
                max_total_timeout=max_total_timeout,
            )
        )

    def list_resources(
        self, cursor: str | None = None, *, timeout: float | None = None, retry: RetryPolicy | None = None
    ) -> ListResourcesResult:
        """:meth:`Client.list_resources`, blocking."""
        return self._runner.run(self._client.list_resources(cursor, timeout=timeout, retry=retry))

    def list_all_resources(self, *, max_pages: int = 100) -> list[Resource]:
        """:meth:`Client.list_all_resources`, blocking."""
        return self._runner.run(self._client.list_all_resources(max_pages=max_pages))

    def list_resource_templates(
        self, cursor: str | None = None, *, timeout: float | None = None, retry: RetryPolicy | None = None
    ) -> ListResourceTemplatesResult:
        """:meth:`Client.list_resource_templates`, blocking."""
        return self._runner.run(self._client.list_resource_templates(cursor, timeout=timeout, retry=retry))

    def list_all_resource_templates(self, *, max_pages: int = 100) -> list[ResourceTemplate]:
        """:meth:`Client.list_all_resource_templates`, blocking."""
        return self._runner.run(self._client.list_all_resource_templates(max_pages=max_pages))

    def read_resource(self, uri: str, *, timeout: float | None = None, retry: RetryPolicy | None = None) -> ReadResourceResult:
        """:meth:`Client.read_resource`, blocking."""
        return self._runner.run(self._client.read_resource(uri, timeout=timeout, retry=retry))

    def list_prompts(
        self, cursor: str | None = None, *, timeout: float | None = None, retry: RetryPolicy | None = None
    ) -> ListPromptsResult:
        """:meth:`Client.list_prompts`, blocking."""
        return self._runner.run(self._client.list_prompts(cursor, timeout=timeout, retry=retry))

    def list_all_prompts(self, *, max_pages: int = 100) -> list[Prompt]:
        """:meth:`Client.list_all_prompts`, blocking."""
        return self._runner.run(self._client.list_all_prompts(max_pages=max_pages))

    def get_prompt(
        self,
        name: str,
        arguments: dict[str, str] | None = None,
        *,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
    ) -> GetPromptResult:
        """:meth:`Client.get_prompt`, blocking."""
        return self._runner.run(self._client.get_prompt(name, arguments, timeout=timeout, retry=retry))

    def complete(
        self,
        ref: dict[str, str],
        argument: str,
        value: str,
        *,
        context: dict[str, str] | None = None,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
    ) -> CompleteResult:
        """:meth:`Client.complete`, blocking."""
        return self._runner.run(self._client.complete(ref, argument, value, context=context, timeout=timeout, retry=retry))

    def set_logging_level(self, level: str, *, timeout: float | None = None) -> None:
        """:meth:`Client.set_logging_level`, blocking."""
        self._runner.run(self._client.set_logging_level(level, timeout=timeout))

    def set_roots(self, roots: list[Root]) -> None:
        """:meth:`Client.set_roots`, blocking."""
        self._runner.run(self._client.set_roots(roots))

    def subscribe_resource(self, uri: str, *, timeout: float | None = None) -> None:
        """:meth:`Client.subscribe_resource`, blocking (the updates reach ``on_notification``)."""
        self._runner.run(self._client.subscribe_resource(uri, timeout=timeout))

    def unsubscribe_resource(self, uri: str, *, timeout: float | None = None) -> None:
        """:meth:`Client.unsubscribe_resource`, blocking."""
        self._runner.run(self._client.unsubscribe_resource(uri, timeout=timeout))

    # --- tasks (started with the async Client: a TaskHandle's methods are coroutines) --------

    def get_task(self, task_id: str, *, timeout: float | None = None) -> Task:
        """:meth:`Client.get_task`, blocking."""
        return self._runner.run(self._client.get_task(task_id, timeout=timeout))

    def update_task(self, task_id: str, input_responses: dict[str, Any], *, timeout: float | None = None) -> None:
        """:meth:`Client.update_task`, blocking."""
        self._runner.run(self._client.update_task(task_id, input_responses, timeout=timeout))

    def cancel_task(self, task_id: str, *, timeout: float | None = None) -> None:
        """:meth:`Client.cancel_task`, blocking."""
        self._runner.run(self._client.cancel_task(task_id, timeout=timeout))

    # --- skills (docs/skills-client.md) -----------------------------------------------------

    def list_skills(
        self, cursor: str | None = None, *, timeout: float | None = None, retry: RetryPolicy | None = None
    ) -> ListSkillsResult:
        """:meth:`Client.list_skills`, blocking."""
        return self._runner.run(self._client.list_skills(cursor, timeout=timeout, retry=retry))

    def list_all_skills(self, *, max_pages: int = 100) -> list[Skill]:
        """:meth:`Client.list_all_skills`, blocking."""
        return self._runner.run(self._client.list_all_skills(max_pages=max_pages))

    def get_skill(self, uri: str, *, timeout: float | None = None, retry: RetryPolicy | None = None) -> Skill:
        """:meth:`Client.get_skill`, blocking."""
        return self._runner.run(self._client.get_skill(uri, timeout=timeout, retry=retry))

    def load_skill(self, skill: Skill | str, *, allow_dynamic: bool = False, timeout: float | None = None) -> LoadedSkill:
        """:meth:`Client.load_skill`, blocking."""
        return self._runner.run(self._client.load_skill(skill, allow_dynamic=allow_dynamic, timeout=timeout))

    def read_skill_file(self, skill: LoadedSkill, path: str, *, timeout: float | None = None) -> SkillFile:
        """:meth:`Client.read_skill_file`, blocking."""
        return self._runner.run(self._client.read_skill_file(skill, path, timeout=timeout))

    def read_directory(
        self, uri: str, cursor: str | None = None, *, timeout: float | None = None, retry: RetryPolicy | None = None
    ) -> DirectoryReadResult:
        """:meth:`Client.read_directory`, blocking."""
        return self._runner.run(self._client.read_directory(uri, cursor, timeout=timeout, retry=retry))

    def send_request(
        self, method: str, params: dict[str, Any] | None = None, options: RequestOptions | None = None
    ) -> dict[str, Any]:
        """:meth:`Client.send_request`, blocking."""
        return self._runner.run(self._client.send_request(method, params, options))

    def send_notification(self, method: str, params: dict[str, Any] | None = None) -> None:
        """:meth:`Client.send_notification`, blocking."""
        self._runner.run(self._client.send_notification(method, params))
