"""Interop for the interactive protocol (issue 8): foreign peers ask, mcpkit answers, and
the other way round.

1. The official ``mcp`` client (PyPI ``mcp==2.3.0``) answers mcpkit's server
   (tests/support/servers/interactive.py; tests/support/servers/interactive_extra.py for sampling with
   tools and a multi-select form) with its ``elicitation_callback``,
   ``sampling_callback`` and ``list_roots_callback``, over stdio and Streamable HTTP, in
   the legacy era (server→client requests) and in the modern era (the official client
   drives the 2026-07-28 ``input_required`` loop too).
2. mcpkit's client answers the official SDK's ``MCPServer``
   (tests/support/servers/official_interactive.py) with ``on_elicit`` / ``on_sample`` / ``roots``,
   over stdio and Streamable HTTP, in both eras (the official server asks through
   ``Resolve(...)`` resolvers in both, and through ``ctx.elicit`` /
   ``ctx.session.create_message`` in the legacy era only).
3. mcpkit's client answers ``@modelcontextprotocol/server-everything`` (npm, pinned in
   ``NPM_PEERS``; a legacy-era server) over stdio: its elicitation (form and URL),
   sampling and roots tools.
4. The TypeScript SDK's client (``@modelcontextprotocol/sdk``, which validates every
   request it receives against the spec's schema) answers mcpkit's forms over stdio.

The npm packages are installed on first use into ``.cache/peers`` (git-ignored) by ``npm
install``, under a file lock; they run on the machine's ``node``.

Every test asserts what the user of the calling side sees — the tool's text — and runs
under a deadline, so a peer that stops answering fails the test instead of hanging it.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any, Literal

import anyio
import mcp_types as mt
import pytest
from mcp.client.client import Client as OfficialClient
from mcp.client.session import ClientRequestContext, IncomingMessage
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from mcpkit import (
    Client,
    ClientOptions,
    CreateMessageParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    HttpTransport,
    McpError,
    RequestTimeout,
    Root,
    StdioTransport,
    TextContent,
    UrlElicitationRequired,
)
from support.eras import ERAS, LEGACY
from support.paths import SERVERS
from support.peers import PEERS
from support.ports import free_port
from support.processes import listening, server_command

WHERE = ["stdio", "http"]
LIMIT = 60.0  # seconds for a whole test body: nothing a peer does may hang a test (a spawned server gets 30 s to start)
Action = Literal["accept", "decline", "cancel"]


def kit_text(result: Any) -> str:
    """The text of an mcpkit ``CallToolResult`` that is not an error."""
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def official_text(result: mt.CallToolResult) -> str:
    """The text of an official ``CallToolResult`` that is not an error."""
    assert result.is_error is not True, result
    block = result.content[0]
    assert isinstance(block, mt.TextContent)
    return block.text


# --- servers on loopback ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def kit_url() -> Iterator[str]:
    """mcpkit's interactive server over Streamable HTTP."""
    port = free_port()
    with listening(server_command("interactive", "--http", str(port)), port):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def official_url() -> Iterator[str]:
    """The official SDK's interactive server over Streamable HTTP (stateful, SSE)."""
    port = free_port()
    with listening(server_command("official_interactive", "--http", str(port)), port):
        yield f"http://127.0.0.1:{port}/mcp"


# =============================================================================================
# 1. The official client answers mcpkit's server
# =============================================================================================


