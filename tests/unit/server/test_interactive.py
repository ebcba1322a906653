"""The server asks the client — elicitation, sampling, roots — through the public API, in
both eras, in memory, over stdio and over real HTTP (uvicorn on loopback).

Legacy era: real server→client requests. Modern era: multi-round-trip requests (an
``InputRequiredResult``, then a retry with ``inputResponses`` and ``requestState``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import enum
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any, Literal

import httpx
import pytest

from mcpkit import (
    MISSING_CLIENT_CAPABILITY,
    Client,
    ClientOptions,
    Context,
    CreateMessageParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    HttpTransport,
    McpError,
    RequestTimeout,
    Root,
    Server,
    StdioTransport,
    TextContent,
    UnexpectedResultType,
    UrlElicitationRequired,
)
from mcpkit.server.forms import form_schema
from support.eras import ERAS, LEGACY, MODERN
from support.ports import free_port
from support.processes import listening, load_server, server_command
from support.serving import serve_in_thread
from support.transports import HTTP, MEMORY, TRANSPORTS


def text_of(result: Any) -> str:
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    port = free_port()
    with listening(server_command("interactive", "--http", str(port)), port):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def interactive() -> Server:
    server: Server = load_server("interactive").server
    return server


@pytest.fixture
def connect(request: pytest.FixtureRequest, interactive: Server) -> Any:
    @contextlib.asynccontextmanager
    async def make(kind: str, era: str, **options: Any) -> AsyncIterator[Client]:
        options.setdefault("request_timeout", 10)
        opts = ClientOptions(protocol_version=era, **options)
        if kind == "memory":
            client = Client(interactive, opts)
        elif kind == "stdio":
            client = Client(StdioTransport(server_command("interactive"), stderr="devnull"), opts)
        else:
            client = Client(HttpTransport(request.getfixturevalue("http_url")), opts)  # started on first use
        async with client:
            yield client

    return make


def accept(content: dict[str, Any]) -> Any:
    def on_elicit(request: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="accept", content=content)

    return on_elicit


async def model(request: CreateMessageParams) -> CreateMessageResult:
    said = request.messages[-1].content["text"]
    return CreateMessageResult(role="assistant", content={"type": "text", "text": f"echo {said}"}, model="m-1")


# --- each request kind, accepted, in every transport and era ----------------------------------


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_elicitation_accepted(connect: Any, kind: str, era: str) -> None:
    async with connect(kind, era, on_elicit=accept({"name": "Ada"})) as client:
        assert text_of(await client.call_tool("ask_name")) == "Hello, Ada!"


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_elicitation_declined_or_cancelled(connect: Any, kind: str, era: str, action: str) -> None:
    async def on_elicit(request: ElicitRequestParams) -> dict[str, Any]:
        return {"action": action}

    async with connect(kind, era, on_elicit=on_elicit) as client:
        assert text_of(await client.call_tool("ask_name")) == f"no name ({action})"


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_sampling_and_roots(connect: Any, kind: str, era: str) -> None:
    seen: list[CreateMessageParams] = []

    async def on_sample(request: CreateMessageParams) -> CreateMessageResult:
        seen.append(request)
        return await model(request)

    roots = [Root(uri="file:///a", name="a"), Root(uri="file:///b")]
    async with connect(kind, era, on_sample=on_sample, roots=roots) as client:
        assert text_of(await client.call_tool("ask_model", {"question": "hi?"})) == "m-1: echo hi?"
        assert seen[0].system_prompt == "Be brief."
        assert seen[0].max_tokens == 100
        assert text_of(await client.call_tool("roots")) == "file:///a,file:///b"
        await client.set_roots([Root(uri="file:///c")])
        assert text_of(await client.call_tool("roots")) == "file:///c"


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_questions_one_after_another_and_together(connect: Any, kind: str, era: str) -> None:
    asked: list[str] = []

    def on_elicit(request: ElicitRequestParams) -> ElicitResult:
        asked.append(request.message)
        return ElicitResult(action="accept", content={"name": "Ada", "colour": "blue"})

    async with connect(kind, era, on_elicit=on_elicit, on_sample=model, roots=[Root(uri="file:///r")]) as client:
        assert text_of(await client.call_tool("two_steps")) == "Ada likes blue"
        assert asked == ["Step 1", "Step 2"]  # each question answered once, in either era
        assert text_of(await client.call_tool("all_at_once")) == "Ada|echo Generate a greeting|file:///r"


@pytest.mark.parametrize("era", ERAS)
async def test_typed_content_and_client_side_defaults(connect: Any, era: str) -> None:
    """Asked with a class: the schema carries its defaults, the client fills omitted
    fields from them (SEP-1034), and the handler gets an instance of the class."""
    schemas: list[dict[str, Any]] = []

    def on_elicit(request: ElicitRequestParams) -> ElicitResult:
        assert request.requested_schema is not None
        schemas.append(request.requested_schema)
        return ElicitResult(action="accept", content={"name": "Bo"})

    async with connect("memory", era, on_elicit=on_elicit) as client:
        assert text_of(await client.call_tool("ask_contact")) == "Bo 0 red"
    props = schemas[0]["properties"]
    assert props["colour"]["enum"] == ["red", "green"]  # in the order the class gives
    assert props["colour"]["type"] == "string"
    assert props["colour"]["default"] == "red"
    assert schemas[0]["required"] == ["name"]


@pytest.mark.parametrize("kind", [MEMORY, HTTP])
@pytest.mark.parametrize("era", ERAS)
async def test_prompts_and_resources_ask_too(connect: Any, kind: str, era: str) -> None:
    async with connect(kind, era, on_elicit=accept({"context": "owls", "text": "remember"})) as client:
        prompt = await client.get_prompt("with_context")
        content = prompt.messages[0].content
        assert isinstance(content, TextContent)
        assert content.text == "Use this context: owls"
        read = await client.read_resource("note://asked")
        assert read.contents[0].text == "remember"


@pytest.mark.parametrize("era", ERAS)
async def test_catching_exception_does_not_swallow_the_input_round(connect: Any, era: str) -> None:
    async with connect("memory", era, on_elicit=accept({"ok": True})) as client:
        assert text_of(await client.call_tool("careful")) == "state-ok accept"


@pytest.mark.e2e
async def test_legacy_question_from_a_json_response_goes_on_the_get_stream() -> None:
    """With json_response=True a POST's answer is plain JSON, so the question cannot ride
    on it: it goes on the session's GET stream, and the answer still reaches the handler."""
    server: Server = load_server("interactive").server
    with serve_in_thread(server.asgi_app(json_response=True)) as port:
        opts = ClientOptions(protocol_version=LEGACY, request_timeout=10, on_elicit=accept({"name": "Grace"}))
        async with Client(HttpTransport(f"http://127.0.0.1:{port}/mcp"), opts) as client:
            assert text_of(await client.call_tool("ask_name")) == "Hello, Grace!"


