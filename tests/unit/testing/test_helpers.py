"""mcpkit.testing's plain helpers: as_json, FakeUser and FakeModel answering a real
server in both eras, and http_server running a server program over real HTTP."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import TypedDict

import pytest

from mcpkit import Client, ClientOptions, Context, ElicitRequestParams, ElicitResult, HttpTransport, McpError, Server
from mcpkit.testing import FakeModel, FakeUser, as_json, free_port, http_server
from mcpkit.testing.fakes import ScriptExhausted
from mcpkit.testing.programs import ServerDidNotStart

ERAS = ["2026-07-28", "2025-11-25"]


class Name(TypedDict):
    name: str


def make_server() -> Server:
    server = Server("helpers", "1.2.3")

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool
    async def nickname(ctx: Context) -> str:
        answer = await ctx.elicit("Your name?", Name)
        if answer.action != "accept":
            return f"no name ({answer.action})"
        reply = await ctx.sample(f"A nickname for {answer.value['name']}", 50)
        return f"{answer.value['name']} aka {reply.text}"

    return server


async def test_as_json_is_the_wire_form_without_the_envelope() -> None:
    async with Client(make_server()) as client:
        result = await client.call_tool("add", {"a": 2, "b": 3})
        tools = await client.list_tools()
    assert as_json(result) == {"content": [{"type": "text", "text": "5"}], "structuredContent": {"result": 5}}
    whole = as_json(result, envelope=True)
    assert whole["_meta"]["io.modelcontextprotocol/serverInfo"] == {"name": "helpers", "version": "1.2.3"}
    assert whole["resultType"] == "complete"
    assert as_json(tools.tools[0]) == {
        "name": "add",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
        "outputSchema": {"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]},
    }
    assert as_json([result.content[0]]) == [{"type": "text", "text": "5"}]  # not a dict: nothing dropped


@pytest.mark.parametrize("era", ERAS)
async def test_the_fakes_answer_and_record(era: str) -> None:
    user, model = FakeUser({"name": "Ada"}), FakeModel("Countess", model="m1")
    async with Client(make_server(), ClientOptions(protocol_version=era, on_elicit=user, on_sample=model)) as client:
        result = await client.call_tool("nickname")
    assert as_json(result) == {"content": [{"type": "text", "text": "Ada aka Countess"}]}
    assert user.messages == ["Your name?"]  # asked once, though the modern era runs the handler twice
    assert user.questions[0].requested_schema == {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
    }
    assert model.prompts == ["A nickname for Ada"]
    assert model.requests[0].max_tokens == 50
    assert user.errors == model.errors == []


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("answer", ["decline", "cancel", ElicitResult(action="decline"), lambda request: "cancel"])
async def test_a_fake_user_declines_or_cancels(era: str, answer: object) -> None:
    user = FakeUser(answer)  # type: ignore[arg-type]
    async with Client(make_server(), ClientOptions(protocol_version=era, on_elicit=user)) as client:
        result = await client.call_tool("nickname")
    assert result.content[0].text in ("no name (decline)", "no name (cancel)")  # type: ignore[union-attr]


@pytest.mark.parametrize("era", ERAS)
async def test_a_script_too_short_fails_the_call_and_says_why(era: str) -> None:
    user = FakeUser()
    async with Client(make_server(), ClientOptions(protocol_version=era, on_elicit=user)) as client:
        with pytest.raises((ScriptExhausted, McpError)):  # modern: raised here; legacy: the server's -32603
            await client.call_tool("nickname")
    assert [str(e) for e in user.errors] == ["elicitation request 1 ('Your name?'), but the script has 0 answer(s)"]


def test_a_bad_answer_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="an answer must be"):
        FakeUser(42)(ElicitRequestParams(message="?"))  # type: ignore[arg-type]


SERVER_PROGRAM = textwrap.dedent(
    """
    import sys
    from mcpkit import Server

    server = Server("over-http")

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    server.run("http", port=int(sys.argv[1]))
    """
)


@pytest.mark.e2e
async def test_http_server_runs_a_program_for_the_test(tmp_path: Path) -> None:
    program = tmp_path / "server.py"
    program.write_text(SERVER_PROGRAM, encoding="utf-8")
    port = free_port()
    async with http_server([sys.executable, str(program), str(port)], port) as url:
        assert url == f"http://127.0.0.1:{port}/mcp"
        async with Client(HttpTransport(url)) as client:
            result = await client.call_tool("add", {"a": 20, "b": 22})
    assert result.structured_content == {"result": 42}
    with pytest.raises(ConnectionRefusedError):  # stopped on leaving: nothing listens any more
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


@pytest.mark.e2e
async def test_a_program_that_exits_did_not_start(tmp_path: Path) -> None:
    program = tmp_path / "broken.py"
    program.write_text("import sys\nsys.exit('cannot open the database')\n", encoding="utf-8")
    with pytest.raises(ServerDidNotStart, match="exited with 1 before listening: cannot open the database"):
        async with http_server([sys.executable, str(program)], free_port()):
            pass


def test_importing_the_helpers_does_not_import_pytest() -> None:
    code = "import sys, mcpkit.testing; print(sorted(m for m in ('pytest', '_pytest', 'pytest_asyncio') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=30).stdout
    assert out.strip() == "[]"