class OfficialUser:
    """The official client's callbacks: they answer elicitations with ``actions`` in turn
    (then "accept"), accepted with ``content``; the model echoes the last message; the
    roots are ``roots``. Every request is recorded."""

    def __init__(self, *actions: Action, content: dict[str, Any] | None = None, roots: tuple[str, ...] = ()) -> None:
        self.actions = list(actions)
        self.content: dict[str, Any] = content if content is not None else {"name": "Ada"}
        self.roots = roots
        self.elicited: list[mt.ElicitRequestParams] = []
        self.sampled: list[mt.CreateMessageRequestParams] = []

    async def elicit(self, context: ClientRequestContext, params: mt.ElicitRequestParams) -> mt.ElicitResult | mt.ErrorData:
        self.elicited.append(params)
        action: Action = self.actions.pop(0) if self.actions else "accept"
        return mt.ElicitResult(action=action, content=self.content if action == "accept" else None)

    async def sample(
        self, context: ClientRequestContext, params: mt.CreateMessageRequestParams
    ) -> mt.CreateMessageResult | mt.CreateMessageResultWithTools | mt.ErrorData:
        self.sampled.append(params)
        said = params.messages[-1].content
        text = said.text if isinstance(said, mt.TextContent) else "?"
        return mt.CreateMessageResult(
            role="assistant", content=mt.TextContent(type="text", text=f"echo {text}"), model="m-official"
        )

    async def list_roots(self, context: ClientRequestContext) -> mt.ListRootsResult | mt.ErrorData:
        return mt.ListRootsResult.model_validate({"roots": [{"uri": uri} for uri in self.roots]})

    def callbacks(self) -> dict[str, Any]:
        return {"elicitation_callback": self.elicit, "sampling_callback": self.sample, "list_roots_callback": self.list_roots}


@contextlib.asynccontextmanager
async def official_client(
    where: str, era: str, url: str, script: str = "interactive", **settings: Any
) -> AsyncIterator[OfficialClient]:
    """The official client connected to an mcpkit server script, over stdio (spawned) or
    Streamable HTTP (``url``): ``mode="legacy"`` (initialize) for the legacy era,
    ``mode="auto"`` (``server/discover``, as a user would leave it) for the modern one."""
    mode = "legacy" if era == LEGACY else "auto"
    settings.setdefault("read_timeout_seconds", 10)
    with open(os.devnull, "w") as devnull:  # noqa: ASYNC230 - opening /dev/null does not block
        server: Any = url
        if where == "stdio":
            params = StdioServerParameters(command=sys.executable, args=[str(SERVERS / f"{script}.py")])
            server = stdio_client(params, errlog=devnull)
        async with OfficialClient(server, mode=mode, **settings) as client:
            assert client.protocol_version == era
            yield client


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("where", WHERE)
async def test_official_client_answers_elicitation(kit_url: str, where: str, era: str) -> None:
    """``ask_name`` accepted, declined, cancelled: the tool sees each answer."""
    user = OfficialUser("accept", "decline", "cancel")
    with anyio.fail_after(LIMIT):
        async with official_client(where, era, kit_url, **user.callbacks()) as client:
            assert official_text(await client.call_tool("ask_name")) == "Hello, Ada!"
            assert official_text(await client.call_tool("ask_name")) == "no name (decline)"
            assert official_text(await client.call_tool("ask_name")) == "no name (cancel)"
    asked = user.elicited[0]
    assert isinstance(asked, mt.ElicitRequestFormParams)
    assert asked.message == "What is your name?"
    assert asked.requested_schema["required"] == ["name"]
    assert len(user.elicited) == 3  # asked once per call, in either era


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("where", WHERE)
async def test_official_client_answers_sampling_and_roots(kit_url: str, where: str, era: str) -> None:
    user = OfficialUser(roots=("file:///a", "file:///b"))
    with anyio.fail_after(LIMIT):
        async with official_client(where, era, kit_url, **user.callbacks()) as client:
            assert official_text(await client.call_tool("ask_model", {"question": "2+2?"})) == "m-official: echo 2+2?"
            assert official_text(await client.call_tool("roots")) == "file:///a,file:///b"
    (sampled,) = user.sampled
    assert sampled.system_prompt == "Be brief."
    assert sampled.max_tokens == 100


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("where", WHERE)
async def test_official_client_answers_questions_in_turn_and_together(kit_url: str, where: str, era: str) -> None:
    """Two questions one after the other (two input rounds in the modern era), then an
    elicitation, a sampling request and a roots request asked at once (one round)."""
    user = OfficialUser(content={"name": "Ada", "colour": "blue"}, roots=("file:///r",))
    with anyio.fail_after(LIMIT):
        async with official_client(where, era, kit_url, **user.callbacks()) as client:
            assert official_text(await client.call_tool("two_steps")) == "Ada likes blue"
            assert [asked.message for asked in user.elicited] == ["Step 1", "Step 2"]
            assert official_text(await client.call_tool("all_at_once")) == "Ada|echo Generate a greeting|file:///r"


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("where", WHERE)
async def test_official_client_answers_typed_forms_prompts_and_resources(kit_url: str, where: str, era: str) -> None:
    """A form asked with a class (the omitted fields take the class defaults), and a
    prompt and a resource that ask before they answer."""
    user = OfficialUser(content={"name": "Bo", "context": "the garden", "text": "a note"})
    with anyio.fail_after(LIMIT):
        async with official_client(where, era, kit_url, **user.callbacks()) as client:
            assert official_text(await client.call_tool("ask_contact")) == "Bo 0 red"
            prompt = await client.get_prompt("with_context")
            assert isinstance(prompt.messages[0].content, mt.TextContent)
            assert prompt.messages[0].content.text == "Use this context: the garden"
            read = await client.read_resource("note://asked")
            assert isinstance(read.contents[0], mt.TextResourceContents)
            assert read.contents[0].text == "a note"
    schema = user.elicited[0].requested_schema  # type: ignore[union-attr]
    assert schema["properties"]["age"]["default"] == 0
    assert sorted(schema["properties"]["colour"]["enum"]) == ["green", "red"]