class Size(enum.Enum):
    SMALL = "s"
    LARGE = "l"


@dataclasses.dataclass
class Order:
    """What to order."""

    item: str
    size: Size = Size.LARGE
    extras: list[Literal["milk", "sugar"]] = dataclasses.field(default_factory=list)
    note: str | None = None
    when: datetime.date | None = None
    count: int = 1


@dataclasses.dataclass
class Numbers:
    pick: Literal[1, 2]


@dataclasses.dataclass
class Nested:
    inner: Order


def test_forms_from_classes_follow_the_spec_subset() -> None:
    """A class becomes a flat form of the spec's primitive schemas: typed enums in order,
    multi-select arrays, optional fields not required, defaults and date formats kept;
    what elicitation cannot carry is refused with the field's name."""
    schema = form_schema(Order)
    assert schema == {
        "type": "object",
        "properties": {
            "item": {"type": "string"},
            "size": {"type": "string", "enum": ["s", "l"], "default": "l"},
            "extras": {"type": "array", "items": {"type": "string", "enum": ["milk", "sugar"]}, "default": []},
            "note": {"type": "string"},
            "when": {"type": "string", "format": "date"},
            "count": {"type": "integer", "default": 1},
        },
        "required": ["item"],
        "description": "What to order.",
    }

    with pytest.raises(ValueError, match="'pick'"):
        form_schema(Numbers)
    with pytest.raises(ValueError, match="'inner'"):
        form_schema(Nested)


