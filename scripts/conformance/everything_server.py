"""Every tool, resource, template and prompt the MCP conformance suite's server scenarios call.

    python scripts/conformance/everything_server.py --port 3001          # serves http://127.0.0.1:3001/mcp
    python scripts/conformance/everything_server.py --port 3001 --sse    # the same, every answer an SSE stream

One endpoint serves both eras: the suite's 2025-11-25 scenarios start with
``initialize`` and keep a session, its 2026-07-28 scenarios send stateless requests
with ``_meta``. ``scripts/conformance.sh`` starts this server and runs the suite's
server scenarios against it. The names and payloads below are the ones the suite
checks (``@modelcontextprotocol/conformance@0.2.0-alpha.12``).

The tasks fixtures (``greet`` … ``test_tool_with_task``) are those of the suite's
``tasks-*`` scenarios (SEP-2663, the tasks extension of 2026-07-28; docs/tasks.md).

The skills of ``skills/`` beside this file are served for the ``sep-2640-*`` scenarios
(the skills extension, docs/skills.md), with ``resources/directory/read``: the suite
finds them through ``skills/list`` and checks their entries, files and directories.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import json
import struct
import wave
import zlib
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from mcpkit import (
    AudioContent,
    Context,
    EmbeddedResource,
    ImageContent,
    McpError,
    PromptMessage,
    ResourceContents,
    Server,
    TextContent,
    ToolError,
)


def _png_1x1_red() -> bytes:
    """A valid 1x1 PNG with one red pixel."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8 bits per channel, RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter byte, then R G B
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def _wav_silence() -> bytes:
    """A valid WAV file: 10 ms of 8 kHz mono silence."""
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\x00\x00" * 80)
    return out.getvalue()


PNG = _png_1x1_red()
PNG_B64 = base64.b64encode(PNG).decode("ascii")
WAV_B64 = base64.b64encode(_wav_silence()).decode("ascii")

server = Server(
    "mcpkit-everything",
    "1.0.0",
    instructions="The fixtures of the MCP conformance suite, served by mcpkit.",
)


# --- tools ----------------------------------------------------------------------------------


@server.tool
def test_simple_text() -> str:
    """Return one text block."""
    return "This is a simple text response for testing."


@server.tool
def test_image_content() -> ImageContent:
    """Return an image block (a 1x1 red PNG)."""
    return ImageContent(data=PNG_B64, mime_type="image/png")


@server.tool
def test_audio_content() -> AudioContent:
    """Return an audio block (a short WAV of silence)."""
    return AudioContent(data=WAV_B64, mime_type="audio/wav")


@server.tool
def test_embedded_resource() -> EmbeddedResource:
    """Return an embedded text resource."""
    return EmbeddedResource(
        resource=ResourceContents(
            uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."
        )
    )


@server.tool
def test_multiple_content_types() -> list[TextContent | ImageContent | EmbeddedResource]:
    """Return text, an image and an embedded JSON resource in one result."""
    return [
        TextContent(text="Multiple content types test:"),
        ImageContent(data=PNG_B64, mime_type="image/png"),
        EmbeddedResource(
            resource=ResourceContents(
                uri="test://mixed-content-resource", mime_type="application/json", text='{"test":"data","value":123}'
            )
        ),
    ]


@server.tool
async def test_tool_with_logging(ctx: Context) -> str:
    """Send three info log messages while working."""
    await ctx.info("Tool execution started")
    await asyncio.sleep(0.05)
    await ctx.info("Tool processing data")
    await asyncio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@server.tool
def test_error_handling() -> str:
    """Always fail (an isError result)."""
    raise ToolError("This tool intentionally returns an error for testing")


@server.tool
async def test_tool_with_progress(ctx: Context) -> str:
    """Report progress 0, 50 and 100 of 100 (when the client asked for progress)."""
    await ctx.report_progress(0, 100)
    await asyncio.sleep(0.05)
    await ctx.report_progress(50, 100)
    await asyncio.sleep(0.05)
    await ctx.report_progress(100, 100)
    return "Tool with progress executed successfully"