@pytest.mark.parametrize("era", ERAS)
async def test_official_client_answers_url_elicitation(era: str) -> None:
    """URL mode: the official client is shown the URL and accepts; in the legacy era it
    then gets ``notifications/elicitation/complete`` for that elicitation."""
    user = OfficialUser()
    completed: list[str] = []
    done = anyio.Event()

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, mt.ElicitCompleteNotification):
            completed.append(message.params.elicitation_id)
            done.set()

    with anyio.fail_after(LIMIT):
        async with official_client("stdio", era, "", message_handler=on_message, **user.callbacks()) as client:
            assert official_text(await client.call_tool("open_url")) == "accept"
            if era == LEGACY:
                await done.wait()
    (asked,) = user.elicited
    assert isinstance(asked, mt.ElicitRequestURLParams)
    assert (asked.url, asked.elicitation_id, asked.message) == ("https://example.com/key", "el-1", "Set your API key")
    assert completed == (["el-1"] if era == LEGACY else [])


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("where", WHERE)
async def test_official_client_callback_error_ends_the_call(kit_url: str, where: str, era: str) -> None:
    """The official callback answers with an error. Legacy: the error is the response
    to mcpkit's request, the handler does not catch it, and it comes back as the
    ``tools/call`` error. Modern: the official client stops its input loop with it."""

    async def refuse(context: ClientRequestContext, params: mt.ElicitRequestParams) -> mt.ElicitResult | mt.ErrorData:
        return mt.ErrorData(code=-32000, message="user went away")

    with anyio.fail_after(LIMIT):
        async with official_client(where, era, kit_url, elicitation_callback=refuse) as client:
            with pytest.raises(MCPError) as caught:
                await client.call_tool("ask_name")
            assert (caught.value.error.code, caught.value.error.message) == (-32000, "user went away")
            with pytest.raises(MCPError) as missing:
                await client.call_tool("ask_model", {"question": "?"})
            assert missing.value.error.code == -32021  # no sampling callback: no sampling capability


@pytest.mark.parametrize("where", WHERE)
async def test_official_client_legacy_question_deadline_and_withdrawal(kit_url: str, where: str) -> None:
    """Legacy era. A question whose deadline passes (``impatient``: 0.5 s) is cancelled
    on the wire, so the official callback is cancelled and the tool reports it; a call
    the official client gives up on withdraws its question the same way."""
    asked: list[str] = []
    cancelled: list[str] = []
    withdrawn = anyio.Event()

    async def slow(context: ClientRequestContext, params: mt.ElicitRequestParams) -> mt.ElicitResult | mt.ErrorData:
        asked.append(params.message)
        try:
            await anyio.sleep(LIMIT)
        except anyio.get_cancelled_exc_class():
            cancelled.append(params.message)
            withdrawn.set()
            raise
        return mt.ElicitResult(action="accept", content={"x": "too late"})

    with anyio.fail_after(LIMIT):
        async with official_client(where, LEGACY, kit_url, elicitation_callback=slow) as client:
            result = await client.call_tool("impatient")
            assert result.is_error
            assert isinstance(result.content[0], mt.TextContent)
            assert result.content[0].text == "no answer: Request timed out"
            with anyio.fail_after(5):
                await withdrawn.wait()
            withdrawn = anyio.Event()
            with pytest.raises(MCPError, match="timed out"):
                await client.call_tool("ask_name", read_timeout_seconds=0.5)
            with anyio.fail_after(5):
                await withdrawn.wait()
    assert asked == cancelled == ["Quick!", "What is your name?"]


