"""Interop: the MCP Inspector v2's CLI (npm ``@modelcontextprotocol/inspector``, pinned in
tests/support/peers.py, on the Node 22 it needs) against an mcpkit server
(tests/support/servers/interop_target.py), over stdio and Streamable HTTP, with
``--protocol-era modern`` and ``--protocol-era legacy``.

Each check is one run of ``inspector --cli -q --format json --protocol-era ERA TARGET
--method ...``: the result is the JSON object on stdout, a failure the JSON envelope
``{"error": {"code", "message", "status"?}}`` on stderr with the CLI's exit code (1: an
error, 5: a tool error or a tool it could not find). A run takes about half a second, so
each test starts its runs together (three at a time) and every run has a deadline.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import pytest

from support.paths import SERVERS
from support.peers import Inspector
from support.ports import free_port
from support.processes import listening, server_command

ERAS = ["modern", "legacy"]
WHERE = ["stdio", "http"]
REVISION = {"modern": "2026-07-28", "legacy": "2025-11-25"}
RUN_LIMIT = 30.0  # seconds for one run of the CLI
#: The first test also waits for the Inspector's install (the fixture allows npm 240 s).
pytestmark = pytest.mark.timeout(300)


@dataclass
class Run:
    """What one run of the CLI printed, and its exit code."""

    exit: int
    result: dict[str, Any] | None
    error: dict[str, Any] | None

    @property
    def text(self) -> str:
        """The text of the single content block of a tool result."""
        assert self.result is not None, self
        (block,) = self.result["content"]
        assert block["type"] == "text"
        return str(block["text"])


def _last_json(output: bytes) -> dict[str, Any] | None:
    lines = [line for line in output.decode(errors="replace").splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else None


@pytest.fixture(scope="module")
def kit_url() -> Iterator[str]:
    """The mcpkit server over Streamable HTTP, with the default status for JSON-RPC errors."""
    port = free_port()
    with listening(server_command("interop_target", "--http", str(port)), port):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def kit_url_400() -> Iterator[str]:
    """The same server with ``asgi_app(error_status="400")`` (docs/http.md)."""
    port = free_port()
    with listening(server_command("interop_target", "--http", str(port), "--error-status", "400"), port):
        yield f"http://127.0.0.1:{port}/mcp"


class Cli:
    """The Inspector's CLI aimed at one server in one era."""

    def __init__(self, inspector: Inspector, era: str, target: list[str]) -> None:
        self.inspector, self.era, self.target = inspector, era, target
        self.limiter = anyio.CapacityLimiter(3)

    async def run(self, *args: str) -> Run:
        command = [*self.inspector.command, "-q", "--format", "json", "--protocol-era", self.era, *self.target, *args]
        async with self.limiter:
            with anyio.fail_after(RUN_LIMIT):
                proc = await anyio.run_process(command, env=self.inspector.env, check=False)
        output, error = _last_json(proc.stdout), _last_json(proc.stderr)
        run = Run(proc.returncode, output["result"] if output else None, error["error"] if error else None)
        assert run.exit == 0 or run.error is not None, (command, proc.stderr.decode(errors="replace"))
        return run

    async def all(self, *calls: tuple[str, ...]) -> list[Run]:
        """Run each call (a tuple of CLI arguments) at the same time; the runs in order."""
        runs: list[Run | None] = [None] * len(calls)

        async def one(i: int, args: tuple[str, ...]) -> None:
            runs[i] = await self.run(*args)

        async with anyio.create_task_group() as tasks:
            for i, args in enumerate(calls):
                tasks.start_soon(one, i, args)
        return [run for run in runs if run is not None]


def cli(inspector: Inspector, era: str, where: str, url: str) -> Cli:
    target = [sys.executable, str(SERVERS / "interop_target.py")] if where == "stdio" else [url]
    return Cli(inspector, era, target)


def call(tool: str, *args: str) -> tuple[str, ...]:
    return ("--method", "tools/call", "--tool-name", tool, *args)


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("where", WHERE)
async def test_inspector_round_trip(inspector: Inspector, kit_url: str, where: str, era: str) -> None:
    """List the tools (with ``--strict``: the Inspector finds every input and output
    schema portable), call two (one with structured output), read a resource, get a
    prompt: the era asked for is the one the server saw."""
    whoami, add, tools, read, prompt = await cli(inspector, era, where, kit_url).all(
        call("whoami"),
        call("add", "--tool-args-json", '{"a": 2, "b": 40}'),
        ("--method", "tools/list", "--strict"),  # exit 6 on a tool schema that is not portable
        ("--method", "resources/read", "--uri", "note://hello"),
        ("--method", "prompts/get", "--prompt-name", "greet", "--prompt-args", "name=Ada", "style=pirate"),
    )
    assert whoami.text == f"{era} {REVISION[era]} inspector-cli"
    assert add.result is not None
    assert add.result["structuredContent"] == {"sum": 42}
    assert add.result["content"] == [{"type": "text", "text": '{"sum":42}'}]
    assert tools.result is not None
    by_name = {tool["name"]: tool for tool in tools.result["tools"]}
    assert list(by_name) == ["echo", "whoami", "add", "chatty", "refuse", "crash", "deny", "explode"]
    assert by_name["add"]["inputSchema"]["required"] == ["a", "b"]
    assert by_name["add"]["outputSchema"]["properties"] == {"sum": {"type": "integer"}}
    assert read.result is not None
    assert read.result["contents"] == [{"uri": "note://hello", "mimeType": "text/plain", "text": "Hello, interop!"}]
    assert prompt.result is not None
    assert prompt.result["description"] == "Greet someone."
    assert prompt.result["messages"] == [{"role": "user", "content": {"type": "text", "text": "Greet Ada in a pirate style."}}]
    for run in (whoami, add, tools, read, prompt):
        assert run.exit == 0
        assert run.error is None
        if era == "modern" and run is not tools:  # the CLI prints a list as its items only
            assert run.result is not None
            assert run.result["_meta"] == {"io.modelcontextprotocol/serverInfo": {"name": "interop", "version": "1.2.3"}}


