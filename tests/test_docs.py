"""Every Python snippet in docs/errors.md, docs/http.md and README.md runs, and prints what
the docs say.

Conventions (see docs/errors.md):

* each ```python block is a complete program. It is written to a file in a fresh
  temporary directory and run with this interpreter, warnings as errors, stdin an empty pipe;
  it must exit 0;
* a ```output block that follows a ```python block (with only prose in between) is the
  exact stdout that program must print;
* README.md: its first Python block (the server) is also saved as ``weather.py``, the
  file its client block spawns;
* other blocks (sh, text, tables) are not run.
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import mcpkit
from conftest import ROOT

DOCS = ROOT / "docs" / "errors.md"
HTTP_DOC = ROOT / "docs" / "http.md"
README = ROOT / "README.md"
TIMEOUT = 20

_FENCE = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)


@dataclasses.dataclass
class Block:
    doc: Path
    line: int
    code: str
    expected: str | None = None

    @property
    def id(self) -> str:
        return f"{self.doc.name}:{self.line}"


def python_blocks(doc: Path) -> list[Block]:
    """The ```python blocks of ``doc``, each with the ```output block that follows it."""
    text = doc.read_text(encoding="utf-8")
    blocks: list[Block] = []
    last: Block | None = None
    for m in _FENCE.finditer(text):
        lang, body = m.group(1).lower(), m.group(2)
        line = text.count("\n", 0, m.start()) + 1
        if lang == "python":
            last = Block(doc, line, body)
            blocks.append(last)
        elif lang == "output":
            assert last is not None, f"{doc.name}:{line}: an output block must follow a python block"
            assert last.expected is None, f"{doc.name}:{line}: a python block may have only one output block"
            last.expected = body
            last = None
        else:
            last = None
    return blocks


def run_program(code: str, cwd: Path, name: str = "snippet.py") -> subprocess.CompletedProcess[str]:
    path = cwd / name
    path.write_text(code, encoding="utf-8")
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONWARNINGS", None)
    return subprocess.run(
        [sys.executable, "-W", "error", str(path)],
        cwd=cwd,
        env=env,
        input="",  # stdin is a pipe that is closed at once
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=TIMEOUT,
    )


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip("\n").splitlines()]


def check(block: Block, proc: subprocess.CompletedProcess[str]) -> None:
    where = f"{block.id} exited {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    assert proc.returncode == 0, where
    if block.expected is not None:
        assert _lines(proc.stdout) == _lines(block.expected), f"{block.id}: output differs\n{where}"


DOC_BLOCKS = python_blocks(DOCS)
HTTP_BLOCKS = python_blocks(HTTP_DOC)
README_BLOCKS = python_blocks(README)


@pytest.mark.parametrize("block", DOC_BLOCKS, ids=[b.id for b in DOC_BLOCKS])
def test_errors_md_snippet(block: Block, tmp_path: Path) -> None:
    check(block, run_program(block.code, tmp_path))


@pytest.mark.parametrize("block", HTTP_BLOCKS, ids=[b.id for b in HTTP_BLOCKS])
def test_http_md_snippet(block: Block, tmp_path: Path) -> None:
    # ```py blocks on that page are display-only (they serve forever); ```python blocks run.
    check(block, run_program(block.code, tmp_path))


def test_http_md_snippets_are_checked() -> None:
    assert len(HTTP_BLOCKS) >= 2
    assert all(b.expected is not None for b in HTTP_BLOCKS), "every runnable http.md snippet shows its output"


@pytest.mark.parametrize("index", range(len(README_BLOCKS)), ids=[b.id for b in README_BLOCKS])
def test_readme_snippet(index: int, tmp_path: Path) -> None:
    # The client snippet spawns weather.py: the README's first block, the server.
    server = README_BLOCKS[0]
    assert "Server(" in server.code, "README: the first Python block should be the server that later blocks spawn"
    (tmp_path / "weather.py").write_text(server.code, encoding="utf-8")
    block = README_BLOCKS[index]
    # The server block serves stdio until stdin closes; with stdin closed it exits at once.
    check(block, run_program(block.code, tmp_path))


def test_readme_client_spawns_the_server_block() -> None:
    assert any("weather.py" in b.code for b in README_BLOCKS[1:]), "README: no block spawns weather.py any more"


def test_every_errors_md_snippet_is_checked() -> None:
    assert len(DOC_BLOCKS) >= 10
    unchecked = [b.id for b in DOC_BLOCKS if b.expected is None and "assert " not in b.code]
    assert not unchecked, f"snippets that neither show their output nor assert anything: {unchecked}"


def test_errors_md_covers_the_error_api_and_codes() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for name in ("McpError", "RequestTimeout", "ConnectionClosed", "ToolError", "HttpError", "flatten_text",
                 "CallToolResult", "ClientOptions", "RequestOptions", "expose_internal_errors", "mask_tool_errors",
                 "max_error_text"):
        assert re.search(rf"`(mcpkit\.)?{name}\b", text), name
        assert name in mcpkit.__all__ or name in {"expose_internal_errors", "mask_tool_errors", "max_error_text"}, name
    for code in (-32700, -32600, -32601, -32602, -32603, -32000, -32001, -32800, -32020, -32021, -32022, -32002):
        assert re.search(rf"^\| `{code}`", text, re.MULTILINE), f"codes table lacks {code}"
    for constant in ("PARSE_ERROR", "INVALID_REQUEST", "METHOD_NOT_FOUND", "INVALID_PARAMS", "INTERNAL_ERROR",
                     "REQUEST_TIMEOUT", "REQUEST_CANCELLED"):
        code = getattr(mcpkit, constant)
        assert re.search(rf"^\| `{code}` \| `{constant}` \|", text, re.MULTILINE), f"codes table: {code} should be {constant}"


def test_snippets_have_no_undefined_or_unused_names(tmp_path: Path) -> None:
    paths = []
    for block in DOC_BLOCKS + HTTP_BLOCKS:
        path = tmp_path / f"errors_md_line_{block.line}.py"
        path.write_text(block.code, encoding="utf-8")
        paths.append(str(path))
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", "--select", "F", *paths],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