@pytest.mark.parametrize("era", ERAS)
async def test_official_client_answers_sampling_with_tools(era: str) -> None:
    """Sampling with tool use (2025-11-25): the official model answers with a
    ``tool_use`` block, mcpkit's handler sends the ``tool_result`` back in a second
    request whose messages hold lists of blocks, and the model's final text ends the tool."""
    seen: list[mt.CreateMessageRequestParams] = []

    async def model(
        context: ClientRequestContext, params: mt.CreateMessageRequestParams
    ) -> mt.CreateMessageResult | mt.CreateMessageResultWithTools | mt.ErrorData:
        seen.append(params)
        if len(seen) == 1:
            call = mt.ToolUseContent(type="tool_use", id="call-1", name="get_weather", input={"city": "Paris"})
            return mt.CreateMessageResultWithTools(role="assistant", content=[call], model="m", stop_reason="toolUse")
        return mt.CreateMessageResult(
            role="assistant", content=mt.TextContent(type="text", text="It is sunny."), model="m", stop_reason="endTurn"
        )

    tools = mt.SamplingCapability(tools=mt.SamplingToolsCapability())
    with anyio.fail_after(LIMIT):
        async with official_client(
            "stdio", era, "", script="interactive_extra", sampling_callback=model, sampling_capabilities=tools
        ) as client:
            text = official_text(await client.call_tool("weather_agent", {"city": "Paris"}))
    assert text == "toolUse:get_weather(Paris) -> endTurn: It is sunny."
    first, second = seen
    assert [tool.name for tool in first.tools or []] == ["get_weather"]
    assert first.tool_choice is not None
    assert first.tool_choice.mode == "auto"
    assistant, result = second.messages[1].content, second.messages[2].content
    assert isinstance(assistant, list)
    assert isinstance(assistant[0], mt.ToolUseContent)
    assert (assistant[0].id, assistant[0].input) == ("call-1", {"city": "Paris"})
    assert isinstance(result, list)
    assert isinstance(result[0], mt.ToolResultContent)
    assert result[0].tool_use_id == "call-1"


@pytest.mark.parametrize("era", ERAS)
async def test_official_client_answers_a_multi_select_form(era: str) -> None:
    """A form asked with a ``list[Literal[...]]`` field: the official client (which does
    not check the schema) answers with a list, and the handler gets it typed."""
    user = OfficialUser(content={"instruments": ["piano", "drums"]})
    with anyio.fail_after(LIMIT):
        async with official_client("stdio", era, "", script="interactive_extra", **user.callbacks()) as client:
            assert official_text(await client.call_tool("pick_instruments")) == "piano+drums"
    (asked,) = user.elicited
    assert asked.requested_schema["properties"]["instruments"]["type"] == "array"  # type: ignore[union-attr]


# =============================================================================================
# 2. mcpkit's client answers the official SDK's server
# =============================================================================================


def kit_user(*actions: Action, content: dict[str, Any] | None = None) -> tuple[Any, Any, list[Any]]:
    """mcpkit callbacks: ``on_elicit`` answers with ``actions`` in turn (then "accept"),
    accepted with ``content``; ``on_sample`` echoes the last message and calls
    ``get_weather`` when offered tools. The list records every request."""
    queue = list(actions)
    seen: list[Any] = []

    def on_elicit(request: ElicitRequestParams) -> ElicitResult:
        seen.append(request)
        action: Action = queue.pop(0) if queue else "accept"
        return ElicitResult(action=action, content=(content or {"name": "Ada"}) if action == "accept" else None)

    async def on_sample(request: CreateMessageParams) -> CreateMessageResult:
        seen.append(request)
        if request.tools:
            call = {"type": "tool_use", "id": "c-1", "name": request.tools[0]["name"], "input": {"city": "Oslo"}}
            return CreateMessageResult(role="assistant", content=[call], model="m-kit", stop_reason="toolUse")
        text = request.messages[-1].content["text"]
        return CreateMessageResult(role="assistant", content={"type": "text", "text": f"echo {text}"}, model="m-kit")

    return on_elicit, on_sample, seen