# --- missing capability, URL mode ---------------------------------------------------------------


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_missing_capability_is_refused_before_asking(connect: Any, kind: str, era: str) -> None:
    async with connect(kind, era) as client:
        for tool, required in [
            ("ask_name", {"elicitation": {"form": {}}}),
            ("ask_model", {"sampling": {}}),
            ("roots", {"roots": {}}),
        ]:
            with pytest.raises(McpError) as caught:
                await client.call_tool(tool, {"question": "x"} if tool == "ask_model" else None)
            assert caught.value.code == MISSING_CLIENT_CAPABILITY
            assert caught.value.data == {"requiredCapabilities": required}
            assert not caught.value.local


@pytest.mark.parametrize("era", ERAS)
async def test_url_elicitation_and_its_completion_notice(connect: Any, era: str) -> None:
    requests: list[ElicitRequestParams] = []
    notices: list[tuple[str, dict[str, Any]]] = []

    def on_elicit(request: ElicitRequestParams) -> ElicitResult:
        requests.append(request)
        return ElicitResult(action="accept")

    async with connect(
        "memory",
        era,
        on_elicit=on_elicit,
        elicitation_modes=("form", "url"),
        on_notification=lambda m, p: notices.append((m, p)),
    ) as client:
        assert text_of(await client.call_tool("open_url")) == "accept"
    assert (requests[0].mode, requests[0].url, requests[0].elicitation_id) == ("url", "https://example.com/key", "el-1")
    if era == LEGACY:  # the modern era has no channel for it outside a request
        assert ("notifications/elicitation/complete", {"elicitationId": "el-1"}) in notices
    async with connect("memory", era, on_elicit=on_elicit) as client:  # form only declared
        with pytest.raises(McpError) as caught:
            await client.call_tool("open_url")
        assert caught.value.data == {"requiredCapabilities": {"elicitation": {"url": {}}}}


@pytest.mark.parametrize("era", ERAS)
async def test_url_elicitation_required_error_reaches_the_client_typed(era: str) -> None:
    server = Server("url-required")

    @server.tool
    def connect_account() -> str:
        raise UrlElicitationRequired([{"elicitationId": "e-9", "url": "https://example.com/c", "message": "Connect"}])

    async with Client(server, ClientOptions(protocol_version=era)) as client:
        with pytest.raises(UrlElicitationRequired) as caught:
            await client.call_tool("connect_account")
    assert caught.value.code == -32042
    assert caught.value.elicitations == [
        {"mode": "url", "elicitationId": "e-9", "url": "https://example.com/c", "message": "Connect"}
    ]