@pytest.mark.parametrize("where", WHERE)
async def test_inspector_auto_era_finds_modern(inspector: Inspector, kit_url: str, where: str) -> None:
    """``--protocol-era auto`` probes with ``server/discover``, which mcpkit answers."""
    (whoami,) = await cli(inspector, "auto", where, kit_url).all(call("whoami"))
    assert whoami.text == "modern 2026-07-28 inspector-cli"


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("where", WHERE)
async def test_inspector_call_errors(inspector: Inspector, kit_url: str, where: str, era: str) -> None:
    """Every way a call fails: a tool error (``ToolError``, and an ordinary exception:
    ``isError`` results, exit 5); an unknown tool (the CLI looks the name up in
    ``tools/list`` first, so the call never reaches the server: exit 5); arguments that
    break the schema, a deliberate JSON-RPC error and a -32603 from a handler (exit 1,
    the server's message); a resource handler that crashes (-32603 "Internal error",
    its text kept on the server).

    In the modern era over HTTP mcpkit answers -32603 with status 500 (the default,
    docs/http.md), and the TypeScript SDK under the Inspector reads a JSON-RPC error body
    only on a 4xx: the user sees "Error POSTing to endpoint" and the raw body."""
    refused, crashed, unknown, missing, denied, exploded, broken = await cli(inspector, era, where, kit_url).all(
        call("refuse", "--tool-arg", "reason=not today"),
        call("crash"),
        call("no_such_tool"),
        call("add", "--tool-arg", "a=1"),
        call("deny"),
        call("explode"),
        ("--method", "resources/read", "--uri", "note://broken"),
    )
    for run, text in [(refused, "not today"), (crashed, "the tool broke")]:
        assert run.exit == 5
        assert run.result is not None
        assert run.result["isError"] is True
        assert run.result["content"] == [{"type": "text", "text": text}]
        assert run.error is not None
        assert run.error["code"] == "tool_is_error"
    assert unknown.exit == 5
    assert unknown.error == {"code": "tool_not_found", "message": "Tool 'no_such_tool' not found on server."}
    assert (missing.exit, missing.error) == (
        1,
        {"code": "error", "message": "Invalid arguments for tool add: missing required argument 'b'"},
    )
    assert (denied.exit, denied.error) == (1, {"code": "error", "message": "Quota exhausted"})
    assert exploded.exit == broken.exit == 1
    assert exploded.error is not None
    assert broken.error is not None
    if era == "modern" and where == "http":
        assert exploded.error["status"] == broken.error["status"] == 500
        assert exploded.error["message"].startswith("Error POSTing to endpoint: {")
        body = json.loads(exploded.error["message"].removeprefix("Error POSTing to endpoint: "))
        assert body["error"] == {"code": -32603, "message": "Upstream failed"}
        assert '"message":"Internal error","data":{"reference":' in broken.error["message"]
    else:
        assert exploded.error == {"code": "error", "message": "Upstream failed"}
        assert broken.error == {"code": "error", "message": "Internal error"}
    assert "disk on fire" not in json.dumps(broken.error)