@contextlib.asynccontextmanager
async def kit_client(where: str, era: str, url: str, **options: Any) -> AsyncIterator[Client]:
    """mcpkit's client connected to the official server, over stdio (spawned) or HTTP."""
    options.setdefault("request_timeout", 30)  # a spawned server starts within it, even on a loaded machine
    transport: Any = HttpTransport(url)
    if where == "stdio":
        transport = StdioTransport(server_command("official_interactive"), stderr="devnull")
    async with Client(transport, ClientOptions(protocol_version=era, **options)) as client:
        assert client.era == ("legacy" if era == LEGACY else "modern")
        yield client


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("where", WHERE)
async def test_mcpkit_answers_official_elicitation(official_url: str, where: str, era: str) -> None:
    """The official server's form (a pydantic model) accepted, declined, cancelled; an
    accepted form that leaves out a field with a default."""
    on_elicit, _, seen = kit_user("accept", "decline", "cancel", "accept", content={"name": "Ada", "guest": "Bo"})
    with anyio.fail_after(LIMIT):
        async with kit_client(where, era, official_url, on_elicit=on_elicit) as client:
            assert kit_text(await client.call_tool("ask_name")) == "Hello, Ada!"
            assert kit_text(await client.call_tool("ask_name")) == "no name (decline)"
            assert kit_text(await client.call_tool("ask_name")) == "no name (cancel)"
            assert kit_text(await client.call_tool("book", {"hotel": "The Grand"})) == "1 night(s) at The Grand for Bo"
    assert [request.message for request in seen] == ["What is your name?"] * 3 + ["Who is staying at The Grand?"]
    assert seen[0].requested_schema["required"] == ["name"]
    assert seen[3].requested_schema["properties"]["nights"]["default"] == 1


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("where", WHERE)
async def test_mcpkit_answers_official_sampling_and_roots(official_url: str, where: str, era: str) -> None:
    """Sampling (plain, and with tools), roots, and a sampling request built from the
    answer to an elicitation (two input rounds in the modern era)."""
    on_elicit, on_sample, seen = kit_user()
    roots = [Root(uri="file:///srv/a", name="a"), Root(uri="file:///srv/b")]
    options = {"on_elicit": on_elicit, "on_sample": on_sample, "roots": roots, "sampling_tools": True}
    with anyio.fail_after(LIMIT):
        async with kit_client(where, era, official_url, **options) as client:
            assert kit_text(await client.call_tool("ask_model", {"question": "2+2?"})) == "m-kit: echo 2+2?"
            assert kit_text(await client.call_tool("roots")) == "file:///srv/a,file:///srv/b"
            assert kit_text(await client.call_tool("weather", {"city": "Oslo"})) == "toolUse: get_weather({'city': 'Oslo'})"
            del seen[:]
            assert kit_text(await client.call_tool("greet")) == "m-kit: echo Greet Ada"
    asked, sampled = seen
    assert isinstance(asked, ElicitRequestParams)
    assert isinstance(sampled, CreateMessageParams)
    assert sampled.max_tokens == 32


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("where", WHERE)
async def test_mcpkit_answers_official_context_apis(official_url: str, where: str, era: str) -> None:
    """``ctx.elicit`` and ``ctx.session.create_message`` called in the tool body: answered
    in the legacy era; in the modern era the official server has no back-channel for them
    and fails the call with -32600, which mcpkit reports at once."""
    on_elicit, on_sample, _ = kit_user()
    with anyio.fail_after(LIMIT):
        async with kit_client(where, era, official_url, on_elicit=on_elicit, on_sample=on_sample) as client:
            if era == LEGACY:
                assert kit_text(await client.call_tool("direct_name")) == "Hello, Ada!"
                assert kit_text(await client.call_tool("direct_model", {"question": "hi?"})) == "m-kit: echo hi?"
            else:
                for name, args in [("direct_name", {}), ("direct_model", {"question": "hi?"})]:
                    with pytest.raises(McpError) as caught:
                        await client.call_tool(name, args)
                    assert caught.value.code == -32600
                    assert "no back-channel" in caught.value.message


