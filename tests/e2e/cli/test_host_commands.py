"""The command line for hosts (issue 25), as a person runs it: ``mcpkit --config FILE
list|call|read|prompt`` over the servers of a host's file (real processes and loopback
HTTP); ``mcpkit install`` for Claude Desktop, Claude Code, Cursor and VS Code, with the
config paths under a temporary HOME; the server's stderr shown when a call fails with an
internal error; and a hint when an HTTP URL misses the endpoint's ``/mcp``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.cli import APP, as_json, mcpkit
from support.ports import free_port
from support.processes import listening, server_command

BROKEN = "import sys; print('fatal: the database is locked', file=sys.stderr); sys.exit(1)"


def entry(command: list[str]) -> dict[str, Any]:
    return {"command": command[0], "args": command[1:]}


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    port = free_port()
    with listening([sys.executable, APP, "http", str(port)], port, stderr=subprocess.PIPE):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture
def config(tmp_path: Path, http_url: str) -> Path:
    path = tmp_path / "claude_desktop_config.json"
    doc = {
        "mcpServers": {
            "notes": entry(server_command("interop_target")),
            "cli": {"type": "http", "url": http_url},
            "broken": {"command": sys.executable, "args": ["-c", BROKEN]},
        }
    }
    path.write_text(json.dumps(doc))
    return path


def test_list_over_every_server_of_a_file(config: Path) -> None:
    listed = mcpkit("--config", str(config), "list", "tools", "--json")
    assert listed.returncode == 0, listed.stderr
    got = as_json(listed)
    names = [tool["name"] for tool in got["tools"]]
    assert "notes.echo" in names
    assert "cli.squares" in names
    assert not any(name.startswith("broken.") for name in names)
    assert got["servers"]["broken"]["state"] == "failed"
    assert got["servers"]["notes"] == {"state": "ready", "error": None}
    assert "server 'broken' is not available" in listed.stderr
    assert "fatal: the database is locked" in listed.stderr

    text = mcpkit("--config", str(config), "list", "--server", "notes")
    assert text.returncode == 0, text.stderr
    assert "notes.echo" in text.stdout
    assert "note://hello" in text.stdout  # resources keep their URIs
    assert "cli." not in text.stdout
    assert "broken" not in text.stderr  # not started


def test_call_read_and_prompt_start_only_the_server_they_need(config: Path) -> None:
    called = mcpkit("--config", str(config), "call", "notes.echo", "-a", "text=hello")
    assert (called.returncode, called.stdout) == (0, "hello\n"), called.stderr
    assert "broken" not in called.stderr
    over_http = mcpkit("--config", str(config), "call", "cli.squares", '{"n": 3}', "--json")
    assert over_http.returncode == 0, over_http.stderr
    assert as_json(over_http)["structuredContent"] == {"result": [0, 1, 4]}
    read = mcpkit("--config", str(config), "read", "note://hello")
    assert (read.returncode, read.stdout) == (0, "Hello, interop!\n"), read.stderr
    assert mcpkit("--config", str(config), "read", "note://7", "--server", "notes").stdout == "note 7\n"
    prompted = mcpkit("--config", str(config), "prompt", "notes.greet", "-a", "name=Ada")
    assert prompted.returncode == 0, prompted.stderr
    assert "Greet Ada in a plain style." in prompted.stdout
    assert mcpkit("--config", str(config), "call", "notes.refuse", "-a", "reason=no").returncode == 1
    assert mcpkit("--config", str(config), "call", "notes.nope").returncode == 2


def test_a_broken_server_and_bad_usage(config: Path, tmp_path: Path) -> None:
    broken = mcpkit("--config", str(config), "call", "broken.anything")
    assert broken.returncode == 4
    assert "fatal: the database is locked" in broken.stderr
    for bad in (
        ["call", "nobody.echo"],  # no such server
        ["call"],
        ["call", "notes.echo", "{}", "extra"],
        ["list", "everything"],
        ["list", "tools", "-H", "X: y"],
        ["list", "--server", "nobody"],
        ["read", "note://hello", "--server", "nobody"],
    ):
        proc = mcpkit("--config", str(config), *bad)
        assert proc.returncode == 64, (bad, proc.stdout, proc.stderr)
    assert "servers: notes, cli, broken" in mcpkit("--config", str(config), "call", "nobody.echo").stderr
    assert mcpkit("--config", str(tmp_path / "absent.json"), "list").returncode == 64
    (tmp_path / "bad.json").write_text('{"tools": {}}')
    said = mcpkit("--config", str(tmp_path / "bad.json"), "list").stderr
    assert "no server table" in " ".join(said.split())  # the message wraps where the temporary path's length puts it
    assert mcpkit("list", "--server", "x", f"python {APP}").returncode == 64  # --server needs --config


def test_an_internal_error_shows_the_servers_stderr(config: Path) -> None:
    """The server logged the exception behind the -32603 under its reference: that log is
    shown, from the line naming the reference."""
    target = " ".join(server_command("interop_target"))
    for args in (["read", target, "note://broken"], ["--config", str(config), "read", "note://broken"]):
        proc = mcpkit(*args)
        assert proc.returncode == 2, proc.stderr
        assert "error -32603: Internal error" in proc.stderr
        assert "the server's stderr:" in proc.stderr
        assert "OSError: disk on fire at /var/secret" in proc.stderr  # the cause, which the client was not sent
        assert "(reference " in proc.stderr
    answered = mcpkit("call", target, "explode")  # a deliberate -32603 of the server's own: nothing to show
    assert answered.returncode == 2
    assert "the server's stderr" not in answered.stderr


def test_a_url_without_its_mcp_path_gets_a_hint(http_url: str) -> None:
    root = http_url.removesuffix("/mcp")
    proc = mcpkit("list", root)
    assert proc.returncode == 4
    assert "404" in proc.stderr
    assert f"try {root}/mcp" in proc.stderr
    official = free_port()
    with listening(server_command("official_features", "--http", str(official)), official, stderr=subprocess.DEVNULL):
        slash = mcpkit("list", f"http://127.0.0.1:{official}/mcp/", "--json")
    assert slash.returncode == 4
    error = as_json(slash)["error"]
    assert error["data"]["status"] == 307
    assert f"without the trailing slash: http://127.0.0.1:{official}/mcp" in error["message"]
    elsewhere = mcpkit("list", http_url.replace("/mcp", "/nowhere/mcp"))
    assert elsewhere.returncode == 4
    assert "hint:" not in elsewhere.stderr  # it ends in /mcp: nothing to suggest


# --- mcpkit install --------------------------------------------------------------------------------


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    """The environment of a user whose HOME is a temporary folder."""
    folder = tmp_path / "home"
    folder.mkdir()
    env = {**os.environ, "HOME": str(folder)}
    env.pop("XDG_CONFIG_HOME", None)
    env.pop("APPDATA", None)
    return env


FILES = {
    "claude-desktop": (".config/Claude/claude_desktop_config.json", "mcpServers", {}),
    "claude-code": (".claude.json", "mcpServers", {"type": "stdio"}),
    "cursor": (".cursor/mcp.json", "mcpServers", {}),
    "vscode": (".config/Code/User/mcp.json", "servers", {"type": "stdio"}),
}


@pytest.mark.parametrize("host", list(FILES))
def test_install_writes_the_hosts_file_and_never_clobbers(host: str, home: dict[str, str], tmp_path: Path) -> None:
    where, table, typed = FILES[host]
    path = Path(home["HOME"]) / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"theme": "dark", table: {"other": {"command": "other"}}}))
    target = f"python {APP}"
    done = mcpkit("install", host, target, "-e", "API_KEY=k1", env=home, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert str(path) in done.stdout
    doc = json.loads(path.read_text())
    assert doc["theme"] == "dark"
    assert doc[table]["other"] == {"command": "other"}
    assert doc[table]["cli_app"] == {**typed, "command": sys.executable, "args": [APP], "env": {"API_KEY": "k1"}}

    again = mcpkit("install", host, target, "-e", "API_KEY=k1", env=home, cwd=tmp_path)
    assert again.returncode == 0
    assert "unchanged" in again.stdout
    other = mcpkit("install", host, target, "-e", "API_KEY=k2", env=home, cwd=tmp_path)
    assert other.returncode == 1
    assert "already has a server 'cli_app'" in other.stderr
    assert "k1" not in other.stderr  # the environment may hold secrets
    assert json.loads(path.read_text())[table]["cli_app"]["env"] == {"API_KEY": "k1"}
    forced = mcpkit("install", host, target, "-e", "API_KEY=k2", "--force", env=home, cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert json.loads(path.read_text())[table]["cli_app"]["env"] == {"API_KEY": "k2"}


def test_an_installed_server_runs_from_the_hosts_file(home: dict[str, str], tmp_path: Path) -> None:
    done = mcpkit("install", "claude-desktop", f"python {Path(APP).name}", "--name", "demo", env=home, cwd=Path(APP).parent)
    assert done.returncode == 0, done.stderr
    path = Path(home["HOME"]) / FILES["claude-desktop"][0]
    assert json.loads(path.read_text())["mcpServers"]["demo"]["args"] == [APP]  # absolute: hosts start it elsewhere
    called = mcpkit("--config", str(path), "call", "demo.echo", "-a", "text=from the host's file", env=home, cwd=tmp_path)
    assert (called.returncode, called.stdout) == (0, "from the host's file\n"), called.stderr


def test_install_urls_project_scopes_and_files_it_will_not_rewrite(home: dict[str, str], tmp_path: Path) -> None:
    url = mcpkit("install", "cursor", "https://mcp.example.com/mcp", "-H", "Authorization: Bearer t", env=home, cwd=tmp_path)
    assert url.returncode == 0, url.stderr
    cursor = json.loads((Path(home["HOME"]) / ".cursor/mcp.json").read_text())
    assert cursor["mcpServers"]["mcp"] == {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer t"}}
    desktop = mcpkit("install", "claude-desktop", "https://mcp.example.com/mcp", env=home, cwd=tmp_path)
    assert desktop.returncode == 64
    assert "Connectors" in desktop.stderr

    project = mcpkit(
        "install", "claude-code", "http://127.0.0.1:9/mcp", "--scope", "project", "--name", "web", env=home, cwd=tmp_path
    )
    assert project.returncode == 0, project.stderr
    assert json.loads((tmp_path / ".mcp.json").read_text()) == {
        "mcpServers": {"web": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}
    }
    vscode = tmp_path / ".vscode" / "mcp.json"
    vscode.parent.mkdir()
    vscode.write_text('{\n  // my servers\n  "servers": {}\n}\n')
    commented = mcpkit("install", "vscode", "node server.js", "--scope", "project", env=home, cwd=tmp_path)
    assert commented.returncode == 1
    assert "comments" in commented.stderr
    assert "// my servers" in vscode.read_text()
    assert mcpkit("install", "claude-desktop", "node server.js", "--scope", "project", env=home, cwd=tmp_path).returncode == 74
    (tmp_path / "broken.json").write_text("{not json")
    broken = mcpkit("install", "cursor", "node server.js", "--config-file", str(tmp_path / "broken.json"), env=home, cwd=tmp_path)
    assert broken.returncode == 74
    assert mcpkit("install", "emacs", "node server.js", env=home).returncode == 64
    assert mcpkit("install", "cursor", "node server.js", "-e", "novalue", env=home).returncode == 64
