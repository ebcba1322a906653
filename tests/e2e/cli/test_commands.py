"""The ``mcpkit`` command, driven as a subprocess: against a stdio server
(tests/support/servers/cli_app.py) and the same served over HTTP (by itself and by ``mcpkit
run --http``); exit codes, ``--json`` output parsed, the progress bar rendered under a
pseudo-terminal, and ``mcpkit dev`` without node. Against server-everything and with the
MCP Inspector: tests/interop/test_cli.py."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from support.cli import APP, MCPKIT, STDIO, as_json, mcpkit, run_in_pty
from support.eras import LEGACY, MODERN
from support.ports import free_port
from support.processes import listening

pytestmark = pytest.mark.timeout(60)

ERA_NAMES = [pytest.param("modern", id="modern"), pytest.param("legacy", id="legacy")]


# --- the command itself ----------------------------------------------------------------------


def test_the_script_and_the_module_run() -> None:
    script = Path(sys.executable).parent / "mcpkit"
    assert script.is_file(), "the mcpkit script is installed by pip install -e '.[test]'"
    proc = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("mcpkit ")
    assert "list" in mcpkit("--help").stdout


# --- stdio -------------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ERA_NAMES)
def test_list_over_stdio(era: str) -> None:
    proc = mcpkit("list", STDIO, "--era", era, "--json")
    assert proc.returncode == 0, proc.stderr
    listed = as_json(proc)
    assert [t["name"] for t in listed["tools"]] == ["echo", "fail", "steps", "sleep", "squares", "whoami"]
    assert listed["tools"][0]["inputSchema"]["required"] == ["text"]
    assert [r["uri"] for r in listed["resources"]] == ["cli://note"]
    assert [t["uriTemplate"] for t in listed["resourceTemplates"]] == ["cli://items/{item}"]
    assert [p["name"] for p in listed["prompts"]] == ["greet"]
    text = mcpkit("list", STDIO, "tools", "--era", era)
    assert text.returncode == 0, text.stderr
    assert "squares" in text.stdout
    assert "n*" in text.stdout  # a required argument
    assert "resources" not in text.stdout


@pytest.mark.parametrize(("era", "expected"), [("modern", f"modern {MODERN}"), ("legacy", f"legacy {LEGACY}")])
def test_call_over_stdio_in_each_era(era: str, expected: str) -> None:
    proc = mcpkit("call", STDIO, "whoami", "--era", era)
    assert (proc.returncode, proc.stdout) == (0, expected + "\n"), proc.stderr
    echoed = mcpkit("call", STDIO, "echo", '{"text": "hello there"}', "--era", era)
    assert (echoed.returncode, echoed.stdout) == (0, "hello there\n")
    result = as_json(mcpkit("call", STDIO, "echo", "-a", "text=from a pair", "--json", "--era", era))
    assert result["content"] == [{"type": "text", "text": "from a pair"}]
    assert not result.get("isError", False)


def test_call_with_structured_output() -> None:
    result = as_json(mcpkit("call", STDIO, "squares", "-a", "n=4", "--json"))
    assert result["structuredContent"] == {"result": [0, 1, 4, 9]}


def test_read_and_prompt() -> None:
    read = mcpkit("read", STDIO, "cli://note")
    assert (read.returncode, read.stdout) == (0, "remember the milk\n"), read.stderr
    contents = as_json(mcpkit("read", STDIO, "cli://items/7", "--json"))["contents"]
    assert contents == [{"uri": "cli://items/7", "mimeType": "text/plain", "text": "item 7"}] or contents[0]["text"] == "item 7"
    prompt = mcpkit("prompt", STDIO, "greet", '{"name": "Ada"}')
    assert prompt.returncode == 0, prompt.stderr
    assert "Say hello to Ada" in prompt.stdout
    got = as_json(mcpkit("prompt", STDIO, "greet", "-a", "name=Bob", "--json"))
    assert got["messages"][0]["content"]["text"] == "Say hello to Bob"


def test_exit_codes() -> None:
    failed = mcpkit("call", STDIO, "fail", "-a", "message=no luck", "--json")
    assert failed.returncode == 1
    assert as_json(failed)["isError"] is True
    assert "no luck" in as_json(failed)["content"][0]["text"]

    unknown = mcpkit("call", STDIO, "nope", "--json")
    assert unknown.returncode == 2
    error = as_json(unknown)["error"]
    assert (error["kind"], error["code"]) == ("protocol", -32602)
    assert "nope" in error["message"]
    assert mcpkit("read", STDIO, "cli://missing").returncode == 2

    started = time.monotonic()
    slow = mcpkit("call", STDIO, "sleep", "-a", "seconds=20", "--timeout", "0.5", "--json")
    assert slow.returncode == 3
    assert as_json(slow)["error"]["kind"] == "timeout"
    assert time.monotonic() - started < 15

    gone = mcpkit("call", f"{sys.executable} -c 'import sys; sys.stderr.write(\"cannot start\\n\")'", "echo")
    assert gone.returncode == 4
    assert "cannot start" in gone.stderr  # the server's stderr explains the failure
    assert mcpkit("list", "/no/such/program --flag").returncode == 4

    for bad in (["call", STDIO, "echo", "{not json"], ["call", STDIO, "echo", "[1]"], ["call", STDIO, "echo", "-a", "novalue"],
                ["list", STDIO, "--era", "ancient"], ["list", STDIO, "--timeout", "0"], ["call"], ["list", "   "]):
        proc = mcpkit(*bad)
        assert proc.returncode == 64, (bad, proc.stdout, proc.stderr)


def test_progress_bar_under_a_terminal() -> None:
    code, screen = run_in_pty([*MCPKIT, "call", STDIO, "steps", '{"count": 4, "delay": 0.15}'])
    assert code == 0, screen
    assert "done 4" in screen
    assert "━" in screen  # the bar
    assert "step 2" in screen
    assert "4/4" in screen


def test_no_progress_bar_without_a_terminal() -> None:
    proc = mcpkit("call", STDIO, "steps", '{"count": 3, "delay": 0.05}')
    assert (proc.returncode, proc.stdout) == (0, "done 3\n")
    assert "━" not in proc.stderr


def test_logs_go_to_stderr() -> None:
    code = mcpkit("call", "python examples/error_handling.py server", "success", '{"text": "x"}', "--log-level", "debug")
    assert code.returncode == 0
    assert code.stdout == "Success: x\n"


# --- HTTP ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def http_url() -> Any:
    port = free_port()
    with listening([sys.executable, APP, "http", str(port)], port, stderr=subprocess.PIPE):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.mark.parametrize("era", ERA_NAMES)
def test_http_target(http_url: str, era: str) -> None:
    listed = as_json(mcpkit("list", http_url, "tools", "--json", "--era", era))
    assert "echo" in [t["name"] for t in listed["tools"]]
    whoami = mcpkit("call", http_url, "whoami", "--era", era)
    assert (whoami.returncode, whoami.stdout.split()[0]) == (0, era), whoami.stderr
    assert mcpkit("call", http_url, "fail", "-a", "message=x", "--era", era).returncode == 1
    assert mcpkit("call", http_url, "nope", "--era", era).returncode == 2
    assert mcpkit("call", http_url, "sleep", "-a", "seconds=20", "--timeout", "0.5", "--era", era).returncode == 3


def test_http_connection_failures(http_url: str) -> None:
    refused = mcpkit("list", f"http://127.0.0.1:{free_port()}/mcp", "--json")
    assert refused.returncode == 4
    assert as_json(refused)["error"]["kind"] == "connection"
    wrong_path = mcpkit("list", http_url.replace("/mcp", "/nowhere"))
    assert wrong_path.returncode == 4, wrong_path.stderr
    assert "404" in wrong_path.stderr


def test_progress_bar_over_http(http_url: str) -> None:
    code, screen = run_in_pty([*MCPKIT, "call", http_url, "steps", '{"count": 3, "delay": 0.15}'])
    assert code == 0, screen
    assert "3/3" in screen
    assert "━" in screen


# --- mcpkit run ----------------------------------------------------------------------------------


def test_run_serves_stdio() -> None:
    target = f"python -m mcpkit.cli run {APP}"
    proc = mcpkit("call", target, "echo", "-a", "text=served by mcpkit run")
    assert (proc.returncode, proc.stdout) == (0, "served by mcpkit run\n"), proc.stderr
    named = mcpkit("call", f"python -m mcpkit.cli run {APP}:server", "whoami", "--era", "legacy")
    assert named.stdout.startswith("legacy"), named.stderr


def test_run_serves_http() -> None:
    port = free_port()
    command = [*MCPKIT, "run", APP, "--http", "--port", str(port)]
    with listening(command, port, stderr=subprocess.PIPE):
        proc = mcpkit("call", f"http://127.0.0.1:{port}/mcp", "echo", "-a", "text=over http")
        assert (proc.returncode, proc.stdout) == (0, "over http\n"), proc.stderr


def test_run_explains_a_missing_server(tmp_path: Path) -> None:
    (tmp_path / "empty.py").write_text("x = 1\n")
    proc = mcpkit("run", str(tmp_path / "empty.py"))
    assert proc.returncode == 64
    assert "no mcpkit Server" in proc.stderr
    assert mcpkit("run", str(tmp_path / "absent.py")).returncode == 64
    assert mcpkit("run", f"{APP}:nothing").returncode == 64
    assert mcpkit("run", APP, "--port", "9").returncode == 64  # --port needs --http


# --- server-everything ---------------------------------------------------------------------------


# --- mcpkit dev ------------------------------------------------------------------------------------


def test_dev_without_node_says_what_to_do(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path / "bin"), "MCPKIT_INSPECTOR_DIR": str(tmp_path / "inspector")}
    proc = mcpkit("dev", APP, env=env, cwd=tmp_path)
    assert proc.returncode == 69
    assert "npm was not found" in proc.stderr
    assert "@modelcontextprotocol/inspector@2.12.0" in proc.stderr