@pytest.mark.parametrize("where", ["stdio", "http"])
async def test_mcpkit_question_withdrawn_when_its_call_is_cancelled(official_url: str, where: str) -> None:
    """Legacy era. mcpkit's call times out while the official server's question is open;
    mcpkit cancels the call, the server cancels the tool and then (0.3 s later: a busy
    server) its question, with ``notifications/cancelled`` on the call's stream; mcpkit's
    ``on_elicit`` must be cancelled — the user's dialog closes."""
    asked = anyio.Event()
    withdrawn = anyio.Event()

    async def on_elicit(request: ElicitRequestParams) -> ElicitResult:
        asked.set()
        try:
            await anyio.sleep(LIMIT)
        except anyio.get_cancelled_exc_class():
            withdrawn.set()
            raise
        return ElicitResult(action="accept", content={"name": "too late"})

    with anyio.fail_after(LIMIT):
        async with kit_client(where, LEGACY, official_url, on_elicit=on_elicit) as client:
            with pytest.raises(RequestTimeout):
                await client.call_tool("ask_name_late_withdrawal", timeout=0.5)
            assert asked.is_set()
            with anyio.fail_after(2):
                await withdrawn.wait()


@pytest.mark.parametrize("era", ERAS)
async def test_mcpkit_callback_that_raises_against_the_official_server(era: str) -> None:
    """Legacy: mcpkit answers the official server's request with -32603 and the server
    fails the call with it. Modern: the exception reaches mcpkit's caller."""

    def crash(request: ElicitRequestParams) -> ElicitResult:
        raise RuntimeError("the dialog crashed")

    with anyio.fail_after(LIMIT):
        async with kit_client("stdio", era, "", on_elicit=crash) as client:
            if era == LEGACY:
                with pytest.raises(McpError) as caught:
                    await client.call_tool("ask_name")
                assert (caught.value.code, caught.value.message) == (-32603, "Internal error")
            else:
                with pytest.raises(RuntimeError, match="the dialog crashed"):
                    await client.call_tool("ask_name")


# =============================================================================================
# 3. mcpkit's client answers @modelcontextprotocol/server-everything
# =============================================================================================


@contextlib.asynccontextmanager
async def everything_client(command: list[str], **options: Any) -> AsyncIterator[Client]:
    """mcpkit's client on server-everything, era left to negotiation (it falls back from
    ``server/discover`` to ``initialize``: server-everything is a legacy-era server)."""
    options.setdefault("request_timeout", 30)  # a spawned server starts within it, even on a loaded machine
    async with Client(StdioTransport(command, stderr="devnull"), ClientOptions(**options)) as client:
        assert client.era == "legacy"
        yield client


def _blocks(result: Any) -> list[str]:
    assert not result.is_error, result
    texts = []
    for block in result.content:
        assert isinstance(block, TextContent)
        texts.append(block.text)
    return texts


def _raw(text: str) -> Any:
    """The JSON server-everything appends to its answer (after ``Raw result:`` or ``LLM
    sampling result:``)."""
    return json.loads(text.split("result:", 1)[1])