# --- failures: callbacks that raise, deadlines, cancellation ------------------------------------


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_legacy_callback_that_raises_is_an_error_the_server_sees(connect: Any, kind: str) -> None:
    def on_elicit(request: ElicitRequestParams) -> ElicitResult:
        raise RuntimeError("the dialog broke")

    async with connect(kind, LEGACY, on_elicit=on_elicit) as client:
        with pytest.raises(McpError) as caught:
            await client.call_tool("ask_name")
        assert caught.value.code == -32603
        assert "dialog" not in caught.value.message
        await client.ping()  # the session goes on


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_modern_callback_that_raises_reaches_the_caller(connect: Any, kind: str) -> None:
    def on_elicit(request: ElicitRequestParams) -> ElicitResult:
        raise RuntimeError("the dialog broke")

    async with connect(kind, MODERN, on_elicit=on_elicit) as client:
        with pytest.raises(RuntimeError, match="dialog broke"):
            await client.call_tool("ask_name")
        await client.ping()


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_legacy_question_times_out_on_the_server(connect: Any, kind: str) -> None:
    release = asyncio.Event()

    async def on_elicit(request: ElicitRequestParams) -> ElicitResult:
        await release.wait()
        return ElicitResult(action="accept", content={"x": "late"})

    async with connect(kind, LEGACY, on_elicit=on_elicit) as client:
        started = time.monotonic()
        result = await client.call_tool("impatient")
        assert result.is_error
        assert "Request timed out" in result.content[0].text
        assert time.monotonic() - started < 10  # the deadline, not the callback's 30 s
        release.set()
        await client.ping()


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_modern_call_deadline_bounds_the_callbacks(connect: Any, kind: str) -> None:
    async def on_elicit(request: ElicitRequestParams) -> ElicitResult:
        await asyncio.sleep(30)
        raise AssertionError("not reached")

    async with connect(kind, MODERN, on_elicit=on_elicit) as client:
        started = time.monotonic()
        with pytest.raises(RequestTimeout):
            await client.call_tool("ask_name", timeout=0.5)
        assert time.monotonic() - started < 10  # the deadline, not the callback's 30 s


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_legacy_cancelling_the_call_cancels_the_question(connect: Any, kind: str) -> None:
    asked = asyncio.Event()
    cancelled = asyncio.Event()

    async def on_elicit(request: ElicitRequestParams) -> ElicitResult:
        asked.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        raise AssertionError("not reached")

    async with connect(kind, LEGACY, on_elicit=on_elicit) as client:
        call = asyncio.ensure_future(client.call_tool("ask_name"))
        await asyncio.wait_for(asked.wait(), 5)
        call.cancel()
        await asyncio.wait_for(cancelled.wait(), 5)  # the server withdrew its request
        await client.ping()


# --- the modern exchange on the wire ----------------------------------------------------------------


def _post(http: httpx.Client, url: str, method: str, params: dict[str, Any], rid: int) -> httpx.Response:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": {**params, "_meta": meta}}
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": MODERN, "mcp-method": method}
    if "name" in params:
        headers["mcp-name"] = params["name"]
    return http.post(url, json=body, headers=headers)


@pytest.mark.e2e
def test_modern_input_round_on_the_wire(http_url: str) -> None:
    with httpx.Client(timeout=10) as http:
        first = _post(http, http_url, "tools/call", {"name": "ask_name", "arguments": {}}, 1).json()["result"]
        assert first["resultType"] == "input_required"
        assert first["inputRequests"]["user_name"]["method"] == "elicitation/create"
        assert first["inputRequests"]["user_name"]["params"]["mode"] == "form"
        state = first["requestState"]
        assert isinstance(state, str)
        assert first["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "interactive"
        answer = {"user_name": {"action": "accept", "content": {"name": "Ada"}}}
        done = _post(
            http,
            http_url,
            "tools/call",
            {"name": "ask_name", "arguments": {}, "inputResponses": answer, "requestState": state},
            2,
        )
        assert done.json()["result"]["resultType"] == "complete"
        assert done.json()["result"]["content"][0]["text"] == "Hello, Ada!"
        # answers to questions not asked are ignored; a missing answer is asked again
        extra = {**answer, "unknown": {"action": "accept", "content": {}}}
        assert (
            _post(http, http_url, "tools/call", {"name": "ask_name", "arguments": {}, "inputResponses": extra}, 3).json()[
                "result"
            ]["resultType"]
            == "complete"
        )
        again = _post(
            http,
            http_url,
            "tools/call",
            {"name": "ask_name", "arguments": {}, "inputResponses": {"wrong": {"action": "cancel"}}},
            4,
        )
        assert again.json()["result"]["resultType"] == "input_required"
        # not on methods without input rounds
        listed = _post(http, http_url, "tools/list", {}, 5).json()["result"]
        assert listed["resultType"] == "complete"


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda s: s + "-TAMPERED", "integrity"),
        (lambda s: s[:-3] + ("AAA" if not s.endswith("AAA") else "BBB"), "integrity"),
        (lambda s: "not a state", "malformed"),
    ],
)
def test_tampered_request_state_is_refused(http_url: str, change: Any, reason: str) -> None:
    with httpx.Client(timeout=10) as http:
        state = _post(http, http_url, "tools/call", {"name": "ask_name", "arguments": {}}, 1).json()["result"]["requestState"]
        params = {
            "name": "ask_name",
            "arguments": {},
            "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Eve"}}},
        }
        resp = _post(http, http_url, "tools/call", {**params, "requestState": change(state)}, 2)
        assert resp.status_code == 400
        error = resp.json()["error"]
        assert error["code"] == -32602
        assert "requestState" in error["message"]
        assert reason in error["message"]


