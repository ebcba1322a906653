"""Server features through the public API, in both protocol eras (issue 2, item 4).

Schemas derived from type hints and docstrings, sync/async tools, ``Context`` (logging,
progress, request info), pydantic parameters, raw JSON Schema tools (2020-12), tool
annotations, structured output, resources and RFC 6570 templates, prompts, completions,
pagination, ``server/discover`` (modern) and ``initialize`` (legacy), and ``resultType``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import enum
import json
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal, Optional, TypedDict

import jsonschema_rs
import pydantic
import pytest

from mcpkit import (
    CallToolResult,
    Client,
    ClientOptions,
    Completion,
    Context,
    Implementation,
    McpError,
    PromptMessage,
    Server,
    StdioTransport,
    TextContent,
    ToolAnnotations,
)
from support.eras import ERAS, LEGACY, MODERN
from support.paths import SERVERS
from support.processes import load_server

pytestmark = pytest.mark.timeout(30)

SERVER_INFO = "io.modelcontextprotocol/serverInfo"
CACHEABLE = {"server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"}


features = load_server("contract_features")


def client(server: Server, era: str, **options: Any) -> Client:
    return Client(server, ClientOptions(protocol_version=era, request_timeout=10, **options))


def text_of(result: CallToolResult) -> str:
    assert len(result.content) == 1, result.content
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def accepts(schema: dict[str, Any], instance: Any) -> bool:
    return bool(jsonschema_rs.validator_for(schema).is_valid(instance))


def assert_valid_2020_12(schema: dict[str, Any]) -> None:
    assert jsonschema_rs.meta.is_valid(schema), schema
    jsonschema_rs.Draft202012Validator(schema)


async def tool_named(c: Client, name: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page = await c.send_request("tools/list", {"cursor": cursor} if cursor else {})
        found += [t for t in page["tools"] if t["name"] == name]
        cursor = page.get("nextCursor")
        if not cursor:
            break
    assert len(found) == 1, f"tool {name!r} listed {len(found)} times"
    return found[0]


async def expect_error(awaitable: Awaitable[Any]) -> McpError:
    with pytest.raises(McpError) as info:
        await awaitable
    assert not info.value.local
    return info.value


# === schema derivation ============================================================================


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Address(TypedDict):
    street: str
    zip_code: int


@dataclasses.dataclass
class Box:
    width: int
    height: int = 1


def kitchen_sink(
    name: str,
    count: int,
    ratio: float,
    flag: bool,
    nickname: Optional[str] = None,  # noqa: UP045 - Optional on purpose
    numbers: list[int] | None = None,
    mapping: dict[str, float] | None = None,
    mode: Literal["fast", "slow"] = "fast",
    color: Color = Color.RED,
    address: Address | None = None,
    box: Box | None = None,
    limit: int = 10,
) -> str:
    """Do everything at once.

    A longer paragraph that is part of the description.

    Args:
        name: The name to use.
        count: How many times
            to repeat it.
        ratio: A ratio between 0 and 1.
        flag: Whether to shout.
        color: The colour of the output.

    Returns:
        A JSON summary of what arrived.
    """
    got = {
        "name": name,
        "count": count,
        "ratio": ratio,
        "flag": flag,
        "nickname": nickname,
        "numbers": numbers,
        "mapping": mapping,
        "mode": mode,
        "color": color.value,
        "address": address,
        "box": dataclasses.asdict(box) if box is not None else None,
        "limit": limit,
    }
    types = {
        "ratio": type(ratio).__name__,
        "color": type(color).__name__,
        "box": type(box).__name__,
        "address": type(address).__name__,
    }
    return json.dumps({"got": got, "types": types})


@pytest.fixture
def sink_server() -> Server:
    server = Server("schemas")
    server.tool(kitchen_sink)
    return server


@pytest.mark.parametrize("era", ERAS)
async def test_schema_derived_from_type_hints_and_docstring(sink_server: Server, era: str) -> None:
    async with client(sink_server, era) as c:
        tool = await tool_named(c, "kitchen_sink")
    schema = tool["inputSchema"]
    assert_valid_2020_12(schema)
    assert schema["type"] == "object"
    assert set(schema["properties"]) == {
        "name", "count", "ratio", "flag", "nickname", "numbers", "mapping", "mode", "color", "address", "box", "limit",
    }  # fmt: skip
    assert set(schema["required"]) == {"name", "count", "ratio", "flag"}

    desc = tool["description"]
    assert desc.startswith("Do everything at once.")
    assert "A longer paragraph" in desc
    assert "Args:" not in desc
    assert "Returns:" not in desc
    assert "The name to use" not in desc

    props = schema["properties"]
    assert props["name"]["description"] == "The name to use."
    assert props["count"]["description"] == "How many times to repeat it."
    assert props["ratio"]["description"] == "A ratio between 0 and 1."
    assert props["color"]["description"] == "The colour of the output."
    assert "description" not in props["limit"]

    assert props["mode"]["default"] == "fast"
    assert props["color"]["default"] == "red"
    assert props["limit"]["default"] == 10

    base = {"name": "n", "count": 1, "ratio": 0.5, "flag": True}
    good: list[dict[str, Any]] = [
        base,
        {**base, "ratio": 1},
        {**base, "nickname": None},
        {**base, "nickname": "nick"},
        {**base, "numbers": [1, 2, 3]},
        {**base, "numbers": []},
        {**base, "mapping": {"a": 1.5, "b": 2}},
        {**base, "mode": "slow"},
        {**base, "color": "green"},
        {**base, "address": {"street": "Main St", "zip_code": 12345}},
        {**base, "box": {"width": 3}},
        {**base, "box": {"width": 3, "height": 4}},
    ]
    bad: list[dict[str, Any]] = [
        {"count": 1, "ratio": 0.5, "flag": True},
        {**base, "name": 5},
        {**base, "count": 1.5},
        {**base, "count": "1"},
        {**base, "count": True},
        {**base, "ratio": "0.5"},
        {**base, "flag": "yes"},
        {**base, "nickname": 5},
        {**base, "numbers": ["a"]},
        {**base, "numbers": 1},
        {**base, "mapping": {"a": "x"}},
        {**base, "mapping": [1]},
        {**base, "mode": "medium"},
        {**base, "color": "purple"},
        {**base, "address": {"street": "Main St"}},
        {**base, "address": {"street": "Main St", "zip_code": "x"}},
        {**base, "box": {"height": 2}},
    ]
    for instance in good:
        assert accepts(schema, instance), instance
    for instance in bad:
        assert not accepts(schema, instance), instance


@pytest.mark.parametrize("era", ERAS)
async def test_arguments_arrive_as_the_annotated_python_types(sink_server: Server, era: str) -> None:
    async with client(sink_server, era) as c:
        args = {
            "name": "n",
            "count": 2,
            "ratio": 1,
            "flag": False,
            "color": "green",
            "address": {"street": "Main St", "zip_code": 1},
            "box": {"width": 3},
            "numbers": [4, 5],
        }
        out = json.loads(text_of(await c.call_tool("kitchen_sink", args)))
        assert out["types"] == {"ratio": "float", "color": "Color", "box": "Box", "address": "dict"}
        got = out["got"]
        assert got["color"] == "green"
        assert got["box"] == {"width": 3, "height": 1}
        assert got["address"] == {"street": "Main St", "zip_code": 1}
        assert got["numbers"] == [4, 5]
        # defaults apply when omitted
        assert got["mode"] == "fast"
        assert got["limit"] == 10
        assert got["nickname"] is None

        out = json.loads(text_of(await c.call_tool("kitchen_sink", {"name": "n", "count": 1, "ratio": 0.5, "flag": True})))
        assert out["got"]["color"] == "red"
        assert out["types"]["color"] == "Color"


@pytest.mark.parametrize("era", ERAS)
async def test_sync_and_async_tools(era: str) -> None:
    server = Server("both")

    @server.tool
    def slow_sync(seconds: float) -> str:
        time.sleep(seconds)
        return "sync done"

    @server.tool
    async def fast_async(text: str) -> str:
        await asyncio.sleep(0)  # an async handler that really suspends
        return text.upper()

    async with client(server, era) as c:
        assert text_of(await c.call_tool("fast_async", {"text": "hi"})) == "HI"
        assert text_of(await c.call_tool("slow_sync", {"seconds": 0})) == "sync done"
        # a blocking sync tool does not block the server: an async call overtakes it
        finished: list[str] = []

        async def call(name: str, args: dict[str, Any]) -> None:
            await c.call_tool(name, args)
            finished.append(name)

        await asyncio.gather(call("slow_sync", {"seconds": 0.4}), call("fast_async", {"text": "x"}))
        assert finished == ["fast_async", "slow_sync"]


def test_tool_registration_rules() -> None:
    server = Server("reg")

    @server.tool
    def one(x: int) -> int:
        return x

    with pytest.raises(ValueError, match="one"):
        server.tool(name="one")(lambda: None)

    class Opaque:
        pass

    def bad(thing: Opaque) -> str:
        return "x"

    with pytest.raises((TypeError, ValueError)):
        server.tool(bad)


# === Context ======================================================================================


def context_server() -> Server:
    server = Server("ctx")

    @server.tool
    async def chatty(steps: int, ctx: Context) -> str:
        await ctx.debug("debug message")
        await ctx.info({"structured": True})
        await ctx.log("warning", "careful", logger="my.logger")
        for i in range(1, steps + 1):
            await ctx.report_progress(i, steps, f"step {i}")
        await ctx.report_progress(1, steps, "going backwards is dropped")
        return "done"

    @server.tool
    def who(c: Context, suffix: str = "") -> str:
        name = c.client_info.name if c.client_info is not None else "?"
        return f"{c.era}|{c.protocol_version}|{name}|{c.method}{suffix}"

    return server


@pytest.mark.parametrize("era", ERAS)
async def test_context_parameter_is_injected_not_described(era: str) -> None:
    async with client(context_server(), era, client_info=Implementation(name="feature-tests", version="9.9")) as c:
        who = await tool_named(c, "who")
        assert set(who["inputSchema"]["properties"]) == {"suffix"}
        assert "required" not in who["inputSchema"] or who["inputSchema"]["required"] == []
        chatty = await tool_named(c, "chatty")
        assert set(chatty["inputSchema"]["properties"]) == {"steps"}
        era_name = "modern" if era == MODERN else "legacy"
        assert text_of(await c.call_tool("who", {"suffix": "!"})) == f"{era_name}|{era}|feature-tests|tools/call!"


LOGS_ALL = [("debug", "debug message", None), ("info", {"structured": True}, None), ("warning", "careful", "my.logger")]


@pytest.mark.parametrize(
    ("era", "level", "expected"),
    [
        pytest.param(MODERN, "debug", LOGS_ALL, id="modern-debug"),
        pytest.param(MODERN, "warning", LOGS_ALL[2:], id="modern-warning"),
        pytest.param(MODERN, "error", [], id="modern-error"),
        pytest.param(MODERN, None, [], id="modern-no-level"),
        pytest.param(LEGACY, "debug", LOGS_ALL, id="legacy-debug"),
        pytest.param(LEGACY, "info", LOGS_ALL[1:], id="legacy-info"),
        pytest.param(LEGACY, "error", [], id="legacy-error"),
    ],
)
async def test_ctx_log_reaches_on_log(era: str, level: str | None, expected: list[tuple[str, Any, str | None]]) -> None:
    received: list[tuple[str, Any, str | None]] = []

    def on_log(lvl: str, data: Any, logger: str | None) -> None:
        received.append((lvl, data, logger))

    async with client(context_server(), era, log_level=level, on_log=on_log) as c:
        assert text_of(await c.call_tool("chatty", {"steps": 0})) == "done"
        await c.ping()
    assert received == expected


@pytest.mark.parametrize("era", ERAS)
async def test_ctx_report_progress_reaches_on_progress(era: str) -> None:
    seen: list[tuple[float, float | None, str | None]] = []
    notifications: list[str] = []

    def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with client(context_server(), era, on_notification=lambda m, p: notifications.append(m)) as c:
        assert text_of(await c.call_tool("chatty", {"steps": 3}, on_progress=on_progress)) == "done"
        assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
        # without a callback the client asks for no progress and the server sends none
        seen.clear()
        notifications.clear()
        await c.call_tool("chatty", {"steps": 3})
        assert seen == []
        assert "notifications/progress" not in notifications


# === pydantic ======================================================================================


class User(pydantic.BaseModel):
    name: str
    age: int = pydantic.Field(ge=0, description="Age in years")
    tags: list[str] = []


class Profile(pydantic.BaseModel):
    user: User
    score: float


@pytest.mark.parametrize("era", ERAS)
async def test_pydantic_model_parameters(era: str) -> None:
    server = Server("pyd")

    @server.tool
    def register(user: User, note: str = "") -> str:
        """Register a user."""
        assert isinstance(user, User)
        return f"{type(user).__name__}:{user.name}:{user.age}:{','.join(user.tags)}{note}"

    @server.tool
    async def rate(profile: Profile) -> str:
        assert isinstance(profile.user, User)
        return f"{profile.user.name}={profile.score}"

    async with client(server, era) as c:
        schema = (await tool_named(c, "register"))["inputSchema"]
        assert_valid_2020_12(schema)
        assert schema["required"] == ["user"]
        assert accepts(schema, {"user": {"name": "ann", "age": 3}})
        assert not accepts(schema, {"user": {"name": "ann", "age": -1}})
        assert not accepts(schema, {"user": {"age": 3}})

        result = await c.call_tool("register", {"user": {"name": "ann", "age": 30, "tags": ["a", "b"]}})
        assert text_of(result) == "User:ann:30:a,b"
        nested = await c.call_tool("rate", {"profile": {"user": {"name": "bo", "age": 1}, "score": 2}})
        assert text_of(nested) == "bo=2.0"

        err = await expect_error(c.call_tool("register", {"user": {"name": "ann", "age": -1}}))
        assert err.code == -32602
        assert err.message.startswith("Invalid arguments for tool register: ")
        assert "age" in err.message
        assert "\n" not in err.message
        assert len(err.message) < 200


# === raw JSON Schema tools ===========================================================================

ORDER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "$defs": {"positive": {"type": "integer", "minimum": 1}},
    "properties": {
        "qty": {"$ref": "#/$defs/positive"},
        "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "size": {"enum": ["S", "M", "L"]},
        "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False},
    },
    "required": ["qty", "code"],
    "dependentRequired": {"size": ["pair"]},
    "additionalProperties": False,
}


@pytest.mark.parametrize("era", ERAS)
async def test_raw_tool_is_validated_against_json_schema_2020_12(era: str) -> None:
    server = Server("raw")
    received: list[tuple[dict[str, Any], bool]] = []

    def order(arguments: dict[str, Any]) -> str:
        received.append((arguments, False))
        return "ordered"

    async def order_ctx(arguments: dict[str, Any], ctx: Context) -> str:
        received.append((arguments, isinstance(ctx, Context)))
        return f"ordered via {ctx.method}"

    server.add_tool("order", "Place an order.", ORDER_SCHEMA, order)
    server.add_tool("order_ctx", None, ORDER_SCHEMA, order_ctx, title="Order (with context)")

    async with client(server, era) as c:
        listed = await tool_named(c, "order")
        assert listed["inputSchema"] == ORDER_SCHEMA
        assert listed["description"] == "Place an order."
        assert (await tool_named(c, "order_ctx"))["title"] == "Order (with context)"

        valid = [
            {"qty": 2, "code": "ABC"},
            {"qty": 1, "code": "XYZ", "size": "M", "pair": ["a", 1]},
            {"qty": 5, "code": "QQQ", "pair": ["b"]},
        ]
        for args in valid:
            assert text_of(await c.call_tool("order", args)) == "ordered"
            assert text_of(await c.call_tool("order_ctx", args)) == "ordered via tools/call"
        assert received == [(a, flag) for a in valid for flag in (False, True)]

        invalid: list[tuple[dict[str, Any], str]] = [
            ({"qty": 0, "code": "ABC"}, "qty"),  # minimum, through $ref
            ({"qty": "2", "code": "ABC"}, "qty"),
            ({"qty": 2, "code": "abc"}, "code"),  # pattern
            ({"qty": 2, "code": "ABC", "size": "XL", "pair": ["a", 1]}, "size"),  # enum
            ({"qty": 2, "code": "ABC", "size": "S"}, "pair"),  # dependentRequired
            ({"qty": 2, "code": "ABC", "pair": ["a", "b"]}, "pair"),  # prefixItems
            ({"qty": 2, "code": "ABC", "pair": ["a", 1, 2]}, "pair"),  # items: false
            ({"qty": 2, "code": "ABC", "extra": 1}, "extra"),  # additionalProperties
            ({"code": "ABC"}, "qty"),  # required
        ]
        received.clear()
        for args, culprit in invalid:
            err = await expect_error(c.call_tool("order", args))
            assert err.code == -32602, args
            assert err.message.startswith("Invalid arguments for tool order: "), err.message
            assert culprit in err.message, (culprit, err.message)
            assert "\n" not in err.message
            assert len(err.message) < 200
        assert received == [], "the handler must not run for invalid arguments"


@pytest.mark.parametrize(
    "schema",
    [
        pytest.param({"type": "object", "properties": {"x": {"type": "nope"}}}, id="bad-type"),
        pytest.param({"type": "object", "properties": {"x": {"minimum": "zero"}}}, id="bad-minimum"),
        pytest.param({"type": "object", "required": "x"}, id="required-not-array"),
        pytest.param({"type": "object", "properties": {"x": {"pattern": "("}}}, id="bad-regex"),
        pytest.param({"type": "string"}, id="not-an-object-schema"),
        pytest.param({"type": "object", "properties": 5}, id="properties-not-object"),
    ],
)
async def test_invalid_raw_schema_is_rejected_at_registration(schema: dict[str, Any]) -> None:
    server = Server("bad-schema")
    with pytest.raises(ValueError):  # noqa: PT011 - the contract says ValueError, whatever the wording
        server.add_tool("broken", "Broken schema.", schema, lambda arguments: "x")
    async with client(server, MODERN) as c:
        assert [t.name for t in (await c.list_tools()).tools] == []


# === annotations ====================================================================================


@pytest.mark.parametrize("era", ERAS)
async def test_tool_annotations_on_the_wire(era: str) -> None:
    server = Server("ann")

    @server.tool(title="Look up", annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False))
    def lookup(key: str) -> str:
        return key

    server.add_tool(
        "wipe", "Wipe everything.", {"type": "object"}, lambda arguments: "wiped",
        annotations={"destructiveHint": True, "title": "Wipe all"},
    )  # fmt: skip

    @server.tool
    def plain() -> str:
        return "plain"

    async with client(server, era) as c:
        lk = await tool_named(c, "lookup")
        assert lk["title"] == "Look up"
        assert lk["annotations"] == {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False}
        wipe = await tool_named(c, "wipe")
        assert wipe["annotations"] == {"destructiveHint": True, "title": "Wipe all"}
        assert (await tool_named(c, "plain")).get("annotations") is None

        typed = {t.name: t for t in (await c.list_tools()).tools}
        ann = typed["lookup"].annotations
        assert ann is not None
        assert ann.read_only_hint is True
        assert ann.destructive_hint is None
        wipe_ann = typed["wipe"].annotations
        assert wipe_ann is not None
        assert wipe_ann.destructive_hint is True


# === structured output ===============================================================================


class Weather(TypedDict):
    city: str
    celsius: float


class Forecast(pydantic.BaseModel):
    city: str
    days: list[int]


@dataclasses.dataclass
class Reading:
    sensor: str
    value: float


@pytest.mark.parametrize("era", ERAS)
async def test_structured_output(era: str) -> None:
    server = Server("structured")

    @server.tool
    def weather(city: str) -> Weather:
        return {"city": city, "celsius": 21.5}

    @server.tool
    async def forecast(city: str) -> Forecast:
        return Forecast(city=city, days=[1, 2, 3])

    @server.tool
    def reading() -> Reading:
        return Reading(sensor="t1", value=0.25)

    @server.tool
    def plain(city: str) -> str:
        return f"sunny in {city}"

    async with client(server, era) as c:
        expected = {
            "weather": ({"city": "Paris"}, {"city": "Paris", "celsius": 21.5}),
            "forecast": ({"city": "Oslo"}, {"city": "Oslo", "days": [1, 2, 3]}),
            "reading": ({}, {"sensor": "t1", "value": 0.25}),
        }
        for name, (args, structured) in expected.items():
            listed = await tool_named(c, name)
            out_schema = listed["outputSchema"]
            if era == LEGACY:
                # 2025-11-25 (and 2025-06-18) Tool.outputSchema: {type: "object", properties?, required?}
                assert out_schema.get("type") == "object", (name, out_schema)
            assert_valid_2020_12(out_schema)
            assert accepts(out_schema, structured)
            assert not accepts(out_schema, {}), "required fields must be required"

            raw = await c.send_request("tools/call", {"name": name, "arguments": args})
            assert raw["structuredContent"] == structured
            assert raw.get("isError", False) is False
            texts = [b["text"] for b in raw["content"] if b["type"] == "text"]
            assert texts, "structured content is also sent as JSON text"
            assert json.loads(texts[0]) == structured

            typed = await c.call_tool(name, args)
            assert typed.structured_content == structured

        assert "outputSchema" not in await tool_named(c, "plain")
        raw = await c.send_request("tools/call", {"name": "plain", "arguments": {"city": "Rome"}})
        assert "structuredContent" not in raw
        assert raw["content"] == [{"type": "text", "text": "sunny in Rome"}]


# === resources ======================================================================================

BINARY = b"\x89PNG\r\n\x1a\n\x00\xff\xfe" + bytes(range(256))


def resource_server(**opts: Any) -> Server:
    server = Server("res", **opts)

    @server.resource("docs://readme", mime_type="text/markdown", description="The readme.")
    def readme() -> str:
        return "# Hello\n\nWorld"

    @server.resource("images://logo.png", mime_type="image/png", title="Logo")
    async def logo() -> bytes:
        return BINARY

    @server.resource("data://blob")
    def blob() -> bytes:
        """Raw bytes with no declared type."""
        return b"\x00\x01\x02"

    @server.resource("users://{user_id}/profile", description="A user's profile.")
    def profile(user_id: str) -> str:
        return f"profile of {user_id}"

    @server.resource("files://{+path}")
    async def file(path: str) -> str:
        return f"file at {path}"

    @server.resource("search://items{?q,limit}")
    def search(q: str = "", limit: str = "10") -> str:
        return json.dumps({"q": q, "limit": limit})

    @server.completion(resource_template="users://{user_id}/profile")
    async def complete_user(argument: str, value: str, context: dict[str, str]) -> list[str]:
        return [u for u in ("alice", "albert", "bob") if u.startswith(value)]

    return server


@pytest.mark.parametrize("era", ERAS)
async def test_text_and_binary_resources(era: str) -> None:
    async with client(resource_server(), era) as c:
        listed = {r.uri: r for r in (await c.list_resources()).resources}
        assert set(listed) == {"docs://readme", "images://logo.png", "data://blob"}
        assert listed["docs://readme"].name == "readme"
        assert listed["docs://readme"].description == "The readme."
        assert listed["docs://readme"].mime_type == "text/markdown"
        assert listed["images://logo.png"].mime_type == "image/png"
        assert listed["images://logo.png"].title == "Logo"
        assert listed["data://blob"].description == "Raw bytes with no declared type."

        text = (await c.read_resource("docs://readme")).contents
        assert len(text) == 1
        assert (text[0].uri, text[0].text, text[0].mime_type, text[0].blob) == (
            "docs://readme", "# Hello\n\nWorld", "text/markdown", None,
        )  # fmt: skip

        raw = await c.send_request("resources/read", {"uri": "images://logo.png"})
        (item,) = raw["contents"]
        assert item["uri"] == "images://logo.png"
        assert item["mimeType"] == "image/png"
        assert "text" not in item
        assert base64.b64decode(item["blob"], validate=True) == BINARY

        blob = (await c.read_resource("data://blob")).contents[0]
        assert blob.blob is not None
        assert base64.b64decode(blob.blob) == b"\x00\x01\x02"
        assert blob.text is None


@pytest.mark.parametrize("era", ERAS)
async def test_resource_templates_rfc_6570(era: str) -> None:
    async with client(resource_server(), era) as c:
        templates = {t.uri_template: t for t in (await c.list_resource_templates()).resource_templates}
        assert set(templates) == {"users://{user_id}/profile", "files://{+path}", "search://items{?q,limit}"}
        assert templates["users://{user_id}/profile"].description == "A user's profile."
        assert templates["users://{user_id}/profile"].name == "profile"
        # templated resources are not listed as concrete resources
        assert all("{" not in r.uri for r in (await c.list_resources()).resources)

        async def read(uri: str) -> str:
            contents = (await c.read_resource(uri)).contents
            assert len(contents) == 1
            assert contents[0].uri == uri
            assert contents[0].text is not None
            return contents[0].text

        assert await read("users://42/profile") == "profile of 42"
        assert await read("users://j%C3%BCrgen/profile") == "profile of jürgen"
        assert await read("users://jane.doe/profile") == "profile of jane.doe"  # dots, as a file name has
        assert await read("files://docs/guide/intro.md") == "file at docs/guide/intro.md"
        assert await read("files://a") == "file at a"
        assert json.loads(await read("search://items?q=hello%20world&limit=5")) == {"q": "hello world", "limit": "5"}
        assert json.loads(await read("search://items?limit=3&q=x")) == {"q": "x", "limit": "3"}
        assert json.loads(await read("search://items?limit=3")) == {"q": "", "limit": "3"}
        assert json.loads(await read("search://items")) == {"q": "", "limit": "10"}

        # a simple {var} never spans a "/" (RFC 6570 simple expansion escapes it)
        err = await expect_error(c.read_resource("users://a/b/profile"))
        assert err.code == -32602
        err = await expect_error(c.read_resource("users:///profile"))
        assert err.code == -32602


# === prompts =========================================================================================


def prompt_server() -> Server:
    server = Server("prompts")

    @server.prompt
    def review(code: str, language: str = "python") -> str:
        """Review some code.

        Args:
            code: The code to review.
            language: The language it is written in.
        """
        return f"Review this {language} code: {code}"

    @server.prompt(name="conversation", title="A conversation", description="Talk about a topic.")
    async def convo(topic: str, ctx: Context) -> list[PromptMessage]:
        return [
            PromptMessage(role="user", content=TextContent(text=f"Tell me about {topic}")),
            PromptMessage(role="assistant", content=TextContent(text=f"Sure ({ctx.method})")),
        ]

    @server.prompt
    def greeting() -> str:
        return "Hello!"

    @server.completion(prompt="review")
    def complete_review(argument: str, value: str, context: dict[str, str]) -> list[str]:
        if argument == "language":
            return [lang for lang in ("python", "pyret", "rust", "go") if lang.startswith(value)]
        return [f"code-for-{context.get('language', 'none')}"]

    @server.completion(prompt="greeting")
    def complete_many(argument: str, value: str, context: dict[str, str]) -> list[str]:
        return [f"{value}{i}" for i in range(250)]

    @server.completion(prompt="conversation")
    def complete_topic(argument: str, value: str, context: dict[str, str]) -> Completion:
        return Completion(values=["weather", "wine"], total=57, has_more=True)

    return server


@pytest.mark.parametrize("era", ERAS)
async def test_prompts_with_arguments(era: str) -> None:
    async with client(prompt_server(), era) as c:
        listed = {p.name: p for p in (await c.list_prompts()).prompts}
        assert set(listed) == {"review", "conversation", "greeting"}
        review = listed["review"]
        assert review.description == "Review some code."
        assert review.arguments is not None
        args = {a.name: a for a in review.arguments}
        assert list(args) == ["code", "language"]
        assert args["code"].required is True
        assert args["code"].description == "The code to review."
        assert not args["language"].required
        assert args["language"].description == "The language it is written in."
        convo = listed["conversation"]
        assert (convo.title, convo.description) == ("A conversation", "Talk about a topic.")
        assert [a.name for a in convo.arguments or []] == ["topic"], "the Context parameter is not a prompt argument"
        assert not listed["greeting"].arguments

        got = await c.get_prompt("review", {"code": "x = 1"})
        assert len(got.messages) == 1
        msg = got.messages[0]
        assert msg.role == "user"
        assert isinstance(msg.content, TextContent)
        assert msg.content.text == "Review this python code: x = 1"
        got = await c.get_prompt("review", {"code": "fn main() {}", "language": "rust"})
        assert isinstance(got.messages[0].content, TextContent)
        assert got.messages[0].content.text == "Review this rust code: fn main() {}"

        got = await c.get_prompt("conversation", {"topic": "tea"})
        assert [m.role for m in got.messages] == ["user", "assistant"]
        assert [m.content.text for m in got.messages if isinstance(m.content, TextContent)] == [
            "Tell me about tea",
            "Sure (prompts/get)",
        ]

        raw = await c.send_request("prompts/get", {"name": "greeting"})
        assert raw["messages"] == [{"role": "user", "content": {"type": "text", "text": "Hello!"}}]

        err = await expect_error(c.get_prompt("review"))
        assert err.code == -32602
        assert "code" in err.message
        assert "\n" not in err.message
        err = await expect_error(c.get_prompt("review", {"language": "go"}))
        assert err.code == -32602
        assert "code" in err.message


# === completions ======================================================================================


@pytest.mark.parametrize("era", ERAS)
async def test_completions(era: str) -> None:
    async with client(prompt_server(), era) as c:
        caps = (await c.send_request("server/discover"))["capabilities"] if era == MODERN else c.server_capabilities
        assert "completions" in caps
        ref = {"type": "ref/prompt", "name": "review"}
        assert (await c.complete(ref, "language", "py")).completion.values == ["python", "pyret"]
        assert (await c.complete(ref, "language", "")).completion.values == ["python", "pyret", "rust", "go"]
        assert (await c.complete(ref, "language", "zzz")).completion.values == []
        assert (await c.complete(ref, "code", "", context={"language": "rust"})).completion.values == ["code-for-rust"]

        many = (await c.complete({"type": "ref/prompt", "name": "greeting"}, "x", "v")).completion
        assert len(many.values) <= 100, "at most 100 values per response"
        assert many.values[:3] == ["v0", "v1", "v2"]
        assert many.has_more is True

        given = (await c.complete({"type": "ref/prompt", "name": "conversation"}, "topic", "w")).completion
        assert (given.values, given.total, given.has_more) == (["weather", "wine"], 57, True)

        err = await expect_error(c.complete({"type": "ref/prompt", "name": "nope"}, "x", ""))
        assert err.code == -32602

    async with client(resource_server(), era) as c:
        ref = {"type": "ref/resource", "uri": "users://{user_id}/profile"}
        assert (await c.complete(ref, "user_id", "al")).completion.values == ["alice", "albert"]
        # a template without a completion handler completes to nothing
        empty = (await c.complete({"type": "ref/resource", "uri": "files://{+path}"}, "path", "d")).completion
        assert empty.values == []


# === pagination =======================================================================================


def paged_server() -> Server:
    server = Server("paged", page_size=2)

    def numbered(i: int) -> Callable[[], str]:
        def fn() -> str:
            return str(i)

        return fn

    for i in range(5):
        server.tool(name=f"tool_{i}", description=f"Tool {i}.")(numbered(i))
        server.resource(f"res://item/{i}", name=f"res_{i}")(numbered(i))
    for i in range(4):
        server.prompt(name=f"prompt_{i}")(numbered(i))
    for i in range(3):

        def template(n: str) -> str:
            return n

        server.resource(f"tpl{i}://{{n}}", name=f"tpl_{i}")(template)
    return server


async def walk(fetch: Callable[[str | None], Awaitable[dict[str, Any]]], key: str, id_key: str) -> tuple[list[str], int]:
    seen: list[str] = []
    cursors: set[str] = set()
    cursor: str | None = None
    pages = 0
    while True:
        page = await fetch(cursor)
        pages += 1
        assert 1 <= len(page[key]) <= 2, page
        seen += [item[id_key] for item in page[key]]
        if "nextCursor" not in page:
            return seen, pages
        cursor = page["nextCursor"]
        assert isinstance(cursor, str), "a cursor is an opaque string"
        assert cursor
        assert cursor not in cursors
        cursors.add(cursor)
        assert pages < 10


@pytest.mark.parametrize("era", ERAS)
async def test_pagination_walks_every_page(era: str) -> None:
    async with client(paged_server(), era) as c:

        def fetcher(method: str) -> Callable[[str | None], Awaitable[dict[str, Any]]]:
            async def fetch(cursor: str | None) -> dict[str, Any]:
                return await c.send_request(method, {"cursor": cursor} if cursor is not None else {})

            return fetch

        names, pages = await walk(fetcher("tools/list"), "tools", "name")
        assert (names, pages) == ([f"tool_{i}" for i in range(5)], 3)
        uris, pages = await walk(fetcher("resources/list"), "resources", "uri")
        assert (uris, pages) == ([f"res://item/{i}" for i in range(5)], 3)
        names, pages = await walk(fetcher("prompts/list"), "prompts", "name")
        assert (names, pages) == ([f"prompt_{i}" for i in range(4)], 2), "no empty page after an exact multiple"
        templates, pages = await walk(fetcher("resources/templates/list"), "resourceTemplates", "uriTemplate")
        assert (templates, pages) == ([f"tpl{i}://{{n}}" for i in range(3)], 2)

        # typed access, and a cursor can be used again (it is not consumed)
        first = await c.list_tools()
        assert first.next_cursor is not None
        again = await c.list_tools(first.next_cursor)
        again2 = await c.list_tools(first.next_cursor)
        assert [t.name for t in again.tools] == [t.name for t in again2.tools] == ["tool_2", "tool_3"]


def test_page_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="page_size"):
        Server("x", page_size=0)


# === server/discover (modern) ==========================================================================


def full_server(**opts: Any) -> Server:
    server = Server("full", "4.5.6", instructions="Use the tools wisely.", **opts)

    @server.tool
    def echo(text: str) -> str:
        return text

    @server.tool
    def fail() -> str:
        raise RuntimeError("failed on purpose")

    @server.resource("docs://readme")
    def readme() -> str:
        return "hi"

    @server.resource("users://{user_id}")
    def user(user_id: str) -> str:
        return user_id

    @server.prompt
    def greet(name: str) -> str:
        return f"Hello {name}"

    return server


async def test_discover_result_shape() -> None:
    async with client(full_server(cache_ttl_ms=60000, cache_scope="public"), MODERN) as c:
        raw = await c.send_request("server/discover")
    assert raw["resultType"] == "complete"
    assert MODERN in raw["supportedVersions"]
    assert all(isinstance(v, str) for v in raw["supportedVersions"])
    caps = raw["capabilities"]
    assert {"tools", "resources", "prompts"} <= set(caps)
    assert raw["instructions"] == "Use the tools wisely."
    assert raw["ttlMs"] == 60000
    assert raw["cacheScope"] == "public"
    info = raw["_meta"][SERVER_INFO]
    assert (info["name"], info["version"]) == ("full", "4.5.6")


async def test_discover_defaults_and_only_registered_capabilities() -> None:
    server = Server("tools-only", "1.0.0")

    @server.tool
    def echo(text: str) -> str:
        return text

    async with Client(server) as c:  # no pinned version: the client probes with server/discover
        assert c.era == "modern"
        assert c.protocol_version == MODERN
        assert c.server_info is not None
        assert c.server_info.name == "tools-only"
        raw = await c.send_request("server/discover")
        typed = await c.discover()
    assert "tools" in raw["capabilities"]
    assert "prompts" not in raw["capabilities"]
    assert "resources" not in raw["capabilities"]
    assert isinstance(raw["ttlMs"], int)
    assert raw["ttlMs"] >= 0
    assert raw["cacheScope"] in ("public", "private")
    assert MODERN in typed.supported_versions


# === initialize (legacy) ================================================================================


class RawWire:
    """A :class:`mcpkit.Transport` whose other end is the test: raw JSON-RPC in and out."""

    def __init__(self) -> None:
        self.inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.started = asyncio.Event()
        self._on_message: Callable[[bytes], None] | None = None
        self._on_close: Callable[[str | None], None] | None = None
        self._closed = False
        self._id = 0

    async def start(self, on_message: Callable[[bytes], None], on_close: Callable[[str | None], None]) -> None:
        self._on_message, self._on_close = on_message, on_close
        self.started.set()

    def send(self, data: bytes) -> None:
        for line in data.splitlines():
            if line.strip():
                self.inbox.put_nowait(json.loads(line))

    async def drain(self) -> None:
        return None

    async def close(self) -> None:
        self.hang_up()

    def hang_up(self) -> None:
        if not self._closed:
            self._closed = True
            if self._on_close is not None:
                self._on_close("test finished")

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        assert self._on_message is not None
        self._id += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self._id, "method": method}
        if params is not None:
            msg["params"] = params
        asyncio.get_running_loop().call_soon(self._on_message, json.dumps(msg).encode())
        async with asyncio.timeout(5):
            while True:
                reply = await self.inbox.get()
                if reply.get("id") == self._id and "method" not in reply:
                    return reply


@contextlib.asynccontextmanager
async def raw_wire(server: Server) -> AsyncIterator[RawWire]:
    wire = RawWire()
    task = asyncio.create_task(server.serve(wire))
    await asyncio.wait_for(wire.started.wait(), 5)
    try:
        yield wire
    finally:
        wire.hang_up()
        await asyncio.wait_for(task, 5)


def init_params(version: str) -> dict[str, Any]:
    return {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}


@pytest.mark.parametrize(
    ("requested", "agreed"),
    [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2024-11-05"),
        ("1999-01-01", "2025-11-25"),
        ("2030-01-01", "2025-11-25"),
    ],
)
async def test_initialize_negotiates_the_protocol_version(requested: str, agreed: str) -> None:
    async with raw_wire(full_server()) as wire:
        reply = await wire.request("initialize", init_params(requested))
    result = reply["result"]
    assert result["protocolVersion"] == agreed
    assert result["serverInfo"]["name"] == "full"
    assert result["serverInfo"]["version"] == "4.5.6"
    assert result["instructions"] == "Use the tools wisely."
    assert {"tools", "resources", "prompts", "logging"} <= set(result["capabilities"])
    for modern_only in ("resultType", "ttlMs", "cacheScope"):
        assert modern_only not in result


@pytest.mark.parametrize("version", ["2025-06-18", "2025-03-26", "2024-11-05"])
async def test_client_pinned_to_an_older_legacy_version(version: str) -> None:
    async with client(full_server(), version) as c:
        assert (c.era, c.protocol_version) == ("legacy", version)
        assert text_of(await c.call_tool("echo", {"text": "old"})) == "old"


async def test_server_restricted_to_one_era() -> None:
    modern_only = Server("modern-only", eras="modern")
    legacy_only = Server("legacy-only", eras="legacy")
    for server in (modern_only, legacy_only):

        @server.tool
        def echo(text: str) -> str:
            return text

    async with Client(modern_only) as c:
        assert c.era == "modern"
        assert text_of(await c.call_tool("echo", {"text": "m"})) == "m"
        discovered = await c.send_request("server/discover")
        assert discovered["supportedVersions"] == [MODERN]
    async with raw_wire(modern_only) as wire:
        reply = await wire.request("initialize", init_params(LEGACY))
        # a modern-only server SHOULD name the versions it supports when refusing initialize
        assert "error" in reply
        assert MODERN in json.dumps(reply["error"])

    async with Client(legacy_only) as c:  # the probe fails, the client falls back to initialize
        assert (c.era, c.protocol_version) == ("legacy", LEGACY)
        assert text_of(await c.call_tool("echo", {"text": "l"})) == "l"


# === resultType on every modern result, absent in legacy =================================================

EVERY_METHOD: list[tuple[str, dict[str, Any] | None]] = [
    ("ping", None),
    ("tools/list", None),
    ("tools/call", {"name": "echo", "arguments": {"text": "x"}}),
    ("tools/call", {"name": "fail", "arguments": {}}),
    ("resources/list", None),
    ("resources/templates/list", None),
    ("resources/read", {"uri": "docs://readme"}),
    ("resources/read", {"uri": "users://7"}),
    ("prompts/list", None),
    ("prompts/get", {"name": "greet", "arguments": {"name": "ann"}}),
    ("completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "name", "value": "a"}}),
]


@pytest.mark.parametrize("era", ERAS)
async def test_result_type_on_every_modern_result_and_absent_in_legacy(era: str) -> None:
    # 2026-07-28 removed ping and added server/discover
    methods = [*EVERY_METHOD[1:], ("server/discover", None)] if era == MODERN else EVERY_METHOD
    async with client(full_server(), era) as c:
        for method, params in methods:
            result = await c.send_request(method, params)
            if era == MODERN:
                assert result.get("resultType") == "complete", (method, result)
                assert result["_meta"][SERVER_INFO]["name"] == "full", (method, result)
                if method in CACHEABLE:
                    assert isinstance(result.get("ttlMs"), int), (method, result)
                    assert result["ttlMs"] >= 0, (method, result)
                    assert result.get("cacheScope") in ("public", "private"), (method, result)
            else:
                for modern_only in ("resultType", "ttlMs", "cacheScope"):
                    assert modern_only not in result, (method, result)
                assert SERVER_INFO not in (result.get("_meta") or {}), (method, result)


async def test_modern_results_keep_handler_meta() -> None:
    server = Server("meta")

    @server.tool
    def tagged() -> CallToolResult:
        return CallToolResult(content=[TextContent(text="t")], meta={"example.com/trace": "abc"})

    async with client(server, MODERN) as c:
        raw = await c.send_request("tools/call", {"name": "tagged", "arguments": {}})
    assert raw["_meta"]["example.com/trace"] == "abc"
    assert raw["_meta"][SERVER_INFO]["name"] == "meta"
    assert raw["resultType"] == "complete"


# === the same features over a real stdio subprocess =======================================================


@pytest.mark.e2e
@pytest.mark.parametrize("era", ERAS)
async def test_features_over_stdio(era: str) -> None:
    logs: list[tuple[str, Any, str | None]] = []
    progress: list[tuple[float, float | None, str | None]] = []
    transport = StdioTransport([sys.executable, str(SERVERS / "contract_features.py"), "2"], stderr="capture")
    options = ClientOptions(
        protocol_version=era,
        request_timeout=10,
        log_level="info",
        on_log=lambda lvl, data, logger: logs.append((lvl, data, logger)),
        client_info=Implementation(name="stdio-tests", version="1"),
    )
    async with Client(transport, options) as c:
        result = await c.call_tool("chatty", {"steps": 2}, on_progress=lambda p, t, m: progress.append((p, t, m)))
        assert text_of(result) == "done"
        assert logs == [("info", {"structured": True}, None), ("warning", "careful", "contract.logger")]
        assert progress == [(1, 2, "step 1"), (2, 2, "step 2")]

        era_name = "modern" if era == MODERN else "legacy"
        assert text_of(await c.call_tool("who", {})) == f"{era_name} {era} stdio-tests"

        weather = await c.call_tool("weather", {"city": "Lima"})
        assert weather.structured_content == {"city": "Lima", "celsius": 21.5}

        names: list[str] = []
        cursor: str | None = None
        while True:
            page = await c.list_tools(cursor)
            assert len(page.tools) <= 2
            names += [t.name for t in page.tools]
            cursor = page.next_cursor
            if cursor is None:
                break
        assert names == ["chatty", "weather", "who", "numbered_0", "numbered_1", "numbered_2"]

        profile = await c.read_resource("users://x%2Fy/profile")
        assert profile.contents[0].text == "profile of x/y"
        assert (await c.read_resource("files://a/b.txt")).contents[0].text == "file at a/b.txt"
        blob = (await c.read_resource("data://bytes")).contents[0]
        assert blob.blob is not None
        assert base64.b64decode(blob.blob) == bytes(range(256))

        prompt = await c.get_prompt("review", {"code": "1+1"})
        assert isinstance(prompt.messages[0].content, TextContent)
        assert prompt.messages[0].content.text == "Review this python code: 1+1"
        assert (await c.complete({"type": "ref/prompt", "name": "review"}, "language", "r")).completion.values == ["rust"]

        raw = await c.send_request("tools/list")
        if era == MODERN:
            assert raw["resultType"] == "complete"
            assert raw["_meta"][SERVER_INFO] == {"name": "contract-features", "version": "2.0.1"}
            discover = await c.send_request("server/discover")
            assert discover["instructions"] == "Ask about the weather."
        else:
            assert "resultType" not in raw
            assert c.server_info is not None
            assert c.server_info.version == "2.0.1"
            assert c.instructions == "Ask about the weather."


async def test_methods_removed_in_2026_07_28_are_not_found_for_modern_requests() -> None:
    """ping, logging/setLevel and initialize do not exist in the modern era: a request
    that carries modern _meta gets -32601, even on a dual-era server."""
    async with client(full_server(), MODERN) as c:
        for method, params in (
            ("ping", None),
            ("logging/setLevel", {"level": "info"}),
            ("initialize", {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}),
        ):
            err = await expect_error(c.send_request(method, params))
            assert err.code == -32601, (method, err)
        await c.ping()  # the client's ping is a server/discover round trip in this era
