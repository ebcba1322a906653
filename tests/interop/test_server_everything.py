"""Interop: mcpkit's client against ``@modelcontextprotocol/server-everything`` (npm,
pinned in tests/support/peers.py; the TypeScript SDK's reference server, legacy era: 2025-11-25)
over stdio and Streamable HTTP (its ``streamableHttp`` mode: stateful sessions, SSE
responses, a GET stream, an event store).

Every tool it offers to a client that declares elicitation (form and URL), sampling and
roots — except the three that need the tasks extension, which mcpkit does not speak yet
(calling one without a task is refused, and that is checked) — and its resources (one
page: this version does not paginate), templates, prompts, completions, progress,
logging, its server→client requests answered by mcpkit's callbacks, and (issue 9)
``notifications/resources/updated`` after ``client.listen(resource_uris=[...])`` and
after ``client.subscribe_resource(...)``.

Every test body runs under a deadline: a peer that stops answering fails the test.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import json
import os
import re
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Generic, TypeVar

import anyio
import pytest

from mcpkit import (
    Client,
    ClientOptions,
    CreateMessageParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    EmbeddedResource,
    HttpTransport,
    ImageContent,
    McpError,
    ResourceLink,
    Root,
    StdioTransport,
    SubscriptionEvent,
    TextContent,
)
from support.peers import EVERYTHING, PEERS
from support.ports import free_port
from support.processes import listening

WHERE = ["stdio", "http"]
LIMIT = 30.0  # seconds for a whole test body
#: The tools that need the tasks extension (``taskSupport: "required"``, or a client that
#: declares ``tasks.requests.*``): the first is listed and refuses a plain call, the
#: other two are not listed for mcpkit.
TASK_TOOLS = {"simulate-research-query", "trigger-sampling-request-async", "trigger-elicitation-request-async"}
DOC = "demo://resource/static/document/features.md"
T = TypeVar("T")


@pytest.fixture(scope="module")
def everything_url(node: str) -> Iterator[str]:
    """server-everything's Streamable HTTP mode on a free loopback port."""
    port = free_port()
    command = [node, str(PEERS / "node_modules" / EVERYTHING / "dist" / "index.js"), "streamableHttp"]
    env = {**os.environ, "PORT": str(port)}
    with listening(command, port, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
        yield f"http://127.0.0.1:{port}/mcp"


class User:
    """mcpkit's callbacks, recording what they were asked: elicitations accepted with a
    name (URL ones accepted as they are), a model that echoes, and two roots; log
    messages kept."""

    def __init__(self) -> None:
        self.elicited: list[ElicitRequestParams] = []
        self.sampled: list[CreateMessageParams] = []
        self.logs: Watch[tuple[str, Any, str | None]] = Watch()

    def on_elicit(self, request: ElicitRequestParams) -> ElicitResult:
        self.elicited.append(request)
        if request.mode == "url":
            return ElicitResult(action="accept")
        return ElicitResult(action="accept", content={"name": "Ada", "check": True})

    async def on_sample(self, request: CreateMessageParams) -> CreateMessageResult:
        self.sampled.append(request)
        said = request.messages[-1].content["text"]
        return CreateMessageResult(role="assistant", content={"type": "text", "text": f"echo {said}"}, model="m-kit")

    async def on_log(self, level: str, data: Any, logger: str | None) -> None:
        self.logs.add((level, data, logger))

    def options(self, **options: Any) -> ClientOptions:
        return ClientOptions(
            request_timeout=10,
            on_elicit=self.on_elicit,
            on_sample=self.on_sample,
            on_log=self.on_log,
            roots=[Root(uri="file:///srv/a", name="a"), Root(uri="file:///srv/b")],
            elicitation_modes=("form", "url"),
            **options,
        )


@contextlib.asynccontextmanager
async def connect(where: str, command: list[str], url: str, options: ClientOptions) -> AsyncIterator[Client]:
    """mcpkit's client on server-everything, spawned with ``command`` or at ``url``; the
    era is negotiated (``server/discover`` falls back to ``initialize``):
    server-everything is a legacy-era server."""
    # After its stdin closes, server-everything lingers while a request of its own to the
    # client is pending (the roots/list it sends 350 ms after initialize): mcpkit ends it
    # after shutdown_timeout.
    stdio = StdioTransport(command, stderr="devnull", shutdown_timeout=0.5)
    transport = stdio if where == "stdio" else HttpTransport(url)
    async with Client(transport, options) as client:
        assert (client.era, client.protocol_version) == ("legacy", "2025-11-25")
        assert client.server_info is not None
        assert client.server_info.name == "mcp-servers/everything"
        yield client


def texts(result: Any) -> list[str]:
    assert not result.is_error, result
    return [block.text for block in result.content if isinstance(block, TextContent)]


class Watch(Generic[T]):
    """Items that arrive from callbacks (on the event loop), and a way to wait for them."""

    def __init__(self) -> None:
        self.items: list[T] = []
        self._arrived = anyio.Event()

    def add(self, item: T) -> None:
        self.items.append(item)
        self._arrived.set()
        self._arrived = anyio.Event()

    async def until(self, condition: Callable[[list[T]], bool], seconds: float = 10.0) -> None:
        """Wait until ``condition(items)`` holds; fail after ``seconds``."""
        with anyio.fail_after(seconds):
            while not condition(self.items):
                await self._arrived.wait()


@pytest.mark.parametrize("where", WHERE)
async def test_every_tool(everything: list[str], everything_url: str, where: str) -> None:
    user = User()
    called: set[str] = set()
    with anyio.fail_after(LIMIT):
        async with connect(where, everything, everything_url, user.options()) as client:
            listed = {tool.name for tool in await client.list_all_tools()}

            async def call(name: str, arguments: dict[str, Any] | None = None, **options: Any) -> Any:
                called.add(name)
                return await client.call_tool(name, arguments, **options)

            assert texts(await call("echo", {"message": "hi"})) == ["Echo: hi"]
            assert texts(await call("get-sum", {"a": 2, "b": 3.5})) == ["The sum of 2 and 3.5 is 5.5."]

            annotated = await call("get-annotated-message", {"messageType": "error", "includeImage": True})
            first, image = annotated.content
            assert isinstance(first, TextContent)
            assert first.text == "Error: Operation failed"
            assert first.annotations is not None
            assert (first.annotations.priority, first.annotations.audience) == (1.0, ["user", "assistant"])
            assert isinstance(image, ImageContent)
            assert image.mime_type == "image/png"

            env = texts(await call("get-env"))[0]
            assert isinstance(json.loads(env), dict)

            links = await call("get-resource-links", {"count": 2})
            assert [(link.uri, link.name) for link in links.content if isinstance(link, ResourceLink)] == [
                ("demo://resource/dynamic/blob/1", "Blob Resource 1"),
                ("demo://resource/dynamic/text/2", "Text Resource 2"),
            ]

            reference = await call("get-resource-reference", {"resourceType": "Blob", "resourceId": 3})
            embedded = reference.content[1]
            assert isinstance(embedded, EmbeddedResource)
            assert embedded.resource.uri == "demo://resource/dynamic/blob/3"
            assert embedded.resource.blob is not None
            assert base64.b64decode(embedded.resource.blob).startswith(b"Resource 3: This is a base64 blob")

            structured = await call("get-structured-content", {"location": "Chicago"})
            assert structured.structured_content == {"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82}

            tiny = await call("get-tiny-image")
            assert [type(block) for block in tiny.content] == [TextContent, ImageContent, TextContent]

            # A data: URI: the tool would otherwise fetch from the network.
            data = "data:text/plain;base64," + base64.b64encode(b"hello gzip").decode()
            inline = await call("gzip-file-as-resource", {"name": "hello.gz", "data": data, "outputType": "resource"})
            (zipped,) = inline.content
            assert isinstance(zipped, EmbeddedResource)
            assert (zipped.resource.uri, zipped.resource.mime_type) == ("demo://resource/session/hello.gz", "application/gzip")
            assert zipped.resource.blob is not None
            assert gzip.decompress(base64.b64decode(zipped.resource.blob)) == b"hello gzip"
            linked = await call("gzip-file-as-resource", {"name": "link.gz", "data": data})
            (link,) = linked.content
            assert isinstance(link, ResourceLink)
            read = await client.read_resource(link.uri)  # a resource registered for this session only
            assert read.contents[0].blob is not None
            assert gzip.decompress(base64.b64decode(read.contents[0].blob)) == b"hello gzip"

            progress: list[tuple[float, float | None]] = []
            done = await call(
                "trigger-long-running-operation",
                {"duration": 0.3, "steps": 3},
                on_progress=lambda value, total, message: progress.append((value, total)),
            )
            assert texts(done) == ["Long running operation completed. Duration: 0.3 seconds, Steps: 3."]
            assert progress == [(1, 3), (2, 3), (3, 3)]

            for toggle in ("toggle-simulated-logging", "toggle-subscriber-updates"):
                assert texts(await call(toggle))[0].startswith("Started simulated")
                assert texts(await call(toggle))[0].startswith("Stopped simulated")

            roots = texts(await call("get-roots-list"))[0]
            assert "URI: file:///srv/a" in roots
            assert "URI: file:///srv/b" in roots

            sampled = texts(await call("trigger-sampling-request", {"prompt": "2+2?", "maxTokens": 20}))[0]
            model_said = json.loads(sampled.split("result:", 1)[1])["content"]["text"]
            assert model_said == "echo Resource trigger-sampling-request context: 2+2?"
            elicited = texts(await call("trigger-elicitation-request"))
            assert elicited[0] == "✅ User provided the requested information!"
            url = {"url": "https://example.com/connect", "elicitationId": "e-1"}
            assert texts(await call("trigger-url-elicitation", url))[0].startswith("✅ User completed the URL elicitation flow.")

            refused = await call("simulate-research-query", {"topic": "interop"})
            assert refused.is_error
            needs_a_task = "Tool simulate-research-query requires task augmentation (taskSupport: 'required')"
            assert refused.content == [TextContent(text=f"MCP error -32601: {needs_a_task}")]
    assert listed == called, "every tool server-everything offers is exercised"
    assert listed & TASK_TOOLS == {"simulate-research-query"}
    assert [request.mode for request in user.elicited] == ["form", "url"]
    assert len(user.sampled) == 1


@pytest.mark.parametrize("where", WHERE)
async def test_tool_errors(everything: list[str], everything_url: str, where: str) -> None:
    """The TypeScript SDK turns an unknown tool and arguments that break the schema into
    ``isError`` results (with the JSON-RPC code in the text), not JSON-RPC errors."""
    with anyio.fail_after(LIMIT):
        async with connect(where, everything, everything_url, User().options()) as client:
            unknown = await client.call_tool("no-such-tool")
            bad = await client.call_tool("get-sum", {"a": "two"})
    assert unknown.is_error
    assert unknown.content == [TextContent(text="MCP error -32602: Tool no-such-tool not found")]
    assert bad.is_error
    assert isinstance(bad.content[0], TextContent)
    assert bad.content[0].text.startswith("MCP error -32602: Input validation error: Invalid arguments for tool get-sum")


@pytest.mark.parametrize("where", WHERE)
async def test_resources_templates_and_pages(everything: list[str], everything_url: str, where: str) -> None:
    with anyio.fail_after(LIMIT):
        async with connect(where, everything, everything_url, User().options()) as client:
            page = await client.list_resources()
            listed = await client.list_all_resources()
            templates = await client.list_all_resource_templates()
            document = await client.read_resource(DOC)
            text = await client.read_resource("demo://resource/dynamic/text/5")
            blob = await client.read_resource("demo://resource/dynamic/blob/2")
            with pytest.raises(McpError) as unknown:
                await client.read_resource("demo://nowhere")
    assert page.next_cursor is None  # this version lists everything on one page
    assert listed == page.resources
    assert {resource.uri for resource in listed} >= {DOC, "demo://resource/static/document/architecture.md"}
    assert [t.uri_template for t in templates] == [
        "demo://resource/dynamic/text/{resourceId}",
        "demo://resource/dynamic/blob/{resourceId}",
    ]
    assert document.contents[0].mime_type == "text/markdown"
    assert document.contents[0].text is not None
    assert document.contents[0].text.startswith("# Everything Server - Features")
    assert text.contents[0].text is not None
    assert text.contents[0].text.startswith("Resource 5: This is a plaintext resource")
    assert blob.contents[0].blob is not None
    assert base64.b64decode(blob.contents[0].blob).startswith(b"Resource 2: This is a base64 blob")
    assert (unknown.value.code, unknown.value.message) == (-32602, "MCP error -32602: Resource demo://nowhere not found")


@pytest.mark.parametrize("where", WHERE)
async def test_prompts_and_completions(everything: list[str], everything_url: str, where: str) -> None:
    with anyio.fail_after(LIMIT):
        async with connect(where, everything, everything_url, User().options()) as client:
            prompts = {prompt.name: prompt for prompt in await client.list_all_prompts()}
            simple = await client.get_prompt("simple-prompt")
            args = await client.get_prompt("args-prompt", {"city": "Oslo", "state": "Viken"})
            promoted = await client.get_prompt("completable-prompt", {"department": "Engineering", "name": "Alice"})
            embedded = await client.get_prompt("resource-prompt", {"resourceType": "Text", "resourceId": "2"})
            with pytest.raises(McpError) as missing:
                await client.get_prompt("args-prompt", {})
            department = await client.complete({"type": "ref/prompt", "name": "completable-prompt"}, "department", "E")
            names = await client.complete(
                {"type": "ref/prompt", "name": "completable-prompt"}, "name", "", context={"department": "Engineering"}
            )
            kind = await client.complete({"type": "ref/prompt", "name": "resource-prompt"}, "resourceType", "B")
            resource_id = await client.complete(
                {"type": "ref/resource", "uri": "demo://resource/dynamic/text/{resourceId}"}, "resourceId", "7"
            )
    assert list(prompts) == ["simple-prompt", "args-prompt", "completable-prompt", "resource-prompt"]
    assert [(a.name, a.required) for a in prompts["args-prompt"].arguments or []] == [("city", True), ("state", False)]
    assert simple.messages[0].content == TextContent(text="This is a simple prompt without arguments.")
    assert args.messages[0].content == TextContent(text="What's weather in Oslo, Viken?")
    assert promoted.messages[0].content == TextContent(text="Please promote Alice to the head of the Engineering team.")
    resource = embedded.messages[1].content
    assert isinstance(resource, EmbeddedResource)
    assert resource.resource.uri == "demo://resource/dynamic/text/2"
    assert missing.value.code == -32602
    assert department.completion.values == ["Engineering"]
    assert names.completion.values == ["Alice", "Bob", "Charlie"]
    assert kind.completion.values == ["Blob"]
    assert resource_id.completion.values == ["7"]


@pytest.mark.parametrize("where", WHERE)
async def test_logging(everything: list[str], everything_url: str, where: str) -> None:
    """``logging/setLevel`` is honoured: at "warning" the server's info message about a
    subscription is not sent; at "info" it is (and comes after anything sent before)."""
    user = User()
    with anyio.fail_after(LIMIT):
        async with connect(where, everything, everything_url, user.options()) as client:
            await user.logs.until(lambda logs: any(str(data).startswith("Roots updated") for _, data, _ in logs))  # unasked
            await client.set_logging_level("warning")
            await client.subscribe_resource("demo://resource/dynamic/text/1")
            await client.set_logging_level("info")
            await client.subscribe_resource("demo://resource/dynamic/text/2")
            await user.logs.until(lambda logs: any("dynamic/text/2" in str(data) for _, data, _ in logs))
            await client.set_logging_level("debug")
            before = len(user.logs.items)
            assert texts(await client.call_tool("toggle-simulated-logging"))[0].startswith("Started")
            await user.logs.until(lambda logs: len(logs) > before)  # one message at once, at a random level
            assert texts(await client.call_tool("toggle-simulated-logging"))[0].startswith("Stopped")
    (subscribed,) = [(level, data) for level, data, _ in user.logs.items if "Received Subscribe" in str(data)]
    assert subscribed[0] == "info"
    assert subscribed[1].startswith("Received Subscribe Resource request for URI: demo://resource/dynamic/text/2 ")
    roots = next(entry for entry in user.logs.items if str(entry[1]).startswith("Roots updated"))
    assert roots == ("info", "Roots updated: 2 root(s) received from client", "everything-server")
    level, data, _ = user.logs.items[before]
    assert re.match(rf"{level}[- ]level[- ]message", str(data), re.IGNORECASE), (level, data)


@pytest.mark.parametrize("where", WHERE)
async def test_resource_updates_through_listen(everything: list[str], everything_url: str, where: str) -> None:
    """Issue 9: ``client.listen(resource_uris=[...])`` sends ``resources/subscribe``;
    ``toggle-subscriber-updates`` makes server-everything send
    ``notifications/resources/updated`` for it at once (then every 5 s), which arrives as
    a ``SubscriptionEvent``; leaving the ``async with`` unsubscribes."""
    with anyio.fail_after(LIMIT):
        async with connect(where, everything, everything_url, User().options()) as client:
            async with client.listen(resource_uris=[DOC]) as changes:
                assert texts(await client.call_tool("toggle-subscriber-updates"))[0].startswith("Started")
                event = await changes.__anext__()
            assert event == SubscriptionEvent(kind="resource", uri=DOC)
            assert texts(await client.call_tool("toggle-subscriber-updates"))[0].startswith("Stopped")


@pytest.mark.parametrize("where", WHERE)
async def test_resource_updates_through_subscribe_resource(everything: list[str], everything_url: str, where: str) -> None:
    """Issue 9: ``client.subscribe_resource(uri)`` by hand, the update seen by
    ``on_notification``, and ``unsubscribe_resource``: the next round of updates names
    only the URI still subscribed."""
    updates: Watch[str] = Watch()

    def on_notification(method: str, params: dict[str, Any]) -> None:
        if method == "notifications/resources/updated":
            updates.add(params["uri"])

    other = "demo://resource/dynamic/text/9"
    with anyio.fail_after(LIMIT):
        async with connect(where, everything, everything_url, User().options(on_notification=on_notification)) as client:
            await client.subscribe_resource(DOC)
            await client.subscribe_resource(other)
            assert texts(await client.call_tool("toggle-subscriber-updates"))[0].startswith("Started")
            await updates.until(lambda uris: sorted(uris) == sorted([DOC, other]))
            assert texts(await client.call_tool("toggle-subscriber-updates"))[0].startswith("Stopped")
            await client.unsubscribe_resource(other)
            del updates.items[:]
            assert texts(await client.call_tool("toggle-subscriber-updates"))[0].startswith("Started")
            await updates.until(lambda uris: uris == [DOC])
            assert texts(await client.call_tool("toggle-subscriber-updates"))[0].startswith("Stopped")