@pytest.mark.e2e
def test_request_state_of_another_request_is_refused(http_url: str) -> None:
    with httpx.Client(timeout=10) as http:
        state = _post(http, http_url, "tools/call", {"name": "ask_name", "arguments": {}}, 1).json()["result"]["requestState"]
        resp = _post(http, http_url, "tools/call", {"name": "careful", "arguments": {}, "requestState": state}, 2)
        assert resp.json()["error"]["code"] == -32602
        assert "another request" in resp.json()["error"]["message"]


@pytest.mark.e2e
@pytest.mark.parametrize("bad", [12345, None, "text", [1]])
def test_malformed_input_responses_are_refused(http_url: str, bad: Any) -> None:
    with httpx.Client(timeout=10) as http:
        for responses in ({"user_name": bad}, bad):
            resp = _post(http, http_url, "tools/call", {"name": "ask_name", "arguments": {}, "inputResponses": responses}, 1)
            body = resp.json()
            assert "error" in body, body
            assert body["error"]["code"] == -32602


async def test_stale_request_state_is_refused() -> None:
    server = Server("stale", state_ttl=0.01)

    @server.tool
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("?", {"type": "object", "properties": {"a": {"type": "string"}}}, key="q")
        return answer.action

    async with Client(server, ClientOptions(protocol_version=MODERN, capabilities={"elicitation": {}})) as client:
        first = await client.send_request("tools/call", {"name": "ask", "arguments": {}})
        # not synchronization: the state's age is what is tested, and it is older than its
        # ttl (0.01 s, kept to the second) once this much time has passed, however loaded the machine
        await asyncio.sleep(1.1)
        with pytest.raises(McpError) as caught:
            await client.send_request(
                "tools/call", {"name": "ask", "arguments": {}, "requestState": first["requestState"], "inputResponses": {}}
            )
    assert caught.value.code == -32602
    assert "expired" in caught.value.message


async def test_a_second_server_with_the_same_key_continues_the_exchange() -> None:
    def build() -> Server:
        server = Server("node", state_key="shared secret of the deployment")

        @server.tool
        async def two(ctx: Context) -> str:
            a = await ctx.elicit("a?", {"type": "object", "properties": {"v": {"type": "string"}}}, key="a")
            b = await ctx.elicit("b?", {"type": "object", "properties": {"v": {"type": "string"}}}, key="b")
            return f"{(a.content or {})['v']}{(b.content or {})['v']}"

        return server

    opts = ClientOptions(protocol_version=MODERN, capabilities={"elicitation": {}})
    async with Client(build(), opts) as one, Client(build(), opts) as other:
        r1 = await one.send_request("tools/call", {"name": "two", "arguments": {}})
        r2 = await other.send_request(
            "tools/call",
            {
                "name": "two",
                "arguments": {},
                "requestState": r1["requestState"],
                "inputResponses": {"a": {"action": "accept", "content": {"v": "x"}}},
            },
        )
        assert r2["resultType"] == "input_required"
        assert list(r2["inputRequests"]) == ["b"]
        r3 = await one.send_request(
            "tools/call",
            {
                "name": "two",
                "arguments": {},
                "requestState": r2["requestState"],
                "inputResponses": {"b": {"action": "accept", "content": {"v": "y"}}},
            },
        )
        assert r3["content"][0]["text"] == "xy"


# --- the client's side of the modern loop ---------------------------------------------------------


async def test_unknown_result_type_is_a_typed_error() -> None:
    server = Server("odd")

    @server.tool
    def t() -> str:
        return "never"

    async def weird(ctx: Context, call_next: Any) -> Any:
        return {"resultType": "something_new", "content": []}

    server.use(weird)
    async with Client(server, ClientOptions(protocol_version=MODERN)) as client:
        with pytest.raises(UnexpectedResultType) as caught:
            await client.call_tool("t")
    assert caught.value.result_type == "something_new"
    assert caught.value.local


