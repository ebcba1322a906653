"""Reading hosts' configuration files (issue 25): Claude Desktop's and the other
``mcpServers`` files, VS Code's ``servers`` with ``type`` and ``inputs``, the ``${...}``
references each format defines, and a clear error for everything else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcpkit import ConfigError, ServerConfig, load_config
from mcpkit.host.config import expand, read_config

ENV = {"HOME": "/home/ada", "API_KEY": "k-123", "REGION": "eu"}


def test_claude_desktop_stdio_and_remote_entries() -> None:
    doc = {
        "mcpServers": {
            "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {"DEBUG": "1"}},
            "weather": {"command": "python", "args": ["weather.py"], "cwd": "/srv/weather"},
            "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer t"}},
            "legacy-remote": {"type": "sse", "url": "https://old.example.com/sse"},
        }
    }
    servers = load_config(doc)
    assert list(servers) == ["files", "weather", "remote", "legacy-remote"]
    files = servers["files"]
    assert (files.kind, files.command, files.args, files.env) == (
        "stdio",
        "npx",
        ("-y", "@modelcontextprotocol/server-filesystem", "/tmp"),
        {"DEBUG": "1"},
    )
    assert servers["weather"].cwd == "/srv/weather"
    assert (servers["remote"].kind, servers["remote"].url, dict(servers["remote"].headers)) == (
        "http",
        "https://mcp.example.com/mcp",
        {"Authorization": "Bearer t"},
    )
    assert servers["legacy-remote"].kind == "sse"
    assert servers["files"].describe() == "npx -y @modelcontextprotocol/server-filesystem /tmp"


def test_vs_code_servers_with_types_inputs_and_env_references(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("# tokens\nexport TOKEN='t-1'\nEMPTY=\nbad line\n")
    text = """{
      // VS Code's mcp.json allows comments and trailing commas
      "inputs": [{"type": "promptString", "id": "api-key", "description": "The service's API key", "password": true}],
      "servers": {
        "svc": {"type": "stdio", "command": "${workspaceFolder}/bin/svc", "args": ["--region", "${env:REGION}"],
                "env": {"KEY": "${input:api-key}"}, "envFile": "${workspaceFolder}/.env"},
        "web": {"type": "http", "url": "https://example.com/${env:REGION}/mcp", "headers": {"X-Key": "${input:api-key}"},},
      },
    }"""
    servers = load_config(text, inputs={"api-key": "s3cret"}, environ=ENV, workspace=tmp_path)
    svc = servers["svc"]
    assert svc.command == f"{tmp_path}/bin/svc"
    assert svc.args == ("--region", "eu")
    assert svc.env == {"TOKEN": "t-1", "EMPTY": "", "KEY": "s3cret"}
    assert servers["web"].url == "https://example.com/eu/mcp"
    assert dict(servers["web"].headers) == {"X-Key": "s3cret"}


def test_an_input_nobody_answered_names_it_and_its_description() -> None:
    doc = {
        "inputs": [{"type": "promptString", "id": "api-key", "description": "The service's API key"}],
        "servers": {"svc": {"type": "stdio", "command": "svc", "env": {"KEY": "${input:api-key}"}}, "ok": {"command": "ok"}},
    }
    servers, errors = read_config(doc, environ=ENV)
    assert list(servers) == ["ok"]
    assert errors["svc"].server == "svc"
    message = str(errors["svc"])
    assert "server 'svc'" in message
    assert "${input:api-key} (The service's API key) needs an answer" in message
    assert "inputs=" in message
    with pytest.raises(ConfigError, match="api-key"):
        load_config(doc, environ=ENV)


def test_claude_code_references_with_defaults_and_a_missing_variable() -> None:
    doc = {
        "mcpServers": {
            "a": {"command": "srv", "args": ["--key=${API_KEY}", "--zone=${ZONE:-default-zone}"]},
            "b": {"type": "http", "url": "${BASE_URL:-http://127.0.0.1:9/mcp}"},
            "c": {"command": "srv", "env": {"TOKEN": "${TOKEN}"}},
            "d": {"command": "srv", "args": ["${env:NOT_SET}"]},
            "e": {"command": "srv", "args": ["${command:pickFile}"]},
        }
    }
    servers, errors = read_config(doc, environ=ENV)
    assert servers["a"].args == ("--key=k-123", "--zone=default-zone")
    assert servers["b"].url == "http://127.0.0.1:9/mcp"
    assert "${TOKEN} is not set in the environment and has no default" in str(errors["c"])
    assert "${env:NOT_SET} is not set" in str(errors["d"])
    assert "cannot resolve ${command:pickFile}" in str(errors["e"])


def test_references_the_editors_define() -> None:
    assert expand("${userHome}/x", {}) == f"{Path.home()}/x"
    assert expand("${workspaceFolderBasename}", {}, workspace="/w/proj") == "proj"
    assert expand("a${/}b${pathSeparator}c", {}) == "a/b/c"
    assert expand("$HOME and $ {x}", ENV) == "$HOME and $ {x}"  # only ${...} is a reference
    with pytest.raises(ConfigError, match="workspace="):
        expand("${workspaceFolder}", {})


def test_a_settings_json_with_an_mcp_section_and_disabled_entries() -> None:
    doc = {"editor.fontSize": 12, "mcp": {"servers": {"on": {"command": "a"}, "off": {"command": "b", "disabled": True}}}}
    servers = load_config(doc)
    assert (servers["on"].disabled, servers["off"].disabled) == (False, True)


@pytest.mark.parametrize(
    ("entry", "complaint"),
    [
        ({"args": ["x"]}, "needs a 'command' (stdio) or a 'url'"),
        ({"type": "websocket", "url": "ws://x"}, "unknown type 'websocket'"),
        ({"type": "http"}, "needs a 'url'"),
        ({"url": "ftp://x"}, "http:// or https://"),
        ({"command": ["python"]}, "'command' must be a string"),
        ({"command": "python", "args": "server.py"}, "'args' must be a list of strings"),
        ({"command": "python", "env": {"A": None}}, "env.A must be a string"),
        ({"command": "python", "envFile": "/no/such/.env"}, "cannot read its envFile"),
        ("python server.py", "an entry must be a JSON object"),
    ],
)
def test_a_bad_entry_is_that_entrys_error(entry: object, complaint: str) -> None:
    servers, errors = read_config({"mcpServers": {"bad": entry, "good": {"command": "ok"}}})
    assert list(servers) == ["good"]
    assert complaint in str(errors["bad"]), errors["bad"]


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("{not json", "not valid JSON"),
        ("[]", "a JSON object"),
        ('{"servers": {}, "mcpServers": {}}', "both 'mcpServers' and 'servers'"),
        ('{"tools": {}}', "no server table"),
        ('{"mcpServers": []}', "must be an object of servers"),
    ],
)
def test_a_bad_document_raises(text: str, complaint: str) -> None:
    with pytest.raises(ConfigError, match=complaint):
        read_config(text)


def test_a_file_path_relative_cwds_and_what_a_config_builds(tmp_path: Path) -> None:
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(json.dumps({"mcpServers": {"here": {"command": "srv", "cwd": "sub"}}}))
    (here,) = load_config(path).values()
    assert here.cwd == str(tmp_path / "sub")
    assert ServerConfig.stdio("s", "srv", ["a"], env={"K": "v"}) == ServerConfig(
        "s", "stdio", command="srv", args=("a",), env={"K": "v"}
    )
    with pytest.raises(ValueError, match="needs a url"):
        ServerConfig("x", "http")
    with pytest.raises(FileNotFoundError):
        load_config(tmp_path / "absent.json")
