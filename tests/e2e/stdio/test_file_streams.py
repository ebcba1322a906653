"""A stdio server whose stdin and stdout are regular files or /dev/null (a program run
as ``python server.py < requests.jsonl > answers.jsonl``, or a server started after a
script's first ``asyncio.run`` with stdin closed): it answers, exits 0 and leaves no file
unclosed (no ResourceWarning at exit, under ``-X dev``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.eras import MODERN

SERVER = """
import asyncio
from mcpkit import Client, Server

server = Server("files")

@server.tool
def add(a: int, b: int) -> int:
    return a + b

async def first() -> None:  # a client in memory first, as examples/ported/mount_example.py does
    async with Client(server) as client:
        await client.list_tools()

asyncio.run(first())
server.run()
"""

META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
PARAMS = {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": META}
CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": PARAMS}


def serve(tmp_path: Path, stdin: Path) -> tuple[subprocess.CompletedProcess[bytes], bytes]:
    program = tmp_path / "server.py"
    program.write_text(SERVER, encoding="utf-8")
    answers = tmp_path / "answers.jsonl"
    env = dict(os.environ)
    env.pop("PYTHONWARNINGS", None)
    with stdin.open("rb") as src, answers.open("wb") as out:
        proc = subprocess.run(
            [sys.executable, "-X", "dev", str(program)], stdin=src, stdout=out, stderr=subprocess.PIPE, env=env, timeout=60
        )
    return proc, answers.read_bytes()


@pytest.mark.parametrize("source", ["requests", "devnull"])
def test_files_as_stdin_and_stdout_are_closed(tmp_path: Path, source: str) -> None:
    if source == "requests":
        stdin = tmp_path / "requests.jsonl"
        stdin.write_text(json.dumps(CALL) + "\n", encoding="utf-8")
    else:
        stdin = Path(os.devnull)
    proc, answers = serve(tmp_path, stdin)
    stderr = proc.stderr.decode(errors="replace")
    assert proc.returncode == 0, stderr
    assert "ResourceWarning" not in stderr, stderr
    if source == "requests":
        [line] = answers.splitlines()
        assert json.loads(line)["result"]["structuredContent"] == {"result": 3}
    else:
        assert answers == b""