async def test_input_rounds_are_bounded() -> None:
    server = Server("greedy")

    @server.tool
    async def forever(ctx: Context) -> str:
        i = 0
        while True:
            await ctx.elicit("more?", {"type": "object", "properties": {"v": {"type": "string"}}}, key=f"q{i}")
            i += 1

    calls = 0

    def on_elicit(request: ElicitRequestParams) -> ElicitResult:
        nonlocal calls
        calls += 1
        return ElicitResult(action="accept", content={"v": "x"})

    async with Client(server, ClientOptions(protocol_version=MODERN, on_elicit=on_elicit, max_input_rounds=3)) as client:
        with pytest.raises(McpError) as caught:
            await client.call_tool("forever")
    assert caught.value.local
    assert "more than 3 times" in caught.value.message
    assert calls == 4


@pytest.mark.parametrize("kind", [MEMORY, HTTP])
async def test_a_question_whose_text_changes_between_runs_is_never_answered(kind: str) -> None:
    """docs/interactive.md: a question must be the same on every run for its answer to
    be returned; one whose text changes is asked again each round — the answer the client
    gave to the previous round's text is not taken for it — until the client gives up
    after max_input_rounds. The same question asked twice in a row is answered."""
    server = Server("shifting")
    runs = {"shifting": 0}
    schema = {"type": "object", "properties": {"v": {"type": "string"}}}

    @server.tool
    async def shifting(ctx: Context) -> str:
        runs["shifting"] += 1
        answer = await ctx.elicit(f"question #{runs['shifting']}?", schema)
        return f"answered {answer.content}"

    @server.tool
    async def steady(ctx: Context) -> str:
        answer = await ctx.elicit("the same question?", schema)
        return f"answered {answer.content}"

    asked: list[str] = []

    def on_elicit(request: ElicitRequestParams) -> ElicitResult:
        asked.append(request.message)
        return ElicitResult(action="accept", content={"v": request.message})

    async def check(client: Client) -> None:
        assert text_of(await client.call_tool("steady")) == "answered {'v': 'the same question?'}"
        with pytest.raises(McpError) as caught:
            await client.call_tool("shifting")
        assert caught.value.local
        assert "more than 8 times" in caught.value.message
        assert asked[1:] == [f"question #{n}?" for n in range(1, 10)]  # each text asked once, none answered

    opts = ClientOptions(protocol_version=MODERN, on_elicit=on_elicit, request_timeout=10)
    if kind == "memory":
        async with Client(server, opts) as client:
            await check(client)
        return
    with serve_in_thread(server.asgi_app()) as port:
        async with Client(HttpTransport(f"http://127.0.0.1:{port}/mcp"), opts) as client:
            await check(client)


async def test_modern_retry_echoes_state_under_a_fresh_id_and_carries_nothing_else() -> None:
    seen: list[tuple[Any, dict[str, Any]]] = []
    server = Server("spy")

    async def spy(ctx: Context, call_next: Any) -> Any:
        seen.append((ctx.request_id, dict(ctx.params)))
        return await call_next()

    @server.tool
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("?", {"type": "object", "properties": {"a": {"type": "string"}}}, key="k")
        return str((answer.content or {}).get("a"))

    @server.tool
    def plain() -> str:
        return "plain"

    server.use(spy)
    async with Client(server, ClientOptions(protocol_version=MODERN, on_elicit=accept({"a": "z"}))) as client:
        assert text_of(await client.call_tool("ask")) == "z"
        assert text_of(await client.call_tool("plain")) == "plain"
    (id1, p1), (id2, p2), (_, p3) = seen
    assert id1 != id2
    assert "requestState" not in p1
    assert "inputResponses" not in p1
    assert p2["inputResponses"] == {"k": {"action": "accept", "content": {"a": "z"}}}
    assert isinstance(p2["requestState"], str)
    assert "requestState" not in p3
    assert "inputResponses" not in p3