async def test_everything_elicitation(everything: list[str]) -> None:
    """``trigger-elicitation-request``: accepted (mcpkit fills every default the user left
    out, SEP-1034, down to the multi-select arrays), declined, cancelled."""
    on_elicit, _, seen = kit_user("accept", "decline", "cancel", content={"name": "Ada", "check": True})
    with anyio.fail_after(LIMIT):
        async with everything_client(everything, on_elicit=on_elicit) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert "trigger-elicitation-request" in tools
            assert "trigger-url-elicitation" not in tools  # form mode only was declared
            accepted = _blocks(await client.call_tool("trigger-elicitation-request"))
            declined = _blocks(await client.call_tool("trigger-elicitation-request"))
            cancelled = _blocks(await client.call_tool("trigger-elicitation-request"))
    assert accepted[0] == "✅ User provided the requested information!"
    assert accepted[1] == ("User inputs:\n- Name: Ada\n- Agreed to terms: true\n- Favorite Integer: 42\n- Favorite Number: 3.14")
    assert _raw(accepted[2]) == {
        "action": "accept",
        "content": {
            "name": "Ada",
            "check": True,
            "firstLine": "It was a dark and stormy night.",
            "integer": 42,
            "number": 3.14,
            "untitledSingleSelectEnum": "Monica",
            "untitledMultipleSelectEnum": ["Guitar"],
            "titledSingleSelectEnum": "hero-1",
            "titledMultipleSelectEnum": ["fish-1"],
            "legacyTitledEnum": "pet-1",
        },
    }
    assert declined[0] == "❌ User declined to provide the requested information."
    assert cancelled[0] == "⚠️ User cancelled the elicitation dialog."
    asked = seen[0]
    assert asked.message == "Please provide inputs for the following fields:"
    assert asked.requested_schema["required"] == ["name"]
    assert asked.requested_schema["properties"]["titledSingleSelectEnum"]["oneOf"][1] == {
        "const": "hero-2",
        "title": "Green Lantern",
    }


async def test_everything_sampling(everything: list[str]) -> None:
    _, on_sample, seen = kit_user()
    with anyio.fail_after(LIMIT):
        async with everything_client(everything, on_sample=on_sample) as client:
            result = _blocks(await client.call_tool("trigger-sampling-request", {"prompt": "2+2?", "maxTokens": 20}))
    assert result[0].startswith("LLM sampling result: \n")
    assert _raw(result[0]) == {
        "model": "m-kit",
        "role": "assistant",
        "content": {"type": "text", "text": "echo Resource trigger-sampling-request context: 2+2?"},
    }
    (request,) = seen
    assert isinstance(request, CreateMessageParams)
    assert (request.system_prompt, request.temperature, request.max_tokens) == ("You are a helpful test server.", 0.7, 20)


async def test_everything_roots_and_their_change(everything: list[str]) -> None:
    """``get-roots-list`` shows mcpkit's roots; after ``set_roots`` server-everything hears
    ``notifications/roots/list_changed``, asks again and shows the new ones."""
    with anyio.fail_after(LIMIT):
        async with everything_client(everything, roots=[Root(uri="file:///srv/a", name="a")]) as client:
            listed = _blocks(await client.call_tool("get-roots-list"))[0]
            assert listed.startswith("Current MCP Roots (1 total):\n\n1. a\n   URI: file:///srv/a\n")
            await client.set_roots([Root(uri="file:///srv/b", name="b"), Root(uri="file:///srv/c")])
            while "URI: file:///srv/b" not in listed:  # it asks for them on its own time
                await anyio.sleep(0.05)
                listed = _blocks(await client.call_tool("get-roots-list"))[0]
    assert listed.startswith(
        "Current MCP Roots (2 total):\n\n1. b\n   URI: file:///srv/b\n\n2. Unnamed Root\n   URI: file:///srv/c\n"
    )