@server.tool
async def test_reconnection(ctx: Context) -> str:
    """Close this call's SSE connection, then answer: the client reconnects with
    Last-Event-ID and gets the result from the stored stream (SSE polling, SEP-1699)."""
    await ctx.close_sse_stream()
    await asyncio.sleep(0.1)  # the result comes after the connection has gone
    return "Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure."


@server.tool
async def test_logging_tool(ctx: Context) -> str:
    """Log one message: it reaches a modern client only if its request set a log level."""
    await ctx.info("test_logging_tool ran")
    return "Logged one message"


@server.tool
async def test_missing_capability(ctx: Context) -> str:
    """Samples: a client that did not declare sampling gets -32021 before anything is sent."""
    reply = await ctx.sample("Say hello", 10)
    return f"The client's model said: {reply.text}"


# --- asking the client (docs/interactive.md): the same code serves both eras -------------------


@server.tool
async def test_sampling(ctx: Context, prompt: str) -> str:
    """Ask the client's model.

    Args:
        prompt: The prompt to send to the LLM.
    """
    reply = await ctx.sample(prompt, 100)
    return f"LLM response: {reply.text}"


@server.tool
async def test_elicitation(ctx: Context, message: str) -> str:
    """Ask the user for a user name and an email address.

    Args:
        message: The message to show the user.
    """
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }
    answer = await ctx.elicit(message, schema)
    return f"User response: action={answer.action}, content={json.dumps(answer.content)}"


@server.tool
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Ask with a default for every primitive type (SEP-1034)."""
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "default": True},
        },
    }
    answer = await ctx.elicit("Please review your profile", schema)
    return f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content)}"


def _titled(values: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"const": value, "title": title} for value, title in values]


@server.tool
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Ask with every kind of enum (SEP-1330)."""
    options = ["option1", "option2", "option3"]
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": options},
            "titledSingle": {
                "type": "string",
                "oneOf": _titled([("value1", "First Option"), ("value2", "Second Option"), ("value3", "Third Option")]),
            },
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": options}},
            "titledMulti": {
                "type": "array",
                "items": {
                    "anyOf": _titled([("value1", "First Choice"), ("value2", "Second Choice"), ("value3", "Third Choice")])
                },
            },
        },
    }
    answer = await ctx.elicit("Pick your options", schema)
    return f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content)}"