@pytest.mark.parametrize(("where", "era"), [("stdio", "legacy"), ("http", "modern")])
async def test_inspector_lists_reads_and_prompts(inspector: Inspector, kit_url: str, where: str, era: str) -> None:
    """The other lists, a templated and a binary resource, an unknown resource, a prompt
    with its default argument and one without its required argument, and a string for
    an integer argument (the CLI coerces arguments by the schema even from
    ``--tool-args-json``: it sends null; mcpkit refuses it either way)."""
    resources, templates, prompts, templated, blob, unknown, plain, missing, mistyped = await cli(
        inspector, era, where, kit_url
    ).all(
        ("--method", "resources/list"),
        ("--method", "resources/templates/list"),
        ("--method", "prompts/list"),
        ("--method", "resources/read", "--uri", "note://42"),
        ("--method", "resources/read", "--uri", "data://bytes"),
        ("--method", "resources/read", "--uri", "nowhere://at-all"),
        ("--method", "prompts/get", "--prompt-name", "greet", "--prompt-args", "name=Bo"),
        ("--method", "prompts/get", "--prompt-name", "greet"),
        call("add", "--tool-args-json", '{"a": "one", "b": 2}'),
    )
    assert resources.result is not None
    assert [r["uri"] for r in resources.result["resources"]] == ["note://hello", "data://bytes", "note://broken"]
    assert templates.result == {
        "resourceTemplates": [{"name": "note", "uriTemplate": "note://{id}", "description": "A note by id."}]
    }
    assert prompts.result is not None
    (greet,) = prompts.result["prompts"]
    assert [(arg["name"], arg["required"]) for arg in greet["arguments"]] == [("name", True), ("style", False)]
    assert templated.result is not None
    assert templated.result["contents"] == [{"uri": "note://42", "mimeType": "text/plain", "text": "note 42"}]
    assert blob.result is not None
    assert blob.result["contents"] == [{"uri": "data://bytes", "mimeType": "application/octet-stream", "blob": "AAEC/w=="}]
    assert (unknown.exit, unknown.error) == (1, {"code": "error", "message": "Resource not found"})
    assert plain.result is not None
    assert plain.result["messages"][0]["content"]["text"] == "Greet Bo in a plain style."
    assert (missing.exit, missing.error) == (
        1,
        {"code": "error", "message": "Invalid arguments for prompt greet: missing required argument 'name'"},
    )
    assert mistyped.exit == 1
    assert mistyped.error is not None
    assert mistyped.error["message"].startswith("Invalid arguments for tool add: argument 'a': ")


async def test_inspector_internal_errors_with_status_400(inspector: Inspector, kit_url_400: str) -> None:
    """With ``asgi_app(error_status="400")`` the modern era's -32603 errors reach the
    Inspector's user as the server worded them."""
    explode, broken = await cli(inspector, "modern", "http", kit_url_400).all(
        call("explode"),
        ("--method", "resources/read", "--uri", "note://broken"),
    )
    assert (explode.exit, explode.error) == (1, {"code": "error", "message": "Upstream failed"})
    assert (broken.exit, broken.error) == (1, {"code": "error", "message": "Internal error"})


@pytest.fixture(scope="module")
def everything_proxy_url(everything: list[str]) -> Iterator[str]:
    """server-everything (npm, stdio, legacy era) behind an mcpkit proxy served over
    Streamable HTTP (tests/support/servers/proxy_of.py): the proxy bridges the eras."""
    port = free_port()
    with listening(server_command("proxy_of", REVISION["legacy"], "per-client", str(port), *everything), port, timeout=30):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.mark.parametrize("era", ERAS)
async def test_inspector_through_a_proxy_of_server_everything(inspector: Inspector, everything_proxy_url: str, era: str) -> None:
    """The Inspector, in either era, uses server-everything through the proxy as it would
    directly: every list (the proxy pages them; the CLI follows), calls with text and
    structured results, a tool error as server-everything words it, resources by URI and
    by template, prompts with arguments, and completions."""
    runs = await Cli(inspector, era, [everything_proxy_url]).all(
        ("--method", "tools/list"),
        call("echo", "--tool-args-json", '{"message": "hi"}'),
        call("get-sum", "--tool-args-json", '{"a": 2, "b": 3.5}'),
        call("get-structured-content", "--tool-args-json", '{"location": "Chicago"}'),
        call("get-sum", "--tool-args-json", '{"a": "two"}'),
        ("--method", "resources/list"),
        ("--method", "resources/read", "--uri", "demo://resource/dynamic/text/5"),
        ("--method", "resources/templates/list"),
        ("--method", "prompts/get", "--prompt-name", "args-prompt", "--prompt-args", "city=Oslo", "state=Viken"),
    )
    tools, echo, total, structured, bad, resources, text, templates, prompt = runs
    assert tools.result is not None
    assert {"echo", "get-sum", "get-structured-content", "trigger-long-running-operation"} <= {
        tool["name"] for tool in tools.result["tools"]
    }
    assert echo.text == "Echo: hi"
    assert total.text == "The sum of 2 and 3.5 is 5.5."
    assert structured.result is not None
    assert structured.result["structuredContent"] == {"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82}
    assert bad.exit == 5  # a tool error: server-everything's own result, as it sent it
    assert resources.result is not None
    assert len(resources.result["resources"]) > 3  # every page, through the proxy's own paging
    assert text.result is not None
    (contents,) = text.result["contents"]
    assert contents["uri"] == "demo://resource/dynamic/text/5"
    assert "5" in contents["text"]
    assert templates.result is not None
    assert "demo://resource/dynamic/text/{resourceId}" in [t["uriTemplate"] for t in templates.result["resourceTemplates"]]
    assert prompt.result is not None
    assert "Oslo" in prompt.result["messages"][0]["content"]["text"]