async def test_everything_url_elicitation(everything: list[str]) -> None:
    """``trigger-url-elicitation``, offered once mcpkit declares URL mode: the request
    path (``elicitation/create`` in URL mode, accepted and declined) and the error path
    (-32042 ``UrlElicitationRequired``, then a retry that goes through)."""
    actions: list[Action] = ["accept", "decline", "accept"]
    seen: list[ElicitRequestParams] = []

    def on_elicit(request: ElicitRequestParams) -> ElicitResult:
        seen.append(request)
        return ElicitResult(action=actions.pop(0))

    args = {"url": "https://example.com/connect", "elicitationId": "e-7"}
    with anyio.fail_after(LIMIT):
        async with everything_client(everything, on_elicit=on_elicit, elicitation_modes=("form", "url")) as client:
            accepted = _blocks(await client.call_tool("trigger-url-elicitation", args))
            declined = _blocks(await client.call_tool("trigger-url-elicitation", args))
            with pytest.raises(UrlElicitationRequired) as required:
                await client.call_tool("trigger-url-elicitation", {**args, "errorPath": True})
            retried = _blocks(await client.call_tool("trigger-url-elicitation", {**args, "errorPath": True}))
    assert accepted[0] == "✅ User completed the URL elicitation flow.\nElicitation ID: e-7\nURL: https://example.com/connect"
    assert declined[0] == "❌ User declined to open the URL (Elicitation ID: e-7)."
    assert retried[0] == accepted[0]
    assert (seen[0].mode, seen[0].url, seen[0].elicitation_id) == ("url", "https://example.com/connect", "e-7")
    assert seen[0].message == "Please open the link to complete this action."
    assert required.value.code == -32042
    (prerequisite,) = required.value.elicitations
    assert prerequisite["mode"] == "url"
    assert prerequisite["url"] == "https://modelcontextprotocol.io"
    assert prerequisite["message"] == "Open this link to satisfy the prerequisite, then retry the request."


async def test_everything_sees_a_callback_that_raises_as_an_error(everything: list[str]) -> None:
    """mcpkit answers with -32603; server-everything's tool fails with it; nothing hangs."""

    def crash(request: ElicitRequestParams) -> ElicitResult:
        raise RuntimeError("the dialog crashed")

    with anyio.fail_after(LIMIT):
        async with everything_client(everything, on_elicit=crash) as client:
            result = await client.call_tool("trigger-elicitation-request")
            assert result.is_error
            assert isinstance(result.content[0], TextContent)
            assert result.content[0].text == "MCP error -32603: Internal error"
            assert _blocks(await client.call_tool("echo", {"message": "still here"}))[0] == "Echo: still here"


# =============================================================================================
# 4. The TypeScript SDK's client answers mcpkit's forms
# =============================================================================================

#: A TypeScript SDK client, run as ``node --input-type=module -e TS_CLIENT <command>
#: <script> <tool> <content>`` in ``.cache/peers``: it declares form elicitation, accepts
#: every elicitation with ``content`` (JSON), calls ``tool`` and prints ``{"result": ...}``
#: or ``{"error": {"code", "message"}}``.
TS_CLIENT = """
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
const [command, script, tool, content] = process.argv.slice(1);
const client = new Client({ name: "ts-client", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: JSON.parse(content) }));
await client.connect(new StdioClientTransport({ command, args: [script], stderr: "ignore" }));
try {
  console.log(JSON.stringify({ result: await client.callTool({ name: tool, arguments: {} }) }));
} catch (error) {
  console.log(JSON.stringify({ error: { code: error.code, message: String(error.message).slice(0, 300) } }));
}
await client.close();
"""


@pytest.mark.parametrize(
    ("script", "tool", "content", "expected"),
    [
        pytest.param("interactive", "ask_name", {"name": "Ada"}, "Hello, Ada!", id="schema-dict"),
        pytest.param(
            "interactive",
            "ask_contact",
            {"name": "Ada"},
            "Ada 0 red",
            id="class-with-literal",
        ),
        pytest.param(
            "interactive_extra",
            "pick_instruments",
            {"instruments": ["piano"]},
            "piano",
            id="class-with-multi-select",
        ),
    ],
)
async def test_typescript_client_answers_forms(node: str, script: str, tool: str, content: dict[str, Any], expected: str) -> None:
    """The TypeScript client checks each ``elicitation/create`` against the spec's schema
    before its handler sees it: mcpkit's forms must be valid ones."""
    command = [
        node,
        "--input-type=module",
        "-e",
        TS_CLIENT,
        sys.executable,
        str(SERVERS / f"{script}.py"),
        tool,
        json.dumps(content),
    ]
    with anyio.fail_after(LIMIT):
        proc = await anyio.run_process(command, cwd=PEERS, check=False)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    outcome = json.loads(proc.stdout.decode().strip().splitlines()[-1])
    assert outcome == {"result": {"content": [{"type": "text", "text": expected}]}}
