"""The ``mcpkit`` command, driven as a subprocess: against a stdio server
(tests/support/servers/cli_app.py), the same served over HTTP (by itself and by ``mcpkit run
--http``) and ``@modelcontextprotocol/server-everything``; exit codes, ``--json``
output parsed, the progress bar rendered under a pseudo-terminal, and ``mcpkit dev``
with the MCP Inspector (tests/peers.py pins and installs it)."""

from __future__ import annotations

import json
import os
import pty
import select
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from support import peers
from support.eras import LEGACY, MODERN
from support.paths import ROOT, SERVERS
from support.ports import free_port
from support.processes import listening

pytestmark = pytest.mark.timeout(60)

APP = str(SERVERS / "cli_app.py")
#: The stdio target: a command line, as a person would type it.
STDIO = f"python {APP}"
MCPKIT = [sys.executable, "-m", "mcpkit.cli"]
ERA_NAMES = [pytest.param("modern", id="modern"), pytest.param("legacy", id="legacy")]


def mcpkit(
    *args: str, timeout: float = 30, env: dict[str, str] | None = None, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MCPKIT, *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)


def as_json(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout)


def run_in_pty(command: list[str], timeout: float = 30) -> tuple[int, str]:
    """Run ``command`` with stdin, stdout and stderr on a pseudo-terminal; its exit code
    and everything it wrote there."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(command, stdin=slave, stdout=slave, stderr=slave, cwd=ROOT, close_fds=True)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the other side is closed
                break
            if not data:
                break
            chunks.append(data)
        code = proc.wait(10)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return code, b"".join(chunks).decode(errors="replace")


# --- the command itself ----------------------------------------------------------------------


def test_the_script_and_the_module_run() -> None:
    script = Path(sys.executable).parent / "mcpkit"
    assert script.is_file(), "the mcpkit script is installed by pip install -e '.[test]'"
    proc = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("mcpkit ")
    assert "list" in mcpkit("--help").stdout


def test_the_library_does_not_import_the_command_line() -> None:
    code = (
        "import asyncio, sys\n"
        "from mcpkit import Client, Server\n"
        "server = Server('s')\n"
        "async def main():\n"
        "    async with Client(server) as client:\n"
        "        await client.list_tools()\n"
        "asyncio.run(main())\n"
        "print(sorted(m for m in ('click', 'rich', 'mcpkit.cli', 'opentelemetry') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=30).stdout
    assert out.strip() == "[]"


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


def test_against_server_everything(everything: list[str]) -> None:
    target = " ".join(everything)
    listed = mcpkit("list", target, "--json", timeout=60)
    assert listed.returncode == 0, listed.stderr
    tools = [t["name"] for t in as_json(listed)["tools"]]
    assert {"echo", "get-sum", "trigger-long-running-operation"} <= set(tools)
    echoed = mcpkit("call", target, "echo", '{"message": "hi from mcpkit"}', timeout=60)
    assert echoed.returncode == 0, echoed.stderr
    assert "hi from mcpkit" in echoed.stdout
    total = as_json(mcpkit("call", target, "get-sum", "-a", "a=2", "-a", "b=40", "--json", timeout=60))
    assert "42" in total["content"][0]["text"]
    assert mcpkit("call", target, "no-such-tool", timeout=60).returncode in (1, 2)
    code, screen = run_in_pty([*MCPKIT, "call", target, "trigger-long-running-operation", '{"duration": 1, "steps": 4}'])
    assert code == 0, screen
    assert "Long running operation completed" in screen
    assert "4/4" in screen
    assert "━" in screen


# --- mcpkit dev ------------------------------------------------------------------------------------


def test_dev_without_node_says_what_to_do(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path / "bin"), "MCPKIT_INSPECTOR_DIR": str(tmp_path / "inspector")}
    proc = mcpkit("dev", APP, env=env, cwd=tmp_path)
    assert proc.returncode == 69
    assert "npm was not found" in proc.stderr
    assert "@modelcontextprotocol/inspector@2.12.0" in proc.stderr


def _wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, f"mcpkit dev exited with {proc.returncode}"
        assert time.monotonic() < deadline, f"nothing listens on {port}"
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.1)


@pytest.mark.timeout(180)
def test_dev_serves_the_app_and_the_inspector(inspector: peers.Inspector, tmp_path: Path) -> None:
    port, ui_port = free_port(), free_port()
    env = {**os.environ, "MCPKIT_INSPECTOR_DIR": str(peers.INSPECTOR_PREFIX), "HOME": str(tmp_path)}
    command = [*MCPKIT, "dev", APP, "--port", str(port), "--inspector-port", str(ui_port), "--no-open"]
    proc = subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        _wait_port(ui_port, proc, 90)
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/", timeout=10) as page:
            assert page.status == 200
            assert b"<html" in page.read().lower()
        called = mcpkit("call", f"http://127.0.0.1:{port}/mcp", "echo", "-a", "text=dev")
        assert (called.returncode, called.stdout) == (0, "dev\n"), called.stderr
        proc.send_signal(signal.SIGINT)
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stdout is not None
        output = proc.stdout.read().decode(errors="replace")
        proc.stdout.close()
    assert "MCP Inspector" in output
    for closed in (port, ui_port):
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", closed), 0.5).close()


def test_the_readme_quick_start() -> None:
    """The README's commands against the walkthrough server, with the exit codes it shows."""
    readme = (ROOT / "README.md").read_text()
    lines = [line for line in readme.splitlines() if line.startswith(".venv/bin/mcpkit ")]
    assert len(lines) == 5, lines
    expected = {"list": 0, "success": 0, "throw_error": 1, "slow": 0}
    for line in lines:
        command = line.split("   #")[0].split("; echo")[0]
        args = shlex.split(command)[1:]
        proc = mcpkit(*args)
        want = 3 if "--timeout" in args else expected[args[2] if args[0] == "call" else "list"]
        assert proc.returncode == want, (line, proc.stdout, proc.stderr)
        if "success" in args:
            assert proc.stdout == "Success: hello\n"
        if "--timeout" in args:
            assert json.loads(proc.stdout)["exitCode"] == 3