@server.tool
async def test_streaming_elicitation(ctx: Context) -> str:
    """Ask mid-call: in the modern era that ends the call with input_required (never a request on the stream)."""
    answer = await ctx.elicit("Continue?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
    return f"Streaming elicitation: {answer.action}"


# --- a dynamic server: what it offers changes while clients listen (docs/subscriptions.md) --------

_toggles = {"tool": False, "prompt": False}


@server.tool
def test_trigger_tool_change() -> str:
    """Add or remove a tool: clients listening for tool-list changes are told."""
    if _toggles["tool"]:
        server.remove_tool("test_dynamic_tool")
    else:
        server.tool(name="test_dynamic_tool", description="Comes and goes")(lambda: "here")
    _toggles["tool"] = not _toggles["tool"]
    return "The tool list changed"


@server.tool
def test_trigger_prompt_change() -> str:
    """Add or remove a prompt: clients listening for prompt-list changes are told."""
    if _toggles["prompt"]:
        server.remove_prompt("test_dynamic_prompt")
    else:
        server.prompt(name="test_dynamic_prompt", description="Comes and goes")(lambda: "here")
    _toggles["prompt"] = not _toggles["prompt"]
    return "The prompt list changed"


@server.tool
async def test_trigger_resource_update(uri: str) -> str:
    """Tell the clients subscribed to ``uri`` that it changed.

    Args:
        uri: The resource that changed.
    """
    await server.notify_resource_updated(uri)
    return f"Updated {uri}"


# --- multi-round-trip requests (2026-07-28): the keys are the ones the suite looks for ----------

_NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@server.tool
async def test_input_required_result_elicitation(ctx: Context) -> str:
    """One elicitation round."""
    answer = await ctx.elicit("What is your name?", _NAME, key="user_name")
    return f"Hello, {(answer.content or {}).get('name', 'stranger')}!"


@server.tool
async def test_input_required_result_sampling(ctx: Context) -> str:
    """One sampling round."""
    reply = await ctx.sample("What is the capital of France?", 100, key="capital_question")
    return f"The model said: {reply.text}"


@server.tool
async def test_input_required_result_list_roots(ctx: Context) -> str:
    """One roots round."""
    roots = await ctx.list_roots(key="client_roots")
    return "Roots: " + ", ".join(root.uri for root in roots)


@server.tool
async def test_input_required_result_request_state(ctx: Context) -> str:
    """One round whose answer arrives with the echoed, verified requestState."""
    ok = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    answer = await ctx.elicit("Please confirm", ok, key="confirm")
    return f"state-ok: confirmed={(answer.content or {}).get('ok')}"


@server.tool
async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """Three questions in one round."""
    name, greeting, roots = await asyncio.gather(
        ctx.elicit("What is your name?", _NAME, key="user_name"),
        ctx.sample("Generate a greeting", 50, key="greeting"),
        ctx.list_roots(key="client_roots"),
    )
    who = (name.content or {}).get("name")
    return f"{greeting.text} {who} ({len(roots)} roots)"


@server.tool
async def test_input_required_result_multi_round(ctx: Context) -> str:
    """Two rounds: the second question is asked only after the first is answered."""
    first = await ctx.elicit("Step 1: What is your name?", _NAME, key="step1")
    colour = {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}
    second = await ctx.elicit("Step 2: What is your favorite color?", colour, key="step2")
    return f"{(first.content or {}).get('name')} likes {(second.content or {}).get('color')}"


@server.tool
async def test_input_required_result_tampered_state(ctx: Context) -> str:
    """One round; a retry with an altered requestState is refused with -32602."""
    ok = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    answer = await ctx.elicit("Please confirm", ok, key="confirm")
    return f"confirmed={(answer.content or {}).get('ok')}"


@server.tool
async def test_input_required_result_capabilities(ctx: Context) -> str:
    """Asks only what the client declared it can answer."""
    caps = ctx.client_capabilities
    asks: list[Coroutine[Any, Any, object]] = []
    if "sampling" in caps:
        asks.append(ctx.sample("Say hello", 20, key="hello"))
    if "elicitation" in caps:
        asks.append(ctx.elicit("What is your name?", _NAME, key="user_name"))
    if "roots" in caps:
        asks.append(ctx.list_roots(key="client_roots"))
    if not asks:
        return "Nothing to ask: the client declared none of sampling, elicitation, roots"
    await asyncio.gather(*asks)
    return "All answered"


@server.prompt
async def test_input_required_result_prompt(ctx: Context) -> str:
    """A prompt that asks for its context first."""
    schema = {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]}
    answer = await ctx.elicit("What context should the prompt use?", schema, key="user_context")
    return f"Answer using this context: {(answer.content or {}).get('context')}"


# --- tasks (SEP-2663, 2026-07-28): the fixtures of the suite's tasks-* scenarios ----------------


@server.tool
def greet(name: str) -> str:
    """Never a task: answers at once."""
    return f"Hello, {name}!"


@server.tool(task=True)
async def slow_compute(seconds: float, label: str = "") -> str:
    """A task that takes ``seconds`` (0: done at once); tasks/cancel stops it (cancelled)."""
    await asyncio.sleep(seconds)
    return f"Computed {label or 'it'} in {seconds:g} s"


@server.tool(task="required")
async def failing_job() -> str:
    """Only ever a task (-32021 for a client without the extension); ends in a tool error."""
    await asyncio.sleep(0.5)
    raise ToolError("The job failed: the input was rejected")


@server.tool(task=True)
async def protocol_error_job() -> str:
    """A task that ends in a protocol error: failed, with the JSON-RPC error inlined."""
    await asyncio.sleep(0.1)
    raise McpError(-32603, "The job broke down: its worker went away")


_CONFIRM = {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}


@server.tool(task=True)
async def confirm_delete(ctx: Context, filename: str) -> str:
    """A task that asks once (input_required until tasks/update answers)."""
    answer = await ctx.elicit(f"Delete {filename}?", _CONFIRM, key="confirm_delete")
    confirmed = answer.accepted and (answer.content or {}).get("confirm") is True
    return f"Deleted {filename}" if confirmed else f"Kept {filename}"


@server.tool(task=True)
async def multi_input(ctx: Context) -> str:
    """A task that asks two questions at once: both wait until both are answered."""
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "confirm": {"type": "boolean"}}}
    first, second = await asyncio.gather(ctx.elicit("First?", schema, key="first"), ctx.elicit("Second?", schema, key="second"))
    return f"Answers: {(first.content or {}).get('name')}, {(second.content or {}).get('name')}"


@server.tool(task="deferred")
async def test_tool_with_task(ctx: Context) -> str:
    """Asks in an input round first, then goes on as a task; its result names the answer."""
    answer = await ctx.elicit("What is your name?", _NAME, key="user_name")
    await ctx.start_task(required=True)
    await asyncio.sleep(0.1)
    return f"Hello, {(answer.content or {}).get('name', 'stranger')}, from a task!"


def _echo_region(arguments: dict[str, Any]) -> str:
    return f"Region: {arguments['region']}"


# SEP-2243: a modern client mirrors `region` into the Mcp-Param-Region header, and the
# server checks that header against the body.
server.add_tool(
    "test_custom_header",
    "Echo a region that the client mirrors into the Mcp-Param-Region header.",
    {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region", "description": "A region name."}},
        "required": ["region"],
    },
    _echo_region,
)


def _schema_2020_12(arguments: dict[str, Any]) -> str:
    return f"Received {sorted(arguments)}"


# Every 2020-12 keyword here must reach the client as written (SEP-1613, SEP-2106).
server.add_tool(
    "json_schema_2020_12_tool",
    "Tool with JSON Schema 2020-12 features",
    {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"},
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": False,
    },
    _schema_2020_12,
)


# --- resources ------------------------------------------------------------------------------


@server.resource("test://static-text", mime_type="text/plain")
def static_text() -> str:
    """A static text resource."""
    return "This is the content of the static text resource."


@server.resource("test://static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (a 1x1 red PNG)."""
    return PNG


@server.resource("test://watched-resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource clients may subscribe to."""
    return "Watched resource content."


@server.resource("test://template/{id}/data", mime_type="application/json")
def template_data(id: str) -> dict[str, Any]:
    """Data for one id, from a resource template."""
    return {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}


# --- prompts --------------------------------------------------------------------------------


@server.prompt
def test_simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@server.prompt
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with two required arguments.

    Args:
        arg1: First test argument.
        arg2: Second test argument.
    """
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt
def test_prompt_with_embedded_resource(resourceUri: str) -> list[PromptMessage]:  # the suite names the argument
    """A prompt that embeds a resource.

    Args:
        resourceUri: URI of the resource to embed.
    """
    resource = ResourceContents(uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing.")
    return [
        PromptMessage(role="user", content=EmbeddedResource(resource=resource)),
        PromptMessage(role="user", content=TextContent(text="Please process the embedded resource above.")),
    ]


@server.prompt
def test_prompt_with_image() -> list[PromptMessage]:
    """A prompt with an image."""
    return [
        PromptMessage(role="user", content=ImageContent(data=PNG_B64, mime_type="image/png")),
        PromptMessage(role="user", content=TextContent(text="Please analyze the image above.")),
    ]


@server.completion(prompt="test_prompt_with_arguments")
def complete_prompt_argument(argument: str, value: str, context: dict[str, str]) -> list[str]:
    """Suggestions for both arguments of ``test_prompt_with_arguments``."""
    return [v for v in ("paris", "park", "party", "test", "testValue1") if v.startswith(value)]


# --- skills (SEP-2640) ------------------------------------------------------------------------

server.add_skills(Path(__file__).parent / "skills")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=3001, help="port on 127.0.0.1 (default 3001)")
    parser.add_argument("--sse", action="store_true", help="answer every request with an SSE stream (json_response=False)")
    args = parser.parse_args()
    server.run("http", host="127.0.0.1", port=args.port, json_response=False if args.sse else None)


if __name__ == "__main__":
    main()
